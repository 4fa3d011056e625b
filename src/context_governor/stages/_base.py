"""What every stage receives besides the messages: settings, the counter, the recorder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..counting import Known, TokenCounter
from ..messages import Message
from ..report import Action, Kind, Report

if TYPE_CHECKING:
    from ..policies import Compaction
    from ..targets import Policy, Target
    from ._pairing import Pairing
    from ._replay import Replay

__all__ = [
    "FINDINGS",
    "CheckFor",
    "Context",
    "MessageCheck",
    "Stage",
    "check_for",
    "leaves_alone_if",
    "leaves_alone_when",
    "message_check",
]


@dataclass(slots=True)
class Context:
    """Per-call state shared by the stages of one govern() call.

    Stages never mutate the messages they receive; what they write is ``actions`` (and
    ``notes``), through :meth:`record`, and the typed fields below that say what a stage
    found for the stages after it and for the caller.
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
    compaction: Compaction | None = None
    #: the cache policy compacts at the request being made whatever its trigger and
    #: minimum savings say, because governing the output again would (see pipeline._fit)
    compact_final: bool = False
    #: fits the summarizer's input to its own budget of tokens, returning the fitted
    #: messages and that run's report: the pipeline sets it (context()), since a stage
    #: never calls the pipeline itself (stages/_summary.py asks through here)
    fit_summary_input: Callable[[list[Message], int], tuple[list[Message], Report]] | None = None
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What stages leave for the stages after them and for a caller that reuses work
    # across calls (a Governor):
    #: the cache policy's replay of the history this call governed (compact.compact)
    replay: Replay | None = None
    #: the replay of the governed output, when pipeline._fit asked whether governing it
    #: again would compact it and the answer was no (compact.would_compact)
    output_replay: Replay | None = None
    #: the pairing of calls and results of the last list paired (pairing.pair_in's memo)
    pairing: tuple[list[Message], Pairing] | None = None
    #: the Messages API's extended thinking must be disabled for this request
    #: (formats/_anthropic_rules.py decides it; the request edge writes it into the body)
    disable_thinking: bool = False

    def fresh(self, **changes: Any) -> Context:
        """A copy for another pass over the same input: the same settings (with
        ``changes``), and every finding (``FINDINGS``) as a new call starts it. A field
        added to Context is either a setting or listed in FINDINGS (a test holds it), so
        no pass inherits what an earlier one found."""
        return replace(self, **{**_fresh_findings(), **changes})

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

    def know(self, message: Message, count: int) -> None:
        """Tell the counter ``message``'s count, made before for a message of the same
        content (the replay's placeholder for it), when it keeps counts by identity:
        ``tokens`` then answers it without building the payload again."""
        known = getattr(self.counter, "known", None)
        if isinstance(known, Known):
            known.add(message, count)

    def made_tokens(self, message: Message) -> int:
        """``tokens`` of a message made only to be weighed (the replay's placeholders and
        notes, made again for each look): the same count, not kept by the counter's
        identity memo when it has one (``made_tokens``), which would keep every such
        message alive to the end of the call for nothing."""
        made = getattr(self.counter, "made_tokens", None)
        if made is None:
            return self.counter.message_tokens(message)
        count: int = made(message)
        return count


def _fresh_findings() -> dict[str, Any]:
    """Each finding as a new pass starts it (new lists: never shared between passes)."""
    return {"actions": [], "notes": [], "replay": None, "output_replay": None,
            "pairing": None, "disable_thinking": False}  # fmt: skip


#: What stages find during one pass (the rest of Context is its settings); ``fresh``
#: starts each of them again.
FINDINGS = tuple(_fresh_findings())


Stage = Callable[[list[Message], Context], list[Message]]
#: A stage's promise about one message: True where it leaves the message as it is.
MessageCheck = Callable[[Message], bool]


#: What a stage leaves alone under one call's settings (read from its Context): the check
#: of one message, or None where it leaves every message alone under those settings.
CheckFor = Callable[["Context"], MessageCheck | None]


def leaves_alone_if(check: MessageCheck) -> Callable[[Stage], Stage]:
    """Declare, on a stage that looks at each message on its own, when it leaves one
    alone: ``check(message)`` True means the stage neither changes that message nor
    records anything for it. The Governor's fast path (governor/_probe.py) runs the check
    of every declared stage over the messages it walks, so such a stage needs no rule of
    its own there: a new per-message stage is its module, its place in a profile and its
    tests. A stage whose effect depends on the settings declares with
    :func:`leaves_alone_when` instead."""

    def declare(stage: Stage) -> Stage:
        setattr(stage, _CHECK, check)  # a function has no typed place for it
        setattr(stage, _CHECK_FOR, lambda ctx: check)
        return stage

    return declare


def leaves_alone_when(check_for: CheckFor) -> Callable[[Stage], Stage]:
    """Declare, on a stage whose effect on a message depends on the settings (a provider's
    repair reads its Policy and target), when it leaves one alone: ``check_for(ctx)`` is
    the check under ``ctx``'s settings (as for :func:`leaves_alone_if`), or None when under
    them the stage leaves every message alone. The fast path asks once per settings.

    The promise may lean on the shape the fast path walks (governor/_probe.py's
    ``plain_window``: each call answered right after its turn, in order, every call id
    once, a user message first and a user or tool message last, no system message): a
    repair of ids, for one, checks each id's format here and relies on the walk for
    their uniqueness."""

    def declare(stage: Stage) -> Stage:
        setattr(stage, _CHECK_FOR, check_for)
        return stage

    return declare


_CHECK = "leaves_alone"
_CHECK_FOR = "leaves_alone_for"


def message_check(stage: Stage) -> MessageCheck | None:
    """The check a stage declared with ``leaves_alone_if``; None when it declared none."""
    check = getattr(stage, _CHECK, None)
    return check if callable(check) else None


def check_for(stage: Stage) -> CheckFor | None:
    """How a stage's check is made from the settings (``leaves_alone_when``, or the fixed
    check of ``leaves_alone_if``); None when the stage declared neither."""
    made = getattr(stage, _CHECK_FOR, None)
    return made if callable(made) else None
