"""Prompt-cache breakpoints for a governed Messages body: marked where the stable prefix ends.

Anthropic's cache (and the caches of the compatible servers that honour
``cache_control``) stores the prompt prefix that ends at a marked block, and a
later request reads the longest stored prefix it repeats byte for byte, found by
looking back from each of *its* marks (about 20 blocks). The cache policy makes
the history append-only between two compactions (stages/_compact.py), so the
prefix that stays the same is known from the body alone:

1. **the newest turn**: the last block of the request. The next request repeats
   all of it and reads it back (Claude Code's one mark);
2. **system and tools**: the end of ``system`` (or the last tool when there is no
   system). Never changed by governance, so it is read even right after a
   compaction;
3. **the previous request's end**: the message before the newest assistant turn,
   which is where the previous request put its newest-turn mark. It is read even
   when the newest turn added more blocks than the lookback reaches (many
   parallel tool results);
4. **the compaction boundary**: the head that compaction never cuts (the task's
   first user message); after a cut it is the longest prefix that did not change.
   With a server-side ``compaction`` block, the first block after it (what the model
   reads starts at the block's summary, and everything after it is only appended to).

Clearing old tool results edits the request from the oldest result it clears on, and
the cache policy clears oldest first (``stages.Clearing``, from the governed call's
replay). So two more spots keep a clearing compaction from re-sending the whole
request: on every request, **where the next clearing starts** (the block before the
call of the oldest result still sent whole: the same block until a compaction clears
it), and on the compacting request, **where this clearing started** (the same block:
read back through the mark the requests before it wrote). It takes the place of
spot 3, which lies past the edit on that request; the next clearing's spot comes
before the task's (a cut is rarer than a clearing), after a server compaction's.

Nothing before the newest ``compaction`` block is marked (the API ignores it), and
the block itself never is: it goes out exactly as the API returned it.

The client's own marks are kept, all of them (the pipeline has already dropped
the oldest ones beyond the limit of 4); ours fill the slots they leave, in the
order above, and a spot the client already marked costs nothing. Only blocks the
API accepts a mark on are marked (never a thinking block, never an empty text
block); string content becomes one text block to carry it. A placed mark is
``{"type": "ephemeral"}``, or with ``"ttl": "1h"`` when a client mark after it
has that TTL (the API wants longer TTLs first). Everything is a pure function of
the output body, so the same prefix gets the same marks on every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..stages import Clearing
from ._anthropic import boundary
from ._anthropic_rules import MAX_BREAKPOINTS, breakpoints

#: Block types that take ``cache_control`` (thinking blocks do not; unknown types may not).
MARKABLE = frozenset({"text", "image", "document", "tool_use", "tool_result", "search_result"})
MARK: dict[str, Any] = {"type": "ephemeral"}
LONG_TTL = "1h"


@dataclass(frozen=True, slots=True)
class Spot:
    """A block to mark: in ``part`` ("tools", "system" or "messages"), message
    ``message`` (-1 outside messages), block ``block``; ``why`` is the report's word."""

    part: str
    message: int
    block: int
    why: str

    def label(self) -> str:
        if self.part == "messages":
            return f"messages[{self.message}].content[{self.block}]"
        return f"{self.part}[{self.block}]" if self.part == "tools" else "system"


def _markable(block: Any) -> bool:
    # a malformed type (a list, say) is not markable, and must not fail the lookup
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return False
    if block["type"] not in MARKABLE:
        return False
    return not (block.get("type") == "text" and not block.get("text"))


def _last_markable(content: Any, after: int = -1) -> int | None:
    """Position of the last block after ``after`` that can carry a mark (a non-empty
    string counts as one)."""
    if isinstance(content, str):
        return 0 if content and after < 0 else None
    if not isinstance(content, list):
        return None
    return next((j for j in range(len(content) - 1, after, -1) if _markable(content[j])), None)


#: (message, block) before which nothing is marked: none, without a compaction block.
_NO_FLOOR = (0, -1)


def _message_spot(
    messages: list[Any], start: int, why: str, floor: tuple[int, int] = _NO_FLOOR
) -> Spot | None:
    """The last markable block of messages[start], else of the nearest one before it,
    after ``floor`` (the newest compaction block: nothing before it is read)."""
    for i in range(start, floor[0] - 1, -1):
        message = messages[i]
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        j = _last_markable(message.get("content"), floor[1] if i == floor[0] else -1)
        if j is not None:
            return Spot("messages", i, j, why)
    return None


def _head_spot(body: dict[str, Any]) -> Spot | None:
    system = body.get("system")
    j = _last_markable(system)
    if j is not None:
        return Spot("system", -1, j, "system and tools")
    tools = body.get("tools")
    if isinstance(tools, list) and tools and isinstance(tools[-1], dict):
        return Spot("tools", -1, len(tools) - 1, "tools")
    return None


def _call_at(messages: list[Any], call_id: str) -> tuple[int, int] | None:
    """(message, block) of the ``tool_use`` block with id ``call_id``, if any."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or message.get("role") != "assistant":
            continue
        for j, block in enumerate(content):
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and block.get("id") == call_id
            ):
                return i, j
    return None


def _before_call(
    messages: list[Any], call_id: str | None, why: str, floor: tuple[int, int]
) -> Spot | None:
    """The last markable block before the call ``call_id`` (clearing a result may also
    clear its call's arguments), after ``floor``; None when the call is not there."""
    at = None if call_id is None else _call_at(messages, call_id)
    if at is None or at <= floor:
        return None
    i, j = at
    content = messages[i]["content"]
    inside = next(
        (k for k in range(j - 1, max(-1, floor[1] if i == floor[0] else -1), -1)
         if _markable(content[k])),
        None,
    )  # fmt: skip
    if inside is not None:
        return Spot("messages", i, inside, why)
    return _message_spot(messages, i - 1, why, floor) if i > floor[0] else None


def wanted(body: dict[str, Any], clearing: Clearing | None = None) -> list[Spot]:
    """Our spots in priority order (see the module docstring), each block at most once.
    ``clearing``: where the cache policy's clearing edits this request (None: unknown)."""
    messages = body.get("messages")
    native = messages if isinstance(messages, list) else []
    floor = boundary(native) or _NO_FLOOR
    clearing = clearing or Clearing()
    spots: list[Spot | None] = []
    if native:
        spots.append(_message_spot(native, len(native) - 1, "newest turn", floor))
    spots.append(_head_spot(body))
    latest = next(
        (
            i
            for i in range(len(native) - 1, -1, -1)
            if isinstance(native[i], dict) and native[i].get("role") == "assistant"
        ),
        None,
    )
    # both only before the previous request's end: from there on the newest-turn and
    # previous-end marks read everything back, and the newest turn is sent untouched
    end = len(native) if latest is None else latest - 1
    now = _before_call(native, clearing.now, "where this request's clearing starts", floor)
    if now is not None and now.message < end:
        spots.append(now)  # the previous request's end lies past the edit: unread
    elif latest is not None and latest >= 1:
        spots.append(_message_spot(native, latest - 1, "previous request's end", floor))
    upcoming = _before_call(native, clearing.next, "where the next clearing starts", floor)
    if upcoming is not None and upcoming.message >= end:
        upcoming = None
    if native and floor != _NO_FLOOR:
        why = "after the compaction block: what the model reads starts at its summary"
        first = floor[0] + 1 if floor[0] + 1 < len(native) else floor[0]
        spots.append(
            _message_spot(native, floor[0], why, floor)
            or _message_spot(native[: first + 1], first, why, floor)
        )
        spots.append(upcoming)
    elif native:
        spots.append(upcoming)
        spots.append(_message_spot(native[:1], 0, "the task: compaction cuts after it"))
    out: list[Spot] = []
    for spot in spots:
        if spot is not None and all(
            (s.part, s.message, s.block) != (spot.part, spot.message, spot.block) for s in out
        ):
            out.append(spot)  # fmt: skip
    return out


def _block(body: dict[str, Any], spot: Spot) -> Any:
    if spot.part == "tools":
        return body["tools"][spot.block]
    content = body["system"] if spot.part == "system" else body["messages"][spot.message]["content"]
    return content if isinstance(content, str) else content[spot.block]


def _order(spot: Spot) -> tuple[int, int, int]:
    return ({"tools": 0, "system": 1}.get(spot.part, 2), spot.message, spot.block)


def _marks(body: dict[str, Any]) -> Iterator[tuple[tuple[int, int, int], Any]]:
    """(position, cache_control) of every mark the body carries, tool_result contents
    counted at their tool_result."""
    for j, tool in enumerate(body.get("tools") or ()):
        if isinstance(tool, dict) and "cache_control" in tool:
            yield (0, -1, j), tool["cache_control"]
    system = body.get("system")
    for j, block in enumerate(system if isinstance(system, list) else ()):
        if isinstance(block, dict) and "cache_control" in block:
            yield (1, -1, j), block["cache_control"]
    for i, message in enumerate(body.get("messages") or ()):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else ()):
            if not isinstance(block, dict):
                continue
            if "cache_control" in block:
                yield (2, i, j), block["cache_control"]
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for sub in inner if isinstance(inner, list) else ():
                if isinstance(sub, dict) and "cache_control" in sub:
                    yield (2, i, j), sub["cache_control"]


def _mark_for(spot: Spot, existing: list[tuple[tuple[int, int, int], Any]]) -> dict[str, Any]:
    """Ephemeral, with the long TTL when a client mark after the spot has it."""
    at = _order(spot)
    long_after = any(
        pos > at and isinstance(mark, dict) and mark.get("ttl") == LONG_TTL
        for pos, mark in existing
    )
    return {**MARK, "ttl": LONG_TTL} if long_after else dict(MARK)


def _marked(content: Any, block: int, mark: dict[str, Any]) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": mark}]
    out = list(content)
    out[block] = {**out[block], "cache_control": mark}
    return out


def _apply(body: dict[str, Any], spot: Spot, mark: dict[str, Any]) -> dict[str, Any]:
    """A new body with ``spot`` marked (only the containers on the way are copied)."""
    if spot.part == "tools":
        tools = list(body["tools"])
        tools[spot.block] = {**tools[spot.block], "cache_control": mark}
        return {**body, "tools": tools}
    if spot.part == "system":
        return {**body, "system": _marked(body["system"], spot.block, mark)}
    messages = list(body["messages"])
    message = messages[spot.message]
    messages[spot.message] = {**message, "content": _marked(message["content"], spot.block, mark)}
    return {**body, "messages": messages}


def place(
    body: dict[str, Any], clearing: Clearing | None = None
) -> tuple[dict[str, Any], list[Spot]]:
    """The body with our breakpoints added where slots are free, and the spots marked
    (``clearing``: see ``wanted``).

    The client's marks all stay (the body must already hold at most 4); the input is
    never modified, and comes back itself when nothing is placed.
    """
    free = MAX_BREAKPOINTS - breakpoints(body)
    existing = list(_marks(body))
    taken = {pos for pos, _ in existing}
    placed: list[Spot] = []
    out = body
    for spot in wanted(body, clearing):
        if free <= 0:
            break
        if _order(spot) in taken:
            continue  # the client marked it already: read the same way, no slot used
        block = _block(out, spot)
        if isinstance(block, dict) and "cache_control" in block:
            continue
        out = _apply(out, spot, _mark_for(spot, existing))
        placed.append(spot)
        free -= 1
    return out, placed
