"""Running one assistant message's tool calls: concurrently, bounded, never raising.

A tool that raises, hangs or returns too much becomes an error or clipped
result the model can read; only cancellation of the run itself propagates,
and then the calls that had finished are still there to be persisted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..messages import Message
from ._types import RunLimits, ToolEvent, ToolRunner

__all__ = ["TIMEOUT_GRACE", "ToolBatch", "call_parts", "clip", "execute", "tool_message"]

#: Extra seconds granted to a registry that enforces the timeout itself, so that
#: its own (more precise) message wins; the runner's guard only catches one that does not.
TIMEOUT_GRACE = 0.5


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, keeping its head and tail.

    The tail matters as much as the head for tool output (the error at the end
    of a test run, the last lines of a log), so both survive.
    """
    if len(text) <= limit:
        return text
    marker = f"\n… [{len(text) - limit:,} characters cut] …\n"
    keep = max(0, limit - len(marker) - 12)  # 12: room for the count's digits to grow
    marker = f"\n… [{len(text) - keep:,} characters cut] …\n"
    head = keep * 2 // 3
    return text[:head] + marker + text[len(text) - (keep - head) :]


def call_parts(call: dict[str, Any]) -> tuple[str, str, str]:
    """(id, name, arguments) of a normalised tool call."""
    function = call.get("function") or {}
    return (
        str(call.get("id") or ""),
        str(function.get("name") or ""),
        str(function.get("arguments") or ""),
    )


def tool_message(event: ToolEvent) -> Message:
    """The ``tool`` message for a result; ``name`` only when the call had one (OpenAI
    rejects an empty name, and microcompact needs it to know the tool)."""
    message: Message = {"role": "tool", "tool_call_id": event.call_id, "content": event.content}
    if event.name:
        message["name"] = event.name
    return message


async def execute(
    tools: ToolRunner | None, call: dict[str, Any], step: int, limits: RunLimits
) -> ToolEvent:
    """Run one tool call; every failure becomes an error result."""
    call_id, name, arguments = call_parts(call)
    start = time.monotonic()
    content, is_error = await _outcome(tools, name, arguments, limits)
    return ToolEvent(
        step=step,
        call_id=call_id,
        name=name,
        arguments=arguments,
        content=clip(content, limits.max_tool_result_chars),
        is_error=is_error,
        elapsed=time.monotonic() - start,
    )


async def _outcome(
    tools: ToolRunner | None, name: str, arguments: str, limits: RunLimits
) -> tuple[str, bool]:
    if tools is None:
        return "Error: no tools are available in this run", True
    if not name:
        return "Error: the tool call names no function", True
    timeout = limits.tool_timeout
    try:
        outcome = await asyncio.wait_for(
            tools.call(
                name,
                arguments,
                timeout=timeout,
                max_output_chars=limits.max_tool_result_chars,
            ),
            None if timeout is None else timeout + TIMEOUT_GRACE,
        )
    except TimeoutError:
        return f"Error: {name} timed out after {timeout:g} seconds", True
    except Exception as exc:  # the registry should not raise; the model must not pay if it does
        return f"Error: {name} failed: {type(exc).__name__}: {exc}", True
    content = outcome.content if isinstance(outcome.content, str) else str(outcome.content)
    return content, bool(outcome.is_error)


class ToolBatch:
    """The tool calls of one assistant message, run concurrently.

    ``finished()`` gives the events of the calls that ended, in call order,
    at any time — including after the batch was cancelled part-way.
    """

    def __init__(
        self,
        tools: ToolRunner | None,
        calls: list[dict[str, Any]],
        step: int,
        limits: RunLimits,
        after_tool: Callable[[ToolEvent], Awaitable[None]],
    ) -> None:
        self._tools = tools
        self._calls = calls
        self._step = step
        self._limits = limits
        self._after_tool = after_tool
        self._events: list[ToolEvent | None] = [None] * len(calls)

    def finished(self) -> list[ToolEvent]:
        return [e for e in self._events if e is not None]

    async def run(self) -> list[ToolEvent]:
        tasks = {
            asyncio.create_task(execute(self._tools, call, self._step, self._limits)): i
            for i, call in enumerate(self._calls)
        }
        pending = set(tasks)
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                # Hooks run in completion order; ties in call order, for determinism.
                for task in sorted(done, key=tasks.__getitem__):
                    event = task.result()
                    self._events[tasks[task]] = event
                    await self._after_tool(event)
        finally:
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
            self._harvest(tasks)
        return self.finished()

    def _harvest(self, tasks: dict[asyncio.Task[ToolEvent], int]) -> None:
        """Keep the calls that ended while the batch was being cancelled."""
        for task, i in tasks.items():
            finished = task.done() and not task.cancelled() and task.exception() is None
            if self._events[i] is None and finished:
                self._events[i] = task.result()
