"""End to end over real HTTP: AgentRunner + OpenAICompatClient against the fake upstream.

The upstream validates every request it receives (provider rules and its
context window) and the ``upstream`` fixture fails the test on any violation,
so each test here also proves that what the runner sent was legal.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any

import pytest
from agent_doubles import FakeTools
from fake_upstream import FakeUpstream, Reply

from context_governor import Governor
from context_governor.llm import OpenAICompatClient, RetryPolicy
from context_governor.runner import AgentRunner, RunHooks

SYSTEM = {"role": "system", "content": "You are a coding agent. Be brief."}
FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.05, max_delay=5)


def _client(upstream: FakeUpstream, **kwargs: Any) -> OpenAICompatClient:
    kwargs.setdefault("retry", FAST_RETRY)
    return OpenAICompatClient("gpt-4o-mini", base_url=upstream.base_url, api_key="sk-test", **kwargs)


def _damaged_history() -> list[dict[str, Any]]:
    """A persisted history as crashes leave it: a lost result, an orphan, two users in a row."""
    return [
        SYSTEM,
        {"role": "user", "content": "look at the handlers"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_old1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
            {"id": "call_lost", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "b.py"}'}},
        ]},
        {"role": "tool", "tool_call_id": "call_old1", "name": "read_file", "content": OLD_FILE},
        # call_lost never got its result: the process died.
        {"role": "tool", "tool_call_id": "call_from_a_cancelled_turn", "name": "exec", "content": "orphan"},
        {"role": "assistant", "content": "Both handlers are stubs."},
        {"role": "user", "content": "fix them"},
        {"role": "user", "content": "and run the tests"},
    ]


#: An old file read: ~3,500 tokens, too much to keep once the window fills up.
OLD_FILE = "".join(f"def handler_{i}(request):\n    return respond({i}, request)\n" for i in range(250))


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_damaged_history_huge_outputs_small_window(upstream: FakeUpstream, stream: bool) -> None:
    upstream.context_window = 6000  # the upstream rejects anything larger, like a real provider
    upstream.push(
        Reply.calls(("huge", {"chars": 200_000}), ("read_file", {"path": "a.py"})),
        Reply.calls(("huge", {"chars": 90_000})),
        Reply.calls(("echo", {"text": "tests pass", "times": 1})),
        Reply.text("Fixed both handlers; the tests pass."),
    )
    governor = Governor(profile="openai", model="gpt-4o-mini", context_window=6000, max_output=1000)
    texts: list[str] = []
    history = _damaged_history()
    async with _client(upstream, stream=stream) as client:
        runner = AgentRunner(
            client, FakeTools(), governor, max_tool_result_chars=4000,
            hooks=RunHooks(on_text=texts.append),
        )
        result = await runner.run(history)

    assert result.stop_reason == "completed", result.error
    assert result.final_answer == "Fixed both handlers; the tests pass."
    assert len(upstream.requests) == 4 == len(result.reports)
    assert all(r.within_budget for r in result.reports)
    first = result.reports[0].counts()
    assert first[("orphans", "drop")] == 1 and first[("backfill", "insert")] == 1
    # The old turn was cut (or its result cleared) to fit: the upstream never saw it again.
    assert all(OLD_FILE not in json.dumps(body) for body in upstream.requests)
    assert sum(r.counts()[("alternation", "merge")] for r in result.reports) >= 1
    # Huge outputs were clipped before they were persisted; the server saw usage.
    assert max(len(m["content"]) for m in result.new_messages if m["role"] == "tool") <= 4000
    assert result.usage.prompt_tokens > 0 and result.usage.cached_tokens == 12
    assert upstream.request_headers[0]["authorization"] == "Bearer sk-test"
    if stream:
        assert len(texts) > 3 and "".join(texts) == result.final_answer
    # The persisted history itself was never repaired: the lost call is still lost.
    assert history == _damaged_history()


@pytest.mark.asyncio
async def test_interrupted_run_is_repaired_by_the_next_run(upstream: FakeUpstream) -> None:
    started = asyncio.Event()
    tools = FakeTools()
    upstream.push(Reply.calls(("echo", {"text": "a"}), ("sleep", {"seconds": 30})))
    async with _client(upstream, stream=True) as client:
        runner = AgentRunner(client, tools, hooks=RunHooks(after_tool=lambda e: started.set()))
        history = [SYSTEM, {"role": "user", "content": "go"}]
        task = asyncio.create_task(runner.run(history))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        interrupted = runner.new_messages
        assert [m["role"] for m in interrupted] == ["assistant", "tool"]

        upstream.push(Reply.text("Resumed."))
        history = history + interrupted + [{"role": "user", "content": "continue"}]
        result = await runner.run(history)

    assert result.final_answer == "Resumed."
    sent = upstream.requests[-1]["messages"]
    placeholders = [m for m in sent if m["role"] == "tool" and "unavailable" in m["content"]]
    assert len(placeholders) == 1
    assert [(a.stage, a.kind) for a in result.reports[0].actions] == [("backfill", "insert")]


@pytest.mark.asyncio
async def test_retries_429_with_retry_after_then_500_then_success(upstream: FakeUpstream) -> None:
    upstream.push(
        Reply.error(429, "rate limited", {"retry-after": "1"}),
        Reply.error(500, "internal error"),
        Reply.text("finally"),
    )
    retries: list[tuple[int | None, float]] = []
    async with _client(upstream, on_retry=lambda e, n, wait: retries.append((e.status, wait))) as client:
        start = time.monotonic()
        result = await AgentRunner(client).run([{"role": "user", "content": "hi"}])
        elapsed = time.monotonic() - start
    assert result.final_answer == "finally"
    assert retries == [(429, 1.0), (500, 0.1)]  # Retry-After honoured, then backoff (2nd attempt)
    assert elapsed >= 1.0
    assert len(upstream.requests) == 3


@pytest.mark.asyncio
async def test_400_is_not_retried_and_becomes_the_stop_reason(upstream: FakeUpstream) -> None:
    upstream.push(Reply.error(400, "Invalid 'messages[1].content': unsupported"))
    async with _client(upstream) as client:
        result = await AgentRunner(client).run([{"role": "user", "content": "hi"}])
    assert result.stop_reason == "model_error"
    assert result.error is not None
    assert result.error.startswith("HTTP 400 from http://127.0.0.1:")
    assert result.error.endswith("Invalid 'messages[1].content': unsupported")
    assert len(upstream.requests) == 1


@pytest.mark.asyncio
async def test_retries_give_up_with_the_last_error(upstream: FakeUpstream) -> None:
    upstream.push(*[Reply.error(503, "overloaded")] * 3)
    async with _client(upstream, retry=RetryPolicy(max_retries=2, base_delay=0.01)) as client:
        result = await AgentRunner(client).run([{"role": "user", "content": "hi"}])
    assert result.stop_reason == "model_error" and "HTTP 503" in (result.error or "")
    assert len(upstream.requests) == 3


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_timeouts_are_retried_then_reported(upstream: FakeUpstream, stream: bool) -> None:
    slow = Reply.text("too late", delay=0.0)
    slow.delay, slow.stall = (0.6, 0.0) if not stream else (0.0, 0.6)
    upstream.push(slow, Reply.text("in time"))
    async with _client(upstream, stream=stream, timeout=0.25) as client:
        result = await AgentRunner(client).run([{"role": "user", "content": "hi"}])
        assert result.final_answer == "in time"
        upstream.push(Reply.text("late", delay=0.6), Reply.text("late", delay=0.6))
        client.retry = RetryPolicy(max_retries=1, base_delay=0.01)
        result = await AgentRunner(client).run([{"role": "user", "content": "hi"}])
    assert result.stop_reason == "model_error"
    assert "no answer from" in (result.error or "") and "in time" in (result.error or "")
    await asyncio.sleep(0.5)  # let the server finish the abandoned replies


@pytest.mark.asyncio
async def test_unreachable_server_is_a_clear_model_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = OpenAICompatClient("m", base_url=f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(max_retries=1, base_delay=0.01))
    async with client:
        result = await AgentRunner(client).run([{"role": "user", "content": "hi"}])
    assert result.stop_reason == "model_error"
    assert result.error is not None
    assert result.error.startswith(f"cannot reach the model server at http://127.0.0.1:{port}/v1")


@pytest.mark.asyncio
async def test_streamed_tool_calls_are_assembled_from_deltas(upstream: FakeUpstream) -> None:
    long_args = {"text": "a fairly long argument " * 5, "times": 2}
    upstream.push(
        Reply.calls(("echo", long_args), ("echo", {"text": "b"}), content="Let me check."),
        Reply.text("Done."),
    )
    texts: list[str] = []
    async with _client(upstream, stream=True) as client:
        result = await AgentRunner(client, FakeTools(), hooks=RunHooks(on_text=texts.append)).run(
            [{"role": "user", "content": "hi"}]
        )
    assistant = result.new_messages[0]
    assert assistant["content"] == "Let me check."
    assert [c["id"] for c in assistant["tool_calls"]] == [
        m["tool_call_id"] for m in result.new_messages[1:3]
    ]
    assert result.tool_events[0].content == long_args["text"] * 2
    assert "".join(texts) == "Let me check.Done."
    # Usage came from the final usage-only chunk of each stream.
    assert result.usage.prompt_tokens > 0
    assert (result.usage.completion_tokens, result.usage.cached_tokens) == (14, 6)
    assert upstream.requests[0]["stream_options"] == {"include_usage": True}


@pytest.mark.asyncio
async def test_an_error_body_that_is_not_json_is_still_reported(upstream: FakeUpstream) -> None:
    upstream.push(Reply.raw(502, b"<html>Bad Gateway</html>", "text/html"), Reply.raw(200, b"not json"))
    async with _client(upstream, retry=RetryPolicy(max_retries=1, base_delay=0.01)) as client:
        result = await AgentRunner(client).run([{"role": "user", "content": "hi"}])
    assert result.stop_reason == "model_error"
    assert "is not JSON" in (result.error or "")
    assert len(upstream.requests) == 2
