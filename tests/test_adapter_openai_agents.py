"""OpenAI Agents SDK adapter: real Runner runs against the fake upstream, and the filter."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from agents.run_config import CallModelData, ModelInputData
from fake_upstream import FakeUpstream, Reply
from openai import AsyncOpenAI

from context_governor import Report, validate_request
from context_governor.adapters.openai_agents import PLACEHOLDER_ID, GovernInput
from context_governor.counting import exact_counter

set_tracing_disabled(True)

WINDOW = 3_000
MAX_TOKENS = 300
DOC = Path(__file__).resolve().parent.parent / "docs" / "adapters-openai-agents.md"


@function_tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"contents of {path}: " + "x = compute(y) " * 120


def _agent(upstream: FakeUpstream, model: str = "gpt-4o-mini") -> Agent[Any]:
    client = AsyncOpenAI(base_url=upstream.base_url, api_key="test", max_retries=0)
    return Agent(
        name="coder",
        instructions="You are a coding agent.",
        tools=[read_file],
        model=OpenAIChatCompletionsModel(model=model, openai_client=client),
        model_settings=ModelSettings(max_tokens=MAX_TOKENS),
    )


def _script(upstream: FakeUpstream, steps: int) -> None:
    for i in range(steps):
        upstream.push(Reply.calls(("read_file", {"path": f"src/m{i}.py"})))
    upstream.push(Reply.text("The bug is in m3."))


async def _run(agent: Agent[Any], task: str, config: RunConfig, streamed: bool) -> Any:
    if not streamed:
        return await Runner.run(agent, task, run_config=config)
    result = Runner.run_streamed(agent, task, run_config=config)
    async for _ in result.stream_events():
        pass
    return result


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_run_that_outgrows_the_window_sends_only_valid_requests_that_fit(
    upstream: FakeUpstream, streamed: bool
) -> None:
    """Eight tool steps of ~700 tokens each in a 3,000-token window: without governance
    the fifth request is over the window (the upstream answers 400, the run fails and the
    fixture fail); with it, the run completes, every request is valid and fits, and
    the run's own history keeps everything."""
    upstream.context_window = WINDOW  # the upstream rejects a prompt + max_tokens over it
    steps = 8
    _script(upstream, steps)
    reports: list[Report] = []
    config = RunConfig(
        call_model_input_filter=GovernInput(context_window=WINDOW, on_report=reports.append)
    )

    result = asyncio.run(_run(_agent(upstream), "Fix the bug", config, streamed))

    assert result.final_output == "The bug is in m3."
    assert len(upstream.requests) == steps + 1 == len(reports)
    counter = exact_counter("gpt-4o-mini")
    for body in upstream.requests:  # the fixture also checks each against the rules
        assert bool(body.get("stream")) == streamed
        prompt = counter.prompt_tokens(body["messages"], body.get("tools"))
        assert prompt + body["max_tokens"] <= WINDOW
        assert body["messages"][0] == {"role": "system", "content": "You are a coding agent."}
        assert body["messages"][1]["content"].startswith("Fix the bug")  # never cut
    assert any(r.tokens_before > r.budget for r in reports if r.budget is not None)
    assert all(r.ok for r in reports)
    assert any(len(b["messages"]) < 2 + 2 * i for i, b in enumerate(upstream.requests))
    # The run's history is the SDK's, whole: every call and every full output.
    history = result.to_input_list()
    outputs = [i for i in history if i.get("type") == "function_call_output"]
    calls = [i for i in history if i.get("type") == "function_call"]
    assert len(outputs) == len(calls) == steps
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
    assert all(str(o["output"]).endswith("x = compute(y) ") for o in outputs)
    assert all(c.get("id") == PLACEHOLDER_ID for c in calls)


def _data(items: list[Any], model: str | None = "gpt-4o", instructions: str | None = "Be brief.") -> CallModelData[Any]:
    agent: Agent[Any] = Agent(name="a", model=model, tools=[read_file])
    return CallModelData(
        model_data=ModelInputData(input=items, instructions=instructions), agent=agent, context=None
    )


def _session(steps: int) -> list[Any]:
    """Responses items as the SDK keeps them: placeholder ids, reasoning, an unknown item."""
    items: list[Any] = [{"role": "user", "content": "Fix the bug"}]
    for i in range(steps):
        items.append({"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": "gAAA" + "z" * 40})
        path = json.dumps({"path": f"src/m{i}.py"})  # distinct reads: none makes another stale
        items.append({"type": "function_call", "id": PLACEHOLDER_ID, "call_id": f"c{i}", "name": "read_file", "arguments": path})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "y = 1 " * 200})
    items.append({"type": "x_future_item", "id": "xf_1", "payload": {"a": 1}})
    items.append({"type": "message", "id": PLACEHOLDER_ID, "role": "assistant", "content": [{"type": "output_text", "text": "Reading more.", "annotations": []}]})
    items.append({"role": "user", "content": "Go on."})
    return items


def test_nothing_to_do_returns_the_sdks_own_input() -> None:
    items = _session(3)
    data = _data(items)
    out = GovernInput(context_window=200_000)(data)
    assert out is data.model_data


def test_kept_items_are_the_sdks_objects_and_the_input_is_not_mutated() -> None:
    # 24 reads: enough that the window needs a cut even with old results masked (with
    # 12, masking alone fits once the newest results kept whole go down to two)
    items = _session(24)
    snapshot = copy.deepcopy(items)
    data = _data(items)
    gov = GovernInput(context_window=10_000)

    out = gov(data)

    assert items == snapshot and data.model_data.input == snapshot
    assert out.instructions == "Be brief."
    assert len(out.input) < len(items)
    originals = {id(i) for i in items}
    # Every item that came back as it was is the very same object (the SDK tracks them by identity).
    for item in out.input:
        if any(item == orig for orig in items):
            assert id(item) in originals
    assert out.input[-1] is items[-1] and out.input[0]["content"].startswith("Fix the bug")
    kept_calls = [i for i in out.input if i.get("type") == "function_call"]
    assert kept_calls and all(i.get("id") == PLACEHOLDER_ID and id(i) in originals for i in kept_calls)
    assert any(i.get("type") == "x_future_item" for i in out.input)  # unknown item kept
    assert gov.last is not None and gov.last.report.ok
    body = {"model": "gpt-4o", "input": [{k: v for k, v in i.items() if v != PLACEHOLDER_ID} for i in out.input]}
    assert validate_request(body, api="responses") == []


def test_placeholder_ids_are_not_duplicate_ids() -> None:
    """Every item from a Chat Completions model has the id "__fake_id__"; governing them as
    ids would report RS-6 (duplicate ids) on every call of every run."""
    gov = GovernInput(context_window=200_000)
    gov(_data(_session(3)))
    assert gov.last is not None
    assert gov.last.report.violations == []


def test_repairs_reach_the_model_and_the_report() -> None:
    items: list[Any] = [
        {"role": "user", "content": "start"},
        {"type": "function_call_output", "call_id": "orphan", "output": "stale"},
        {"type": "function_call", "id": PLACEHOLDER_ID, "call_id": "lost", "name": "read_file", "arguments": "{}"},
        {"role": "user", "content": "next"},
    ]
    reports: list[Report] = []
    out = GovernInput(context_window=200_000, on_report=reports.append)(_data(items))
    kinds = [(i.get("type"), i.get("call_id")) for i in out.input]
    assert ("function_call_output", "orphan") not in kinds
    assert kinds.index(("function_call", "lost")) < kinds.index(("function_call_output", "lost"))
    (report,) = reports
    assert {("orphans", "drop"), ("backfill", "insert")} <= {(a.stage, a.kind) for a in report.actions}


def test_server_side_runs_keep_outputs_of_calls_the_server_holds() -> None:
    """A server-managed run sends only the new items: an output whose call is on the server
    is an orphan to the filter. Without server_side it is dropped (and the server would say
    the call has no output); with it, it is kept and the report says what was not governed."""
    delta: list[Any] = [{"type": "function_call_output", "call_id": "call_on_server", "output": "42"}]
    local = GovernInput(context_window=200_000)
    assert local(_data(delta)).input == []
    server = GovernInput(context_window=200_000, server_side=True)
    out = server(_data(delta))
    assert out.input == delta and out.input[0] is delta[0]
    assert server.last is not None and server.last.ungoverned
    assert any(n.startswith("not governed") for n in server.last.report.notes)


def test_profile_and_window_follow_the_agents_model() -> None:
    claude = GovernInput()
    claude(_data(_session(1), model="claude-sonnet-4-5"))
    assert claude.last is not None
    report = claude.last.report
    assert report.profile == "anthropic" and report.window_source == "model"
    assert report.context_window is not None and report.context_window >= 200_000

    forced = GovernInput(profile="openai", model="gpt-4o", context_window=50_000)
    forced(_data(_session(1), model="claude-sonnet-4-5"))
    assert forced.last is not None
    assert forced.last.report.profile == "openai" and forced.last.report.context_window == 50_000

    default = GovernInput(context_window=50_000)
    default(_data(_session(1), model=None))  # the SDK's default model
    assert default.last is not None and default.last.report.model


def test_the_tools_and_instructions_count_against_the_window() -> None:
    bare = GovernInput(context_window=200_000)
    bare(_data(_session(1), instructions=None))
    full = GovernInput(context_window=200_000)
    full(_data(_session(1), instructions="Be brief. " * 100))
    assert bare.last is not None and full.last is not None
    assert full.last.report.tokens_after > bare.last.report.tokens_after + 200


def test_import_error_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['agents'] = None\n"
        "try:\n"
        "    import context_governor.adapters.openai_agents\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'context-governor[openai-agents]'" in out.stdout


def _doc_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_docs_example_runs(
    upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's example, as printed, against the fake upstream (named by the environment
    variables the openai client reads), with a window it outgrows."""
    monkeypatch.setenv("OPENAI_BASE_URL", upstream.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    upstream.context_window = 8_000
    for i in range(10):
        upstream.push(Reply.calls(("read_module", {"name": f"m{i}"})))
    upstream.push(Reply.text("The bug is in m7."))

    exec(compile(_doc_example(), str(DOC), "exec"), {"__name__": "__main__"})

    printed = capsys.readouterr().out
    assert printed.startswith("The bug is in m7.\n")
    assert "10 tool outputs in the run's history" in printed
    totals = [tuple(map(int, m)) for m in re.findall(r"call \d+: (\d+) -> (\d+) tokens", printed)]
    assert len(totals) == 11 and any(before > after for before, after in totals)


def test_each_call_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """A summary at INFO when the call changed something; the notes at WARNING when the
    result does not fit (here a window that even the newest turn outgrows)."""
    caplog.set_level("INFO", logger="context_governor.adapters.openai_agents")
    GovernInput(context_window=10_000)(_data(_session(12)))
    (info,) = [r for r in caplog.records if r.levelname == "INFO"]
    assert re.match(r"context-governor: 40 -> \d+ items, \d+ -> \d+ tokens", info.getMessage())
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    caplog.clear()
    GovernInput(context_window=100)(_data(_session(2)))
    assert any("budget" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")
