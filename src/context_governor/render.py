"""Human-readable output of a report: what changed, grouped so that a long snip
reads as one line, and the token figures that explain it."""

from __future__ import annotations

from collections.abc import Iterator

from .report import Action, Report

#: Beyond this many actions of one (stage, kind), the rest are summarised.
SHOW_PER_GROUP = 8


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


def _action_line(action: Action) -> str:
    call = f" [{action.tool_call_id}]" if action.tool_call_id else ""
    return f"    #{action.index}{call}: {action.detail}{_tokens_delta(action.tokens_saved)}"


def _group_lines(stage: str, kind: str, actions: list[Action], verbose: bool) -> Iterator[str]:
    saved = sum(a.tokens_saved for a in actions)
    figure = f"{saved:,} tokens saved" if saved >= 0 else f"{-saved:,} tokens added"
    yield f"  {stage:<12} {kind:<9} {len(actions):>4}  {figure}"
    if stage == "snip" and kind == "drop" and not verbose:
        yield f"    messages {_runs(sorted(a.index for a in actions))}: older than what fits"
        return
    shown = actions if verbose else actions[:SHOW_PER_GROUP]
    yield from (_action_line(a) for a in shown)
    if len(actions) > len(shown):
        yield f"    … and {len(actions) - len(shown)} more (--verbose shows all)"


def render_report(report: Report, *, verbose: bool = False) -> str:
    """A few lines a person can read at a glance; every action is accounted for."""
    window = f"{report.context_window:,}" if report.context_window else "none (no snipping)"
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
        grouped: dict[tuple[str, str], list[Action]] = {}
        for action in report.actions:
            grouped.setdefault((action.stage, action.kind), []).append(action)
        for (stage, kind), actions in grouped.items():
            lines.extend(_group_lines(stage, kind, actions, verbose))
    lines.extend(f"note: {note}" for note in report.notes)
    return "\n".join(lines)
