"""Tool-result size cap: truncate any single tool result longer than a limit.

Off unless ``max_tool_result_chars`` is set. One huge output (a minified bundle,
a log) can otherwise take the whole budget and force snipping of everything else.
"""

from __future__ import annotations

import functools
from typing import Any

from ..messages import Message
from ._base import Context, MessageCheck, leaves_alone_when
from ._shrink import settled

__all__ = ["STAGE", "cap_tool_results", "capped", "truncate", "truncation_marker"]

STAGE = "cap"


def truncation_marker(omitted: int, total: int) -> str:
    return f"\n… [truncated: {omitted} of {total} characters omitted]"


def truncate(text: str, limit: int) -> str:
    """Head of ``text`` plus a marker, never longer than ``limit`` (so it is idempotent)."""
    if len(text) <= limit:
        return text
    marker = truncation_marker(len(text), len(text))  # longest marker this text can get
    if len(marker) > limit:
        return text[:limit]
    keep = limit - len(marker)
    return text[:keep] + truncation_marker(len(text) - keep, len(text))


def _truncate_parts(parts: Any, limit: int) -> list[object]:
    """Text parts cut so that their text adds up to at most ``limit`` characters;
    other parts (images, files) are kept as they are."""
    out: list[object] = []
    left = limit
    for part in parts:
        text = part.get("text") if isinstance(part, dict) else None
        if not isinstance(text, str):
            out.append(part)
        elif left > 0:
            cut = truncate(text, left)
            out.append({**part, "text": cut} if cut is not text else part)
            left -= len(cut)
    return out


def _text_length(content: object) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(
            len(p["text"])
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return 0


def capped(message: Message, limit: int | None) -> Message:
    """``message`` with its text cut to ``limit`` as ``cap_tool_results`` cuts a tool
    result's (itself when it is within): for a result a later stage lengthens (an old
    image's placeholder), so that a second pass finds nothing to cut."""
    content = message.get("content")
    if limit is None or _text_length(content) <= limit:
        return message
    if isinstance(content, str):
        return {**message, "content": truncate(content, limit)}
    return {**message, "content": _truncate_parts(content, limit)}


@functools.cache  # one check per cap: equal settings, equal plans
def _within(limit: int) -> MessageCheck:
    def within(message: Message) -> bool:
        return message.get("role") != "tool" or _text_length(message.get("content")) <= limit

    return within


def _caps(ctx: Context) -> MessageCheck | None:
    """cap_tool_results cuts a tool result's text over the cap, and nothing else."""
    limit = ctx.max_tool_result_chars
    return None if limit is None else _within(limit)


@leaves_alone_when(_caps)
def cap_tool_results(messages: list[Message], ctx: Context) -> list[Message]:
    limit = ctx.max_tool_result_chars
    if limit is None:
        return messages
    updated: list[Message] | None = None
    for index, message in enumerate(messages):
        content = message.get("content")
        size = _text_length(content)
        if message.get("role") != "tool" or size <= limit:
            continue
        if updated is None:
            updated = list(messages)
        # as the shrink leaves it: the cut text must not be shrunk on the next pass
        replaced = settled(messages, index, capped(message, limit), ctx)
        updated[index] = replaced
        ctx.record(
            STAGE,
            "truncate",
            index,
            f"tool result cut from {size} to {_text_length(replaced['content'])} characters",
            tool_call_id=message.get("tool_call_id"),
            tokens_saved=ctx.tokens(message) - ctx.tokens(replaced),
        )
    return messages if updated is None else updated
