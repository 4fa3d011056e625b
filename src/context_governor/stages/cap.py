"""Tool-result size cap: truncate any single tool result longer than a limit.

Off unless ``max_tool_result_chars`` is set. One huge output (a minified bundle,
a log) can otherwise take the whole budget and force snipping of everything else.
"""

from __future__ import annotations

from ..messages import Message
from .base import Context

STAGE = "cap"


def truncation_marker(omitted: int, total: int) -> str:
    return f"\n… [truncated: {omitted} of {total} characters omitted]"


def truncate(text: str, limit: int) -> str:
    """Head of ``text`` plus a marker, never longer than ``limit`` (so it is idempotent)."""
    if len(text) <= limit:
        return text
    marker = truncation_marker(len(text), len(text))  # longest marker this text can get
    keep = max(0, limit - len(marker))
    return text[:keep] + truncation_marker(len(text) - keep, len(text))


def cap_tool_results(messages: list[Message], ctx: Context) -> list[Message]:
    limit = ctx.max_tool_result_chars
    if limit is None:
        return messages
    updated: list[Message] | None = None
    for index, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "tool" or not isinstance(content, str) or len(content) <= limit:
            continue
        if updated is None:
            updated = list(messages)
        replaced = {**message, "content": truncate(content, limit)}
        updated[index] = replaced
        ctx.record(
            STAGE,
            "truncate",
            index,
            f"tool result cut from {len(content)} to {limit} characters",
            tool_call_id=message.get("tool_call_id"),
            tokens_saved=ctx.tokens(message) - ctx.tokens(replaced),
        )
    return messages if updated is None else updated
