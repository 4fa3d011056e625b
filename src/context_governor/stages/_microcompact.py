"""Microcompact: replace old, large results of read-only tools by a one-line stub.

Old file reads and command outputs are the bulk of a coding agent's history and
the least valuable part of it: the model can run the tool again.
"""

from __future__ import annotations

import re

from ..messages import Message
from ._base import Context

__all__ = ["COMPACTABLE_TOOLS", "KEEP_RECENT", "MIN_CHARS", "STAGE", "microcompact", "summary_for"]

STAGE = "microcompact"
COMPACTABLE_TOOLS = frozenset(
    {
        "read_file",
        "exec",
        "grep",
        "find_files",
        "web_search",
        "web_fetch",
        "list_dir",
        "list_exec_sessions",
    }
)
KEEP_RECENT = 10
MIN_CHARS = 500


def summary_for(name: str) -> str:
    return f"[{name} result omitted from context]"


#: What a provider's name repair replaces (names must match ^[a-zA-Z0-9_-]+$).
_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def _repaired_name(name: object) -> object:
    return _NAME_BAD_CHARS.sub("_", name) if isinstance(name, str) else name


def microcompact(
    messages: list[Message], ctx: Context, *, repaired_names: bool = False
) -> list[Message]:
    """All but the newest KEEP_RECENT compactable results with >= MIN_CHARS of text.

    ``repaired_names`` (the provider profiles' seed policy) reads each tool name as the
    provider's name repair will send it (``web.search`` is ``web_search``): the repair
    runs after this stage, and a decision that changed with it would make governing
    the governed output stub more results (not idempotent). The nanobot profile keeps
    the seed's exact reading.
    """
    indices = [
        i
        for i, m in enumerate(messages)
        if m.get("role") == "tool"
        and (_repaired_name(m.get("name")) if repaired_names else m.get("name"))
        in COMPACTABLE_TOOLS
    ]
    if len(indices) <= KEEP_RECENT:
        return messages
    updated: list[Message] | None = None
    for index in indices[: len(indices) - KEEP_RECENT]:
        message = messages[index]
        content = message.get("content")
        if not isinstance(content, str) or len(content) < MIN_CHARS:
            continue
        if updated is None:
            updated = list(messages)
        replaced = {**message, "content": summary_for(message.get("name", "tool"))}
        updated[index] = replaced
        ctx.record(
            STAGE,
            "replace",
            index,
            f"old {message['name']} result ({len(content)} chars) stubbed",
            tool_call_id=message.get("tool_call_id"),
            tokens_saved=ctx.tokens(message) - ctx.tokens(replaced),
        )
    return messages if updated is None else updated
