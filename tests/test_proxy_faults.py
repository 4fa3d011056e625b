"""The proxy under faults: each with the outcome a client sees, and the proxy still
serving afterwards.

Upstream errors, an upstream that hangs up before answering or in the middle of
a stream, one that goes silent past the read timeout, a client that goes away,
and bodies that are not what they claim to be. Streams are read with the real
``openai`` SDK, which must raise instead of accepting a truncated answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from fake_upstream import FakeUpstream, HangUp, Reply
from test_proxy import DAMAGED, MODEL, Served, _post, _sdk

from context_governor.proxy import (
    GoverningConfig,
    LimitsConfig,
    ProxyConfig,
    TimeoutsConfig,
    create_app,
)

LONG = "A long answer that the upstream will not finish sending to the client."


@pytest.fixture
def proxy(upstream_server: FakeUpstream) -> Iterator[Any]:
    """Start proxies (ProxyConfig keywords; upstream defaults to the fake); gives the /v1 URL."""
    started: list[Served] = []

    def start(**config: Any) -> str:
        config.setdefault("upstream", upstream_server.base_url)
        started.append(Served(create_app(ProxyConfig(**config))))
        return f"{started[-1].url}/v1"

    yield start
    for one in started:
        one.stop()


def still_serving(url: str, upstream: FakeUpstream, stream: bool = True) -> None:
    """The same proxy answers a normal request, streamed and not, after the fault."""
    upstream.push(Reply.text("fine again"), Reply.text("fine again"))
    with _sdk(url) as client:
        completion = client.chat.completions.create(model=MODEL, messages=DAMAGED)  # type: ignore[arg-type]
        assert completion.choices[0].message.content == "fine again"
        chunks = list(client.chat.completions.create(model=MODEL, messages=DAMAGED, stream=True))  # type: ignore[arg-type]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "fine again"


def _stream_text(url: str) -> str:
    with _sdk(url) as client:
        stream = client.chat.completions.create(model=MODEL, messages=DAMAGED, stream=True)  # type: ignore[arg-type]
        return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


# ----------------------------------------------------------------------------- upstream errors


def test_upstream_500_then_still_serving(upstream: FakeUpstream, proxy: Any) -> None:
    url = proxy()
    upstream.push(Reply.error(500, "upstream exploded"))
    with _sdk(url) as client, pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model=MODEL, messages=DAMAGED, stream=True)  # type: ignore[arg-type]
    assert caught.value.status_code == 500 and "upstream exploded" in caught.value.message
    still_serving(url, upstream)


def test_upstream_429_keeps_retry_after_then_still_serving(upstream: FakeUpstream, proxy: Any) -> None:
    url = proxy()
    upstream.push(Reply.error(429, "Rate limit reached", headers={"retry-after": "3"}))
    with _sdk(url) as client, pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model=MODEL, messages=DAMAGED, stream=True)  # type: ignore[arg-type]
    assert caught.value.response.headers["retry-after"] == "3"
    still_serving(url, upstream)


def test_upstream_hangs_up_before_answering(upstream: FakeUpstream, proxy: Any) -> None:
    hangup = HangUp()
    try:
        url = proxy(upstream=hangup.base_url)
        for stream in (False, True):
            response = _post(url, {"model": MODEL, "messages": DAMAGED, "stream": stream})
            assert response.status_code == 502, response.text
            error = response.json()["error"]
            assert error["type"] == "upstream_error" and "RemoteProtocolError" in error["message"]
        with _sdk(url) as client, pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model=MODEL, messages=DAMAGED, stream=True)  # type: ignore[arg-type]
        assert hangup.requests == 3
    finally:
        hangup.stop()
    still_serving(proxy(), upstream)


def test_upstream_silent_past_read_timeout_before_answering(upstream: FakeUpstream, proxy: Any) -> None:
    url = proxy(timeouts=TimeoutsConfig(read=0.3))
    upstream.push(Reply.text("too late", delay=1.0))
    with _sdk(url) as client, pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model=MODEL, messages=DAMAGED)  # type: ignore[arg-type]
    assert caught.value.status_code == 504
    time.sleep(0.8)  # the fake finishes its late answer into a closed connection
    still_serving(url, upstream)


# ----------------------------------------------------------------------------- mid-stream


def test_stream_cut_mid_answer_raises_in_the_sdk(upstream: FakeUpstream, proxy: Any) -> None:
    url = proxy()
    upstream.push(Reply("chat", content=LONG, finish_reason="stop", cut_after=4))
    with pytest.raises(openai.APIError) as caught:
        _stream_text(url)
    assert "the upstream broke off the stream" in caught.value.message
    assert upstream.stream_ends[-1][1] == "cut"
    still_serving(url, upstream)


def test_stream_cut_ends_with_an_error_event_not_a_clean_end(upstream: FakeUpstream, proxy: Any) -> None:
    """On the wire: whole events, then one error event, and no [DONE]."""
    url = proxy()
    upstream.push(Reply("chat", content=LONG, finish_reason="stop", cut_after=3))
    body = {"model": MODEL, "messages": DAMAGED, "stream": True}
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=10) as response:
        assert response.status_code == 200
        text = response.read().decode()
    events = [e for e in text.split("\n\n") if e]
    assert len(events) == 4 and "data: [DONE]" not in text
    assert [json.loads(e[6:])["object"] for e in events[:3]] == ["chat.completion.chunk"] * 3
    assert json.loads(events[3][6:])["error"]["type"] == "upstream_error"


def test_stream_silent_past_read_timeout_raises_in_the_sdk(upstream: FakeUpstream, proxy: Any) -> None:
    url = proxy(timeouts=TimeoutsConfig(read=0.3))
    upstream.push(Reply("chat", content=LONG, finish_reason="stop", stall=1.0))
    with pytest.raises(openai.APIError) as caught:
        _stream_text(url)
    assert "went silent past the read timeout" in caught.value.message
    time.sleep(0.8)
    still_serving(url, upstream)


def test_client_going_away_closes_the_upstream_stream_at_once(upstream: FakeUpstream, proxy: Any) -> None:
    """The upstream stalls after its first event; the client reads it and leaves. The
    proxy must close its upstream request then, not when the upstream next writes."""
    url = proxy()
    stall = 3.0
    upstream.push(Reply("chat", content=LONG, finish_reason="stop", stall=stall))
    body = {"model": MODEL, "messages": DAMAGED, "stream": True}
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=10) as response:
        first = next(line for line in response.iter_lines() if line)
        first_at = time.monotonic()
    assert first.startswith("data: ")
    deadline = time.monotonic() + stall + 2
    while not upstream.stream_ends and time.monotonic() < deadline:
        time.sleep(0.02)
    ended_at, how = upstream.stream_ends[0]
    assert how == "aborted"
    assert ended_at < first_at + stall  # during the stall: the proxy passed the disconnect on
    still_serving(url, upstream)


# ----------------------------------------------------------------------------- bad bodies


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"", 400),
        (b"\xff\xfe{}", 400),
        (b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": NaN}]}', 400),
        (b'{"messages": [' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"]}", 400),
        (b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x"}], "max_tokens": -5}', 400),
        (b"x" * 300_000, 413),
    ],
    ids=["empty", "not-utf8", "nan", "deep", "negative-reserve", "too-large"],
)
def test_bad_bodies_then_still_serving(upstream: FakeUpstream, proxy: Any, body: bytes, status: int) -> None:
    url = proxy(limits=LimitsConfig(max_body_bytes=200_000))
    response = _post(url, body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["message"]
    assert upstream.requests == []
    still_serving(url, upstream)


# ----------------------------------------------------------------------------- concurrency


def _big_history(messages: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(messages // 2):
        history += [{"role": "user", "content": f"question {i} " * 40}, {"role": "assistant", "content": f"answer {i} " * 40}]
    return [*history, {"role": "user", "content": "and now?"}]


@pytest.mark.parametrize("govern_in", ["thread", "process"])
def test_healthz_answers_while_a_huge_body_is_governed(upstream: FakeUpstream, proxy: Any, govern_in: str) -> None:
    """Governance runs off the event loop: /healthz and a small request are answered
    while a huge body is still being governed (it has not reached the upstream yet)."""
    url = proxy(context_window=8000, governing=GoverningConfig(run_in=govern_in, processes=1))
    big = json.dumps({"model": MODEL, "messages": _big_history(6000)}).encode()
    upstream.push(Reply.text("big done"))
    done: list[int] = []
    sender = threading.Thread(target=lambda: done.append(_post(url, big).status_code))
    sender.start()
    answered_during = 0
    with httpx.Client(timeout=30) as client:
        while sender.is_alive():
            healthz = client.get(url.removesuffix("/v1") + "/healthz")
            assert healthz.json() == {"status": "ok"}
            if not upstream.requests and sender.is_alive():
                answered_during += 1
            time.sleep(0.01)
    sender.join()
    assert done == [200]
    assert answered_during >= 2, "/healthz was never answered while the big body was governed"
