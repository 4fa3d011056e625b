"""AgentRunner with the native clients, over real HTTP, against the fake native upstream.

The upstream (tests/fake_native.py) validates every request it receives with the
API's own rules (the thinking rules of Messages, the item rules of Responses) and
against its context window; the ``native`` fixture fails the test on any
rejection. Sessions here outgrow a small window, so governance cuts and compacts
them, with thinking on (Anthropic) and reasoning items (Responses).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_doubles import FakeTools
from fake_native import FakeNative, NativeReply, fake_signature

from context_governor import Governor
from context_governor.llm import RetryPolicy
from context_governor.llm._anthropic_client import AnthropicClient
from context_governor.llm._responses_client import ITEMS, ResponsesClient
from context_governor.runner import AgentRunner, ModelCall, RunHooks, RunResult

WINDOW = 6000
SYSTEM = {"role": "system", "content": "You are a coding agent. Be brief."}
STEPS = 8
FAST_RETRY = RetryPolicy(max_retries=1, base_delay=0.01)


def _script(native: FakeNative) -> None:
    """A long tool session: each step thinks, says something and reads a big chunk."""
    for i in range(STEPS):
        native.push(
            NativeReply.tool_calls(
                ("echo", {"text": f"line {i} of the file " * 30, "times": 4}),
                text=f"Reading part {i}.",
                thinking=f"Part {i} is next; I should read it before answering.",
            )
        )
    native.push(NativeReply.answer("All parts read.", thinking="Everything is read now."))


async def _run(client: Any, governor: Governor, history: list[dict[str, Any]] | None = None,
               calls: list[ModelCall] | None = None) -> tuple[RunResult, list[str]]:  # fmt: skip
    texts: list[str] = []
    seen = calls if calls is not None else []
    hooks = RunHooks(on_text=texts.append, before_model=seen.append)
    async with client:
        runner = AgentRunner(client, FakeTools(), governor, hooks=hooks)
        result = await runner.run(history or [SYSTEM, {"role": "user", "content": "read it all"}])
    return result, texts


def _anthropic(native: FakeNative, **kwargs: Any) -> AnthropicClient:
    kwargs.setdefault("thinking", 1024)
    return AnthropicClient("claude-sonnet-4-5", base_url=native.root_url, api_key="sk-ant",
                           retry=FAST_RETRY, **kwargs)  # fmt: skip


def _responses(native: FakeNative, **kwargs: Any) -> ResponsesClient:
    kwargs.setdefault("reasoning", {"effort": "low"})
    return ResponsesClient("o4-mini", base_url=native.base_url, api_key="sk-oai",
                           retry=FAST_RETRY, **kwargs)  # fmt: skip


def _assert_cut_and_inside(result: RunResult) -> None:
    """The session outgrew the window, governance acted, and every request fit."""
    assert max(r.tokens_before for r in result.reports) > WINDOW
    assert all(r.within_budget for r in result.reports)
    acted = {a.stage for r in result.reports for a in r.actions}
    assert acted & {"compact", "snip", "microcompact"}, acted


# ----------------------------------------------------------------------------- Anthropic


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_anthropic_session_with_thinking_is_cut_and_every_request_is_legal(
    native: FakeNative, stream: bool
) -> None:
    native.context_window = WINDOW
    _script(native)
    governor = Governor(profile="anthropic", model="claude-sonnet-4-5", context_window=WINDOW,
                        max_output=2000)  # fmt: skip
    calls: list[ModelCall] = []
    result, texts = await _run(_anthropic(native, stream=stream), governor, calls=calls)

    assert result.stop_reason == "completed", result.error
    assert result.final_answer == "All parts read."
    assert len(native.requests) == STEPS + 1 == len(result.reports)
    _assert_cut_and_inside(result)
    assert native.request_headers[0]["x-api-key"] == "sk-ant"
    # Thinking stayed on: the history kept every turn's thinking, so AN-9a never forced it off.
    assert all(body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
               for body in native.requests)  # fmt: skip
    # The history holds each thinking block exactly as the server returned it.
    assistants = [m for m in result.new_messages if m["role"] == "assistant"]
    for message in assistants:
        block = message["content"][0]
        assert block == {"type": "thinking", "thinking": block["thinking"],
                         "signature": fake_signature(block["thinking"])}  # fmt: skip
    # Each request carries the latest turn back byte for byte, signature included.
    for body, previous in zip(native.requests[1:], assistants, strict=False):
        sent = [m for m in body["messages"] if m["role"] == "assistant"][-1]
        assert json.dumps(sent["content"][: len(previous["content"])]) == json.dumps(
            previous["content"]
        )
    # The hook saw the body that was sent, and a chat view it can serialise.
    assert [c.body for c in calls] == native.requests
    json.dumps([c.messages for c in calls])
    if stream:
        assert len(texts) > STEPS and "".join(texts).endswith("All parts read.")


@pytest.mark.asyncio
async def test_thinking_turned_on_for_a_history_without_it_is_repaired_not_rejected(
    native: FakeNative,
) -> None:
    """A saved history from a run without thinking, continued with thinking on: the turn
    the last tool result answers has no thinking block (AN-9a), and none can be made up,
    so governance turns thinking off for that request, and says so."""
    history = [
        SYSTEM,
        {"role": "user", "content": "read a"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "toolu_old", "type": "function",
             "function": {"name": "echo", "arguments": '{"text": "a"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_old", "name": "echo", "content": "a"},
    ]  # fmt: skip
    native.push(NativeReply.answer("Done.", thinking="ok"))
    governor = Governor(profile="anthropic", model="claude-sonnet-4-5", max_output=2000)
    result, _ = await _run(_anthropic(native), governor, history)
    assert result.stop_reason == "completed", result.error
    assert native.requests[0]["thinking"] == {"type": "disabled"}
    assert result.reports[0].counts()[("thinking", "repair")] == 1


@pytest.mark.asyncio
async def test_the_upstream_rejects_what_the_runner_would_send_ungoverned(
    native: FakeNative,
) -> None:
    """Control: with a runner window larger than the upstream's, the same session is
    rejected (so the checks the other tests rely on are live)."""
    native.context_window = WINDOW
    _script(native)
    governor = Governor(profile="anthropic", model="claude-sonnet-4-5", context_window=200_000,
                        max_output=2000)  # fmt: skip
    result, _ = await _run(_anthropic(native), governor)
    assert result.stop_reason == "model_error"
    assert "HTTP 400" in (result.error or "") and "prompt is too long" in (result.error or "")
    assert native.rejections
    native.rejections.clear()
    native.replies.clear()


@pytest.mark.asyncio
async def test_a_bad_server_answer_ends_the_run_with_a_clear_error(native: FakeNative) -> None:
    native.push(NativeReply.raw(200, b"<html>upstream gateway</html>", "application/json"))
    result, _ = await _run(_anthropic(native), Governor(profile="anthropic", max_output=2000))
    assert result.stop_reason == "model_error"
    assert result.error is not None and "is not JSON: '<html>upstream gateway</html>'" in result.error


class _UnreadableBody(AnthropicClient):
    """A client whose edge builds a body that cannot be read back (a content block that is
    not an object): the runner's own input check would not let such a history in, so the
    body is broken here, where a buggy custom client would break it."""

    def request_body(self, messages: Any, tools: Any, max_tokens: Any) -> dict[str, Any]:
        body = super().request_body(messages, tools, max_tokens)
        return {**body, "messages": [{"role": "user", "content": ["not a block"]}]}


@pytest.mark.asyncio
async def test_a_body_the_edge_cannot_read_ends_the_run_before_any_request(
    native: FakeNative,
) -> None:
    client = _UnreadableBody("claude-sonnet-4-5", base_url=native.root_url, api_key="k")
    result, _ = await _run(client, Governor(profile="anthropic", max_output=2000))
    assert result.stop_reason == "model_error"
    assert result.error == (
        "cannot build the request body: messages[0].content[0]: expected a content block "
        "object, got str"
    )
    assert native.requests == []


# ----------------------------------------------------------------------------- Responses


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_responses_session_with_reasoning_is_cut_and_every_request_is_legal(
    native: FakeNative, stream: bool
) -> None:
    native.context_window = WINDOW
    _script(native)
    governor = Governor(profile="openai", model="o4-mini", context_window=WINDOW, max_output=1000)
    result, texts = await _run(_responses(native, stream=stream), governor)

    assert result.stop_reason == "completed", result.error
    assert result.final_answer == "All parts read."
    assert len(native.requests) == STEPS + 1 == len(result.reports)
    _assert_cut_and_inside(result)
    assert all(b["store"] is False and b["include"] == ["reasoning.encrypted_content"]
               for b in native.requests)  # fmt: skip
    assert native.request_headers[0]["authorization"] == "Bearer sk-oai"
    # The history holds each answer's items, the encrypted reasoning exactly as returned.
    assistants = [m for m in result.new_messages if m["role"] == "assistant"]
    for message in assistants:
        reasoning = message[ITEMS][0]
        summary = reasoning["summary"][0]["text"]
        assert reasoning["type"] == "reasoning"
        assert reasoning["encrypted_content"] == "gAAAA" + fake_signature(summary)
    # Each request sends the latest answer's items back unchanged, in their order.
    for body, previous in zip(native.requests[1:], assistants, strict=False):
        items = previous[ITEMS]
        start = next(i for i, item in enumerate(body["input"]) if item == items[0])
        assert json.dumps(body["input"][start : start + len(items)]) == json.dumps(items)
    if stream:
        assert len(texts) > STEPS and "".join(texts).endswith("All parts read.")


@pytest.mark.asyncio
async def test_responses_history_saved_as_json_continues(native: FakeNative) -> None:
    """A history saved to JSON and loaded again sends its reasoning items back as they were."""
    native.push(
        NativeReply.tool_calls(("echo", {"text": "x"}), thinking="look first"),
        NativeReply.answer("Done.", thinking="done"),
    )
    governor = Governor(profile="openai", model="o4-mini", max_output=1000)
    first, _ = await _run(_responses(native), governor)
    history = json.loads(json.dumps([SYSTEM, {"role": "user", "content": "go"},
                                     *first.new_messages]))  # fmt: skip
    native.push(NativeReply.answer("Again.", thinking="again"))
    history.append({"role": "user", "content": "once more"})
    second, _ = await _run(_responses(native), governor, history)
    assert second.final_answer == "Again."
    sent = native.requests[-1]["input"]
    for message in first.new_messages:
        for item in message.get(ITEMS, ()):
            assert item in sent


# ----------------------------------------------------------------------------- settings


@pytest.mark.asyncio
async def test_the_governors_token_hook_counts_native_requests(native: FakeNative) -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text) // 3 + 1

    native.push(NativeReply.answer("Hi.", thinking="hm"))
    governor = Governor(profile="anthropic", model="claude-sonnet-4-5", max_output=2000,
                        count_tokens=count)  # fmt: skip
    counted.clear()
    result, _ = await _run(_anthropic(native), governor)
    assert result.stop_reason == "completed", result.error
    assert any("read it all" in text for text in counted)
    assert result.reports[0].counter != "cl100k_base"


@pytest.mark.asyncio
async def test_a_failing_governance_falls_back_to_the_minimal_repair(native: FakeNative) -> None:
    """If governing the native body raises, the step still sends a repaired body (the seed's
    fallback), says so, and the run goes on."""
    broken = {"on": False}

    def count(text: str) -> int:
        if broken["on"]:
            raise RuntimeError("counter down")
        return len(text) // 3 + 1

    governor = Governor(profile="anthropic", model="claude-sonnet-4-5", max_output=2000,
                        count_tokens=count)  # fmt: skip
    broken["on"] = True
    history = [
        SYSTEM,
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "toolu_lost", "type": "function", "function": {"name": "echo",
                                                                  "arguments": "{}"}}]},
        {"role": "user", "content": "and?"},
    ]  # fmt: skip
    native.push(NativeReply.answer("Done."))
    result, _ = await _run(_anthropic(native, thinking=None), governor, history)
    assert result.stop_reason == "completed", result.error
    assert result.events == [
        "step 1: governance failed (RuntimeError('counter down')); minimal repair used"
    ]
    # The lost call's result was backfilled by the fallback, so the upstream accepted it.
    sent = native.requests[0]["messages"]
    assert sent[2]["content"][0]["type"] == "tool_result"
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_lost"


@pytest.mark.asyncio
async def test_a_hook_that_raises_ends_the_run_as_with_a_chat_client(native: FakeNative) -> None:
    """A bug in the caller's hook is raised, not turned into a model error."""

    def broken(call: ModelCall) -> None:
        raise RuntimeError("hook bug")

    async with _anthropic(native) as client:
        runner = AgentRunner(client, FakeTools(), Governor(profile="anthropic", max_output=2000),
                             hooks=RunHooks(before_model=broken))  # fmt: skip
        with pytest.raises(RuntimeError, match="hook bug"):
            await runner.run([SYSTEM, {"role": "user", "content": "go"}])
    assert native.requests == []
