"""The governing proxy over real HTTP on both sides.

Clients (httpx and the real ``openai`` SDK) talk to the proxy, served by uvicorn
on a free port; the proxy talks to the fake upstream, which validates every
request as a strict provider would and fails the test on any violation. So
"arrives valid" below means a validator on the far side of two sockets agreed.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
import uvicorn
from checks import alternation_problems, pairing_problems
from click.testing import CliRunner
from fake_upstream import FakeUpstream, Reply
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from test_legacy_functions import FUNCTIONS, legacy_session, no_tool_form_left

from context_governor import ConfigError, validate
from context_governor.cli import main
from context_governor.proxy import ProxyConfig, TimeoutsConfig, create_app

MODEL = "gpt-4o-mini"


class Served:
    """An ASGI app served by uvicorn in a thread on a free localhost port."""

    def __init__(self, app: Any) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="error", lifespan="on", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline and self._thread.is_alive(), "server did not start"
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)
        self._sock.close()


StartProxy = Callable[..., str]


@pytest.fixture
def start_proxy(upstream_server: FakeUpstream) -> Iterator[StartProxy]:
    """Start a proxy (ProxyConfig keywords; upstream defaults to the fake); gives its /v1 URL."""
    started: list[Served] = []

    def start(**config: Any) -> str:
        config.setdefault("upstream", upstream_server.base_url)
        served = Served(create_app(ProxyConfig(**config)))
        started.append(served)
        return f"{served.url}/v1"

    yield start
    for served in started:
        served.stop()


@pytest.fixture(scope="module")
def proxy_url(upstream_server: FakeUpstream) -> Iterator[str]:
    """The default proxy (openai profile, 128k window) in front of the fake upstream."""
    served = Served(create_app(ProxyConfig(upstream=upstream_server.base_url)))
    yield f"{served.url}/v1"
    served.stop()


def _sdk(base_url: str, key: str = "sk-client") -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=10)


def _post(base_url: str, body: Any, **kw: Any) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"authorization": "Bearer sk-client", "content-type": "application/json"}
    return httpx.post(f"{base_url}/chat/completions", content=content, headers=headers, timeout=10, **kw)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


def _call(cid: str, path: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": path})}}


DAMAGED = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test."},
    # orphan: answers a call nobody made (its call was trimmed away)
    {"role": "tool", "tool_call_id": "call_gone", "content": "old output"},
    # lost result: the agent crashed before the tool answered
    {"role": "assistant", "content": None, "tool_calls": [_call("call_1", "a.py")]},
    # two users in a row
    {"role": "user", "content": "Are you there?"},
    {"role": "user", "content": "Please continue."},
]


def _long_history(turns: int, size: int = 3000) -> list[dict[str, Any]]:
    """A coding session: each turn reads a different file of ``size`` characters."""
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Refactor the parser module."},
    ]
    for t in range(turns):
        lines = [f"def handler_{t}_{i}(value_{i}, limit={i * 7 % 97}): return value_{i} * {t + i}" for i in range(size // 60)]
        msgs += [
            {"role": "assistant", "content": None, "tool_calls": [_call(f"call_{t}", f"src/mod_{t}.py")]},
            {"role": "tool", "tool_call_id": f"call_{t}", "content": "\n".join(lines)},
            {"role": "assistant", "content": f"Read mod_{t}; next."},
            {"role": "user", "content": f"Go on with step {t + 1}."},
        ]
    return msgs


# ----------------------------------------------------------------------------- governing


def test_damaged_history_arrives_valid_via_httpx(upstream: FakeUpstream, proxy_url: str) -> None:
    assert validate(DAMAGED, provider="openai", model=MODEL), "the history must really be damaged"
    upstream.push(Reply.text("Done."))
    response = _post(proxy_url, {"model": MODEL, "messages": DAMAGED, "tools": TOOLS, "max_tokens": 200})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "Done."
    sent = upstream.requests[0]
    assert pairing_problems(sent["messages"]) == []
    assert alternation_problems(sent["messages"]) == []
    assert validate(sent["messages"], provider="openai", model=MODEL) == []
    assert all(m.get("tool_call_id") != "call_gone" for m in sent["messages"])
    # the rest of the body is forwarded as sent
    assert sent["tools"] == TOOLS and sent["max_tokens"] == 200 and sent["model"] == MODEL
    assert upstream.request_headers[0]["authorization"] == "Bearer sk-client"
    # orphan dropped, lost result backfilled, the two users joined: at least three actions
    assert int(response.headers["x-context-governor-actions"]) >= 3
    assert response.headers["x-context-governor-budget"] == str(128_000 - 200 - 1024)
    assert response.headers["x-context-governor-violations"] == "0"
    assert len(response.headers.get_list("date")) == 1  # ours, not also the upstream's


def test_damaged_history_arrives_valid_via_openai_sdk(upstream: FakeUpstream, proxy_url: str) -> None:
    upstream.push(Reply.calls(("read_file", {"path": "b.py"})))
    with _sdk(proxy_url) as client:
        raw = client.chat.completions.with_raw_response.create(
            model=MODEL, messages=DAMAGED, tools=TOOLS  # type: ignore[arg-type]
        )
    completion = raw.parse()
    call = completion.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "read_file"  # type: ignore[union-attr]
    assert validate(upstream.requests[0]["messages"], provider="openai", model=MODEL) == []
    before = int(raw.headers["x-context-governor-tokens-before"])
    after = int(raw.headers["x-context-governor-tokens-after"])
    assert before > 0 and after > 0 and before != after
    # no max_tokens in the body: the config's default reserve (4096)
    assert raw.headers["x-context-governor-budget"] == str(128_000 - 4096 - 1024)


def test_developer_messages_from_the_sdk_are_governed_not_refused(
    upstream: FakeUpstream, start_proxy: StartProxy
) -> None:
    """OpenAI's SDK sends instructions as developer messages (reasoning models): the
    proxy governs them as system messages and forwards the role where the target takes
    it (openai), and as a reported system message where it does not (deepseek)."""
    history = [{"role": "developer", "content": "Be brief."}, *DAMAGED[1:]]
    for profile, role, actions in (("openai", "developer", 3), ("deepseek", "system", 4)):
        upstream.reset()
        upstream.push(Reply.text("Done."))
        with _sdk(start_proxy(profile=profile)) as client:
            raw = client.chat.completions.with_raw_response.create(
                model=MODEL, messages=history, tools=TOOLS  # type: ignore[arg-type]
            )
        assert raw.parse().choices[0].message.content == "Done."
        sent = upstream.requests[0]["messages"]
        assert sent[0] == {"role": role, "content": "Be brief."}
        assert validate(sent, provider="openai", model=MODEL) == []
        assert int(raw.headers["x-context-governor-actions"]) == actions, profile


def test_long_history_is_governed_to_the_window(upstream: FakeUpstream, start_proxy: StartProxy) -> None:
    window, reserve = 8000, 500
    url = start_proxy(model_windows={MODEL: window})
    history = _long_history(30)
    upstream.context_window = window  # the fake rejects anything that would not fit
    upstream.push(Reply.text("Refactored."))
    response = _post(url, {"model": MODEL, "messages": history, "max_tokens": reserve})
    assert response.status_code == 200, response.text
    before = int(response.headers["x-context-governor-tokens-before"])
    after = int(response.headers["x-context-governor-tokens-after"])
    budget = int(response.headers["x-context-governor-budget"])
    assert budget == window - reserve - 1024
    assert before > window > budget >= after
    sent = upstream.requests[0]["messages"]
    assert len(sent) < len(history)
    assert sent[-1] == history[-1]  # the newest user message is kept
    assert sent[0] == history[0]  # and the system prompt
    assert pairing_problems(sent) == []


def test_a_reserve_the_window_cannot_give_is_fitted_not_forwarded(
    upstream: FakeUpstream, start_proxy: StartProxy
) -> None:
    """A client asking max_tokens 128000 of an 8000-token target (coding agents do) gets
    a governed history whose budget keeps the answer's floor, and, in the body sent,
    the reserve the window leaves after that history; old main forwarded it as is, with
    a negative budget that disabled governance."""
    window = 8000
    url = start_proxy(model_windows={MODEL: window})
    history = _long_history(30)
    upstream.context_window = window
    upstream.push(Reply.text("ok"))
    body = {"model": MODEL, "messages": history, "max_tokens": 128_000, "max_completion_tokens": 128_000}
    response = _post(url, body)
    assert response.status_code == 200, response.text
    sent = upstream.requests[0]
    floor = 1024  # the smaller of what was asked and an eighth of the window (at least 1,024)
    budget = int(response.headers["x-context-governor-budget"])
    assert budget == window - floor - 1024 > 0
    after = int(response.headers["x-context-governor-tokens-after"])
    assert after <= budget
    assert sent["max_tokens"] == sent["max_completion_tokens"] == window - 1024 - after
    assert len(sent["messages"]) < len(history)


def test_max_completion_tokens_sets_the_reserve_and_bad_values_are_named(
    upstream: FakeUpstream, proxy_url: str
) -> None:
    upstream.push(Reply.text("ok"))
    body = {"model": MODEL, "messages": DAMAGED, "max_tokens": 100, "max_completion_tokens": 1000}
    response = _post(proxy_url, body)
    assert response.headers["x-context-governor-budget"] == str(128_000 - 1000 - 1024)
    response = _post(proxy_url, {"model": MODEL, "messages": DAMAGED, "max_tokens": "lots"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["message"].startswith("max_tokens must") and error["param"] == "max_tokens"
    assert len(upstream.requests) == 1


# ----------------------------------------------------------------------------- streaming


def test_sdk_stream_passes_through(upstream: FakeUpstream, proxy_url: str) -> None:
    upstream.push(Reply.text("Streaming through the proxy works."))
    with _sdk(proxy_url) as client:
        stream = client.chat.completions.create(
            model=MODEL, messages=DAMAGED, stream=True, stream_options={"include_usage": True}  # type: ignore[arg-type]
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streaming through the proxy works."
    assert len(chunks) > 3  # many deltas, not one buffered message
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0
    assert upstream.requests[0]["stream"] is True
    assert validate(upstream.requests[0]["messages"], provider="openai", model=MODEL) == []


def test_stream_is_relayed_as_it_comes(upstream: FakeUpstream, proxy_url: str) -> None:
    """The first event reaches the client while the upstream is still stalling."""
    stall = 1.0
    upstream.push(Reply("chat", content="slow answer", finish_reason="stop", stall=stall))
    started = time.monotonic()
    body = {"model": MODEL, "messages": DAMAGED, "stream": True}
    with httpx.stream("POST", f"{proxy_url}/chat/completions", json=body, timeout=10) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert int(response.headers["x-context-governor-actions"]) >= 3
        lines = response.iter_lines()
        first = next(line for line in lines if line)
        first_at = time.monotonic() - started
        rest = [line for line in lines if line]
    assert first.startswith("data: ") and json.loads(first[6:])["object"] == "chat.completion.chunk"
    assert first_at < stall * 0.7, f"first event after {first_at:.2f}s: the stream was buffered"
    assert rest[-1] == "data: [DONE]"


# ----------------------------------------------------------------------------- errors


def test_upstream_429_is_relayed(upstream: FakeUpstream, proxy_url: str) -> None:
    upstream.push(Reply.error(429, "Rate limit reached", headers={"retry-after": "7"}))
    with _sdk(proxy_url) as client, pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model=MODEL, messages=DAMAGED)  # type: ignore[arg-type]
    assert caught.value.status_code == 429
    assert "Rate limit reached" in caught.value.message
    assert caught.value.response.headers["retry-after"] == "7"
    assert "x-context-governor-tokens-after" in caught.value.response.headers


def test_upstream_500_is_relayed(upstream: FakeUpstream, proxy_url: str) -> None:
    upstream.push(Reply.error(500, "upstream exploded"))
    response = _post(proxy_url, {"model": MODEL, "messages": DAMAGED, "stream": True})
    assert response.status_code == 500
    assert response.json()["error"]["message"] == "upstream exploded"


@pytest.mark.parametrize(
    ("body", "message", "param"),
    [
        (b'{"model": "gpt-4o-mini", "messages": [', "request body is not valid JSON", None),
        (b"[1, 2]", "request body must be a JSON object", None),
        (b'{"model": "gpt-4o-mini"}', "'messages' is a required property", "messages"),
        (b'{"model": "gpt-4o-mini", "messages": [{"role": "wizard", "content": "x"}]}', "messages[0]", "messages"),
        (b'{"model": "gpt-4o-mini", "messages": "hello"}', "messages", "messages"),
        # a lone orphan tool result is dropped, which leaves nothing to send
        (b'{"model": "gpt-4o-mini", "messages": [{"role": "tool", "tool_call_id": "c1", "content": "r"}]}',
         "nothing is left to send: message 0: tool result answers no earlier tool call", "messages"),
    ],
)
def test_bad_request_gives_openai_shaped_400(
    upstream: FakeUpstream, proxy_url: str, body: bytes, message: str, param: str | None
) -> None:
    response = _post(proxy_url, body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(message), error["message"]
    assert error["param"] == param
    assert upstream.requests == []  # nothing was forwarded


def test_sdk_sees_a_bad_request_error(upstream: FakeUpstream, proxy_url: str) -> None:
    with _sdk(proxy_url) as client, pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=MODEL, messages=[{"role": "wizard", "content": "hi"}])  # type: ignore[list-item,misc]
    assert "messages[0]" in caught.value.message


def log_line(stderr: Any) -> str:
    """The proxy's next line on stderr after its banner's indented lines."""
    while (line := stderr.readline()).startswith("  "):
        pass
    return str(line)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_upstream_gives_502(start_proxy: StartProxy) -> None:
    url = start_proxy(upstream=f"http://127.0.0.1:{_closed_port()}/v1", timeouts=TimeoutsConfig(connect=2))
    response = _post(url, {"model": MODEL, "messages": DAMAGED})
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["type"] == "upstream_error" and "unreachable" in error["message"]
    with _sdk(url) as client, pytest.raises(openai.InternalServerError) as caught:
        client.models.list()
    assert caught.value.status_code == 502


def test_slow_upstream_gives_504(upstream: FakeUpstream, start_proxy: StartProxy) -> None:
    url = start_proxy(timeouts=TimeoutsConfig(read=0.2))
    upstream.push(Reply.text("too late", delay=0.5))
    response = _post(url, {"model": MODEL, "messages": DAMAGED})
    assert response.status_code == 504
    assert response.json()["error"]["message"].startswith("upstream timed out")
    time.sleep(0.4)  # let the fake finish its answer before the next test resets it


# ----------------------------------------------------------------------------- pass-through


def test_models_and_other_paths_pass_through(upstream: FakeUpstream, proxy_url: str) -> None:
    with _sdk(proxy_url) as client:
        assert [m.id for m in client.models.list()] == ["fake-model"]
    # a path the fake does not serve: its own 404 comes back, not one of ours
    response = httpx.post(f"{proxy_url}/embeddings?x=1", json={"input": "hi"}, timeout=10)
    assert response.status_code == 404 and response.text == "Not Found"
    assert "x-context-governor-actions" not in response.headers
    assert httpx.get(proxy_url.removesuffix("/v1") + "/healthz", timeout=10).json() == {"status": "ok"}


def test_fixed_api_key_replaces_the_clients(upstream: FakeUpstream, start_proxy: StartProxy) -> None:
    url = start_proxy(api_key="sk-fixed")
    upstream.push(Reply.text("ok"))
    with _sdk(url, key="sk-whatever") as client:
        client.chat.completions.create(model=MODEL, messages=DAMAGED)  # type: ignore[arg-type]
    assert upstream.request_headers[0]["authorization"] == "Bearer sk-fixed"


# ----------------------------------------------------------------------------- replicas


class Recorder:
    """An upstream that keeps the raw bytes of every request (and checks them)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.served = Served(Starlette(routes=[Route("/v1/chat/completions", self._handle, methods=["POST"])]))

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        self.bodies.append(raw)
        body = json.loads(raw)
        problems = validate(body["messages"], provider="openai", model=body["model"])
        if problems:
            return JSONResponse({"error": {"message": str(problems)}}, status_code=400)
        message = {"role": "assistant", "content": "ok"}
        return JSONResponse({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                             "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


def test_replicas_forward_byte_identical_bodies(start_proxy: StartProxy) -> None:
    """Replica A served the whole conversation, replica B only sees its last request:
    no hidden state, so both send the upstream exactly the same bytes."""
    recorder = Recorder()
    try:
        config = {"upstream": f"{recorder.served.url}/v1", "model_windows": {MODEL: 9000}}
        replica_a, replica_b = start_proxy(**config), start_proxy(**config)
        history = _long_history(40)  # enough turns that a cut is needed with old results masked
        steps = [*range(8, len(history), 12), len(history)]
        for n in steps:  # a growing conversation, every request through A
            assert _post(replica_a, {"model": MODEL, "messages": history[:n], "max_tokens": 300}).status_code == 200
        last = {"model": MODEL, "messages": history, "max_tokens": 300}
        response = _post(replica_b, last)
        assert response.status_code == 200, response.text
        assert len(recorder.bodies) == len(steps) + 1
        assert recorder.bodies[-1] == recorder.bodies[-2]
        forwarded = json.loads(recorder.bodies[-1])
        assert len(forwarded["messages"]) < len(history)  # it was really governed
        assert int(response.headers["x-context-governor-tokens-after"]) <= 9000 - 300 - 1024
    finally:
        recorder.served.stop()


# ----------------------------------------------------------------------------- config


def test_config_checks_and_window_lookup() -> None:
    config = ProxyConfig(upstream="http://x/v1/", context_window=32_000, model_windows={"gpt-4o": 128_000, "gpt-4o-mini": 64_000})
    assert config.upstream == "http://x/v1"
    assert config.window_for("gpt-4o-2024-08-06") == 128_000
    assert config.window_for("gpt-4o-mini-2024-07-18") == 64_000  # the longest prefix wins
    assert config.window_for("llama-3") == 32_000 and config.window_for(None) == 32_000
    for bad in ({"upstream": "localhost:8000"}, {"profile": "nope"}, {"compaction": "lru"},
                {"context_window": 0}, {"model_windows": {"m": -1}}, {"max_output": -1}, {"read_timeout": 0},
                {"connect_timeout": float("nan")}, {"read_timeout": True}, {"max_body_bytes": 0},
                {"govern_in": "fork"}, {"govern_processes": 0}, {"upstream": "http://x/v1#frag"}):
        with pytest.raises(ConfigError):
            ProxyConfig(**{"upstream": "http://x/v1", **bad})
    with pytest.raises(ConfigError) as caught:
        ProxyConfig(upstream="ftp://bob:pw-secret@x/v1")
    assert "pw-secret" not in str(caught.value)  # a refused URL is shown redacted too
    again = ProxyConfig.from_json(config.to_json())  # how --workers hands it to each process
    assert again.window_for("gpt-4o-mini-x") == 64_000 and again.upstream == config.upstream
    with pytest.raises(ConfigError, match="unknown settings: colour"):
        ProxyConfig.from_json('{"upstream": "http://x/v1", "colour": "red"}')


# ----------------------------------------------------------------------------- CLI


def test_cli_without_starlette_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m.startswith("context_governor.proxy")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    monkeypatch.setitem(sys.modules, "starlette", None)
    result = CliRunner().invoke(main, ["proxy", "--upstream", "http://127.0.0.1:1/v1"])
    assert result.exit_code == 2
    assert "pip install 'context-governor[proxy]'" in result.output
    assert result.output.count("\n") == 1


def test_cli_port_taken_and_bad_options() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(main, ["proxy", "--upstream", "http://127.0.0.1:1/v1", "--port", str(port)])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.output and result.output.count("\n") == 1
    result = CliRunner().invoke(main, ["proxy", "--upstream", "http://x/v1", "--model-window", "gpt-4o"])
    assert result.exit_code == 2 and "MODEL=TOKENS" in result.output
    result = CliRunner().invoke(main, ["proxy", "--upstream", "ftp://x"])
    assert result.exit_code == 2 and "http(s) URL" in result.output


def test_cli_socket_serves_connections_with_nodelay() -> None:
    """The CLI binds the port itself and hands the socket to uvicorn, whose asyncio
    transports turn Nagle's algorithm off only on sockets made for TCP. A socket made
    without its protocol number passed that on to every accepted connection, and each
    JSON answer (its head and body written apart) then waited for the client's delayed
    ACK: ~40 ms per request on a keep-alive connection (bench/observe_cost.py found it)."""
    import asyncio

    from context_governor.cli._proxy import _bind

    async def accepted_nodelay() -> int:
        listener = _bind("127.0.0.1", 0)
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        try:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            value = await asyncio.wait_for(seen, 10)
            writer.close()
            return value
        finally:
            server.close()

    assert asyncio.run(accepted_nodelay()) != 0


def test_cli_serves_a_governing_proxy(upstream: FakeUpstream) -> None:
    """The real command in a subprocess: listens, governs, forwards, logs one line."""
    args = [sys.executable, "-m", "context_governor", "proxy", "--upstream", upstream.base_url,
            "--port", "0", "--model-window", f"{MODEL}=100000"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1", banner)
        assert match, banner
        url = f"http://127.0.0.1:{match.group(1)}/v1"
        deadline = time.monotonic() + 10
        while True:
            try:
                httpx.get(url.removesuffix("/v1") + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the proxy did not come up"
                time.sleep(0.05)
        upstream.push(Reply.text("hello"))
        response = _post(url, {"model": MODEL, "messages": DAMAGED, "max_tokens": 100})
        assert response.status_code == 200
        assert response.headers["x-context-governor-budget"] == str(100_000 - 100 - 1024)
        log = log_line(process.stderr)
        assert "POST /v1/chat/completions" in log and "→ 200" in log and "orphans 1" in log, log
    finally:
        process.terminate()
        process.wait(10)


def test_the_proxy_governs_a_legacy_body_instead_of_refusing_it(
    upstream: FakeUpstream, start_proxy: StartProxy
) -> None:
    """A client of OpenAI's deprecated function calling (``functions``, role function):
    the body is governed to the window in its own form (legacy.py), not refused."""
    window = 40_000  # the newest result (up to ~16k tokens) fits: no oversized turn
    url = start_proxy(model_windows={MODEL: window})
    history = legacy_session(random.Random(9), 80)  # a cut is needed with old results masked
    upstream.context_window = window
    upstream.push(Reply.text("Fixed."))
    body = {"model": MODEL, "messages": history, "functions": FUNCTIONS, "max_tokens": 500}
    response = httpx.post(f"{url}/chat/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    sent = upstream.requests[0]["messages"]
    assert len(sent) < len(history)
    assert no_tool_form_left(sent)
    assert upstream.requests[0]["functions"] == FUNCTIONS
    assert int(response.headers["x-context-governor-tokens-after"]) <= int(
        response.headers["x-context-governor-budget"]
    )
