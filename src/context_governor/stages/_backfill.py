"""Backfill: give every tool call a result, so the request is legal again.

A crash, a cancelled run or a lost message leaves a call without its answer;
providers reject that. The inserted result says plainly what happened.
"""

from __future__ import annotations

from ..messages import Message, call_name, declared_calls
from ..report import moves_messages
from ._base import Context
from ._pairing import pair_in

__all__ = ["BACKFILL_CONTENT", "STAGE", "backfill_seed", "backfill_strict"]

STAGE = moves_messages("backfill")
BACKFILL_CONTENT = "[Tool result unavailable — call was interrupted or lost]"


def _placeholder(call_id: str, name: object) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": BACKFILL_CONTENT}


def _insert(
    messages: list[Message], missing: list[tuple[int, str, object]], ctx: Context
) -> list[Message]:
    """Insert one placeholder per missing (assistant index, id, name), after the
    assistant message and after any tool results that already follow it."""
    if not missing:
        return messages
    updated = list(messages)
    offset = 0
    for assistant_index, call_id, name in missing:
        at = assistant_index + 1 + offset
        while at < len(updated) and updated[at].get("role") == "tool":
            at += 1
        placeholder = _placeholder(call_id, name)
        updated.insert(at, placeholder)
        ctx.record(
            STAGE,
            "insert",
            at,
            f"placeholder result for unanswered call to {name or '?'}",
            tool_call_id=call_id,
            tokens_saved=-ctx.tokens(placeholder),
        )
        offset += 1
    return updated


def backfill_seed(messages: list[Message], ctx: Context) -> list[Message]:
    """The seed's rule: a declared id with no result anywhere in the list gets one."""
    declared: list[tuple[int, str, object]] = []
    answered: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            declared.extend((index, str(c["id"]), call_name(c)) for c in declared_calls(message))
        elif role == "tool" and message.get("tool_call_id"):
            answered.add(str(message["tool_call_id"]))
    missing = [d for d in declared if d[1] not in answered]
    return _insert(messages, missing, ctx)


def backfill_strict(messages: list[Message], ctx: Context) -> list[Message]:
    """Every declared call needs its own answer (see ``pairing``)."""
    pairing = pair_in(messages, ctx)
    missing = [c for n, c in enumerate(pairing.calls) if n not in pairing.answered]
    return _insert(messages, missing, ctx)
