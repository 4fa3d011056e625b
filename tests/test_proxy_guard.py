"""Who may spend the key the proxy holds (proxy/_guard.py, proxy/_access.py).

Every request goes over real sockets to a proxy served by uvicorn, with httpx or the
real SDKs (openai, anthropic, google-genai), in front of the fake upstreams, which
record every request they get: "never reaches the upstream" is asserted on what
they recorded. The refusal to start is the real CLI in a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from fake_gemini import FakeGemini, serve
from fake_native import FakeNative, NativeReply
from fake_upstream import FakeUpstream, Reply
from google import genai
from google.genai import errors, types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from test_proxy import DAMAGED, MODEL, Served, log_line
from test_proxy_security import _wait_healthy

from context_governor import ConfigError
from context_governor.proxy import AccessConfig, LimitsConfig, ProxyConfig, create_app
from context_governor.proxy._access import (
    client_keys,
    digest,
    host_allowed,
    is_json,
    matching_name,
    normalize_origin,
    open_relay_refusal,
    origin_refusal,
    parse_client_key,
)

FIXED = "sk-owner-fixed-key-0123456789"
ALICE = "ck-alice-5f0c1b9e2d7a4c3b"
BOB = "ck-bob-8e2d4a6c0b1f3e5d7"
KEYS = {"alice": ALICE, "bob": BOB}
WRONG = "ck-mallory-0000000000000000"
PAGE = "http://localhost:3000"
JSON = {"content-type": "application/json"}
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
CLAUDE = "claude-sonnet-4-5"
GEMINI = "gemini-2.5-flash"
#: every secret the upstreams must never see or a log show
CLIENT_SECRETS = (ALICE, BOB, WRONG)


@pytest.fixture
def served(upstream_server: FakeUpstream) -> Iterator[Any]:
    """Start proxies (ProxyConfig keywords; upstream defaults to the chat fake); gives Served."""
    started: list[Served] = []

    def start(**config: Any) -> Served:
        config.setdefault("upstream", upstream_server.base_url)
        started.append(Served(create_app(ProxyConfig(**config))))
        return started[-1]

    yield start
    for one in started:
        one.stop()


def _error(response: httpx.Response, status: int, code: str) -> str:
    """The OpenAI-shaped refusal's message, after checking its status and code."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    message: str = error["message"]
    return message


# ----------------------------------------------------------------------------- web pages


def test_the_issues_cross_site_simple_post_is_refused_and_reaches_nothing(
    upstream: FakeUpstream, served: Any
) -> None:
    """The curl of the issue: a page's text/plain POST, with the owner's key in the proxy."""
    url = served(api_key=FIXED).url
    body = json.dumps(CHAT)
    page = {"content-type": "text/plain", "origin": "http://evil.example"}
    message = _error(httpx.post(f"{url}/v1/chat/completions", content=body, headers=page), 403, "origin_not_allowed")
    assert "'http://evil.example' is not allowed" in message and "--allow-origin" in message
    # a no-cors request or a form: no Origin, but the browser says where it comes from
    form = {"content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "cross-site"}
    _error(httpx.post(f"{url}/v1/chat/completions", content=body, headers=form), 403, "origin_not_allowed")
    same_site = {**JSON, "sec-fetch-site": "same-site"}  # another port of localhost
    _error(httpx.post(f"{url}/v1/chat/completions", content=body, headers=same_site), 403, "origin_not_allowed")
    # even JSON (a page's fetch after a preflight it would not get) and pass-through paths
    _error(httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"origin": "null"}), 403, "origin_not_allowed")
    _error(httpx.get(f"{url}/v1/models", headers={"origin": "http://evil.example"}), 403, "origin_not_allowed")
    # without a browser's headers, a body that is not declared JSON is refused too
    plain = httpx.post(f"{url}/v1/chat/completions", content=body, headers={"content-type": "text/plain"})
    assert "Content-Type: application/json" in _error(plain, 415, "unsupported_media_type")
    _error(httpx.post(f"{url}/v1/chat/completions", content=body), 415, "unsupported_media_type")
    assert upstream.targets == []
    upstream.push(Reply.text("served"))  # and a program's request is served
    direct = httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"content-type": "application/json; charset=utf-8"})
    assert direct.status_code == 200 and "access-control-allow-origin" not in direct.headers
    assert upstream.request_headers[-1]["authorization"] == f"Bearer {FIXED}"


def test_a_refusal_is_logged_on_one_line_whatever_the_path(
    upstream: FakeUpstream, served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    url = served().url
    path = "/v1beta/models/m%0d%0aFORGED%20LINE:generateContent"
    refused = httpx.post(f"{url}{path}", content=b"{}", headers={"content-type": "text/plain"})
    assert refused.status_code == 415 and refused.json()["error"]["status"] == "INVALID_ARGUMENT"
    lines = [r.getMessage() for r in caplog.records if r.name == "context_governor.proxy"]
    assert lines == [f"POST {path} 415 (not forwarded): {path} takes a JSON body: send "
                     "Content-Type: application/json (got 'text/plain')"]  # fmt: skip
    assert upstream.targets == []


def test_preflights_are_answered_for_allowed_origins_only(upstream: FakeUpstream, served: Any) -> None:
    url = served(api_key=FIXED, access=AccessConfig(allow_origins=(PAGE + "/",))).url
    asked = {
        "origin": PAGE,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-stainless-os",
    }
    preflight = httpx.options(f"{url}/v1/chat/completions", headers=asked)
    assert preflight.status_code == 204, preflight.text
    assert preflight.headers["access-control-allow-origin"] == PAGE
    assert preflight.headers["access-control-allow-headers"] == asked["access-control-request-headers"]
    assert "POST" in preflight.headers["access-control-allow-methods"]
    refused = httpx.options(f"{url}/v1/chat/completions", headers={**asked, "origin": "http://evil.example"})
    _error(refused, 403, "origin_not_allowed")
    assert "access-control-allow-origin" not in refused.headers
    anthropic_shape = httpx.options(f"{url}/v1/messages", headers={**asked, "origin": "http://evil.example"})
    assert anthropic_shape.json()["error"]["type"] == "permission_error"
    assert upstream.targets == []  # a preflight is never forwarded
    upstream.push(Reply.text("for the page"))
    allowed = httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"origin": PAGE, "sec-fetch-site": "cross-site"})
    assert allowed.status_code == 200, allowed.text
    assert allowed.headers["access-control-allow-origin"] == PAGE
    assert allowed.headers["access-control-expose-headers"] == "*"
    assert allowed.headers["x-context-governor-tokens-after"]


def test_a_forged_host_is_refused_on_loopback(upstream: FakeUpstream, served: Any) -> None:
    """A DNS-rebound page sends its own name as Host: refused; loopback names and
    --allow-host names are served."""
    proxy = served(api_key=FIXED, access=AccessConfig(allow_hosts=("llm.example.com",)))
    url = proxy.url
    for host in ("attacker.example", f"attacker.example:{proxy.port}", "127.0.0.1.nip.io", "192.168.1.7"):
        refused = httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"host": host})
        assert "--allow-host" in _error(refused, 421, "host_not_allowed")
    gemini = httpx.post(f"{url}/v1beta/models/{GEMINI}:generateContent", json={}, headers={"host": "evil.example"})
    assert gemini.status_code == 421 and gemini.json()["error"]["status"] == "PERMISSION_DENIED"
    assert upstream.targets == []
    for host in (f"localhost:{proxy.port}", "LocalHost.", f"[::1]:{proxy.port}", "app.localhost", "llm.example.com:443"):
        upstream.push(Reply.text("ok"))
        assert httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"host": host}).status_code == 200
    assert len(upstream.targets) == 5


# ----------------------------------------------------------------------------- client keys


def test_chat_clients_must_present_a_client_key_which_never_goes_upstream(
    upstream: FakeUpstream, served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = served(api_key=FIXED, access=AccessConfig(client_keys=KEYS)).url
    missing = httpx.post(f"{url}/v1/chat/completions", json=CHAT)
    assert _error(missing, 401, "invalid_api_key").startswith("no client key")
    wrong = httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"authorization": f"Bearer {WRONG}"})
    assert _error(wrong, 401, "invalid_api_key").startswith("a wrong client key")
    assert missing.json()["error"]["type"] == "authentication_error"
    with pytest.raises(openai.AuthenticationError):
        _openai(url, WRONG).chat.completions.create(model=MODEL, messages=DAMAGED)
    assert upstream.targets == []
    upstream.push(Reply.text("hello alice"), Reply.text("hello bob"))
    answer = _openai(url, ALICE).chat.completions.create(model=MODEL, messages=DAMAGED)
    assert answer.choices[0].message.content == "hello alice"
    # a client key works in any of the places an SDK sends its key, on any route
    assert httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"x-api-key": BOB}).status_code == 200
    assert _openai(url, BOB).models.list().data[0].id == "fake-model"  # passed through
    for headers in upstream.request_headers:
        assert headers["authorization"] == f"Bearer {FIXED}" and "x-api-key" not in headers
    _never_seen(json.dumps(upstream.request_headers) + json.dumps(upstream.targets))
    lines = [r.getMessage() for r in caplog.records if r.name == "context_governor.proxy"]
    assert any(line.startswith("client=alice POST /v1/chat/completions") for line in lines), lines
    assert any(line.startswith("client=bob GET /v1/models") for line in lines), lines
    _never_seen(caplog.text)


def test_without_an_api_key_clients_send_their_own_and_the_client_key_apart(
    upstream: FakeUpstream, served: Any
) -> None:
    """Clients bring their provider key; the client key travels in our own header (or as
    the API key: either way, it is dropped before forwarding)."""
    url = served(access=AccessConfig(client_keys=KEYS)).url
    upstream.push(Reply.text("ok"))
    client = openai.OpenAI(
        base_url=f"{url}/v1", api_key="sk-users-own-provider-key", max_retries=0,
        default_headers={"x-context-governor-client-key": ALICE},
    )  # fmt: skip
    client.chat.completions.create(model=MODEL, messages=DAMAGED)
    headers = upstream.request_headers[-1]
    assert headers["authorization"] == "Bearer sk-users-own-provider-key"
    assert "x-context-governor-client-key" not in headers
    _never_seen(json.dumps(upstream.request_headers))


@pytest.fixture
def native(native_server: FakeNative) -> Iterator[FakeNative]:
    native_server.reset()
    yield native_server
    assert not native_server.rejections, native_server.rejections


def test_the_anthropic_sdk_and_the_responses_api_with_client_keys(native: FakeNative, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    served = Served(create_app(ProxyConfig(upstream=native.base_url, api_key=FIXED, access=AccessConfig(client_keys=KEYS))))
    try:
        right = anthropic.Anthropic(base_url=served.url, api_key=ALICE, max_retries=0, timeout=20)
        native.push(NativeReply.answer("hi from claude"))
        message = right.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        assert message.content[0].type == "text" and message.content[0].text == "hi from claude"
        wrong = anthropic.Anthropic(base_url=served.url, api_key=WRONG, max_retries=0, timeout=20)
        with pytest.raises(anthropic.AuthenticationError) as raised:
            wrong.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        body: Any = raised.value.body
        assert body["type"] == "error" and body["error"]["type"] == "authentication_error"
        assert body["error"]["message"].startswith("a wrong client key")
        missing = httpx.post(f"{served.url}/v1/messages", json={}, headers={"anthropic-version": "2023-06-01"})
        assert missing.status_code == 401 and missing.json()["error"]["type"] == "authentication_error"
        page = httpx.post(f"{served.url}/v1/messages", json={}, headers={"x-api-key": ALICE, "origin": "http://evil.example"})
        assert page.status_code == 403 and page.json()["error"]["type"] == "permission_error"
        # the Responses API through the openai SDK, on the same proxy
        native.push(NativeReply.answer("hi from gpt"))
        assert _openai(served.url, BOB).responses.create(model="gpt-5-mini", input="hi").output_text == "hi from gpt"
        with pytest.raises(openai.AuthenticationError):
            _openai(served.url, WRONG).responses.create(model="gpt-5-mini", input="hi")
    finally:
        served.stop()
    assert native.targets == ["/v1/messages", "/v1/responses"]
    assert native.request_headers[0]["x-api-key"] == FIXED
    assert native.request_headers[1]["authorization"] == f"Bearer {FIXED}"
    _never_seen(json.dumps(native.request_headers) + caplog.text)


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    yield from serve(FakeGemini(calls=0))


def _genai(url: str, key: str) -> genai.Client:
    """A client to keep in a variable: one collected mid-call closes its connections."""
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=url))


def test_the_google_genai_sdk_with_client_keys(gemini: FakeGemini, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    config = ProxyConfig(upstream=gemini.base_url + "/v1beta", api_key=FIXED, access=AccessConfig(client_keys=KEYS))
    served = Served(create_app(config))
    try:
        right, wrong = _genai(served.url, BOB), _genai(served.url, WRONG)  # kept: see _genai
        answer = right.models.generate_content(model=GEMINI, contents="hello")
        assert answer.text
        with pytest.raises(errors.ClientError) as raised:
            wrong.models.generate_content(model=GEMINI, contents="hello")
        assert (raised.value.code, raised.value.status) == (401, "UNAUTHENTICATED")
        # Gemini's other way to send a key: ?key= (never logged, never forwarded)
        path = f"{served.url}/v1beta/models/{GEMINI}:generateContent"
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        assert httpx.post(f"{path}?key={ALICE}&alt=json", json=body).status_code == 200
        refused = httpx.post(f"{path}?key={WRONG}", json=body)
        assert refused.status_code == 401 and refused.json()["error"]["status"] == "UNAUTHENTICATED"
        missing = httpx.post(path, json=body)
        assert missing.json()["error"] == {"code": 401, "status": "UNAUTHENTICATED", "message": missing.json()["error"]["message"]}
        assert missing.json()["error"]["message"].startswith("no client key")
    finally:
        served.stop()
    assert len(gemini.paths) == 2
    assert [h["x-goog-api-key"] for h in gemini.headers] == [FIXED, FIXED]
    assert gemini.queries[1] == {"alt": ["json"]}
    _never_seen(json.dumps(gemini.headers) + json.dumps(gemini.queries) + caplog.text)
    assert "client=alice POST /v1beta/models/" in caplog.text


def _openai(url: str, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=20)


def _never_seen(text: str) -> None:
    for secret in CLIENT_SECRETS:
        assert secret not in text


# ----------------------------------------------------------------------------- limits


def test_a_burst_past_the_limits_gets_429s_and_leaves_others_served(upstream: FakeUpstream, served: Any) -> None:
    """alice bursts 8 slow requests at a limit of 3 per client (5 in all): 3 are
    forwarded, 5 refused at once; bob still gets the 2 slots left, not a third."""
    url = served(access=AccessConfig(client_keys=KEYS), limits=LimitsConfig(max_in_flight=5, max_in_flight_per_client=3)).url
    upstream.push(*[Reply.text("slow", delay=1.5) for _ in range(5)])

    async def post(client: httpx.AsyncClient, key: str) -> httpx.Response:
        return await client.post(f"{url}/v1/chat/completions", json=CHAT, headers={"authorization": f"Bearer {key}"})

    async def burst() -> tuple[list[httpx.Response], list[httpx.Response]]:
        async with httpx.AsyncClient(timeout=20) as client:
            alice = [asyncio.create_task(post(client, ALICE)) for _ in range(8)]
            while len(upstream.requests) < 3:  # alice's three are in flight upstream
                await asyncio.sleep(0.01)
            bob = [asyncio.create_task(post(client, BOB)) for _ in range(3)]
            return list(await asyncio.gather(*alice)), list(await asyncio.gather(*bob))

    alice, bob = asyncio.run(burst())
    assert sorted(r.status_code for r in alice) == [200] * 3 + [429] * 5
    assert sorted(r.status_code for r in bob) == [200, 200, 429]
    refused = [r for r in [*alice, *bob] if r.status_code == 429]
    assert all(r.headers["retry-after"] == "1" for r in refused)
    messages = [_error(r, 429, "too_many_requests_in_flight") for r in refused]
    assert sum("client alice has 3 requests in flight" in m for m in messages) == 5
    assert sum("the proxy has 5 requests in flight" in m for m in messages) == 1
    assert len(upstream.targets) == 5
    upstream.push(Reply.text("after"))  # the slots are given back
    assert httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"x-api-key": ALICE}).status_code == 200
    assert httpx.get(f"{url}/healthz").status_code == 200  # no key, never counted


# ----------------------------------------------------------------------------- property

HOSTS = [("127.0.0.1", True), ("localhost", True), ("[::1]", True), ("dev.localhost", True),
         ("team.example.com", True), ("attacker.example", False), ("127.0.0.1.evil.example", False),
         ("10.0.0.5", False)]  # fmt: skip
ORIGINS = [(None, True), (PAGE, True), ("http://evil.example", False), ("null", False),
           ("http://localhost:8080", False)]  # fmt: skip
SITES = [(None, True), ("none", True), ("same-origin", True), ("cross-site", False), ("same-site", False)]
TYPES = [("application/json", True), ("application/json; charset=utf-8", True),
         ("application/merge-patch+json", True), ("text/plain", False),
         ("application/x-www-form-urlencoded", False), ("multipart/form-data; boundary=x", False),
         (None, False)]  # fmt: skip
KEY_PLACES = ["authorization", "x-api-key", "x-goog-api-key", "x-context-governor-client-key", "?key"]
PRESENTED = [(None, False), (ALICE, True), (BOB, True), (WRONG, False), (ALICE[:-1], False), ("", False)]


@pytest.fixture(scope="module")
def guarded(upstream_server: FakeUpstream) -> Iterator[str]:
    access = AccessConfig(client_keys=KEYS, allow_origins=(PAGE,), allow_hosts=("team.example.com",))
    config = ProxyConfig(upstream=upstream_server.base_url, api_key=FIXED, access=access)
    served = Served(create_app(config))
    yield served.url
    served.stop()


@settings(max_examples=examples(400, 120), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    host=st.sampled_from(HOSTS),
    origin=st.sampled_from(ORIGINS),
    site=st.sampled_from(SITES),
    content_type=st.sampled_from(TYPES),
    place=st.sampled_from(KEY_PLACES),
    key=st.sampled_from(PRESENTED),
    governed=st.booleans(),
)
def test_no_refused_request_ever_reaches_the_upstream(
    upstream_server: FakeUpstream,
    guarded: str,
    host: tuple[str, bool],
    origin: tuple[str | None, bool],
    site: tuple[str | None, bool],
    content_type: tuple[str | None, bool],
    place: str,
    key: tuple[str | None, bool],
    governed: bool,
) -> None:
    """Any mix of Host, Origin, Sec-Fetch-Site, content type and key: the answer is the
    first refusal due, in order, and the upstream sees the request if and only if none
    was, never with a client key in it."""
    upstream_server.reset()
    headers: dict[str, str] = {"host": host[0]}
    if origin[0] is not None:
        headers["origin"] = origin[0]
    if site[0] is not None:
        headers["sec-fetch-site"] = site[0]
    if content_type[0] is not None:
        headers["content-type"] = content_type[0]
    query = ""
    if key[0] is not None:
        if place == "?key":
            query = f"?key={key[0]}"
        else:
            headers[place] = f"Bearer {key[0]}".strip() if place == "authorization" else key[0]
    page_ok = origin[1] if origin[0] is not None else site[1]
    expected = (421 if not host[1] else 403 if not page_ok else 401 if not key[1]
                else 415 if governed and not content_type[1] else 200)  # fmt: skip
    if expected == 200 and governed:
        upstream_server.push(Reply.text("ok"))
    path = "/v1/chat/completions" if governed else "/v1/models"
    method = "POST" if governed else "GET"
    content = json.dumps(CHAT).encode() if governed else None
    response = httpx.request(method, f"{guarded}{path}{query}", headers=headers, content=content, timeout=10)
    assert response.status_code == expected, (response.status_code, response.text)
    assert len(upstream_server.targets) == (1 if expected == 200 else 0)
    assert not upstream_server.violations and not upstream_server.replies
    _never_seen(json.dumps(upstream_server.request_headers) + json.dumps(upstream_server.targets))


# ----------------------------------------------------------------------------- the CLI


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_GOVERNOR_")}
    command = [sys.executable, "-m", "context_governor", "proxy", *args]
    return subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**base, **(env or {}), "PYTHONUNBUFFERED": "1"})


def test_the_cli_refuses_to_start_an_open_relay(upstream_server: FakeUpstream) -> None:
    process = _cli("--upstream", upstream_server.base_url, "--host", "0.0.0.0", "--port", "0", "--api-key", FIXED)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: refusing to listen on 0.0.0.0 with --api-key"), err
    assert "--client-key" in lines[0] and "--allow-open-relay" in lines[0] and FIXED not in err


def test_the_cli_serves_on_all_addresses_with_client_keys_from_a_file_and_the_env(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"# the team\nalice:{ALICE}\n\n")
    env = {"CONTEXT_GOVERNOR_CLIENT_KEYS": f"bob:{BOB}"}
    process = _cli("--upstream", upstream.base_url, "--host", "0.0.0.0", "--port", "0", "--api-key", FIXED,
                   "--client-keys-file", str(keys), env=env)  # fmt: skip
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        match = re.search(r"http://0\.0\.0\.0:(\d+)/v1", banner)
        assert match, banner
        url = f"http://127.0.0.1:{match.group(1)}"
        _wait_healthy(f"{url}/v1")
        upstream.push(Reply.text("a"), Reply.text("b"))
        for key in (ALICE, BOB):
            assert httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"x-api-key": key}).status_code == 200
        assert httpx.post(f"{url}/v1/chat/completions", json=CHAT, headers={"x-api-key": WRONG}).status_code == 401
        logged = [log_line(process.stderr), process.stderr.readline(), process.stderr.readline()]
    finally:
        process.terminate()
        rest = process.communicate(timeout=10)[1]
    assert "client=alice POST /v1/chat/completions" in logged[0] and "client=bob" in logged[1], logged
    assert "401 (not forwarded)" in logged[2], logged
    _never_seen(banner + "".join(logged) + rest)
    assert all(h["authorization"] == f"Bearer {FIXED}" for h in upstream.request_headers)


def test_the_cli_starts_an_open_relay_only_when_told_and_says_so(upstream_server: FakeUpstream) -> None:
    process = _cli("--upstream", upstream_server.base_url, "--host", "0.0.0.0", "--port", "0",
                   "--api-key", FIXED, "--allow-open-relay")  # fmt: skip
    try:
        assert process.stderr is not None
        warning, banner = process.stderr.readline(), process.stderr.readline()
    finally:
        process.terminate()
        process.communicate(timeout=10)
    assert warning.startswith("warning: open relay on 0.0.0.0"), warning
    assert "governing proxy on http://0.0.0.0:" in banner, banner


# ----------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("host", "server", "allowed", "served"),
    [
        ("127.0.0.1:8787", "127.0.0.1", (), True),
        ("localhost", "127.0.0.1", (), True),
        ("LOCALHOST.:8787", "127.0.0.1", (), True),
        ("[::1]:8787", "::1", (), True),
        ("[::ffff:127.0.0.1]", "127.0.0.1", (), True),
        ("evil.example", "127.0.0.1", (), False),
        ("evil.example", "::ffff:127.0.0.2", (), False),
        ("192.168.1.5", "127.0.0.1", (), False),  # a loopback address serves loopback names
        ("evil.example", None, (), False),  # a Unix socket is as local
        ("llm.example.com", "127.0.0.1", ("llm.example.com",), True),
        ("anything.example", "127.0.0.1", ("*",), True),
        (None, "127.0.0.1", (), True),
        # on a public address: IP literals, and names unless --allow-host lists them
        ("10.0.0.5:8787", "10.0.0.5", (), True),
        ("llm.example.com", "10.0.0.5", (), True),
        ("llm.example.com", "10.0.0.5", ("llm.example.com",), True),
        ("rebound.example", "10.0.0.5", ("llm.example.com",), False),
        ("10.0.0.5", "10.0.0.5", ("llm.example.com",), True),
    ],
)
def test_host_rules(host: str | None, server: str | None, allowed: tuple[str, ...], served: bool) -> None:
    assert host_allowed(host, server, allowed) is served


def test_origin_and_content_type_rules() -> None:
    allowed = {normalize_origin("HTTP://LocalHost:3000/"), normalize_origin("https://app.example:443")}
    assert allowed == {"http://localhost:3000", "https://app.example"}
    assert origin_refusal("http://localhost:3000", "cross-site", allowed) is None
    assert origin_refusal("https://app.example", None, allowed) is None
    assert origin_refusal("http://localhost:3001", None, allowed) is not None
    assert origin_refusal(None, "cross-site", allowed) is not None
    assert origin_refusal(None, "same-origin", allowed) is None and origin_refusal(None, None, allowed) is None
    for bad in ("localhost:3000", "http://a/b", "*", "ftp://x"):
        with pytest.raises(ConfigError):
            normalize_origin(bad)
    assert is_json("Application/JSON; charset=UTF-8") and is_json("application/vnd.api+json")
    assert not any(is_json(t) for t in (None, "", "text/plain", "text/json", "application/jsonp"))


def test_client_key_options() -> None:
    assert parse_client_key(f"alice:{ALICE}", 1) == ("alice", ALICE)
    assert parse_client_key(ALICE, 2) == ("client-2", ALICE)
    assert client_keys([f"alice:{ALICE}", "# comment", "", BOB]) == {"alice": ALICE, "client-2": BOB}
    for entries, said in (
        ([f"a:{ALICE}", f"a:{BOB}"], "given twice"),
        ([f"a:{ALICE}", f"b:{ALICE}"], "same key as another"),
        (["a:short"], "shorter than 16"),
        ([f"a:{ALICE} x"], "printable ASCII"),
    ):
        with pytest.raises(ConfigError, match=said) as raised:
            client_keys(entries)
        assert ALICE not in str(raised.value) and BOB not in str(raised.value)
    keys = [(name, digest(key)) for name, key in KEYS.items()]
    assert matching_name(BOB, keys) == "bob" and matching_name(WRONG, keys) is None
    config = ProxyConfig(upstream="http://127.0.0.1:9/v1", access=AccessConfig(client_keys=KEYS, allow_origins=(PAGE,)))
    assert ALICE not in repr(config) and "'alice': '***'" in repr(config)
    assert ProxyConfig.from_json(config.to_json()) == config  # crosses to worker processes
    assert config.redactor()(f"saw {ALICE}") == "saw ***"


@pytest.mark.parametrize(
    ("host", "api_key", "keys", "refused"),
    [
        ("127.0.0.1", True, False, False),
        ("localhost", True, False, False),
        ("::1", True, False, False),
        ("0.0.0.0", True, False, True),
        ("::", True, False, True),
        ("192.168.1.5", True, False, True),
        ("myhost.lan", True, False, True),
        ("0.0.0.0", True, True, False),
        ("0.0.0.0", False, False, False),  # clients bring their own keys: nothing to spend
    ],
)
def test_open_relay_rule(host: str, api_key: bool, keys: bool, refused: bool) -> None:
    reason = open_relay_refusal(host, api_key, keys)
    assert (reason is not None) is refused
    assert reason is None or "\n" not in reason
