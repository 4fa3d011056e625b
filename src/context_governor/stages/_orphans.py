"""Orphan cleanup: drop tool results that answer no earlier tool call.

A result whose call is not in the list makes most providers reject the request
("tool message must follow a tool_calls message"); snipping creates such results
by cutting a call away from its answers, which is why this stage runs twice.
"""

from __future__ import annotations

from ..messages import Message, declared_calls
from ..report import moves_messages
from ._base import Context
from ._pairing import pair_in

__all__ = ["STAGE", "drop_orphans_seed", "drop_orphans_strict"]

STAGE = moves_messages("orphans")


def drop_orphans_seed(messages: list[Message], ctx: Context) -> list[Message]:
    """The seed's rule: drop a result whose truthy id was not declared earlier.

    Results with a missing or empty id, and second results for one id, are kept
    (a defect the strict variant fixes).
    """
    declared: set[str] = set()
    kept: list[Message] | None = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            declared.update(str(call["id"]) for call in declared_calls(message))
        elif role == "tool":
            tcid = message.get("tool_call_id")
            if tcid and str(tcid) not in declared:
                if kept is None:
                    kept = list(messages[:index])
                ctx.record(
                    STAGE,
                    "drop",
                    index,
                    "tool result answers no earlier tool call",
                    tool_call_id=tcid,
                    tokens_saved=ctx.tokens(message),
                )
                continue
        if kept is not None:
            kept.append(message)
    return messages if kept is None else kept


def drop_orphans_strict(messages: list[Message], ctx: Context) -> list[Message]:
    """Drop every tool result that answers no call (see ``pairing``): no id, an
    orphan, or a second result for one call."""
    unmatched = pair_in(messages, ctx).unmatched
    if not unmatched:
        return messages
    for index, reason in unmatched.items():
        message = messages[index]
        tcid = message.get("tool_call_id")
        ctx.record(
            STAGE,
            "drop",
            index,
            reason,
            tool_call_id=tcid if tcid else None,
            tokens_saved=ctx.tokens(message),
        )
    return [m for i, m in enumerate(messages) if i not in unmatched]
