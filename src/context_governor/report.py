"""Actions and the report: nothing the pipeline changes goes unrecorded."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = ["Action", "Kind", "Report"]

Kind = Literal["drop", "insert", "merge", "move", "truncate", "replace", "repair", "fallback"]


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
        from .render import render_report  # render imports this module

        return render_report(self)
