"""The runner's data: limits, hooks, tool events and the run result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..llm import TextCallback, Usage
from ..messages import Message
from ..report import Report

__all__ = [
    "Hook",
    "ModelCall",
    "RunHooks",
    "RunLimits",
    "RunResult",
    "StopReason",
    "ToolEvent",
    "ToolResultLike",
    "ToolRunner",
]

StopReason = Literal["completed", "length", "max_iterations", "model_error"]
"""Why a run ended.

``completed``: the model answered without tool calls. ``length``: it did, but
the answer was cut at the output limit. ``max_iterations``: the limit on model
calls was reached while the model still wanted tools. ``model_error``: a model
call failed for good (after retries); ``RunResult.error`` says why.
"""


class ToolResultLike(Protocol):
    """What a tool call returns (``context_governor.tools.ToolOutcome`` is one)."""

    @property
    def content(self) -> str: ...

    @property
    def is_error(self) -> bool: ...


class ToolRunner(Protocol):
    """The tools the runner offers the model (``context_governor.tools.ToolRegistry``).

    ``call`` must not raise for problems of the tool or its arguments: it
    returns an error result the model can read. The runner still guards against
    one that does.
    """

    def schemas(self) -> list[dict[str, Any]]: ...

    async def call(
        self,
        name: str,
        arguments: str | dict[str, Any] | None,
        *,
        timeout: float | None = None,
        max_output_chars: int | None = None,
    ) -> ToolResultLike: ...


@dataclass(frozen=True, slots=True)
class RunLimits:
    """Bounds on one run. ``tool_timeout`` and ``max_tool_result_chars`` apply per call."""

    max_iterations: int = 40
    tool_timeout: float | None = 60.0
    max_tool_result_chars: int = 16_000

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if self.tool_timeout is not None and not self.tool_timeout > 0:
            raise ValueError(f"tool_timeout must be positive, got {self.tool_timeout}")
        if self.max_tool_result_chars < 100:
            raise ValueError(
                f"max_tool_result_chars must be >= 100, got {self.max_tool_result_chars}"
            )


@dataclass(frozen=True, slots=True)
class ToolEvent:
    """One tool call the runner executed, and how it went."""

    step: int
    call_id: str
    name: str
    arguments: str
    content: str
    is_error: bool
    elapsed: float


@dataclass(frozen=True, slots=True)
class ModelCall:
    """What is about to be sent to the model on one step (the governed copy).

    With a native client (Anthropic Messages, Responses), ``body`` is the governed
    request body that is sent, and ``messages`` its chat view (what the report's
    indices count); with a chat client ``body`` is None.
    """

    step: int
    messages: list[Message]
    tools: list[dict[str, Any]] | None
    report: Report
    body: dict[str, Any] | None = None


Hook = Callable[[Any], Awaitable[None] | None]


@dataclass(slots=True)
class RunHooks:
    """Callbacks into a run; each may be a plain or an async function.

    ``on_report(report)`` and ``before_model(call)`` run after governance and
    before each model call; ``after_tool(event)`` when each tool call ends (in
    completion order); ``on_message(message)`` for each message appended to the
    new history, the moment it is appended — so a caller that persists there
    has everything even if the run is cancelled; ``on_text(piece)`` receives
    streamed answer text. An exception in a hook ends the run (it is a bug in
    the caller, not something the model should see).
    """

    before_model: Callable[[ModelCall], Awaitable[None] | None] | None = None
    after_tool: Callable[[ToolEvent], Awaitable[None] | None] | None = None
    on_report: Callable[[Report], Awaitable[None] | None] | None = None
    on_message: Callable[[Message], Awaitable[None] | None] | None = None
    on_text: TextCallback | None = None


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run did. ``new_messages`` are the messages to append to the persisted history."""

    stop_reason: StopReason
    #: the text of the model's last answer without tool calls (None if it never gave one)
    final_answer: str | None
    new_messages: list[Message]
    usage: Usage
    #: one governance report per model call, in order
    reports: list[Report]
    tool_events: list[ToolEvent]
    model_calls: int
    #: why the run failed, for stop_reason "model_error"
    error: str | None = None
    #: things that went wrong without ending the run (governance fallbacks, ...)
    events: list[str] = field(default_factory=list)
    #: the exception behind ``error`` (a ModelError carries ``status`` and ``retryable``)
    exception: Exception | None = field(default=None, repr=False)

    @property
    def tools_used(self) -> list[str]:
        """Names of the tools called, each once, in order of first use."""
        return list(dict.fromkeys(e.name for e in self.tool_events))

    @property
    def ok(self) -> bool:
        return self.stop_reason == "completed"
