"""The proxy's Gemini routes, driven by the real google-genai SDK against a fake Gemini.

``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` (and the
same under ``/v1/``, where the SDK calls by default) are governed by the one handler the
other APIs use: the model comes from the path, streaming from the path, the key from
``x-goog-api-key`` or ``?key=``, errors in Google's shape. The fake (tests/fake_gemini.py)
validates every request it receives (GE rules and the window) and answers 400 if one is
invalid, so "no errors recorded" means every request the proxy forwarded was legal.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import string
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_gemini import WINDOW, FakeGemini, serve
from gemini_bodies import sessions
from google import genai
from google.genai import errors, types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from test_proxy import Served

from context_governor import govern_request
from context_governor.proxy import (
    GoverningConfig,
    LimitsConfig,
    ProxyConfig,
    TimeoutsConfig,
    create_app,
)
from context_governor.proxy._governing import encode
from context_governor.proxy._redact import QuerySecretFilter

MODEL = "gemini-2.5-flash"
SIGNED_MODEL = "gemini-3-flash-preview"
SECRET = "AIzaSy-client-secret-key-0123456789"
FIXED = "AIzaSy-fixed-proxy-key-9876543210"
BIG = "lorem ipsum dolor " * 250


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    yield from serve(FakeGemini())


@pytest.fixture
def proxy(fake: FakeGemini) -> Iterator[Any]:
    """Start proxies in front of the fake (ProxyConfig keywords); gives the root URL."""
    started: list[Served] = []

    def start(**config: Any) -> str:
        config.setdefault("upstream", fake.base_url + "/v1beta")  # as Google's base URL
        config.setdefault("context_window", WINDOW)
        served = Served(create_app(ProxyConfig(**config)))
        started.append(served)
        return served.url

    yield start
    for served in started:
        served.stop()


def _client(url: str, version: str | None = None) -> genai.Client:
    options = types.HttpOptions(base_url=url, api_version=version)
    return genai.Client(api_key=SECRET, http_options=options)


CONFIG = types.GenerateContentConfig(
    system_instruction="You are a careful file agent.",
    tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
        name="read_file", description="Read a file",
        parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}})])],
    max_output_tokens=512,
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)  # fmt: skip


def _results(turn: types.Content) -> types.Content:
    calls = [p.function_call for p in turn.parts or () if p.function_call]
    return types.Content(role="user", parts=[
        types.Part.from_function_response(name=c.name or "", response={
            "output": f"{(c.args or {}).get('path')}: {BIG}"})
        for c in calls])  # fmt: skip


def _joined(chunks: list[types.GenerateContentResponse]) -> types.Content:
    """A streamed answer's parts as one model turn (what an agent keeps)."""
    parts = [p for c in chunks for p in (c.candidates[0].content.parts or ())]  # type: ignore[index, union-attr]
    return types.Content(role="model", parts=parts)


def _session(
    client: genai.Client, model: str, stream: bool, turns: int = 30
) -> list[types.Content]:
    """Call, answer every function call with a big result, until the model stops calling."""
    history = [types.Content(role="user", parts=[types.Part(text="Summarise every file.")])]
    for _ in range(turns):
        if stream:
            chunks = list(
                client.models.generate_content_stream(model=model, contents=history, config=CONFIG)
            )
            turn = _joined(chunks)
        else:
            response = client.models.generate_content(model=model, contents=history, config=CONFIG)
            turn = response.candidates[0].content  # type: ignore[index, assignment]
            assert response.sdk_http_response is not None
            headers = response.sdk_http_response.headers or {}
            assert int(headers["x-context-governor-tokens-after"]) <= WINDOW
        assert turn is not None
        history.append(turn)
        if not any(p.function_call for p in turn.parts or ()):
            return history
        history.append(_results(turn))
    raise AssertionError("the session did not end")


@pytest.mark.parametrize(
    ("model", "version", "stream"),
    [
        (SIGNED_MODEL, None, False),
        (MODEL, "v1beta", False),
        (SIGNED_MODEL, None, True),
        (MODEL, "v1beta", True),
    ],
)
def test_a_tool_session_that_outgrows_the_window_stays_legal(
    fake: FakeGemini, proxy: Any, model: str, version: str | None, stream: bool
) -> None:
    """Function calls with thought signatures, sync and streaming, under /v1/ (the SDK's
    default) and /v1beta/: every request the fake saw was valid and inside the window,
    the signed parts came back as issued, and old turns were left out."""
    history = _session(_client(proxy(), version), model, stream)
    assert fake.errors == []
    assert fake.served == fake.calls + 1
    assert len(history) == 2 * fake.calls + 2
    assert len(fake.bodies[-1]["contents"]) < len(history) - 1  # the window was outgrown
    assert {p.rsplit(":", 1)[1] for p in fake.paths} == {
        "streamGenerateContent" if stream else "generateContent"
    }
    # the upstream's base says the version, whichever the client called
    assert all(p.startswith(f"/v1beta/models/{model}:") for p in fake.paths)
    if stream:
        assert all(q.get("alt") == ["sse"] for q in fake.queries)
    assert all(h["x-goog-api-key"] == SECRET for h in fake.headers)  # forwarded unchanged


def test_a_long_session_at_a_small_window_never_gets_a_rejection(
    fake: FakeGemini, proxy: Any
) -> None:
    fake.calls = examples(40, 20)
    history = _session(_client(proxy(context_window=4_000)), SIGNED_MODEL, False, turns=200)
    fake.window = 4_000
    assert fake.errors == []
    assert fake.served == fake.calls + 1
    assert len(history) == 2 * fake.calls + 2
    assert max(len(json.dumps(b)) for b in fake.bodies) < 4 * 4_000 * 2  # bounded, not growing


def test_the_async_client_and_its_stream_are_governed_too(fake: FakeGemini, proxy: Any) -> None:
    client = _client(proxy())
    history = [types.Content(role="user", parts=[types.Part(text="go")])]

    async def run() -> None:
        for step in range(6):
            if step % 2:
                stream = await client.aio.models.generate_content_stream(
                    model=SIGNED_MODEL, contents=history, config=CONFIG
                )
                turn = _joined([chunk async for chunk in stream])
            else:
                response = await client.aio.models.generate_content(
                    model=SIGNED_MODEL, contents=history, config=CONFIG
                )
                turn = response.candidates[0].content  # type: ignore[index, assignment]
            assert turn is not None
            history.extend([turn, _results(turn)])

    asyncio.run(run())
    assert fake.errors == []
    assert fake.served == 6
    assert len(fake.bodies[-1]["contents"]) < len(history)


# -- what the upstream receives is exactly govern_request's output -----------------------------


@settings(max_examples=examples(20, 8), deadline=None, suppress_health_check=list(HealthCheck))
@given(body=sessions(max_turns=6))
def test_the_upstream_receives_exactly_what_govern_request_makes(body: dict[str, Any]) -> None:
    """Differential: the bytes the fake received are govern_request's body for the path's
    model and the proxy's window, serialized once (the proxy adds no logic of its own)."""
    for fake in serve(FakeGemini()):
        served = Served(
            create_app(ProxyConfig(upstream=fake.base_url + "/v1", context_window=3_000))
        )
        try:
            path = f"/v1beta/models/{SIGNED_MODEL}:generateContent"
            reply = httpx.post(served.url + path, json=body, headers={"x-goog-api-key": SECRET})
        finally:
            served.stop()
        expected = govern_request(
            body, api="gemini", profile="gemini", model=SIGNED_MODEL, context_window=3_000,
            compaction="cache",
        )  # fmt: skip
        assert fake.raw == [encode(expected.body)]
        assert reply.headers["x-context-governor-tokens-after"] == str(expected.report.tokens_after)


# -- errors in Google's shape -------------------------------------------------------------------


def _google_error(reply: httpx.Response, code: int, status: str) -> str:
    assert reply.status_code == code
    error = reply.json()["error"]
    assert set(error) == {"code", "message", "status"}
    assert (error["code"], error["status"]) == (code, status)
    message: str = error["message"]
    return message


def test_errors_are_in_googles_shape_and_the_sdk_raises_them(fake: FakeGemini, proxy: Any) -> None:
    url = proxy(limits=LimitsConfig(max_body_bytes=50_000))
    path = f"{url}/v1beta/models/{MODEL}:generateContent"
    assert "not valid JSON" in _google_error(
        httpx.post(path, content=b"{nope", headers={"content-type": "application/json"}),
        400,
        "INVALID_ARGUMENT",
    )
    missing = _google_error(httpx.post(path, json={"model": MODEL}), 400, "INVALID_ARGUMENT")
    assert "'contents' is a required property" in missing
    large = {"contents": [{"role": "user", "parts": [{"text": "x" * 60_000}]}]}
    assert "limit" in _google_error(httpx.post(path, json=large), 413, "INVALID_ARGUMENT")
    client = _client(url)  # kept: a client collected mid-call closes its connections
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(
            model=MODEL, contents=[{"role": "user", "parts": [{"text": "x" * 60_000}]}]
        )
    assert raised.value.code == 413 and raised.value.status == "INVALID_ARGUMENT"
    # the upstream's own errors come back unchanged
    fake.fail_with = (
        429,
        {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}},
    )
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(model=MODEL, contents="hi")
    assert raised.value.code == 429 and raised.value.status == "RESOURCE_EXHAUSTED"
    assert fake.errors == []


def test_an_unreachable_upstream_is_unavailable_and_a_silent_one_deadline_exceeded(
    fake: FakeGemini, proxy: Any
) -> None:
    url = proxy(upstream=_dead_url())
    reply = httpx.post(f"{url}/v1beta/models/{MODEL}:generateContent", json={"contents": []})
    assert "unreachable" in _google_error(reply, 502, "UNAVAILABLE")
    client = _client(url)
    with pytest.raises(errors.ServerError) as raised:
        client.models.generate_content(model=MODEL, contents="hi")
    assert raised.value.code == 502 and raised.value.status == "UNAVAILABLE"
    fake.delay = 2.0
    url = proxy(timeouts=TimeoutsConfig(read=0.3))
    reply = httpx.post(f"{url}/v1/models/{MODEL}:generateContent", json={"contents": []})
    assert "timed out" in _google_error(reply, 504, "DEADLINE_EXCEEDED")


@pytest.mark.parametrize("govern_in", ["thread", "process"])
def test_the_window_is_the_paths_models(fake: FakeGemini, proxy: Any, govern_in: str) -> None:
    """--model-window applies to the model the path names (a body's "model" does not
    override it), in either place governance runs."""
    url = proxy(
        context_window=None, model_windows={"gemini-small": 3_000},
        governing=GoverningConfig(run_in=govern_in, processes=1),
    )  # fmt: skip
    body = {"model": "gemini-2.5-flash", "contents": [{"role": "user", "parts": [{"text": "go"}]}],
            "generationConfig": {"maxOutputTokens": 500}}  # fmt: skip
    small = httpx.post(f"{url}/v1beta/models/gemini-small:generateContent", json=body)
    known = httpx.post(f"{url}/v1beta/models/{MODEL}:generateContent", json=body)
    assert int(small.headers["x-context-governor-budget"]) < 3_000
    assert int(known.headers["x-context-governor-budget"]) > 1_000_000 - 10_000  # its own window


def _dead_url() -> str:
    """The URL of a localhost port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_stream_the_upstream_breaks_off_ends_with_one_error_event(
    fake: FakeGemini, proxy: Any
) -> None:
    url = proxy()
    fake.cut_after = 1
    path = f"{url}/v1beta/models/{SIGNED_MODEL}:streamGenerateContent?alt=sse"
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    with httpx.stream("POST", path, json=body, headers={"x-goog-api-key": SECRET}) as reply:
        assert reply.status_code == 200
        text = reply.read().decode()
    events = [e for e in text.replace("\r\n", "\n").split("\n\n") if e.strip()]
    assert len(events) == 2 and "[DONE]" not in text
    assert events[0].startswith("data: ") and "functionCall" in events[0]
    last = json.loads(events[1].removeprefix("data: "))
    assert last["error"]["code"] == 502 and last["error"]["status"] == "UNAVAILABLE"
    assert "broke off" in last["error"]["message"]
    fake.cut_after = 1  # the SDK raises it as a ServerError after the first chunk
    got = []
    client = _client(url)
    with pytest.raises(errors.ServerError) as raised:
        for chunk in client.models.generate_content_stream(model=SIGNED_MODEL, contents="go"):
            got.append(chunk)
    assert len(got) == 1 and raised.value.code == 502


# -- the other streaming form: one JSON array, without ?alt=sse --------------------------------


def _long_body(turns: int = 8) -> dict[str, Any]:
    """A text history past a 3000-token window: the proxy has to cut it."""
    contents = []
    for turn in range(turns):
        contents.append({"role": "user", "parts": [{"text": f"question {turn}: {BIG}"}]})
        contents.append({"role": "model", "parts": [{"text": f"answer {turn}"}]})
    contents.append({"role": "user", "parts": [{"text": "Summarise."}]})
    return {"contents": contents, "generationConfig": {"maxOutputTokens": 300}}


@pytest.mark.parametrize("query", ["", "?alt=json", "?alt=sse"])
def test_both_streaming_forms_are_governed_alike_and_relayed_losslessly(
    fake: FakeGemini, proxy: Any, query: str
) -> None:
    """``:streamGenerateContent`` with and without ``?alt=sse``: the upstream receives
    govern_request's body either way, the report headers come back, and the answer's
    bytes arrive exactly as the upstream sent them (a JSON array, or events)."""
    url = proxy(context_window=3_000)
    body = _long_body()
    path = f"{url}/v1beta/models/{MODEL}:streamGenerateContent{query}"
    with httpx.stream("POST", path, json=body, headers={"x-goog-api-key": SECRET}) as reply:
        assert reply.status_code == 200
        received = reply.read()
        headers = reply.headers
    expected = govern_request(
        body, api="gemini", profile="gemini", model=MODEL, context_window=3_000, compaction="cache"
    )
    assert expected.report.actions  # it had to cut
    assert fake.raw == [encode(expected.body)]
    assert headers["x-context-governor-tokens-after"] == str(expected.report.tokens_after)
    assert received == fake.streamed[-1]
    if query == "?alt=sse":
        assert headers["content-type"] == "text/event-stream"
        chunks = [json.loads(e[len("data: "):]) for e in received.decode().split("\r\n\r\n") if e]
    else:
        assert headers["content-type"].startswith("application/json")
        chunks = json.loads(received)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP" and "usageMetadata" in chunks[-1]


def test_an_array_stream_the_upstream_breaks_off_ends_with_an_error_element(
    fake: FakeGemini, proxy: Any
) -> None:
    """As a broken event stream ends with an error event, a broken array ends with
    Google's error as its last element and the closing ``]``: the client parses a
    complete array, its whole elements as sent, then the error; the half element
    the upstream got out is not relayed."""
    url = proxy()
    fake.cut_after = 1  # the first element whole, half of the second, then the break
    path = f"{url}/v1beta/models/{SIGNED_MODEL}:streamGenerateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    with httpx.stream("POST", path, json=body, headers={"x-goog-api-key": SECRET}) as reply:
        assert reply.status_code == 200
        received = reply.read()
    sent = fake.streamed[-1]
    first = sent[: sent.index(b",\r\n")]  # what the upstream sent of whole elements
    assert received.startswith(first) and sent[len(first):] not in received
    chunks = json.loads(received)
    assert len(chunks) == 2 and "functionCall" in json.dumps(chunks[0])
    error = chunks[1]["error"]
    assert (error["code"], error["status"]) == (502, "UNAVAILABLE")
    assert "broke off" in error["message"]


def test_an_array_stream_gone_silent_ends_with_an_error_element(fake: FakeGemini, proxy: Any) -> None:
    """Past ``--read-timeout`` mid-array, the same ending: the whole elements, then the
    error (what a silent event stream gets as an error event)."""
    url = proxy(timeouts=TimeoutsConfig(read=0.3))
    fake.stall = 1.0
    path = f"{url}/v1beta/models/{SIGNED_MODEL}:streamGenerateContent?alt=json"
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    with httpx.stream("POST", path, json=body, headers={"x-goog-api-key": SECRET}) as reply:
        chunks = json.loads(reply.read())
    assert len(chunks) == 2 and "functionCall" in json.dumps(chunks[0])
    assert chunks[1]["error"]["status"] == "UNAVAILABLE"
    assert "went silent past the read timeout" in chunks[1]["error"]["message"]


# -- the key ----------------------------------------------------------------------------------


def test_a_query_key_is_forwarded_and_never_logged(
    fake: FakeGemini, proxy: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="httpx")  # other libraries quiet it when imported
    httpx_log = logging.getLogger("httpx")  # ours alone (litellm adds its own filter on import)
    monkeypatch.setattr(
        httpx_log, "filters", [f for f in httpx_log.filters if isinstance(f, QuerySecretFilter)]
    )
    url = proxy()
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    for action in ("generateContent", "streamGenerateContent"):
        reply = httpx.post(f"{url}/v1beta/models/{MODEL}:{action}?alt=sse&key={SECRET}", json=body)
        assert reply.status_code == 200
    assert (
        httpx.post(f"{url}/v1beta/models/{MODEL}:countTokens?key={SECRET}", json=body).status_code
        == 200
    )
    assert [q["key"] for q in fake.queries] == [[SECRET]] * 3
    assert all("x-goog-api-key" not in h for h in fake.headers)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP Request" in logged and "key=***" in logged  # httpx logged the URLs, masked
    assert SECRET not in logged


@pytest.mark.parametrize("where", ["header", "query", "none"])
def test_a_fixed_key_goes_where_the_client_put_its_own(
    fake: FakeGemini, proxy: Any, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="httpx")  # other libraries quiet it when imported
    url = proxy(api_key=FIXED)
    query = f"?key={SECRET}" if where == "query" else ""
    headers = {"x-goog-api-key": SECRET} if where == "header" else {}
    body = {"contents": [{"role": "user", "parts": [{"text": "go"}]}]}
    assert (
        httpx.post(
            f"{url}/v1/models/{MODEL}:generateContent{query}", json=body, headers=headers
        ).status_code
        == 200
    )
    sent_headers, sent_query = fake.headers[0], fake.queries[0]
    if where == "query":
        assert sent_query["key"] == [FIXED] and "x-goog-api-key" not in sent_headers
    else:
        assert sent_headers["x-goog-api-key"] == FIXED and "key" not in sent_query
    assert "authorization" not in sent_headers
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert SECRET not in logged and FIXED not in logged


# -- server-side state, pass-through, path safety -----------------------------------------------


def test_cached_content_is_named_in_the_ungoverned_header(fake: FakeGemini, proxy: Any) -> None:
    body = {
        "cachedContent": "cachedContents/abc123",
        "contents": [{"role": "user", "parts": [{"text": "go"}]}],
    }
    reply = httpx.post(f"{proxy()}/v1beta/models/{MODEL}:generateContent", json=body)
    assert reply.status_code == 200
    assert "cachedContents/abc123" in reply.headers["x-context-governor-ungoverned"]
    assert fake.bodies[0]["cachedContent"] == "cachedContents/abc123"


def test_other_gemini_paths_pass_through_and_are_said_once(
    fake: FakeGemini, proxy: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="context_governor.proxy")
    url = proxy()
    client = _client(url, "v1beta")
    for _ in range(2):
        counted = client.models.count_tokens(model=MODEL, contents="hello there")
        assert counted.total_tokens is not None
    listing = httpx.get(f"{url}/v1beta/models", headers={"x-goog-api-key": SECRET})
    assert listing.json()["models"][0]["name"] == "models/gemini-2.5-flash"
    assert fake.paths == [f"/v1beta/models/{MODEL}:countTokens"] * 2 + ["/v1beta/models"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    said = [w for w in warnings if "POST /v1beta/models/{id}:countTokens" in w]
    assert len(said) == 1 and "POST /v1beta/models/{model}:generateContent" in said[0]
    assert fake.bodies == []  # nothing was governed


@pytest.mark.parametrize(
    "target",
    [
        "/v1beta/models/..%2F..%2Fsecret:generateContent",
        "/v1/models/a%2F..%2F..%2Fx:streamGenerateContent",
        "/v1beta/..%2Fadmin",
        "/v1beta/models/%2e%2e/x:countTokens",
        "/v1beta/models/a%0Ab:generateContent",  # a governed route: the model is checked too
        "/v1/models/a%23b:streamGenerateContent",
    ],
)
def test_an_encoded_path_cannot_escape(fake: FakeGemini, proxy: Any, target: str) -> None:
    url = proxy()
    with httpx.Client() as client:
        request = client.build_request("POST", url, json={"contents": []})
        request.url = request.url.copy_with(raw_path=target.encode())
        reply = client.send(request)
    assert "path not allowed" in _google_error(reply, 400, "INVALID_ARGUMENT")
    assert fake.paths == []


def test_path_kinds_keep_a_models_action() -> None:
    from context_governor.proxy._apis import path_kind, route_for_path

    assert path_kind("models/gemini-2.5-flash:countTokens") == "models/{id}:countTokens"
    assert path_kind("cachedContents/abc-1") == "cachedContents/{id}"
    assert route_for_path("models/x:countTokens").google
    assert route_for_path("files", "v1beta").google
    assert not route_for_path("models").google  # OpenAI's listing under /v1/


def test_uvicorns_access_line_is_masked_and_still_formats() -> None:
    """uvicorn's access formatter unpacks the record's five arguments: the filter masks
    the path argument in place instead of folding the arguments into the message."""
    from uvicorn.logging import AccessFormatter

    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "POST", f"/v1beta/models/m:generateContent?alt=sse&key={SECRET}", "1.1", 200),
        None,
    )  # fmt: skip
    assert QuerySecretFilter().filter(record)
    line = AccessFormatter("%(message)s", use_colors=False).format(record)  # unpacks the args
    assert (
        line == '127.0.0.1:5 - "POST /v1beta/models/m:generateContent?alt=sse&key=*** HTTP/1.1" 200'
    )


@given(
    value=st.text(alphabet=string.ascii_letters + string.digits + "-_.~%", min_size=1),
    name=st.sampled_from(["key", "api_key", "KEY", "access_token", "X-Goog-Signature", "k%65y"]),
    before=st.sampled_from(["", "alt=sse&", "a=1&b=2&"]),
)
def test_a_secret_query_value_never_survives_masking(value: str, name: str, before: str) -> None:
    from context_governor.proxy._redact import MASK, mask_query_secrets

    url = f"GET http://h/v1beta/models?{before}{name}={value}&pageSize=5 HTTP/1.1"
    assert (
        mask_query_secrets(url)
        == f"GET http://h/v1beta/models?{before}{name}={MASK}&pageSize=5 HTTP/1.1"
    )
