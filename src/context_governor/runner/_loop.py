"""AgentRunner: the agent loop, governing its context before every model call.

Each step governs the whole history (persisted messages plus what this run
added), sends the governed copy to the model (for a native client — Anthropic
Messages, OpenAI Responses — the governed request body in the client's own
format; see governance.py), runs the tools it asks for, and
appends what really happened — the model's message and the tools' results —
to the new history. Governance never writes into the history: a repair made
for one request (a placeholder, a snip) is redone, or not needed, on the next.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from functools import partial
from typing import Any

from ..governor import Governor
from ..llm import ModelClient, ModelError, ModelResponse, NativeModelClient, Usage
from ..messages import Message
from ..messages.inputs import check_messages
from ..report import Report
from ._governance import govern_native_step, govern_step
from ._tool_calls import ToolBatch, tool_message
from ._types import ModelCall, RunHooks, RunLimits, RunResult, StopReason, ToolEvent, ToolRunner

__all__ = ["AgentRunner", "with_call_ids"]


async def _call_hook(hook: Any, value: Any) -> None:
    if hook is None:
        return
    outcome = hook(value)
    if inspect.isawaitable(outcome):
        await outcome


def with_call_ids(message: Message, step: int) -> Message:
    """The assistant message with every tool call given a unique, non-empty id.

    Some servers (local ones especially) send calls without ids, or the same id
    twice; a result cannot answer such a call unambiguously, so the runner names
    them before anything is persisted.
    """
    calls = message.get("tool_calls")
    if not calls:
        return message
    seen: set[str] = set()
    fixed = []
    for i, call in enumerate(c for c in calls if isinstance(c, dict)):
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id or call_id in seen:
            call = {**call, "id": f"call_s{step}_{i}"}
        seen.add(call["id"])
        fixed.append(call)
    return message if fixed == calls else {**message, "tool_calls": fixed}


class _NoBody(Exception):
    """A native client could not build (or the edge read) a request body for the history."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class _Run:
    """The mutable state of one run; AgentRunner.run builds the result from it."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.reports: list[Report] = []
        self.tool_events: list[ToolEvent] = []
        self.events: list[str] = []
        self.model_calls = 0


class AgentRunner:
    """Runs an agent: govern, call the model, run its tools, repeat.

    >>> runner = AgentRunner(model, tools, Governor(context_window=32_000))  # doctest: +SKIP
    >>> result = await runner.run(history + [{"role": "user", "content": task}])  # doctest: +SKIP
    >>> history += [{"role": "user", ...}] + result.new_messages  # doctest: +SKIP

    ``run`` never modifies the list it is given. The messages it adds are in
    ``result.new_messages``; while it runs (and after a cancellation) they are
    in ``runner.new_messages`` too, and ``hooks.on_message`` sees each one as
    it is added, so a cancelled run loses nothing that happened. The history
    left by a cancelled run (a tool call without its result) is legal input
    for the next run, whose governance backfills the missing result.
    """

    def __init__(
        self,
        model: ModelClient,
        tools: ToolRunner | None = None,
        governor: Governor | None = None,
        *,
        max_iterations: int = 40,
        tool_timeout: float | None = 60.0,
        max_tool_result_chars: int = 16_000,
        hooks: RunHooks | None = None,
    ) -> None:
        self.model = model
        self.tools = tools
        self.governor = governor if governor is not None else Governor()
        self.limits = RunLimits(max_iterations, tool_timeout, max_tool_result_chars)
        self.hooks = hooks or RunHooks()
        #: the messages the current (or last) run added, in order
        self.new_messages: list[Message] = []
        self._running = False

    async def run(self, messages: Sequence[Message]) -> RunResult:
        """Run until the model answers without tool calls or a limit is reached.

        Raises InputError (before any model call) if ``messages`` is not a
        message list at all; model failures end the run with stop reason
        ``model_error`` instead of raising. Cancellation propagates as usual.
        """
        if self._running:
            raise RuntimeError("this AgentRunner is already running; use one runner per run")
        history = list(messages)
        check_messages(history)
        self._running = True
        self.new_messages = []
        try:
            return await self._loop(history, _Run())
        finally:
            self._running = False

    async def _loop(self, history: list[Message], run: _Run) -> RunResult:
        schemas = (self.tools.schemas() or None) if self.tools is not None else None
        for step in range(1, self.limits.max_iterations + 1):
            messages = history + self.new_messages
            if isinstance(self.model, NativeModelClient):
                try:
                    body = await self._govern_native(self.model, messages, schemas, step, run)
                except _NoBody as failed:
                    error = f"cannot build the request body: {failed.cause}"
                    return self._result(run, "model_error", error=error, exception=failed.cause)
                call = partial(self.model.send, body, on_text=self.hooks.on_text)
            else:
                governed = await self._govern(messages, schemas, step, run)
                call = partial(
                    self.model.complete,
                    governed,
                    tools=schemas,
                    max_tokens=self.governor.max_output,
                    on_text=self.hooks.on_text,
                )
            run.model_calls += 1
            try:
                response = await call()
            except ModelError as exc:
                return self._result(run, "model_error", error=str(exc), exception=exc)
            except Exception as exc:  # a client bug must still end the run cleanly
                error = f"{type(exc).__name__}: {exc}"
                return self._result(run, "model_error", error=error, exception=exc)
            run.usage += response.usage
            message = with_call_ids(response.message, step)
            await self._persist([message])
            calls = message.get("tool_calls") or []
            if not calls:
                return self._result(run, _stop_reason(response), final=response.text)
            await self._run_tools(calls, step, run)
        return self._result(run, "max_iterations")

    async def _govern(
        self,
        messages: list[Message],
        schemas: list[dict[str, Any]] | None,
        step: int,
        run: _Run,
    ) -> list[Message]:
        result, event = govern_step(self.governor, messages, schemas)
        run.reports.append(result.report)
        if event is not None:
            run.events.append(f"step {step}: {event}")
        await _call_hook(self.hooks.on_report, result.report)
        await _call_hook(
            self.hooks.before_model, ModelCall(step, result.messages, schemas, result.report)
        )
        return result.messages

    async def _govern_native(
        self,
        client: NativeModelClient,
        messages: list[Message],
        schemas: list[dict[str, Any]] | None,
        step: int,
        run: _Run,
    ) -> dict[str, Any]:
        """Govern the native request body of a step (see governance.govern_native_step);
        _NoBody when there is none to send (hooks' exceptions propagate, as for chat)."""
        try:
            body, result, event = govern_native_step(self.governor, client, messages, schemas)
        except Exception as exc:
            raise _NoBody(exc) from exc
        run.reports.append(result.report)
        if event is not None:
            run.events.append(f"step {step}: {event}")
        await _call_hook(self.hooks.on_report, result.report)
        call = ModelCall(step, result.messages, schemas, result.report, body)
        await _call_hook(self.hooks.before_model, call)
        return body

    async def _run_tools(self, calls: list[dict[str, Any]], step: int, run: _Run) -> None:
        async def after_tool(event: ToolEvent) -> None:
            await _call_hook(self.hooks.after_tool, event)

        batch = ToolBatch(self.tools, calls, step, self.limits, after_tool)
        try:
            await batch.run()
        finally:
            # Also on cancellation: the results that exist are part of what happened.
            finished = batch.finished()
            run.tool_events.extend(finished)
            await self._persist([tool_message(e) for e in finished])

    async def _persist(self, messages: list[Message]) -> None:
        # Appended first, all of them, then announced: a hook that is slow or
        # cancelled cannot make the attribute miss a message.
        self.new_messages.extend(messages)
        for message in messages:
            await _call_hook(self.hooks.on_message, message)

    def _result(
        self,
        run: _Run,
        stop: StopReason,
        *,
        final: str | None = None,
        error: str | None = None,
        exception: Exception | None = None,
    ) -> RunResult:
        return RunResult(
            stop_reason=stop,
            final_answer=final,
            new_messages=list(self.new_messages),
            usage=run.usage,
            reports=run.reports,
            tool_events=run.tool_events,
            model_calls=run.model_calls,
            error=error,
            events=run.events,
            exception=exception,
        )


def _stop_reason(response: ModelResponse) -> StopReason:
    return "length" if response.finish_reason == "length" else "completed"
