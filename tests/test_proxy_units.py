"""Properties of the proxy's small pure parts: path checks, URL redaction, SSE
event splitting."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlsplit

import httpx
from hypothesis import given
from hypothesis import strategies as st

from context_governor.proxy._paths import BadPath, forward_path, forward_query
from context_governor.proxy._redact import Redactor, redact_url, url_secrets
from context_governor.proxy._sse import MAX_HELD, EventSplitter, complete_events

BASE = "http://upstream.example:8000/base/v1"
#: Segment text that exercises escapes: dots, slashes, percent signs, non-ASCII, controls.
segment_text = st.lists(st.sampled_from([*"a.%/\\?#:@ é\x00~", "..", "%2e", "%2F"]), max_size=8).map("".join)


def _raw(segment: str, encode: bool) -> str:
    return quote(segment, safe="") if encode else segment


@given(st.lists(st.tuples(segment_text, st.booleans()), min_size=1, max_size=5))
def test_forwarded_paths_stay_under_the_base(parts: list[tuple[str, bool]]) -> None:
    """Whatever the client sends, the URL the upstream gets (after httpx's own
    normalization) is under the base, and carries exactly the client's segments."""
    raw = "/v1/" + "/".join(_raw(text, encode) for text, encode in parts)
    try:
        path = forward_path(raw.encode("utf-8"))
    except BadPath:
        return
    url = httpx.URL(f"{BASE}/{path}")
    assert url.host == "upstream.example" and url.query == b"" and url.fragment == ""
    assert url.raw_path.startswith(b"/base/v1/")
    forwarded = url.raw_path.decode()[len("/base/v1/") :].split("/")
    assert [unquote(s) for s in forwarded] == [unquote(s) for s in raw[len("/v1/") :].split("/")]
    assert not {".", ".."} & {unquote(s) for s in forwarded}


@given(st.binary(max_size=40))
def test_forwarded_query_never_ends_early(query: bytes) -> None:
    url = httpx.URL(f"{BASE}/models?{forward_query(query)}")
    assert url.fragment == "" and url.path == "/base/v1/models"


secret = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=4, max_size=12)


@given(user=secret, password=secret, key=secret, name=st.sampled_from(["key", "api_key", "access_token", "X-Amz-Signature"]))
def test_redacted_urls_and_texts_carry_no_secret(user: str, password: str, key: str, name: str) -> None:
    url = f"https://{user}:{password}@host.example/v1?region=eu&{name}={key}"
    assert set(url_secrets(url)) == {user, password, key}
    shown = urlsplit(redact_url(url))
    assert shown.netloc == "***@host.example" and shown.path == "/v1"
    assert parse_qsl(shown.query) == [("region", "eu"), (name, "***")]
    redact = Redactor(url_secrets(url))  # secrets use none of "ERO: /", so only they are masked
    assert redact(f"ERROR: {password} / {key} / {user}") == "ERROR: *** / *** / ***"


events = st.lists(st.text(alphabet="ab: {}\"\r", max_size=20), max_size=6)


@given(events, st.sampled_from(["\n\n", "\r\n\r\n", "\r\r"]), st.lists(st.integers(1, 30), max_size=20))
def test_event_splitter_relays_every_byte_and_only_whole_events(
    texts: list[str], end: str, cuts: list[int]
) -> None:
    stream = "".join(f"data: {t.replace(chr(13), '')}{end}" for t in texts).encode() + b"data: partial"
    splitter, out, position = EventSplitter(), [], 0
    for size in [*cuts, len(stream)]:
        piece = splitter.feed(stream[position : position + size])
        position += size
        if piece:
            assert complete_events(piece) == len(piece)  # ends on an event boundary
        out.append(piece)
    assert splitter.held == len(b"data: partial")
    assert b"".join(out) + splitter.flush() == stream


def test_event_splitter_does_not_hold_without_bound() -> None:
    splitter = EventSplitter()
    assert splitter.feed(b"x" * (MAX_HELD + 1)) == b"x" * (MAX_HELD + 1)
