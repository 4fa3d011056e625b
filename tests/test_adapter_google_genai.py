"""The google-genai adapter, driven by the real SDK against a fake Gemini on localhost.

The fake upstream (tests/fake_gemini.py) is a real HTTP server speaking
``generateContent``: it checks every request with ``validate_request(api="gemini")``
and against the window (a request that breaks a rule gets Gemini's 400, and is
recorded), checks that each thought signature it issued comes back unchanged on the
part it issued it on, and answers with function calls until the script runs out. The
docs page's example is executed as it is.
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_gemini import WINDOW, FakeGemini, serve
from google import genai
from google.genai import types

from context_governor import validate_request
from context_governor.adapters.google_genai import (
    generate_content,
    generate_content_async,
    govern_contents,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake() -> Iterator[tuple[FakeGemini, str]]:
    for script in serve(FakeGemini()):
        yield script, script.base_url


def _client(base_url: str) -> genai.Client:
    return genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=base_url))


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
            "output": f"{(c.args or {}).get('path')}: " + "lorem ipsum " * 300})
        for c in calls])  # fmt: skip


def _session(client: genai.Client, model: str) -> list[types.Content]:
    history = [types.Content(role="user", parts=[types.Part(text="Summarise every file.")])]
    for _ in range(12):
        snapshot = [c.model_copy(deep=True) for c in history]
        response, report = generate_content(
            client, model=model, contents=history, config=CONFIG, context_window=WINDOW
        )
        assert history == snapshot, "the caller's history was changed"
        assert report.within_budget, report
        turn = response.candidates[0].content  # type: ignore[index]
        assert turn is not None
        history.append(turn)
        if not any(p.function_call for p in turn.parts or ()):
            return history
        history.append(_results(turn))
    raise AssertionError("the session did not end")


@pytest.mark.parametrize("model", ["gemini-3-flash-preview", "gemini-2.5-flash"])
def test_a_tool_session_that_outgrows_the_window_stays_legal(
    fake: tuple[FakeGemini, str], model: str
) -> None:
    script, url = fake
    history = _session(_client(url), model)
    assert script.errors == []
    assert script.served == script.calls + 1
    assert len(history) == 2 * script.calls + 2  # every turn kept, client-side
    # the window was outgrown: later requests left old turns out
    assert len(script.bodies[-1]["contents"]) < len(history) - 1
    assert all(b["systemInstruction"]["parts"] == [{"text": "You are a careful file agent."}]
               for b in script.bodies)  # fmt: skip


def test_the_async_wrapper_governs_too(fake: tuple[FakeGemini, str]) -> None:
    script, url = fake
    client = _client(url)
    history = [types.Content(role="user", parts=[types.Part(text="go")])]

    async def run() -> None:
        for _ in range(4):
            response, _ = await generate_content_async(
                client, model="gemini-2.5-flash", contents=history, config=CONFIG,
                context_window=WINDOW,
            )  # fmt: skip
            turn = response.candidates[0].content  # type: ignore[index]
            assert turn is not None
            history.extend([turn, _results(turn)])

    asyncio.run(run())
    assert script.errors == []
    assert script.served == 4


def test_govern_contents_returns_the_callers_own_objects_when_unchanged() -> None:
    history = [types.Content(role="user", parts=[types.Part(text="hi")])]
    governed = govern_contents(history, CONFIG, model="gemini-2.5-flash")
    assert governed.contents[0] is history[0]
    assert governed.config is CONFIG
    assert governed.report.actions == []


def test_broken_histories_are_repaired_before_they_are_sent() -> None:
    """A call turn whose responses were lost, and a string as the SDK accepts it."""
    calls = types.Content(role="model", parts=[
        types.Part(function_call=types.FunctionCall(name="read_file", args={"path": "a"}),
                   thought_signature=b"sig"),
        types.Part(function_call=types.FunctionCall(name="read_file", args={"path": "b"})),
    ])  # fmt: skip
    history: list[Any] = ["read a and b", calls, "and then?"]
    before = copy.deepcopy(history)
    governed = govern_contents(history, None, model="gemini-3-flash-preview")
    assert history == before
    assert governed.contents[1] is calls  # the signed turn goes back as it was
    roles = [c.role for c in governed.contents]
    assert roles == ["user", "model", "user"]
    responses = [p for p in governed.contents[2].parts or () if p.function_response]
    assert len(responses) == 2
    assert validate_request(governed.body, api="gemini", model="gemini-3-flash-preview") == []


def test_the_docs_example_runs_as_shown(
    fake: tuple[FakeGemini, str], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    script, url = fake
    text = (ROOT / "docs" / "adapters-google-genai.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0], "adapters-google-genai.md", "exec"), namespace)
    assert script.errors == []
    assert script.served == script.calls + 1
    assert len(namespace["history"]) == 2 * script.calls + 2
    assert "All files summarised." in capsys.readouterr().out
