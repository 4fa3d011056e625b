"""What a hostile client or a careless operator could make the proxy do: reach
paths outside the upstream's base (with our key attached), leak credentials into
the banner and logs, or make it swallow a body of any size or non-JSON numbers.

Requests go over raw sockets where the client must not normalize the path first,
and every assertion about forwarding is made on what the upstream received.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fake_upstream import FakeUpstream, Reply
from test_proxy import DAMAGED, MODEL, Served, _closed_port, _post, log_line

from context_governor.proxy import LimitsConfig, ProxyConfig, create_app
from context_governor.proxy._body import TooLarge, read_limited
from context_governor.proxy._redact import RedactingFilter, Redactor, redact_url

KEY = "sk-fixed-0123456789"
#: governed routes take JSON only (guard.py): a body without a type is a browser's
JSON = {"content-type": "application/json"}


@pytest.fixture
def served(upstream_server: FakeUpstream) -> Iterator[Any]:
    """Start proxies (ProxyConfig keywords; upstream defaults to the fake); gives Served."""
    started: list[Served] = []

    def start(**config: Any) -> Served:
        config.setdefault("upstream", upstream_server.base_url)
        started.append(Served(create_app(ProxyConfig(**config))))
        return started[-1]

    yield start
    for one in started:
        one.stop()


def raw_http(port: int, method: str, target: str, body: bytes = b"") -> tuple[int, bytes]:
    """One request with the target exactly as given (no client-side normalization)."""
    head = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    head += f"Content-Length: {len(body)}\r\nAuthorization: Bearer sk-client\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head.encode() + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


# ----------------------------------------------------------------------------- paths

ESCAPES = [
    "/v1/..%2f..%2fsecret",
    "/v1/..%2F..%2Fsecret?x=1",
    "/v1/%2e%2e/%2e%2e/secret",
    "/v1/%2E%2E/secret",
    "/v1/../../secret",
    "/v1/models/../../secret",
    "/v1/./models",
    "/v1/models%23fragment",
    "/v1/models%3Fapi_key=injected",
    "/v1/a%5c..%5c..%5csecret",
    "/v1//secret",
    "/v1/models%00",
    "/v1/%ff%fe",
    "/v1/chat/completions/..%2f..%2f..%2fadmin",
]


@pytest.mark.parametrize("target", ESCAPES)
def test_paths_that_could_leave_the_base_are_refused(upstream: FakeUpstream, served: Any, target: str) -> None:
    proxy = served(api_key=KEY)
    status, body = raw_http(proxy.port, "GET", target)
    assert status == 400, body
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("path not allowed"), error["message"]
    assert upstream.targets == []  # nothing reached the upstream, key or not


def test_control_characters_in_the_path_are_not_forwarded(upstream: FakeUpstream, served: Any) -> None:
    proxy = served(api_key=KEY)
    status, _ = raw_http(proxy.port, "GET", "/v1/models%0d%0aX-Injected:%201")
    assert status in (400, 404)  # no route matches a decoded newline: the proxy's own 404
    assert upstream.targets == []


@pytest.mark.parametrize(
    ("target", "forwarded"),
    [
        ("/v1/models", "/v1/models"),
        ("/v1/models?limit=2&after=m%2D1", "/v1/models?limit=2&after=m%2D1"),
        ("/v1/files/a%20b/content?x=1%26y", "/v1/files/a%20b/content?x=1%26y"),
        ("/v1/files/caf%C3%A9", "/v1/files/caf%C3%A9"),
        ("/v1/files/v1..2", "/v1/files/v1..2"),  # dots inside a name are just a name
        ("/v1/models/", "/v1/models/"),
    ],
)
def test_ordinary_paths_are_forwarded_under_the_base(
    upstream: FakeUpstream, served: Any, target: str, forwarded: str
) -> None:
    proxy = served(api_key=KEY)
    status, _ = raw_http(proxy.port, "GET", target)
    assert status in (200, 307, 404)  # the fake's own answer (it serves /v1/models only)
    assert upstream.targets == [forwarded]


def test_base_path_and_query_of_the_upstream_are_kept(upstream: FakeUpstream, served: Any) -> None:
    proxy = served(upstream=f"{upstream.base_url}?api_key=k3y&region=eu")
    upstream.push(Reply.text("ok"))
    assert _post(f"{proxy.url}/v1", {"model": MODEL, "messages": DAMAGED}).status_code == 200
    raw_http(proxy.port, "GET", "/v1/models?limit=2")
    assert upstream.targets == [
        "/v1/chat/completions?api_key=k3y&region=eu",
        "/v1/models?api_key=k3y&region=eu&limit=2",
    ]


# ----------------------------------------------------------------------------- secrets


def test_redact_url_masks_userinfo_and_secret_parameters() -> None:
    url = "https://bob:pa%40ss@api.example.com:8443/v1?key=AIza123&region=eu&access_token=t0k"
    assert redact_url(url) == "https://***@api.example.com:8443/v1?key=***&region=eu&access_token=***"
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"
    # userinfo and an api key are refused together (config.py): one config each
    keyed = url.replace("bob:pa%40ss@", "")
    shown = repr(ProxyConfig(upstream=url)) + repr(ProxyConfig(upstream=keyed, api_key=KEY))
    for secret in ("bob", "pa%40ss", "pa@ss", "AIza123", "t0k", KEY):
        assert secret not in shown
    assert "region=eu" in shown


def test_logging_filter_scrubs_messages_and_tracebacks() -> None:
    redact = Redactor(["pa@ss", KEY])
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1, "HTTP Request: %s", ("http://bob:pa@ss@h/v1",), None)
    try:
        raise RuntimeError(f"boom with {KEY}")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    assert RedactingFilter(redact).filter(record)
    text = logging.Formatter().format(record)
    assert "pa@ss" not in text and KEY not in text and "boom with ***" in text


def test_credentials_are_used_but_never_shown(
    upstream: FakeUpstream, served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The password goes upstream as basic auth; no response or log line of ours shows it.
    (httpx's own INFO line shows the query; the CLI's RedactingFilter covers that.)"""
    caplog.set_level(logging.DEBUG)
    proxy = served(upstream=upstream.base_url.replace("://", "://bob:s3cret-pw@") + "?key=q-s3cret")
    upstream.push(Reply.text("ok"), Reply.error(500, "upstream exploded"))
    assert _post(f"{proxy.url}/v1", {"model": MODEL, "messages": DAMAGED}).status_code == 200
    assert upstream.request_headers[0]["authorization"] == "Basic " + base64.b64encode(b"bob:s3cret-pw").decode()
    assert _post(f"{proxy.url}/v1", {"model": MODEL, "messages": DAMAGED}).status_code == 500
    down = served(upstream=f"http://127.0.0.1:{_closed_port()}/v1?key=q-s3cret", api_key=KEY)
    response = _post(f"{down.url}/v1", {"model": MODEL, "messages": DAMAGED})
    assert response.status_code == 502
    ours = [r for r in caplog.records if r.name.startswith(("context_governor", "uvicorn"))]
    shown = response.text + "\n".join(logging.Formatter().format(r) for r in ours)
    assert "upstream unreachable" in shown
    for secret in ("s3cret-pw", "q-s3cret", KEY):
        assert secret not in shown


def test_cli_banner_and_log_hide_credentials(upstream: FakeUpstream) -> None:
    # (userinfo and --api-key are refused together: the key is the secret shown here)
    upstream_url = upstream.base_url + "?api_key=q-s3cret&region=eu"
    args = [sys.executable, "-m", "context_governor", "proxy", "--upstream", upstream_url,
            "--port", "0", "--api-key", KEY]
    env = {k: v for k, v in os.environ.items() if k != "CONTEXT_GOVERNOR_UPSTREAM_KEY"}
    process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={**env, "PYTHONUNBUFFERED": "1"})
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1 → (\S+)", banner)
        assert match, banner
        assert match.group(2) == f"http://127.0.0.1:{upstream.port}/v1?api_key=***&region=eu"
        url = f"http://127.0.0.1:{match.group(1)}/v1"
        _wait_healthy(url)
        upstream.push(Reply.text("hello"))
        assert _post(url, {"model": MODEL, "messages": DAMAGED}).status_code == 200
        log = log_line(process.stderr)
        assert "POST /v1/chat/completions" in log, log
    finally:
        process.terminate()
        rest = process.communicate(timeout=10)[1]
    for secret in ("s3cret-pw", "q-s3cret", KEY):
        assert secret not in banner + log + rest


def _wait_healthy(url: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(url.removesuffix("/v1") + "/healthz", timeout=1)
            return
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the proxy did not come up"
            time.sleep(0.05)


# ----------------------------------------------------------------------------- limits


def test_body_over_the_limit_gets_413_and_is_not_forwarded(upstream: FakeUpstream, served: Any) -> None:
    proxy = served(limits=LimitsConfig(max_body_bytes=50_000))
    url = f"{proxy.url}/v1"
    big = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x" * 2_000_000}]}).encode()
    for response in (
        _post(url, big),  # Content-Length declared: refused before reading
        httpx.post(f"{url}/chat/completions", content=iter([big[:40_000], big[40_000:]]), timeout=10, headers=JSON),  # chunked
        httpx.post(f"{url}/embeddings", content=big, timeout=10),  # pass-through routes too
    ):
        assert response.status_code == 413, response.text
        error = response.json()["error"]
        assert error["code"] == "request_too_large" and "50000 bytes" in error["message"]
    assert upstream.targets == []
    upstream.push(Reply.text("still here"))  # and the proxy still serves
    assert _post(url, {"model": MODEL, "messages": DAMAGED}).status_code == 200


def test_read_limited_stops_reading_at_the_limit() -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        while True:
            pulled += 1
            yield b"x" * 1000

    async def run(declared: int | None) -> None:
        with pytest.raises(TooLarge):
            await read_limited(endless(), 10_000, declared)

    asyncio.run(run(None))
    assert pulled == 11  # the first chunk past the limit, not one more
    pulled = 0
    asyncio.run(run(10**9))
    assert pulled == 0  # a declared length over the limit: nothing read at all


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"model": "gpt-4o-mini", "temperature": NaN, "messages": [{"role": "user", "content": "hi"}]}', "request body is not valid JSON: NaN"),
        (b'{"model": "gpt-4o-mini", "temperature": Infinity, "messages": [{"role": "user", "content": "hi"}]}', "request body is not valid JSON: Infinity"),
        (b'{"model": "gpt-4o-mini", "top_p": -Infinity, "messages": [{"role": "user", "content": "hi"}]}', "request body is not valid JSON: -Infinity"),
        (b'{"model": "gpt-4o-mini", "temperature": 1e999, "messages": [{"role": "user", "content": "hi"}]}', "request body has a number out of range"),
        (b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "\xff"}]}', "request body is not valid JSON"),
        (b'{"model": "gpt-4o-mini", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "request body is nested too deeply"),
    ],
    ids=["nan", "infinity", "minus-infinity", "overflow", "not-utf8", "deep"],
)
def test_non_json_and_deep_bodies_get_a_400(upstream: FakeUpstream, served: Any, body: bytes, message: str) -> None:
    url = f"{served().url}/v1"
    response = _post(url, body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith(message), response.json()
    assert upstream.targets == []


def test_moderately_deep_extra_fields_never_give_a_500(upstream: FakeUpstream, served: Any) -> None:
    """Deep enough to parse, maybe too deep to govern or re-serialize: a JSON answer either way."""
    url = f"{served().url}/v1"
    for depth in (200, 600, 950):
        nested: Any = "leaf"
        for _ in range(depth):
            nested = {"k": nested}
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "metadata": nested}
        upstream.push(Reply.text("ok"))
        response = _post(url, json.dumps(body).encode())
        assert response.status_code in (200, 400), response.text
        assert "error" in response.json() or response.json()["object"] == "chat.completion"
        if response.status_code == 400:
            upstream.replies.clear()
