"""Digests: what a cleared log or JSON result keeps instead of a bare placeholder.

A compaction clears old tool results whole; the placeholder says only that the call
succeeded. For two kinds of output that loses what the agent most often comes back
for, so under ``CompactionPolicy.digest`` their cleared form keeps it:

- **Logs and test output** (many lines, not exact text): the lines that report a
  failure or an error (the first and last ``FAILURE_LINES // 2`` of them) and the last
  ``TAIL_LINES`` lines (where runners print their summary), each with its line number.
- **JSON with a large array** (the response of an API, a search): the array's path,
  its length, the keys and types of its items and its first and last item; the rest of
  the document with the array elided.

A digest is a function of the output alone (the same bytes in every process and on
every later request: the cached prefix holds), is made only where it is much smaller
than the output (else the plain placeholder), and says how to get the whole output
back (the offload file when there is one, else calling the tool again). Exact text (a
file read an edit will quote) is never digested: its cleared form stays the placeholder.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["FAILURE_LINES", "MIN_DIGEST_CHARS", "TAIL_LINES", "digest_text"]

#: Outputs shorter than this are cleared to the plain placeholder (a digest would not
#: be much smaller than them).
MIN_DIGEST_CHARS = 2_000
#: A log is digested only from this many lines on.
MIN_LOG_LINES = 30
#: At most this many failure lines are kept (the first half and the last half).
FAILURE_LINES = 20
#: The last lines kept of a log.
TAIL_LINES = 12
#: A digest must be at most this share of the output, else the placeholder is used.
MAX_SHARE = 0.4
#: A kept line (or JSON item) longer than this is cut, with "..." at the end.
LINE_CHARS = 240
ITEM_CHARS = 600
REST_CHARS = 600
#: A JSON array is digested from this many items on.
MIN_ITEMS = 4

_FAILURE = re.compile(
    r"\b(error|errors|failed|failure|failures|fatal|exception|traceback|panic|"
    r"assertionerror|segmentation fault|denied|not found|timed? ?out)\b|^E\s{2,}\S|^FAIL\b",
    re.IGNORECASE,
)


def digest_text(text: str, name: str, back: str) -> str | None:
    """The digest of ``text``, the output of tool ``name`` (``back``: how to get it all
    back, a sentence), or None where the placeholder should be used instead."""
    if len(text) < MIN_DIGEST_CHARS:
        return None
    made = _json_digest(text, name, back) or _log_digest(text, name, back)
    if made is None or len(made) > MAX_SHARE * len(text):
        return None
    return made


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ----------------------------------------------------------------------------- logs
def _log_digest(text: str, name: str, back: str) -> str | None:
    lines = text.split("\n")
    if len(lines) < MIN_LOG_LINES:
        return None
    tail_from = max(0, len(lines) - TAIL_LINES)
    failing = [i for i in range(tail_from) if _FAILURE.search(lines[i])]
    kept = failing
    if len(failing) > FAILURE_LINES:
        kept = failing[: FAILURE_LINES // 2] + failing[-(FAILURE_LINES // 2) :]
    width = len(str(len(lines)))
    shown = [f"{i + 1:>{width}}| {_cut(lines[i], LINE_CHARS)}" for i in kept]
    if len(failing) > len(kept):
        more = f"{'':>{width}}| [... {len(failing) - len(kept)} more such lines ...]"
        shown.insert(FAILURE_LINES // 2, more)
    tail = [f"{i + 1:>{width}}| {_cut(lines[i], LINE_CHARS)}" for i in range(tail_from, len(lines))]
    what = (
        f"the {len(failing)} line{'s' if len(failing) != 1 else ''} that mention a failure or an "
        "error and "
        if failing
        else ""
    )
    head = (
        f"[Output of {name} ({len(text)} characters, {len(lines)} lines) was shortened to "
        f"save space. The call itself succeeded. Kept: {what}the last {len(tail)} lines. {back}]"
    )
    return "\n".join([head, *shown, *(["..."] if shown else []), *tail])


# ----------------------------------------------------------------------------- JSON
def _json_digest(text: str, name: str, back: str) -> str | None:
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    found = _largest_array(data, "$", 0)
    if found is None:
        return None
    path, items = found
    if len(items) < MIN_ITEMS:
        return None
    first = _cut(_dumps(items[0]), ITEM_CHARS)
    last = _cut(_dumps(items[-1]), ITEM_CHARS)
    lines = [
        f"[Output of {name} ({len(text)} characters) was shortened to save space. The call "
        f"itself succeeded. It is JSON; kept: the shape of the array at {path} "
        f"({len(items)} items), its first and last item, and the rest of the document. {back}]",
        f"items: {_schema(items)}",
        f"first ({path}[0]): {first}",
        f"last ({path}[{len(items) - 1}]): {last}",
    ]
    if path != "$":
        rest = _elided(data, path.split(".")[1:], len(items))
        lines.append(f"document: {_cut(_dumps(rest), REST_CHARS)}")
    return "\n".join(lines)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _largest_array(value: Any, path: str, depth: int) -> tuple[str, list[Any]] | None:
    """The longest array in ``value`` (a JSON value) within three levels of objects,
    with its path (``$.data.items``); the first met wins a tie."""
    if isinstance(value, list):
        return path, value
    if not isinstance(value, dict) or depth >= 3:
        return None
    best: tuple[str, list[Any]] | None = None
    for key, child in value.items():
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
            continue
        found = _largest_array(child, f"{path}.{key}", depth + 1)
        if found is not None and (best is None or len(found[1]) > len(best[1])):
            best = found
    return best


def _elided(data: Any, keys: list[str], count: int) -> Any:
    """``data`` with the array at ``keys`` replaced by a note of its length."""
    if not keys:
        return f"[... {count} items ...]"
    assert isinstance(data, dict)
    return {k: (_elided(v, keys[1:], count) if k == keys[0] else v) for k, v in data.items()}


def _type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "object"


def _schema(items: list[Any]) -> str:
    """The items' keys with their types (and how many items have each key where not
    all do), or the items' types where they are not objects."""
    if not all(isinstance(item, dict) for item in items):
        kinds: dict[str, int] = {}
        for item in items:
            kinds[_type(item)] = kinds.get(_type(item), 0) + 1
        return ", ".join(f"{k} x{n}" for k, n in kinds.items())
    keys: dict[str, tuple[set[str], int]] = {}
    for item in items:
        for key, value in item.items():
            types, seen = keys.get(key, (set(), 0))
            types.add(_type(value))
            keys[key] = (types, seen + 1)
    fields = []
    for key, (types, seen) in list(keys.items())[:40]:
        where = "" if seen == len(items) else f" in {seen}"
        fields.append(f"{key}: {'|'.join(sorted(types))}{where}")
    more = f", ... {len(keys) - 40} more keys" if len(keys) > 40 else ""
    return "objects {" + ", ".join(fields) + more + "}"
