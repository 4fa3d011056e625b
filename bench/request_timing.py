"""What bench.messages_request and bench.responses_request share.

Both govern one coding agent's session (each step reads a file) sent whole as a native
request body, time ``govern_request`` on it next to other calls at a few context
windows, print one line per window and write a section with one table row per window.
The loop, the line, the row, the section's layout and the command line live here, so
the two sections read alike; each module keeps only what is its own: the body's shape,
what is timed next to ``govern_request``, and the section's prose.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from bench.section import section_main
from bench.timing import median_ms
from context_governor import Report, RequestResult

TASK = "fix the failing test in src/"
SYSTEM = "You are a coding agent."
MAX_OUTPUT = 8192


def file_path(step: int) -> str:
    """The file the agent reads at ``step``."""
    return f"src/f{step}.py"


def file_text(step: int) -> str:
    """What reading it returns: about 1 KB, different at every step (so no two tool
    results count alike in the token cache)."""
    return f"def f():\n    return {step}\n" * 40


@dataclass(frozen=True)
class Table:
    """How a section names its figures.

    ``unit`` is what the body's list holds ("messages", "items"); ``columns`` the labels
    of the times, in the order :func:`time_windows` measures them (the per-window calls,
    ``govern_request``'s first, then the ones measured once); ``count_column`` whether
    the table shows the unit's count before and after governing (the printed line
    always does).
    """

    unit: str
    columns: tuple[str, ...]
    count_column: bool


def _line(table: Table, size: int, window: int, times: Sequence[float], report: Report) -> str:
    figures = ", ".join(
        f"{label} {ms:.1f} ms" for label, ms in zip(table.columns, times, strict=True)
    )
    return (
        f"{size} {table.unit}, window {window:,}: {figures}; tokens {report.tokens_before:,} "
        f"-> {report.tokens_after:,}, {table.unit} {report.messages_before} -> "
        f"{report.messages_after}, rules broken: {len(report.violations)}"
    )


def _row(table: Table, size: int, window: int, times: Sequence[float], report: Report) -> str:
    cells = [
        f"{window:,}",
        str(size),
        *(f"{ms:.1f} ms" for ms in times),
        f"{report.tokens_before:,} → {report.tokens_after:,}",
    ]
    if table.count_column:
        cells.append(f"{report.messages_before} → {report.messages_after}")
    cells.append(str(len(report.violations)))
    return f"| {' | '.join(cells)} |"


def time_windows(
    table: Table,
    size: int,
    windows: Sequence[int],
    govern: Callable[[int], RequestResult],
    others: Sequence[Callable[[int], object]],
    once: Sequence[float],
    repeats: int,
) -> list[str]:
    """Per window: govern once for the report, then the median time of ``govern`` and of
    each of ``others`` (each given the window); print the line and return the table rows.
    ``once`` holds times measured before, the same at every window (e.g. the edge alone).
    """
    if len(table.columns) != 1 + len(others) + len(once):
        raise ValueError(
            f"{len(table.columns)} column labels for {1 + len(others) + len(once)} times"
        )
    rows = []
    for window in windows:
        report = govern(window).report
        times = [median_ms(partial(call, window), repeats) for call in (govern, *others)]
        times += once
        print(_line(table, size, window, times, report))
        rows.append(_row(table, size, window, times, report))
    return rows


def load_average() -> float:
    """The one-minute load average while measuring (NaN where the system has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def section(table: Table, heading: str, prose: str, rows: Sequence[str]) -> str:
    """The Markdown section: heading, prose, and the table of ``rows``."""
    header = ["window", table.unit, *table.columns, "tokens"]
    if table.count_column:
        header.append(table.unit)
    header.append("rules broken")
    return "\n".join(
        [heading, "", prose, "", f"| {' | '.join(header)} |", "|" + "---|" * len(header), *rows, ""]
    )


def request_main(
    doc: str | None,
    argv: Sequence[str] | None,
    measure: Callable[[int, int], list[str]],
    render: Callable[[list[str], int, int], str],
) -> int:
    """The command line of both modules: ``[--turns 150] [--repeats 7] [--out FILE]``.
    ``measure`` prints its own line per window; the section goes only to ``--out``."""

    def build(args: argparse.Namespace) -> str:
        return render(measure(args.turns, args.repeats), args.turns, args.repeats)

    return section_main(doc, argv, {"turns": 150, "repeats": 7}, build, echo=False)
