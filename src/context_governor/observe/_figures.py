"""What a report says in figures: the counts the metrics, the spans and the page show.

A :class:`~context_governor.report.Report` lists every action by stage with a free-text
detail; observers want a few figures instead (messages cut, results cleared or
truncated, summaries made...). This module reads them off the report in one place, so
/metrics, the traces and the page cannot disagree. Pure and dependency-free: the
offline page (``govern --html``) uses it too.

How actions are classed (``effect``):

- ``cut``: a message dropped by a stage that cuts history (``compact``, ``snip``,
  ``squeeze``);
- ``cleared``: a tool result replaced by a placeholder (``compact``, ``squeeze``'s
  "cleared", ``microcompact``'s "stubbed");
- ``truncated``: a result shortened (``cap``, ``tool_budget``, ``squeeze``'s
  "truncated");
- ``inserted``: a message added (a cut note or summary, a backfilled result), or a
  note or summary folded into a user message;
- ``repaired``: everything else (orphans dropped, alternation, provider repairs).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..report import Action, Report

__all__ = [
    "COMPACTING_STAGES",
    "CUTTING_STAGES",
    "EFFECTS",
    "Effect",
    "Figures",
    "effect",
    "figures",
    "new_compaction",
]

Effect = str  # "cut" | "cleared" | "truncated" | "inserted" | "repaired"
EFFECTS = ("cut", "cleared", "truncated", "inserted", "repaired")
CUTTING_STAGES = frozenset({"compact", "snip", "squeeze"})
#: stages whose actions, when present, mean the request was compacted for its budget
COMPACTING_STAGES = ("compact", "squeeze", "snip", "microcompact")
_COMPACTIONS = re.compile(r"cache policy: (\d+) compaction\(s\), the last at message (\d+)")
_SUMMARIZED = re.compile(r"cache policy: summarized \d+ cut messages \((\d+) summary call")
_REUSED = "is the stored one"


def effect(action: Action) -> Effect:
    """What ``action`` did to the model's view, in one word (module docstring)."""
    if action.kind == "insert":
        return "inserted"
    if action.kind == "truncate":
        return "truncated"
    if action.kind == "drop" and action.stage in CUTTING_STAGES:
        return "cut"
    if action.kind == "replace":
        detail = action.detail
        if "truncated" in detail:
            return "truncated"
        if "cleared" in detail or "stubbed" in detail:
            return "cleared"
        if " on the cut " in detail:  # a cut note or summary folded into a user message
            return "inserted"
    return "repaired"


@dataclass(frozen=True, slots=True)
class Figures:
    """One request's governance in figures (see the module docstring)."""

    tokens_before: int
    tokens_after: int
    #: tokens saved by each stage (insertions count against their stage)
    saved_by_stage: dict[str, int] = field(default_factory=dict)
    #: (stage, effect) -> how many actions
    effects: Counter[tuple[str, Effect]] = field(default_factory=Counter)
    #: the cache policy's compactions in the history so far, and the last one's message
    compactions: int = 0
    last_compaction_at: int | None = None
    #: stages that compacted (cut, cleared, truncated) this request
    compacting_stages: tuple[str, ...] = ()
    summaries_made: int = 0
    summaries_reused: int = 0
    summaries_failed: int = 0
    violations: tuple[str, ...] = ()
    over_budget: bool = False

    def count(self, what: Effect, stage: str | None = None) -> int:
        return sum(n for (s, e), n in self.effects.items() if e == what and stage in (None, s))


def figures(report: Report) -> Figures:
    """The figures of ``report``."""
    if not (report.actions or report.notes or report.violations):  # most requests: at once
        return Figures(report.tokens_before, report.tokens_after, over_budget=report.over_budget)
    saved: dict[str, int] = {}
    effects: Counter[tuple[str, Effect]] = Counter()
    failed = 0
    for action in report.actions:
        saved[action.stage] = saved.get(action.stage, 0) + action.tokens_saved
        effects[(action.stage, effect(action))] += 1
        if action.stage == "summary" and action.kind == "fallback":
            failed += 1
    compactions, last_at, made, reused = 0, None, 0, 0
    for note in report.notes:
        found = _COMPACTIONS.search(note)
        if found:
            compactions, last_at = int(found.group(1)), int(found.group(2))
        made_here = _SUMMARIZED.search(note)
        if made_here:
            made += int(made_here.group(1))
        if note.startswith("cache policy: the summary of") and _REUSED in note:
            reused += 1
    compacting = tuple(
        stage
        for stage in COMPACTING_STAGES
        if any(effects[(stage, e)] for e in ("cut", "cleared", "truncated"))
    )
    rules = tuple(str(v.get("rule", "unknown")) for v in report.violations)
    return Figures(
        report.tokens_before,
        report.tokens_after,
        saved,
        effects,
        compactions,
        last_at,
        compacting,
        made,
        reused,
        failed,
        rules,
        report.over_budget,
    )


def new_compaction(now: Figures, before: Figures | None, messages: int) -> bool:
    """Whether the cache policy compacted at this request: its count of compactions grew
    since the conversation's previous request, or (no previous one known) the last
    compaction is at the request's own end (``messages``: the pipeline's input count)."""
    if now.compactions == 0:
        return False
    if before is not None:
        return now.compactions > before.compactions
    return now.last_compaction_at is not None and now.last_compaction_at >= messages
