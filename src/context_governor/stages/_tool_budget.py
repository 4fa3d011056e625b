"""The seed's tool-result budget step (the ``nanobot`` profile only).

Nanobot 0.2.2 runs this step on every model call, after microcompact and before
snip. It does two things to each tool result:

- a result with nothing in it (missing or ``None`` content, a blank string, an
  empty list, or a list of text parts whose text is blank) becomes
  ``({name} completed with no output)``: an empty tool message is rejected by
  several providers and tells the model nothing;
- a string result longer than the cap keeps its first ``cap`` characters followed
  by ``\\n... (truncated)``. The output of ``read_file`` is exempt from the cut
  (it pages itself, and it is how a model reads back offloaded output), and so
  are list contents.

With no cap given, the runner's default of 16,000 characters applies (Nanobot's
``max_tool_result_chars``). A cap of 0 or less turns the cut off, as in the seed;
the empty-result marker is always applied. Both edits are idempotent: the
marker is not blank, and a cut result cut again gives the same text.

The provider profiles use :mod:`.cap` instead, whose marker says how much was
removed and whose result never exceeds the cap.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message
from ..report import Kind
from ._base import Context

__all__ = [
    "DEFAULT_MAX_CHARS",
    "EXEMPT_TOOLS",
    "STAGE",
    "TRUNCATED_SUFFIX",
    "apply_tool_result_budget",
    "empty_marker",
    "is_empty_result",
    "truncate_seed",
]

STAGE = "tool_budget"
#: Nanobot's default ``max_tool_result_chars`` (its agent defaults), used when none is given.
DEFAULT_MAX_CHARS = 16_000
TRUNCATED_SUFFIX = "\n... (truncated)"
#: Tools whose output bounds itself and is never cut here.
EXEMPT_TOOLS = frozenset({"read_file"})


def empty_marker(name: str) -> str:
    return f"({name} completed with no output)"


def _joined_text(parts: list[Any]) -> str | None:
    """The text of a list made only of text parts, joined by newlines; None otherwise."""
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, dict) or part.get("type") != "text":
            return None
        text = part.get("text")
        if not isinstance(text, str):
            return None
        texts.append(text)
    return "\n".join(texts)


def is_empty_result(content: Any) -> bool:
    """Whether a tool result carries nothing the model could read, by the seed's test."""
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        if not content:
            return True
        joined = _joined_text(content)
        return joined is not None and not joined.strip()
    return False


def truncate_seed(text: str, limit: int) -> str:
    """The first ``limit`` characters and the seed's suffix; ``limit <= 0`` keeps all."""
    if limit <= 0 or len(text) <= limit:
        return text
    return text[:limit] + TRUNCATED_SUFFIX


def _tool_name(message: Message) -> str:
    name = message.get("name")
    return str(name) if name else "tool"


def _budgeted(message: Message, limit: int) -> tuple[Any, Kind, str] | None:
    """The new content for one tool message and what was done; None when unchanged."""
    name = _tool_name(message)
    content = message.get("content")
    if is_empty_result(content):
        marker = empty_marker(name)
        return marker, "replace", f"empty tool result replaced by {marker!r}"
    if name in EXEMPT_TOOLS or not isinstance(content, str):
        return None
    cut = truncate_seed(content, limit)
    if cut is content:
        return None
    return cut, "truncate", f"tool result cut from {len(content)} to {limit} characters"


def apply_tool_result_budget(messages: list[Message], ctx: Context) -> list[Message]:
    """Mark empty tool results and cut long ones, in the seed's format (see module doc)."""
    limit = ctx.max_tool_result_chars
    if limit is None:
        limit = DEFAULT_MAX_CHARS
    updated: list[Message] | None = None
    for index, message in enumerate(messages):
        if message.get("role") != "tool" or (edit := _budgeted(message, limit)) is None:
            continue
        content, kind, detail = edit
        if updated is None:
            updated = list(messages)
        replaced = {**message, "content": content}
        updated[index] = replaced
        ctx.record(
            STAGE,
            kind,
            index,
            detail,
            tool_call_id=message.get("tool_call_id"),
            tokens_saved=ctx.tokens(message) - ctx.tokens(replaced),
        )
    return messages if updated is None else updated
