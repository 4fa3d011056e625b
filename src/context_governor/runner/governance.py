"""Governance of one step, with the seed's fallback when the Governor itself fails.

``govern()`` already falls back to the minimal repair when a stage raises. This
covers what escapes it anyway (a bug in a custom Governor, a counter that
fails): the step must still get a legal list, and the failure must be visible
in the step's report rather than end the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..governor import Governor
from ..messages import Message
from ..pipeline import GovernResult
from ..report import Action, Report
from ..stages import Context

FALLBACK_STAGE = "runner"


def _minimal_repair(
    governor: Governor, messages: list[Message], tools: Sequence[Any] | None
) -> tuple[list[Message], Context, str]:
    """The profile's minimal repair (orphans, then backfill); the input as is if it fails."""
    ctx = Context(counter=governor.profile.counter(governor.model), tools=tools)
    try:
        out = messages
        for stage in governor.profile.fallback:
            out = stage(out, ctx)
        return out, ctx, "minimal repair used"
    except Exception as exc:
        ctx.actions.clear()
        return messages, ctx, f"minimal repair failed too ({exc!r}); sent as is"


def _count(ctx: Context, messages: list[Message], tools: Sequence[Any] | None) -> int:
    try:
        return ctx.counter.prompt_tokens(messages, tools)
    except Exception:
        return 0


def govern_step(
    governor: Governor, messages: list[Message], tools: list[dict[str, Any]] | None
) -> tuple[GovernResult, str | None]:
    """Govern ``messages``; returns the result and, if the Governor raised, what happened."""
    try:
        return governor.govern(messages, tools=tools), None
    except Exception as exc:
        failure = f"governance failed ({exc!r})"
    repaired, ctx, outcome = _minimal_repair(governor, messages, tools)
    event = f"{failure}; {outcome}"
    report = Report(
        profile=governor.profile.name,
        counter=ctx.counter.name,
        context_window=governor.context_window,
        max_output=governor.max_output if governor.max_output is not None else 0,
        budget=None,
        tokens_before=_count(ctx, messages, tools),
        tokens_after=_count(ctx, repaired, tools),
        messages_before=len(messages),
        messages_after=len(repaired),
        # The fallback comes first: it explains the repair actions after it.
        actions=[Action(FALLBACK_STAGE, "fallback", 0, event), *ctx.actions],
        notes=[event],
        model=governor.model,
    )
    return GovernResult(repaired, report), event
