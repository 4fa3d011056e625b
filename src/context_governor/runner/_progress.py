"""What a person watching an agent run sees: one line per model call, one per tool call.

The lines say what governance did to each request (tokens before and after,
actions by stage) so that a run's context management is visible as it happens.
Pure functions, plus :class:`ProgressPrinter`, which turns them into runner hooks.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..report import INDEX_LEGEND, Report, positions
from ._types import ModelCall, RunHooks, ToolEvent

__all__ = [
    "ARGS_CHARS",
    "ERROR_CHARS",
    "Echo",
    "ProgressPrinter",
    "actions_summary",
    "step_line",
    "tool_line",
]

#: Tool arguments are shown up to this many characters.
ARGS_CHARS = 60
#: An error result's first line is shown up to this many characters.
ERROR_CHARS = 100

Echo = Callable[[str], None]


def actions_summary(report: Report) -> str:
    """'orphans drop 1 · snip drop 12 (-5,210 tokens)', or 'no changes'."""
    if not report.actions:
        return "no changes"
    counts: Counter[tuple[str, str]] = Counter()
    saved: Counter[tuple[str, str]] = Counter()
    for action in report.actions:
        counts[action.stage, action.kind] += 1
        saved[action.stage, action.kind] += action.tokens_saved
    parts = []
    for (stage, kind), n in counts.items():
        delta = saved[stage, kind]
        tokens = f" ({-delta:+,} tokens)" if delta else ""
        parts.append(f"{stage} {kind} {n}{tokens}")
    return " · ".join(parts)


def step_line(step: int, report: Report) -> str:
    """The governance of one model call, on one line."""
    budget = f" / budget {report.budget:,}" if report.budget is not None else ""
    over = "" if report.within_budget else "  OVER BUDGET"
    return (
        f"step {step}: {report.tokens_before:,} -> {report.tokens_after:,} tokens{budget}, "
        f"{report.messages_before} -> {report.messages_after} messages{over} | "
        f"{actions_summary(report)}"
    )


def _short_args(arguments: str) -> str:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        value = None
    if isinstance(value, dict):
        text = ", ".join(f"{k}={v!r}" for k, v in value.items())
    else:
        text = arguments
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "…"


def tool_line(event: ToolEvent) -> str:
    """One finished tool call: what was called, how much came back, how long it took."""
    head = f"  {event.name or '?'}({_short_args(event.arguments)})"
    if event.is_error:
        first = event.content.strip().splitlines()[0] if event.content.strip() else "error"
        return f"{head} -> {first[:ERROR_CHARS]} ({event.elapsed:.2f}s)"
    return f"{head} -> {len(event.content):,} chars ({event.elapsed:.2f}s)"


class ProgressPrinter:
    """Prints a run's progress through its hooks.

    Step lines and tool lines go to ``info``; streamed answer text goes to
    ``text`` as it arrives (the CLI sends them to stderr and stdout so that
    stdout holds only the answer). ``verbose`` adds every action and note.
    """

    def __init__(self, info: Echo, text: Callable[[str], Any], *, verbose: bool = False) -> None:
        self._info = info
        self._text = text
        self.verbose = verbose
        self.steps = 0
        self._mid_line = False
        self._legend_shown = False

    def hooks(self) -> RunHooks:
        return RunHooks(
            before_model=self.before_model, after_tool=self.after_tool, on_text=self.on_text
        )

    def end_text(self) -> None:
        """End a line of streamed text, if one is open."""
        if self._mid_line:
            self._text("\n")
            self._mid_line = False

    def info(self, line: str) -> None:
        self.end_text()
        self._info(line)

    def before_model(self, call: ModelCall) -> None:
        self.steps += 1
        self.info(step_line(self.steps, call.report))
        if self.verbose:
            actions = call.report.actions
            if actions and not self._legend_shown:
                self.info(f"    {INDEX_LEGEND}")
                self._legend_shown = True
            for action, where in zip(actions, positions(actions), strict=True):
                self.info(f"    {action.stage} {action.kind} {where}: {action.detail}")
            for note in call.report.notes:
                self.info(f"    note: {note}")

    def after_tool(self, event: ToolEvent) -> None:
        self.info(tool_line(event))

    def on_text(self, piece: str) -> None:
        if piece:
            self._text(piece)
            self._mid_line = not piece.endswith("\n")
