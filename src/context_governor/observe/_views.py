"""What the client sent beside what the model received, with each change marked.

Both bodies are read into the pipeline's message view (each wire format's
``messages``: formats/*.decode for the native APIs, ``messages`` for Chat Completions)
and aligned in order: a forwarded message is paired with the first client message
still unpaired that it comes from (the same tool call id for a tool result; the same
or a containing text otherwise). Client messages passed over are **cut**; forwarded
messages with no source are **inserted** (a cut note, a summary, a backfilled result);
a paired tool result that got shorter is **truncated** when its head survives and
**cleared** otherwise; any other difference is **changed** (a note folded into a user
message, a repair).

Used by the proxy's page (a request's view, made on demand) and by the offline
``govern --html``. Pure; long texts are shortened to ``SHOWN_CHARS`` for display.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..formats import wire_or_fallback
from ..messages import Message

__all__ = ["LOOKAHEAD", "SHOWN_CHARS", "messages_of", "request_view", "side_by_side", "text_of"]

SHOWN_CHARS = 3000
#: how far ahead of the last pairing a source is looked for (bounds the work)
LOOKAHEAD = 400


def messages_of(api: str, body: Any) -> list[Message]:
    """The message view of a request body of ``api`` (bytes, str or parsed); [] when it
    cannot be read (the page then says so, the request itself was not affected)."""
    try:
        data = json.loads(body) if isinstance(body, bytes | str) else body
        if not isinstance(data, dict):
            return []
        return wire_or_fallback(api).messages(data)
    except Exception:  # a body we cannot read is shown as unreadable, never a 500
        return []


def text_of(message: Message) -> str:
    """The text of a message: its content's text parts, then its tool calls."""
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                parts.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
            elif isinstance(part, str):
                parts.append(part)
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        if isinstance(fn, dict):
            parts.append(f"→ {fn.get('name')}({fn.get('arguments', '')})")
    return "\n".join(parts)


def _calls(message: Message) -> tuple[str, ...]:
    return tuple(str(c.get("id")) for c in message.get("tool_calls") or [] if isinstance(c, dict))


def _source(
    sent: Message, text: str, client: Sequence[Message], texts: list[str], start: int
) -> int | None:
    """The index (from ``start``) of the client message ``sent`` comes from, or None."""
    role = sent.get("role")
    tcid = sent.get("tool_call_id")
    calls = _calls(sent)
    for k in range(start, min(len(client), start + LOOKAHEAD)):
        c = client[k]
        if c.get("role") != role:
            continue
        if role == "tool":
            if tcid is not None and c.get("tool_call_id") == tcid:
                return k
            continue
        theirs_calls = _calls(c)
        if calls or theirs_calls:  # a tool call is known by its id, not its text
            if set(calls) & set(theirs_calls):
                return k
            continue
        theirs = texts[k]
        if theirs == text or (theirs and theirs in text) or (text and text in theirs):
            return k
    return None


def _mark(before: str, after: str, role: Any) -> str:
    if before == after:
        return "kept"
    if role == "tool" and len(after) < len(before):
        head = before[: min(80, len(before))]
        return "truncated" if head and after.startswith(head) else "cleared"
    return "changed"


def _shown(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    half = SHOWN_CHARS // 2
    return f"{text[:half]}\n… ({len(text) - SHOWN_CHARS:,} characters not shown) …\n{text[-half:]}"


def _row(i: int, message: Message, text: str, mark: str, pair: int | None) -> dict[str, Any]:
    return {
        "i": i,
        "role": str(message.get("role")),
        "name": message.get("name"),
        "tool_call_id": message.get("tool_call_id"),
        "chars": len(text),
        "text": _shown(text),
        "mark": mark,
        "pair": pair,
    }


def side_by_side(client: Sequence[Message], model: Sequence[Message]) -> dict[str, Any]:
    """The two message lists as rows, each marked (module docstring), paired by index."""
    client_texts = [text_of(m) for m in client]
    marks = ["cut"] * len(client)
    pairs: list[int | None] = [None] * len(client)
    right: list[dict[str, Any]] = []
    start = 0
    for j, sent in enumerate(model):
        text = text_of(sent)
        k = _source(sent, text, client, client_texts, start)
        if k is None:
            right.append(_row(j, sent, text, "inserted", None))
            continue
        mark = _mark(client_texts[k], text, sent.get("role"))
        marks[k], pairs[k] = ("kept" if mark == "kept" else "changed"), j
        right.append(_row(j, sent, text, mark, k))
        start = k + 1
    left = [_row(i, m, client_texts[i], marks[i], pairs[i]) for i, m in enumerate(client)]
    counts: dict[str, int] = {}
    for row in right:
        counts[row["mark"]] = counts.get(row["mark"], 0) + 1
    counts["cut"] = marks.count("cut")
    return {"client": left, "model": right, "counts": counts}


def request_view(api: str, client_body: Any, forwarded_body: Any) -> dict[str, Any]:
    """The side-by-side view of one request's two bodies."""
    return side_by_side(messages_of(api, client_body), messages_of(api, forwarded_body))
