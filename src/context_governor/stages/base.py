"""What every stage receives besides the messages: settings, the counter, the recorder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..counting import TokenCounter
from ..messages import Message
from ..report import Action, Kind

if TYPE_CHECKING:
    from ..policies import CompactionPolicy
    from ..targets.policy import Policy
    from ..targets.target import Target

__all__ = ["Context", "Stage"]


@dataclass(slots=True)
class Context:
    """Per-call state shared by the stages of one govern() call.

    Stages never mutate the messages they receive; the only thing they write
    is ``actions`` (and ``notes``), through :meth:`record`.
    """

    counter: TokenCounter
    tools: Sequence[Any] | None = None
    budget: int | None = None
    max_tool_result_chars: int | None = None
    #: the provider and model the request goes to, and how to repair for them
    target: Target | None = None
    policy: Policy | None = None
    #: the trailing assistant message is a prefill the model accepts and the caller wants
    keep_prefill: bool = False
    #: how the budget is spent (None: the cache policy; the nanobot profile ignores it)
    compaction: CompactionPolicy | None = None
    #: the cache policy compacts at the request being made whatever its trigger and
    #: minimum savings say, because governing the output again would (see pipeline._fit)
    compact_final: bool = False
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: what a stage leaves for a caller that reuses work across calls (a Governor)
    scratch: dict[str, Any] = field(default_factory=dict)

    def record(
        self,
        stage: str,
        kind: Kind,
        index: int,
        detail: str,
        *,
        tool_call_id: Any = None,
        tokens_saved: int = 0,
    ) -> None:
        tcid = None if tool_call_id is None else str(tool_call_id)
        self.actions.append(Action(stage, kind, index, detail, tcid, tokens_saved))

    def tokens(self, message: Message) -> int:
        return self.counter.message_tokens(message)


Stage = Callable[[list[Message], Context], list[Message]]
