"""Actions and the report: nothing the pipeline changes goes unrecorded.

``render_report`` is the report a person reads: what changed, grouped so that a long snip
reads as one line, and the token figures that explain it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "COMPACTION_LEGEND",
    "INDEX_LEGEND",
    "SHIFTING",
    "SHOW_PER_GROUP",
    "Action",
    "CompactionCost",
    "Kind",
    "Note",
    "NoteKind",
    "Report",
    "moved_messages",
    "moves_messages",
    "note_kind",
    "position",
    "positions",
    "render_report",
    "window_phrase",
]

Kind = Literal["drop", "insert", "merge", "move", "truncate", "replace", "repair", "fallback"]

#: What a note is about, for code that acts on notes: "cache" (the cache policy's own
#: account of what it did), "store" (the count store), "rule" (a provider rule the output
#: breaks), "server" (context the provider's server manages: its compaction blocks and
#: items, the context edits the client asked it for, and what governance did beside
#: them), "other" (everything else; what a plain string is).
NoteKind = Literal["cache", "store", "rule", "server", "other"]


class Note(str):
    """A report note: its text, which is all users and ``to_dict`` see, and its ``kind``,
    which code reads instead of matching the text (a reworded note cannot change what
    the Governor or an edge does with it)."""

    kind: NoteKind

    def __new__(cls, text: str, kind: NoteKind = "other") -> Note:
        note = super().__new__(cls, text)
        note.kind = kind
        return note

    def __reduce__(self) -> tuple[Any, ...]:  # copies (asdict, deepcopy) keep the kind
        return (Note, (str(self), self.kind))


#: Stages declared, where each is defined, to move messages before the cache policy's
#: replay runs (merge, drop, insert or reorder them): see ``moves_messages``.
_MOVERS: set[str] = set()


def moves_messages(stage: str) -> str:
    """Declare that the stage named ``stage`` moves messages before the cache policy's
    replay runs; returns the name (``STAGE = moves_messages("orphans")``). After an
    action of such a stage the replay's positions are not the history's, so a Governor
    cannot extend that result by appending (it governs the next call whole)."""
    _MOVERS.add(stage)
    return stage


def moved_messages(action: Action) -> bool:
    """Whether ``action`` is by a stage that moves messages before the replay."""
    return action.stage in _MOVERS


def note_kind(note: str) -> NoteKind:
    """The kind of a note; "other" for a plain string."""
    return note.kind if isinstance(note, Note) else "other"


@dataclass(frozen=True, slots=True)
class Action:
    """One change made by one stage.

    ``index`` is the message's position in the list the stage received (stages
    run in order, so positions shift from one stage to the next; ``stage``
    says which list is meant). ``tokens_saved`` is negative for insertions.
    """

    stage: str
    kind: Kind
    index: int
    detail: str
    tool_call_id: str | None = None
    tokens_saved: int = 0


@dataclass(frozen=True, slots=True)
class CompactionCost:
    """What the cache policy's compaction at this request costs and gains, in tokens.

    A compaction edits the request from message ``first_edit`` of the output on, so the
    provider's prompt cache holds nothing after it: the ``rewritten`` tokens from there
    to the end are read uncached (or written again, where the client pays for cache
    writes) instead of read from the cache. ``removed`` tokens fewer go out on this
    request and on every later one until the next compaction. ``pays_after`` weighs the
    two at a provider's prices."""

    first_edit: int
    rewritten: int
    removed: int

    def pays_after(self, read: float, miss: float) -> float | None:
        """Requests after which what later requests stop reading (``removed`` at the
        cached-read price ``read``) covers the rewrite (``rewritten`` at ``miss`` instead
        of ``read``); None when it never does (nothing removed, or free reads)."""
        gain = self.removed * read
        if gain <= 0:
            return None
        return self.rewritten * max(0.0, miss - read) / gain


@dataclass(slots=True)
class Report:
    """Everything govern() did, plus the token figures it decided with.

    ``print(report)`` shows the readable summary (``render_report``); check
    ``report.ok`` (inside the budget and no provider rule broken) or
    ``report.over_budget`` before sending. ``window_source`` says where
    ``context_window`` came from: "given", "model" (the model's published window)
    or "none" (no window: nothing was cut).
    """

    profile: str
    counter: str
    context_window: int | None
    max_output: int
    budget: int | None
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    actions: list[Action] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    provider: str | None = None
    model: str | None = None
    #: rules of the target provider the output still breaks (each also a note)
    violations: list[dict[str, Any]] = field(default_factory=list)
    window_source: str = "given"
    #: the cache policy's compaction at this request, if it made one (None otherwise)
    compaction_cost: CompactionCost | None = None

    @property
    def changed(self) -> bool:
        return bool(self.actions)

    @property
    def within_budget(self) -> bool:
        return self.budget is None or self.tokens_after <= self.budget

    @property
    def over_budget(self) -> bool:
        """The output does not fit the budget (the notes say why)."""
        return not self.within_budget

    @property
    def ok(self) -> bool:
        """Safe to send as far as we know: inside the budget, no provider rule broken."""
        return self.within_budget and not self.violations

    def by_stage(self) -> dict[str, list[Action]]:
        grouped: dict[str, list[Action]] = {}
        for action in self.actions:
            grouped.setdefault(action.stage, []).append(action)
        return grouped

    def counts(self) -> Counter[tuple[str, str]]:
        """How many actions of each (stage, kind)."""
        return Counter((a.stage, a.kind) for a in self.actions)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["within_budget"] = self.within_budget
        data["over_budget"] = self.over_budget
        data["ok"] = self.ok
        return data

    def __str__(self) -> str:
        return render_report(self)


# -- the readable report ----------------------------------------------------------------

#: Beyond this many actions of one (stage, kind), the rest are summarised.
SHOW_PER_GROUP = 8
#: Kinds that change the positions of the messages after them.
SHIFTING = frozenset({"drop", "insert", "merge", "move", "fallback"})
#: What the action indices mean, said once above them.
INDEX_LEGEND = (
    "(input #N: message N, from 0, of the history you passed; #N: position N in the list "
    "that stage received, after the earlier stages' changes; new #N: position of an "
    "inserted message in the list that stage returned)"
)
#: What the cache policy's "compaction at message N" means.
COMPACTION_LEGEND = (
    "(compaction at message N: the cut or clearing was decided for the earlier request "
    "whose answer is message N; the same decision is replayed on every later request, "
    "so the cached prefix stays the same)"
)


def window_phrase(window: int | None, source: str, model: str | None) -> str:
    """How a window reads in a report: '128,000 (gpt-4o's known window)', or why none."""
    if window is None:
        why = f"model {model!r} has no known window" if model else "no model or window given"
        return f"none ({why}: nothing is cut; set a context window)"
    if source == "model":
        return f"{window:,} ({model}'s known window)"
    if source == "family":
        return f"{window:,} (the window of {model}'s family)"
    if source == "learned":
        return f"{window:,} (learned from the upstream for {model})"
    return f"{window:,}"


def _runs(indices: list[int]) -> str:
    """'3-7, 9, 12-13' for a sorted, non-empty list of indices."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _tokens_delta(saved: int) -> str:
    if saved > 0:
        return f" (-{saved:,} tokens)"
    if saved < 0:
        return f" (+{-saved:,} tokens)"
    return ""


def position(action: Action, floor: float) -> str:
    """Which message an action is about, naming the list its index counts in.

    ``floor``: the lowest position that earlier stages shifted; below it the stage's
    positions are the caller's own (see _stage_floors).
    """
    if action.index < 0:  # about the request as a whole (its settings, its tools)
        return "request"
    if action.kind == "insert":
        return f"new #{action.index}"
    return f"input #{action.index}" if action.index < floor else f"#{action.index}"


def positions(actions: list[Action]) -> list[str]:
    """Each action's position label (see ``position``), in order."""
    floors = _stage_floors(actions)
    return [position(a, floors[a.stage]) for a in actions]


def _action_line(action: Action, floor: float) -> str:
    call = f" [{action.tool_call_id}]" if action.tool_call_id else ""
    where = position(action, floor)
    return f"    {where}{call}: {action.detail}{_tokens_delta(action.tokens_saved)}"


def _group_lines(
    stage: str, kind: str, actions: list[Action], verbose: bool, floor: float
) -> Iterator[str]:
    saved = sum(a.tokens_saved for a in actions)
    figure = f"{saved:,} tokens saved" if saved >= 0 else f"{-saved:,} tokens added"
    yield f"  {stage:<12} {kind:<9} {len(actions):>4}  {figure}"
    if stage == "snip" and kind == "drop" and not verbose:
        which = "input messages" if max(a.index for a in actions) < floor else "positions"
        yield f"    {which} {_runs(sorted(a.index for a in actions))}: older than what fits"
        return
    shown = actions if verbose else actions[:SHOW_PER_GROUP]
    yield from (_action_line(a, floor) for a in shown)
    if len(actions) > len(shown):
        yield f"    … and {len(actions) - len(shown)} more (--verbose shows all)"


def _stage_floors(actions: list[Action]) -> dict[str, float]:
    """For each stage, the lowest position an earlier stage shifted: the stage's own
    positions below it are still those of the input history.

    A drop at i, an insertion at i or a merge into i - 1 leave positions below them
    alone; a move (a system message brought to the front) or a fallback may shift
    everything, so they count from 0.
    """
    floors: dict[str, float] = {}
    floor = float("inf")
    stage = None
    pending = floor
    for action in actions:
        if action.stage != stage:
            floor, stage = min(floor, pending), action.stage
            floors.setdefault(stage, floor)
        if action.kind in ("move", "fallback"):
            pending = min(pending, 0)
        elif action.kind in ("drop", "insert"):
            pending = min(pending, action.index)
        elif action.kind == "merge":
            pending = min(pending, max(action.index - 1, 0))
    return floors


def render_report(report: Report, *, verbose: bool = False) -> str:
    """A few lines a person can read at a glance; every action is accounted for."""
    window = window_phrase(report.context_window, report.window_source, report.model)
    budget = f"{report.budget:,}" if report.budget is not None else "-"
    lines = [
        f"profile {report.profile} · counter {report.counter} · window {window} · "
        f"max output {report.max_output:,} · budget {budget}",
        f"tokens  {report.tokens_before:,} -> {report.tokens_after:,}    "
        f"messages {report.messages_before} -> {report.messages_after}    "
        + ("within budget" if report.within_budget else "OVER BUDGET"),
    ]
    if not report.actions:
        lines.append("no changes: the history is sent as is")
    else:
        lines.append(f"{len(report.actions)} changes:")
        floors = _stage_floors(report.actions)
        grouped: dict[tuple[str, str], list[Action]] = {}
        for action in report.actions:
            grouped.setdefault((action.stage, action.kind), []).append(action)
        for (stage, kind), actions in grouped.items():
            lines.extend(_group_lines(stage, kind, actions, verbose, floors[stage]))
        lines.append(INDEX_LEGEND)
        if any("compaction at message" in a.detail for a in report.actions):
            lines.append(COMPACTION_LEGEND)
    cost = report.compaction_cost
    if cost is not None:
        lines.append(
            f"compaction at this request: {cost.removed:,} tokens fewer on this and every "
            f"later request; the {cost.rewritten:,} tokens from message {cost.first_edit} on "
            "are no longer in the provider's prompt cache (read uncached or written again "
            "once)"
        )
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(lines)
