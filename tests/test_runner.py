"""AgentRunner offline: the scripted model and a misbehaving tool registry double."""

from __future__ import annotations

import asyncio
import copy
import time
from typing import Any

import pytest
from agent_doubles import FakeTools

from context_governor import Governor, InputError
from context_governor.counting import exact_counter
from context_governor.llm import ModelHTTPError, ModelResponse, ScriptedModel, tool_call
from context_governor.providers import validate
from context_governor.report import Report
from context_governor.runner import AgentRunner, ModelCall, RunHooks, ToolEvent, clip

SYSTEM = {"role": "system", "content": "You are a test agent."}


def _task(text: str = "do the thing") -> list[dict[str, Any]]:
    return [SYSTEM, {"role": "user", "content": text}]


def _calls(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"content": content, "tool_calls": list(calls)}


def _legal(messages: list[dict[str, Any]]) -> None:
    assert validate(messages, provider="openai") == []


@pytest.mark.asyncio
async def test_completes_and_returns_what_to_persist() -> None:
    model = ScriptedModel([_calls(tool_call("echo", {"text": "ab", "times": 3})), "All done."])
    history = _task()
    frozen = copy.deepcopy(history)
    result = await AgentRunner(model, FakeTools()).run(history)

    assert history == frozen  # never modified
    assert result.stop_reason == "completed" and result.ok
    assert result.final_answer == "All done."
    assert [m["role"] for m in result.new_messages] == ["assistant", "tool", "assistant"]
    assert result.new_messages[1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "echo",
        "content": "ababab",
    }
    assert result.tools_used == ["echo"]
    assert result.model_calls == 2 and len(result.reports) == 2
    counter = exact_counter(None)
    expected = sum(counter.prompt_tokens(r.messages, r.tools) for r in model.requests)
    assert result.usage.prompt_tokens == expected > 0
    # The second call saw the first call's result: the loop feeds tools back.
    assert model.requests[1].messages[-1]["content"] == "ababab"
    _legal(history + result.new_messages)


@pytest.mark.asyncio
async def test_parallel_tool_calls_run_concurrently_and_results_keep_call_order() -> None:
    model = ScriptedModel(
        [
            _calls(
                tool_call("sleep", {"seconds": 0.4}),
                tool_call("sleep", {"seconds": 0.1}),
                tool_call("echo", {"text": "x"}),
            ),
            "ok",
        ]
    )
    finished: list[str] = []
    hooks = RunHooks(after_tool=lambda e: finished.append(e.call_id))
    start = time.monotonic()
    result = await AgentRunner(model, FakeTools(), hooks=hooks).run(_task())
    elapsed = time.monotonic() - start

    assert elapsed < 0.8, "three tools, 0.5 s of sleep in total: they must overlap"
    assert finished == ["call_3", "call_2", "call_1"]  # completion order
    tools = [m for m in result.new_messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["call_1", "call_2", "call_3"]  # call order


@pytest.mark.asyncio
async def test_tool_failures_become_error_results_the_model_reads() -> None:
    model = ScriptedModel(
        [
            _calls(
                tool_call("boom"),
                tool_call("sleep", {"seconds": 5}),
                tool_call("huge", {"chars": 50_000}),
                tool_call("echo", "{not json"),
                {"id": "", "type": "function", "function": {"name": "", "arguments": "{}"}},
            ),
            "recovered",
        ]
    )
    runner = AgentRunner(model, FakeTools(), tool_timeout=0.2, max_tool_result_chars=1000)
    start = time.monotonic()
    result = await runner.run(_task())
    assert time.monotonic() - start < 2.0  # the 5 s tool was abandoned

    events = {e.name or "(none)": e for e in result.tool_events}
    assert events["boom"].is_error and "RuntimeError: the tool exploded" in events["boom"].content
    assert events["sleep"].is_error and "timed out after 0.2 seconds" in events["sleep"].content
    assert not events["huge"].is_error and len(events["huge"].content) <= 1000
    assert "characters cut" in events["huge"].content
    assert events["echo"].content.startswith("Error: invalid JSON")
    assert events["(none)"].content == "Error: the tool call names no function"
    assert result.stop_reason == "completed"
    # Every call got exactly one result, including the one without id or name.
    _legal(_task() + result.new_messages)


@pytest.mark.asyncio
async def test_no_tool_registry_answers_every_call_with_an_error() -> None:
    model = ScriptedModel([_calls(tool_call("echo", {"text": "x"})), "fine"])
    result = await AgentRunner(model, None).run(_task())
    assert result.tool_events[0].content == "Error: no tools are available in this run"
    assert model.requests[0].tools is None


@pytest.mark.asyncio
async def test_missing_and_duplicate_call_ids_are_named_before_persisting() -> None:
    calls = [
        {"id": "dup", "type": "function", "function": {"name": "echo", "arguments": '{"text": "a"}'}},
        {"id": "dup", "type": "function", "function": {"name": "echo", "arguments": '{"text": "b"}'}},
    ]
    model = ScriptedModel([ModelResponse({"role": "assistant", "content": None, "tool_calls": calls}), "ok"])
    result = await AgentRunner(model, FakeTools()).run(_task())
    ids = [c["id"] for c in result.new_messages[0]["tool_calls"]]
    assert ids == ["dup", "call_s1_1"]
    assert [m["tool_call_id"] for m in result.new_messages[1:3]] == ids
    _legal(_task() + result.new_messages)


@pytest.mark.asyncio
async def test_max_iterations_stops_with_a_legal_history() -> None:
    model = ScriptedModel([_calls(tool_call("echo", {"text": str(i)})) for i in range(3)])
    result = await AgentRunner(model, FakeTools(), max_iterations=3).run(_task())
    assert result.stop_reason == "max_iterations"
    assert result.final_answer is None and result.model_calls == 3
    assert result.new_messages[-1]["role"] == "tool"
    _legal(_task() + result.new_messages)


@pytest.mark.asyncio
async def test_model_errors_end_the_run_with_a_reason() -> None:
    model = ScriptedModel([_calls(tool_call("echo", {"text": "x"})), ModelHTTPError("HTTP 400 from x: bad", status=400)])
    result = await AgentRunner(model, FakeTools()).run(_task())
    assert result.stop_reason == "model_error" and not result.ok
    assert result.error == "HTTP 400 from x: bad"
    assert len(result.new_messages) == 2  # what happened before the failure is kept

    class Broken:
        async def complete(self, messages: Any, **kwargs: Any) -> ModelResponse:
            raise KeyError("choices")

    result = await AgentRunner(Broken()).run(_task())
    assert result.stop_reason == "model_error" and result.error == "KeyError: 'choices'"


@pytest.mark.asyncio
async def test_an_answer_cut_at_the_output_limit_says_so() -> None:
    model = ScriptedModel([ModelResponse({"role": "assistant", "content": "half an ans"}, finish_reason="length")])
    result = await AgentRunner(model).run(_task())
    assert result.stop_reason == "length" and result.final_answer == "half an ans"


@pytest.mark.asyncio
async def test_bad_input_fails_before_any_model_call() -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(InputError, match=r"messages\[1\]"):
        await AgentRunner(model).run([SYSTEM, "not a message"])  # type: ignore[list-item]
    assert model.requests == []


@pytest.mark.asyncio
async def test_one_run_at_a_time_per_runner() -> None:
    model = ScriptedModel([_calls(tool_call("sleep", {"seconds": 0.2})), "a", "b"])
    runner = AgentRunner(model, FakeTools())
    first = asyncio.create_task(runner.run(_task()))
    await asyncio.sleep(0.05)
    with pytest.raises(RuntimeError, match="already running"):
        await runner.run(_task())
    assert (await first).final_answer == "a"


@pytest.mark.asyncio
async def test_hooks_see_every_step_in_order_and_may_be_async() -> None:
    log: list[str] = []

    async def before_model(call: ModelCall) -> None:
        await asyncio.sleep(0)
        log.append(f"model{call.step}:{len(call.messages)}")

    def on_report(report: Report) -> None:
        log.append(f"report:{report.messages_before}")

    def after_tool(event: ToolEvent) -> None:
        log.append(f"tool:{event.name}")

    def on_message(message: dict[str, Any]) -> None:
        log.append(f"msg:{message['role']}")

    text: list[str] = []
    hooks = RunHooks(before_model, after_tool, on_report, on_message, text.append)
    model = ScriptedModel([_calls(tool_call("echo", {"text": "x"})), "The answer is 42."])
    await AgentRunner(model, FakeTools(), hooks=hooks).run(_task())
    assert log == [
        "report:2", "model1:2", "msg:assistant", "tool:echo", "msg:tool",
        "report:4", "model2:4", "msg:assistant",
    ]
    assert "".join(text) == "The answer is 42."


@pytest.mark.asyncio
async def test_governance_runs_before_every_model_call_not_once_per_turn() -> None:
    # One user turn, many tool steps: microcompact must kick in mid-run, once
    # more than ten read results have piled up — which a once-per-turn
    # governance would never see.
    script = [_calls(tool_call("read_file", {"path": f"f{i}.py"})) for i in range(13)] + ["done"]
    model = ScriptedModel(script)
    # The nanobot profile is the seed's pipeline, which microcompacts on every call.
    result = await AgentRunner(model, FakeTools(), Governor(profile="nanobot")).run(_task())
    compacted = [sum(a.stage == "microcompact" for a in r.actions) for r in result.reports]
    assert compacted[:11] == [0] * 11
    assert compacted[11:] == [1, 2, 3]
    # The model saw the stubs; the persisted history still holds every full result.
    last_request = model.requests[-1].messages
    assert "[read_file result omitted from context]" in [m.get("content") for m in last_request]
    assert all(len(m["content"]) > 500 for m in result.new_messages if m["role"] == "tool")


@pytest.mark.asyncio
async def test_a_failing_governor_falls_back_to_the_minimal_repair_and_says_so() -> None:
    class FailingGovernor(Governor):
        def govern(self, messages: list[Any], *, tools: Any = None) -> Any:
            if messages:  # construction governs [] to check the settings
                raise ZeroDivisionError("counter bug")
            return super().govern(messages, tools=tools)

    lost = {"role": "assistant", "content": None, "tool_calls": [tool_call("echo", {"text": "?"}, id="lost_1")]}
    orphan = {"role": "tool", "tool_call_id": "ghost", "name": "echo", "content": "from nowhere"}
    history = [SYSTEM, {"role": "user", "content": "hi"}, lost, orphan, {"role": "user", "content": "again"}]
    model = ScriptedModel(["fine"])
    result = await AgentRunner(model, FakeTools(), FailingGovernor()).run(history)

    assert result.stop_reason == "completed"  # a governance failure does not stop the run
    assert len(result.events) == 1 and "governance failed (ZeroDivisionError('counter bug'))" in result.events[0]
    report = result.reports[0]
    assert [(a.stage, a.kind) for a in report.actions] == [
        ("runner", "fallback"),
        ("orphans", "drop"),
        ("backfill", "insert"),
    ]
    sent = model.requests[0].messages
    assert "ghost" not in [m.get("tool_call_id") for m in sent]
    assert [m.get("tool_call_id") for m in sent if m["role"] == "tool"] == ["lost_1"]
    _legal(sent)


@pytest.mark.asyncio
async def test_cancelled_mid_tool_keeps_what_happened_and_the_next_run_repairs_it() -> None:
    tools = FakeTools()
    fast_done = asyncio.Event()
    persisted: list[dict[str, Any]] = []
    hooks = RunHooks(
        after_tool=lambda e: fast_done.set(),
        on_message=persisted.append,
    )
    model = ScriptedModel(
        [
            _calls(tool_call("echo", {"text": "fast"}), tool_call("sleep", {"seconds": 30})),
            "back again",
        ]
    )
    runner = AgentRunner(model, tools, hooks=hooks)
    history = _task()
    task = asyncio.create_task(runner.run(history))
    await asyncio.wait_for(fast_done.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert tools.cancelled == ["sleep"]  # the slow tool was really stopped
    assert [m["role"] for m in runner.new_messages] == ["assistant", "tool"]
    assert runner.new_messages[1]["tool_call_id"] == "call_1"
    assert persisted == runner.new_messages  # the hook saw the same, as it happened

    # Next run: the persisted history has a call without its result (call_2).
    history = history + runner.new_messages + [{"role": "user", "content": "still there?"}]
    result = await runner.run(history)
    backfills = [a for a in result.reports[0].actions if a.stage == "backfill"]
    assert [(a.kind, a.tool_call_id) for a in backfills] == [("insert", "call_2")]
    sent = model.requests[1].messages
    _legal(sent)
    assert result.final_answer == "back again"
    assert "call_2" not in [m.get("tool_call_id") for m in result.new_messages]  # never persisted


def test_clip_keeps_head_and_tail_within_the_limit() -> None:
    text = "HEAD" + "-" * 10_000 + "TAIL"
    clipped = clip(text, 500)
    assert len(clipped) <= 500 and clipped.startswith("HEAD") and clipped.endswith("TAIL")
    assert clip("short", 500) == "short"
