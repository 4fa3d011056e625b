"""Input repair: the strict profiles' first stage (messages/inputs.py makes the repairs)."""

from __future__ import annotations

from ..messages import Message
from ..messages.inputs import STAGE, repair_message
from ._base import Context

__all__ = ["repair_messages"]


def repair_messages(messages: list[Message], ctx: Context) -> list[Message]:
    """Strict profiles' first stage: fix or strip what providers would reject outright."""
    updated: list[Message] | None = None
    for i, message in enumerate(messages):
        repaired, fixes = repair_message(message, i)
        if not fixes:
            if updated is not None:
                updated.append(message)
            continue
        if updated is None:
            updated = list(messages[:i])
        for n, fix in enumerate(fixes, 1):
            # The token change of the whole message is booked on its last repair.
            saved = (
                ctx.tokens(message) - ctx.tokens(repaired) if repaired and n == len(fixes) else 0
            )
            ctx.record(STAGE, "repair", i, fix, tokens_saved=saved)
        if repaired is None:
            ctx.record(
                STAGE,
                "drop",
                i,
                f"messages[{i}]: assistant message left with nothing to say",
                tokens_saved=ctx.tokens(message),
            )
        else:
            updated.append(repaired)
    return messages if updated is None else updated
