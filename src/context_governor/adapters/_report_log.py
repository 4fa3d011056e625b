"""The log lines an adapter writes for each governed call: shared by the adapters whose
framework has no place for our report (the caller may also take it through a callback).

One info line when governance changed something (what it cost and saved), one
warning per note when the report is not ok (over budget, or a rule still broken):
the notes say why. Each adapter logs under its own logger name.

This module imports no framework.
"""

from __future__ import annotations

import logging

from ..report import Report


def log_report(logger: logging.Logger, report: Report, unit: str) -> None:
    """Log one call's report; ``unit`` is what the framework's history holds ("messages",
    "items")."""
    if report.changed:
        logger.info(
            "context-governor: %d -> %d %s, %d -> %d tokens (budget %s), %d actions",
            report.messages_before,
            report.messages_after,
            unit,
            report.tokens_before,
            report.tokens_after,
            report.budget,
            len(report.actions),
        )
    if not report.ok:  # over budget or a rule broken: the notes say why
        for note in report.notes:
            logger.warning("context-governor: %s", note)
