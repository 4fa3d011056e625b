"""``context-governor demo``: an offline agent session that makes every governance stage act."""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import ContextGovernorError
from ..profiles import PROFILES
from ._common import COMPACTIONS, EXIT_RUN_FAILED, fail, out, profile_option
from ._config import compaction_for

if TYPE_CHECKING:
    from ..runner import ProgressPrinter

__all__ = ["DEMO_WINDOW", "demo_command"]

DEMO_WINDOW = 11_000


def _demo_footer(summary: Any, printer: ProgressPrinter, provider: str) -> None:
    acted = summary.stage_actions
    stages = summary.stages
    shown = [s for s in stages if acted[s]] + sorted(set(acted) - set(stages))
    printer.info("")
    printer.info("stages that acted: " + ", ".join(f"{s} ({acted[s]})" for s in shown))
    if summary.missing_stages:
        printer.info("stages that did not act: " + ", ".join(summary.missing_stages))
    before = sum(r.tokens_before for r in summary.reports)
    after = sum(r.tokens_after for r in summary.reports)
    printer.info(
        f"{summary.requests} model calls: {before:,} tokens of history, {after:,} sent "
        f"({1 - after / max(before, 1):.0%} less); "
        + (
            f"every request passed the {provider} rules"
            if not summary.violations
            else f"{summary.violations} rule violations!"
        )
    )


@click.command("demo")
@click.option(
    "--context-window",
    type=click.IntRange(min=3000),
    default=DEMO_WINDOW,
    show_default=True,
    help="Small on purpose, so that snipping starts after a few file reads.",
)
@profile_option(sorted(PROFILES), help="Target rules and policy (as for govern).")
@click.option(
    "--compaction",
    type=click.Choice(COMPACTIONS),
    default="cache",
    show_default=True,
    help="'cache' (the default everywhere) shows the cache-friendly compaction; 'seed' "
    "the seed pipeline's microcompact and snip.",
)
@click.option("-v", "--verbose", is_flag=True, help="Show every governance action and note.")
def demo_command(context_window: int, profile: str, compaction: str, verbose: bool) -> None:
    """Play an offline agent session that makes every governance stage act.

    A scripted model drives the real built-in tools over a small sample project
    (written to a temporary directory). Along the way the user cancels a run,
    the model server fails once, and the app restarts from a trimmed history —
    each a reason for one of the pipeline's repairs.
    """
    from ..demo import run_demo, write_project
    from ..runner import ProgressPrinter

    printer = ProgressPrinter(click.echo, out, verbose=verbose)
    with tempfile.TemporaryDirectory(prefix="context-governor-demo-") as tmp:
        workspace = Path(tmp)
        write_project(workspace)
        click.echo(f"sample project written to a temporary directory ({workspace.name})")
        if profile == "nanobot":
            compaction = "seed"  # the nanobot profile is the seed whatever was asked
        click.echo(f"profile {profile}, compaction {compaction}, context window {context_window:,}")
        try:
            summary = asyncio.run(
                run_demo(
                    workspace,
                    printer,
                    context_window=context_window,
                    profile=profile,
                    compaction=compaction_for(click.get_current_context(), compaction),
                )
            )
        except ContextGovernorError as exc:
            fail(str(exc))
            return
    provider = PROFILES[profile].provider or "openai"
    _demo_footer(summary, printer, provider)
    if summary.violations:
        sys.exit(EXIT_RUN_FAILED)
