"""LiteLLM adapter: ``litellm.acompletion`` sessions through the hook, on three routes.

Each route's upstream is a real HTTP server on localhost that checks every request
it gets the way the provider would (its rules, and the model's window) and answers
with scripted tool calls: OpenAI through tests/fake_upstream.py, Anthropic
(``/v1/messages``) and Gemini (``:generateContent``) through the small native
servers below. A session that outgrows the window must go through with every
request accepted; without the hook the same session is refused.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples
from transcripts import cases

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the model map
pytest.importorskip("litellm")

import litellm
import uvicorn
from fake_upstream import FakeUpstream, Reply, _free_socket
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from context_governor import Report, validate_request
from context_governor.adapters.litellm import ContextGovernorHook, profile_for
from context_governor.counting import exact_counter

WINDOW = 4_000
MAX_OUTPUT = 400
STEPS = 6
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the project.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
# Small-window models, so that the window comes from LiteLLM's model info.
SMALL = {
    "openai": "openai/gpt-small-test",
    "anthropic": "anthropic/claude-small-test",
    "gemini": "gemini/gemini-small-test",
}
litellm.register_model(
    {
        name.split("/", 1)[1]: {
            "max_input_tokens": WINDOW,
            "max_output_tokens": MAX_OUTPUT,
            "max_tokens": MAX_OUTPUT,
            "input_cost_per_token": 0.0,
            "output_cost_per_token": 0.0,
            "litellm_provider": provider,
            "mode": "chat",
        }
        for provider, name in SMALL.items()
    }
)
_COUNTER = exact_counter("gpt-4o")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _over_window(body: dict[str, Any], fields: tuple[str, ...]) -> list[str]:
    """The text of the prompt, counted, against the window (structure aside)."""
    text = "\n".join(s for f in fields for s in _strings(body.get(f)))
    tokens = _COUNTER.message_tokens({"role": "user", "content": text})
    return [f"context_length_exceeded: {tokens} tokens > {WINDOW}"] if tokens + MAX_OUTPUT > WINDOW else []


def _gemini_problems(body: dict[str, Any]) -> list[str]:
    """What Gemini's generateContent rejects, for the rules a chat history can break."""
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return ["GE-5: contents is not specified"]
    problems = []
    if contents[0].get("role") != "user":
        problems.append("GE-1: the first content must be a user turn")
    for i, content in enumerate(contents):
        parts = content.get("parts") or []
        if not parts:
            problems.append(f"GE-5b: contents[{i}].parts must not be empty")
        if i and content.get("role") == contents[i - 1].get("role"):
            problems.append(f"GE-4: contents[{i}] does not alternate user/model")
        responses = sum("functionResponse" in p for p in parts)
        if responses:
            calls = sum("functionCall" in p for p in contents[i - 1].get("parts") or []) if i else 0
            if calls != responses:
                problems.append(f"GE-3: {responses} function responses for {calls} calls at contents[{i}]")
    return problems + _over_window(body, ("contents", "system_instruction"))


class NativeUpstream:
    """Anthropic Messages and Gemini generateContent, each answering from its own script."""

    def __init__(self) -> None:
        self.replies: dict[str, deque[dict[str, Any]]] = {"anthropic": deque(), "gemini": deque()}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.violations: list[str] = []
        self._calls = 0
        app = Starlette(
            routes=[
                Route("/v1/messages", self._anthropic, methods=["POST"]),
                Route("/models/{target:path}", self._gemini, methods=["POST"]),
            ]
        )
        self._sock = _free_socket()
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self) -> NativeUpstream:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the native upstream did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)
        self._sock.close()

    def _refuse(self, problems: list[str]) -> Response:
        self.violations.extend(problems)
        error = {"type": "invalid_request_error", "message": "; ".join(problems)}
        return JSONResponse({"type": "error", "error": error}, status_code=400)

    async def _anthropic(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(("anthropic", body))
        problems = [f"{v.rule}: {v.error}" for v in validate_request(body, api="anthropic")]
        problems += _over_window(body, ("messages", "system"))
        if problems:
            return self._refuse(problems)
        reply = self.replies["anthropic"].popleft()
        self._calls += 1
        if reply["kind"] == "call":
            content = [{"type": "tool_use", "id": f"toolu_{self._calls:03d}", "name": "read_file", "input": reply["args"]}]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": reply["text"]}], "end_turn"
        return JSONResponse(
            {
                "id": f"msg_{self._calls}",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        )

    async def _gemini(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(("gemini", body))
        assert request.path_params["target"].endswith(":generateContent")
        problems = _gemini_problems(body)
        if problems:
            return self._refuse(problems)
        reply = self.replies["gemini"].popleft()
        if reply["kind"] == "call":
            parts: list[dict[str, Any]] = [{"functionCall": {"name": "read_file", "args": reply["args"]}}]
        else:
            parts = [{"text": reply["text"]}]
        return JSONResponse(
            {
                "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            }
        )


@pytest.fixture(scope="module")
def native() -> Iterator[NativeUpstream]:
    server = NativeUpstream().start()
    yield server
    server.stop()


@pytest.fixture
def hook() -> Iterator[tuple[ContextGovernorHook, list[Report]]]:
    reports: list[Report] = []
    governor_hook = ContextGovernorHook(on_report=reports.append)
    saved = list(litellm.callbacks)
    litellm.callbacks = [governor_hook]
    yield governor_hook, reports
    litellm.callbacks = saved


def _result(step: int) -> str:
    return f"contents of src/m{step}.py:\n" + "\n".join(f"m{step}:{n}: value_{n} = compute({n})" for n in range(45))


def _opening() -> list[Any]:
    # Two user messages in a row: Gemini refuses that (GE-4) unless they are merged (we
    # merge them; so does LiteLLM's own Gemini transformation).
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the tokenizer bug."},
        {"role": "user", "content": "Start with the m files."},
    ]


def _script(route: str, upstream: FakeUpstream, native: NativeUpstream) -> None:
    if route == "openai":
        upstream.push(*[Reply.calls(("read_file", {"path": f"src/m{s}.py"})) for s in range(STEPS)], Reply.text("The bug is in m3."))
    else:
        native.replies[route].extend([{"kind": "call", "args": {"path": f"src/m{s}.py"}} for s in range(STEPS)])
        native.replies[route].append({"kind": "text", "text": "The bug is in m3."})


async def _session(model: str, api_base: str, *, governed: bool = True) -> tuple[list[Any], str | None]:
    """The agent loop: call, run the tool calls, append, until the model answers."""
    messages = _opening()
    for step in range(STEPS + 1):
        sent = copy.deepcopy(messages)
        response = await litellm.acompletion(
            model=model,
            messages=messages,
            tools=TOOLS,
            max_tokens=MAX_OUTPUT,
            api_base=api_base,
            api_key="test-key",
            litellm_session_id="s1",
        )
        # The caller's history is never touched (ungoverned, LiteLLM itself rewrites the
        # tool calls of a Message object it is given, in place).
        assert messages == sent or not governed
        message = response.choices[0].message
        messages.append(message)  # the Message object itself, as agents do
        for call in message.tool_calls or []:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": _result(step)})
        if not message.tool_calls:
            return messages, message.content
    return messages, None


def _api_base(route: str, upstream: FakeUpstream, native: NativeUpstream) -> str:
    return upstream.base_url if route == "openai" else native.base_url


@pytest.mark.parametrize("route", ["openai", "anthropic", "gemini"])
def test_acompletion_session_outgrows_the_window_and_every_request_is_accepted(
    route: str, upstream: FakeUpstream, native: NativeUpstream, hook: tuple[ContextGovernorHook, list[Report]]
) -> None:
    governor_hook, reports = hook
    upstream.context_window = WINDOW
    native.violations.clear()
    _script(route, upstream, native)

    history, answer = asyncio.run(_session(SMALL[route], _api_base(route, upstream, native)))

    assert answer == "The bug is in m3."
    assert native.violations == []  # (the upstream fixture checks the OpenAI route's)
    assert len(history) == 3 + 2 * STEPS + 1  # the caller keeps its whole history
    assert len(reports) == STEPS + 1
    assert {r.profile for r in reports} == {route}
    assert {r.context_window for r in reports} == {WINDOW}  # from LiteLLM's model info
    assert {r.max_output for r in reports} == {MAX_OUTPUT}
    assert any(r.tokens_before > r.budget for r in reports)  # it outgrew the window
    assert all(r.tokens_after <= r.budget for r in reports)
    assert governor_hook.conversations.get("s1") is not None  # one Governor for the session


def test_without_the_hook_the_session_is_refused(upstream: FakeUpstream, native: NativeUpstream) -> None:
    """The checks are real: the same session, ungoverned, outgrows the window and is refused."""
    native.violations.clear()
    _script("gemini", upstream, native)
    with pytest.raises(litellm.BadRequestError):
        asyncio.run(_session(SMALL["gemini"], native.base_url, governed=False))
    assert any(v.startswith("context_length_exceeded") for v in native.violations)
    native.replies["gemini"].clear()


def test_sync_completion_goes_through_govern_kwargs(
    upstream: FakeUpstream, hook: tuple[ContextGovernorHook, list[Report]]
) -> None:
    """litellm.completion (sync) runs no hook that may change messages (LiteLLM 1.110):
    the hook's govern_kwargs is the way in, and the request goes through."""
    governor_hook, reports = hook
    upstream.context_window = WINDOW
    upstream.push(Reply.text("done"), Reply.text("done"))
    history: list[dict[str, Any]] = [{"role": "user", "content": "Summarize."}]
    for step in range(STEPS):
        history.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{step}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]})
        history.append({"role": "tool", "tool_call_id": f"c{step}", "content": _result(step)})
    history.append({"role": "user", "content": "Go on."})
    call = {"model": SMALL["openai"], "messages": history, "max_tokens": MAX_OUTPUT, "api_base": upstream.base_url, "api_key": "k"}
    response = litellm.completion(**governor_hook.govern_kwargs(call))
    assert response.choices[0].message.content == "done"
    assert len(reports) == 1 and reports[0].tokens_before > reports[0].budget >= reports[0].tokens_after
    # What we found in LiteLLM's source: sync completion does not call the hook.
    with pytest.raises(litellm.BadRequestError):
        litellm.completion(**call)
    assert len(reports) == 1
    upstream.violations.clear()  # the refused request above was the point
    upstream.replies.clear()


def test_target_of_a_call() -> None:
    hook = ContextGovernorHook()
    settings = hook.settings_for({"model": "openai/gpt-4o", "max_tokens": 1000})
    assert settings is not None
    assert (settings["profile"], settings["model"], settings["max_output"]) == ("openai", "gpt-4o", 1000)
    assert settings["context_window"] == litellm.get_model_info("gpt-4o")["max_input_tokens"]
    assert hook.settings_for({"model": "claude-sonnet-4-5"})["profile"] == "anthropic"  # type: ignore[index]
    assert profile_for("vertex_ai", "claude-sonnet-4-5") == "anthropic"
    assert profile_for("vertex_ai", "gemini-2.5-pro") == "gemini"
    assert profile_for("some_new_provider", "m") == "openai"
    assert profile_for("deepseek", "deepseek-chat") == "deepseek"
    explicit = ContextGovernorHook(profile="vllm", context_window=8_000, max_output=100)
    assert explicit.settings_for({"model": "openai/gpt-4o", "max_tokens": 5}) == {
        "profile": "vllm",
        "model": "gpt-4o",
        "context_window": 8_000,
        "max_output": 100,
    }
    unroutable = {"model": "no-such-model-xyz", "messages": [{"role": "user", "content": "a"}]}
    assert hook.settings_for(unroutable) is None and hook.govern_kwargs(unroutable) == unroutable


def test_proxy_hook_and_call_types() -> None:
    reports: list[Report] = []
    hook = ContextGovernorHook(on_report=reports.append)
    broken = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    data = {"model": SMALL["gemini"], "messages": broken}
    out = asyncio.run(hook.async_pre_call_hook(None, None, data, "completion"))
    assert out is not None and out["messages"] == [{"role": "user", "content": "a\n\nb"}]
    assert data["messages"] is broken and len(broken) == 2  # not modified
    alias = {"model": "my-team-alias", "messages": broken}  # routed later, by the deployment hook
    assert asyncio.run(hook.async_pre_call_hook(None, None, alias, "completion")) is None
    assert asyncio.run(hook.async_pre_call_deployment_hook({"model": "openai/gpt-4o", "input": ["x"]}, "aembedding")) is None
    assert len(reports) == 1


def test_missing_litellm_says_which_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['litellm'] = None\n"
        "try:\n    import context_governor.adapters.litellm\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "pip install 'context-governor[litellm]'" in out


def test_docs_example_is_the_file_and_runs(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's example is the file, and it runs as shown (in this process: a fresh
    interpreter would spend most of the test importing LiteLLM)."""
    import re
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    example = root / "examples" / "adapters" / "litellm_hook.py"
    text = (root / "docs" / "adapters-litellm.md").read_text()
    blocks = dict(re.findall(r"<!-- example: (\S+) -->\n```python\n(.*?)```", text, re.DOTALL))
    assert blocks == {"examples/adapters/litellm_hook.py": example.read_text()}
    upstream.context_window = WINDOW
    upstream.push(*[Reply.calls(("read_file", {"path": f"src/m{s}.py"})) for s in range(STEPS)], Reply.text("The bug is in m3."))
    monkeypatch.setenv("OPENAI_BASE_URL", upstream.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr(litellm, "callbacks", list(litellm.callbacks))  # the example sets its own
    runpy.run_path(str(example), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    calls = [line for line in lines if line.startswith("openai: ")]
    assert len(calls) == STEPS + 1
    assert lines[-2:] == [f"history: {2 + 2 * STEPS} messages, none cut", "answer: The bug is in m3."]


ROUTES = {
    "openai/gpt-4o": ("openai", "gpt-4o"),
    "anthropic/claude-sonnet-4-5": ("anthropic", "claude-sonnet-4-5"),
    "gemini/gemini-2.5-flash": ("gemini", "gemini-2.5-flash"),
    "deepseek/deepseek-chat": ("deepseek", "deepseek-chat"),
    "mistral/mistral-large-latest": ("mistral", "mistral-large-latest"),
}


@settings(max_examples=examples(full=60, fast=25), deadline=None)
@given(cases(quirks=True), st.sampled_from(sorted(ROUTES)))
def test_governed_calls_are_valid_for_the_routed_provider_and_stable(case: dict[str, Any], model: str) -> None:
    """For random agent transcripts on each route: the governed messages pass the routed
    provider's rules (or the report names what could not be met), fit the budget (or the
    report says not), the call's own kwargs are untouched, and governing again changes nothing."""
    from context_governor import validate

    reports: list[Report] = []
    hook = ContextGovernorHook(context_window=case["context_window"], on_report=reports.append)
    call = {"model": model, "messages": case["messages"], "tools": case["tools"], "max_tokens": 300}
    before = copy.deepcopy(call)
    out = hook.govern_kwargs(call)
    assert call == before
    (report,) = reports
    provider, name = ROUTES[model]
    assert report.profile == provider and report.model == name
    broken = validate(out["messages"], provider=provider, model=name)
    assert not broken or report.violations
    assert report.tokens_after <= (report.budget or report.tokens_after) or report.notes
    again = hook.govern_kwargs(out)
    assert again["messages"] == out["messages"]
