"""The receipt on a cut: what the removed turns did that the agent may need again.

A cut note says how much was removed; the agent then does not know which files it had
read or changed, which commands it ran, which errors it saw, nor what the user asked on
the way, and redoes or contradicts them. The receipt lists those, extracted without a
model from the removed messages themselves:

* the tool calls' names and arguments: path arguments of file tools (read, write, edit:
  Claude Code's ``Read``/``Write``/``Edit`` with ``file_path``, ``read_file``/
  ``write_file`` with ``path``, the files Codex's ``apply_patch`` names), the
  ``command``/``cmd`` argument of any other tool (``Bash``, ``shell``, ``exec``);
* the tool results' lines that read like errors (an exception line, a failed test, a
  ``fatal:`` or ``error:`` line, a non-zero exit code);
* the user messages: standing orders first ("always", "never", "from now on"...), then
  the rest, each shortened.

It is bounded (``RECEIPT_CHARS`` characters at most, a few entries of each kind, newest
first, "and N more" for the rest) and a function of the removed messages alone: the
entries of each kind are ordered by where they last occur, so the same cut gives the
same text in any process and on every later request (cache-stable), however the
replay reached that cut. ``Ledger`` keeps the entries of what the cuts so far removed,
so that a new cut reads only the messages it adds (the replay walks O(n) once).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice
from typing import Any, Literal

from ..messages import Message, content_text
from ._inserted import SYNTHETIC_USER, is_bridge

__all__ = [
    "RECEIPT_CHARS",
    "RECEIPT_HEAD",
    "RECEIPT_TAIL",
    "Entry",
    "Kind",
    "Ledger",
    "call_entries",
    "entries",
    "error_lines",
    "render",
    "user_entries",
]

Kind = Literal["instruction", "error", "changed", "command", "read", "request"]
#: The kinds in the order the receipt lists them: what the agent would most regret
#: losing first (a standing order, then what failed, then what it changed).
ORDER: tuple[Kind, ...] = ("instruction", "error", "changed", "command", "read", "request")
LABELS: dict[Kind, str] = {
    "instruction": "the user's instructions",
    "error": "errors seen",
    "changed": "files written or edited",
    "command": "commands run",
    "read": "files read",
    "request": "other user messages",
}
#: At most this many entries of each kind (newest first), the rest counted.
PER_KIND: dict[Kind, int] = {
    "instruction": 4,
    "error": 4,
    "changed": 8,
    "command": 5,
    "read": 8,
    "request": 3,
}
#: Each entry is shortened to this many characters (an instruction keeps its first
#: sentences, a path its whole name in all but odd cases).
ENTRY_CHARS: dict[Kind, int] = {
    "instruction": 200,
    "error": 160,
    "changed": 120,
    "command": 120,
    "read": 120,
    "request": 120,
}
#: The receipt's bound, its frame included: about 400 tokens, a tenth of what a small
#: cut saves; the cut is planned with it (the replay counts the note it rides in).
RECEIPT_CHARS = 1600
RECEIPT_HEAD = "[Receipt of the removed messages, newest first (re-read or re-run what you need):"
RECEIPT_TAIL = "[End of receipt.]"
#: Errors taken from one tool result at most (a test run's summary says enough).
ERRORS_PER_RESULT = 2
#: Where errors are looked for in a result: its head and its tail (a traceback's last
#: lines, a test run's summary), so a huge output costs the same as a small one.
SCAN_HEAD, SCAN_TAIL = 1_000, 3_000


@dataclass(frozen=True, slots=True)
class Entry:
    """One line item of a receipt: its kind and its text (already shortened)."""

    kind: Kind
    text: str


# ----------------------------------------------------------------------------- extracting

_CHANGE_WORDS = frozenset(
    {"write", "edit", "create", "patch", "replace", "insert", "save", "delete", "remove",
     "move", "rename", "multiedit", "notebookedit", "append", "overwrite"}
)  # fmt: skip
_READ_WORDS = frozenset({"read", "view", "open", "cat", "show", "get", "notebookread"})
_FILE_WORDS = frozenset({"file", "files", "notebook"})
_PATH_KEYS = ("file_path", "path", "filepath", "filename", "file", "notebook_path", "target_file")
_COMMAND_KEYS = ("command", "cmd")
_SHELLS = frozenset({"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_STANDING = re.compile(
    r"\b(?:always|never|from now on|remember|make sure|do not|don't|must|rule)\b", re.I
)


@functools.lru_cache(maxsize=1024)
def _words(name: str) -> frozenset[str]:
    """The words of a tool name: ``read_file``, ``NotebookEdit``, ``mcp__fs__write``.
    Remembered: an agent calls the same few tools thousands of times, and a first call
    on a long history reads every call a cut removes."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return frozenset(w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w)


def _file_kind(name: str, args: dict[str, Any]) -> Kind | None:
    """Whether a tool named ``name`` reads or changes the files its arguments name (None:
    it is no file tool). Anthropic's text editor says which in its ``command``."""
    words = _words(name)
    if words & _CHANGE_WORDS:
        return "read" if args.get("command") == "view" else "changed"
    if words & _READ_WORDS and (words & _FILE_WORDS or len(words) == 1):
        return "read"  # "Read", "read_file", "view_file"; not "get_weather"
    return None


def _short(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters (an ellipsis says it was cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _arguments(call: Any) -> tuple[str, dict[str, Any]]:
    """A tool call's name and its arguments as a dict (empty when they are not JSON)."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict):
        return "", {}
    raw = fn.get("arguments")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = None
    return str(fn.get("name") or ""), args if isinstance(args, dict) else {}


def _paths(args: dict[str, Any]) -> Iterator[str]:
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            yield value.strip()
    paths = args.get("paths")
    if isinstance(paths, list):
        yield from (p.strip() for p in paths if isinstance(p, str) and p.strip())


def _patch_entries(patch: str) -> list[Entry]:
    """The files a Codex patch (``*** Update File: path``) adds, changes or moves."""
    found = (a or b for a, b in _PATCH_FILE.findall(patch))
    return [Entry("changed", _short(p, ENTRY_CHARS["changed"])) for p in found if p.strip()]


def _command_text(value: Any) -> str | None:
    """A command argument as one line: a string as it is; Codex's argv list joined,
    the script of ``bash -lc SCRIPT`` alone."""
    if isinstance(value, str):
        return value if value.strip() else None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return None
    if len(value) == 3 and value[0] in _SHELLS and value[1] in ("-c", "-lc"):
        return str(value[2])
    return " ".join(value)


def _command_entries(args: dict[str, Any]) -> list[Entry]:
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value and value[0] == "apply_patch":
            return _patch_entries(" ".join(str(v) for v in value[1:]))
        text = _command_text(value)
        if text is not None:
            if text.lstrip().startswith("apply_patch"):
                return _patch_entries(text)
            return [Entry("command", _short(text, ENTRY_CHARS["command"]))]
    return []


def call_entries(name: str, args: dict[str, Any]) -> list[Entry]:
    """What one tool call tells of the work: the files a file tool read or changed, the
    files a patch names, or the command a shell-like tool ran (by argument names, so a
    tool never seen before is read the same way)."""
    patch = args.get("input", args.get("patch"))
    if "patch" in _words(name) and isinstance(patch, str):
        return _patch_entries(patch)
    kind = _file_kind(name, args)
    if kind is not None:
        return [Entry(kind, _short(p, ENTRY_CHARS[kind])) for p in _paths(args)]
    return _command_entries(args)


_ERROR_LINES = tuple(
    re.compile(p)
    for p in (  # by rank: the first say the most in one line
        r"^(?:FAILED|ERROR)\s+\S",
        r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::|$)",
        r"^(?i:fatal|error|panic)(?:\[\w+\])?:",
        r"^\S+:\d+(?::\d+)?: (?:error|fatal error):",
        r"command not found|No such file or directory|Permission denied|Segmentation fault",
        r"^E\s{2,}\S",
        r"^(?i:exit code|exit status|exited with code):? [1-9]\d*\b",
    )
)
#: Every line a pattern above matches holds one of these (in lower case) or starts with
#: ``E`` and a blank (pytest's detail): only such lines are matched, found with
#: str.find (matching every line of every result cost seconds on 20k messages).
_ERROR_HINTS = (
    "error", "failed", "exception", "exit", "interrupt", "failure", "fatal", "panic",
    "not found", "no such file", "denied", "segmentation",
)  # fmt: skip
_DETAIL_HINTS = ("\nE ", "\nE\t")
_DETAIL_STARTS = tuple(h[1:] for h in _DETAIL_HINTS)


#: Every line a pattern of ``_ERROR_LINES`` matches is matched by this one (each anchored
#: pattern's head, and the unanchored phrases): most lines that hold a hint (code that
#: names an ``Error``) fail it at once, one search instead of seven.
_ANY_ERROR_LINE = re.compile(
    r"^(?:FAILED|ERROR|[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)\b"
    r"|(?i:fatal|error|panic|exit)|\S+:\d+|E\s{2,}\S)"
    r"|command not found|No such file or directory|Permission denied|Segmentation fault"
)


def _rank(line: str) -> int | None:
    if _ANY_ERROR_LINE.search(line) is None:
        return None
    for rank, pattern in enumerate(_ERROR_LINES):
        if pattern.search(line):
            return rank
    return None


def _hinted(text: str) -> list[int]:
    """The starts of the lines of ``text`` that hold one of ``_ERROR_HINTS`` (in lower
    case) or start with ``E`` and a blank, in order.

    Every tool result a cut removes is read here, so a first call on a long history
    reads megabytes: with ``ahocorasick-rs`` installed (the ``fast`` extra) every hint is
    found in one pass over the text instead of one pass per hint, about three times
    sooner. Both ways give the same lines (tests/test_receipt_scan.py)."""
    automaton = _hint_automaton()
    lower = text.lower()
    if automaton is None or len(lower) != len(text):  # (a few letters lower to two)
        return _hinted_by_find(text, lower)
    starts: set[int] = set()
    hints = len(_ERROR_HINTS)
    for k, at, _ in automaton.find_matches_as_indexes(lower, overlapping=True):
        if k < hints:
            starts.add(text.rfind("\n", 0, at) + 1)
        elif text[at + 1] == "E":  # a line break, then "e" and a blank in lower case
            starts.add(at + 1)
    if text.startswith(_DETAIL_STARTS):
        starts.add(0)
    return sorted(starts)


@functools.cache
def _hint_automaton() -> Any:
    """One automaton of every hint, the detail hints in lower case after them
    (ahocorasick-rs), or None when it is not installed."""
    try:
        import ahocorasick_rs
    except ImportError:
        return None
    return ahocorasick_rs.AhoCorasick([*_ERROR_HINTS, *(h.lower() for h in _DETAIL_HINTS)])


def _hinted_by_find(text: str, lower: str) -> list[int]:
    """``_hinted`` one hint at a time, with str.find (``lower`` is ``text.lower()``)."""
    starts: set[int] = set()
    shift = len(lower) - len(text)
    for hint in _ERROR_HINTS:
        at = lower.find(hint)
        while at >= 0:
            starts.add(max(0, text.rfind("\n", 0, at - shift + 1) + 1))
            stop = lower.find("\n", at + 1)
            at = -1 if stop < 0 else lower.find(hint, stop)
    where = "\n" + text  # a detail line (``E`` and a blank) starts right after a break
    for hint in _DETAIL_HINTS:
        at = where.find(hint)
        while at >= 0:
            starts.add(at)  # the "\n" at ``at`` in ``where`` ends the line before
            stop = where.find("\n", at + 1)
            at = -1 if stop < 0 else where.find(hint, stop)
    return sorted(starts)


def error_lines(text: str, limit: int = ERRORS_PER_RESULT) -> list[str]:
    """The lines of a tool result that read like errors, the most telling first (a
    failed test or an exception before an ``E`` detail or an exit code), at most
    ``limit``. Only the head and tail of a long output are read."""
    if len(text) > SCAN_HEAD + SCAN_TAIL:
        text = text[:SCAN_HEAD] + "\n" + text[-SCAN_TAIL:]
    ranked: dict[str, tuple[int, int]] = {}
    for begin in _hinted(text):
        stop = text.find("\n", begin)
        line = text[begin : len(text) if stop < 0 else stop].strip()
        rank = _rank(line) if line not in ranked else None
        if rank is not None:
            ranked[line] = (rank, begin)
    best = sorted(ranked, key=ranked.__getitem__)[:limit]
    return [_short(line, ENTRY_CHARS["error"]) for line in best]


def user_entries(text: str) -> list[Entry]:
    """A user message as an entry: a standing order ("always", "never", "from now on"...)
    is an instruction, anything else a request. Empty text and the stages' own filler
    are nothing."""
    if not text.strip() or text == SYNTHETIC_USER:
        return []
    standing = _STANDING.search(text[: ENTRY_CHARS["instruction"]])
    kind: Kind = "instruction" if standing else "request"
    return [Entry(kind, _short(text, ENTRY_CHARS[kind]))]


def entries(message: Message) -> tuple[Entry, ...]:
    """What one removed message tells of the work (see the module docstring)."""
    role = message.get("role")
    if role == "assistant" and not is_bridge(message):
        calls = message.get("tool_calls")
        out: list[Entry] = []
        for call in calls if isinstance(calls, list) else ():
            out += call_entries(*_arguments(call))
        return tuple(out)
    if role == "tool":
        text = content_text(message.get("content"))
        return tuple(Entry("error", line) for line in error_lines(text))
    if role == "user":
        return tuple(user_entries(content_text(message.get("content"))))
    return ()


# ----------------------------------------------------------------------------- the ledger


@dataclass(slots=True)
class Ledger:
    """The entries of the messages in [start, upto), each kind's by where it last occurs
    (an entry seen again moves to the newest place), and each message's own entries,
    read once. ``add`` moves ``upto`` forward; ``text`` renders a receipt for a longer
    span without changing the ledger (a cut the replay weighs may not be made)."""

    start: int
    upto: int = -1
    #: kind -> entry text -> the position of its newest occurrence (insertion ordered)
    kinds: dict[Kind, dict[str, int]] = field(default_factory=dict)
    _read: dict[int, tuple[Entry, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.upto < 0:
            self.upto = self.start

    def of(self, messages: list[Message], i: int) -> tuple[Entry, ...]:
        found = self._read.get(i)
        if found is None:
            found = self._read[i] = entries(messages[i])
        return found

    def add(self, messages: list[Message], end: int) -> None:
        """Take in the messages up to ``end`` (a cut that was made)."""
        _fold(self.kinds, self._span(messages, self.upto, end))
        self.upto = max(self.upto, end)
        self._read = {i: e for i, e in self._read.items() if i >= self.upto}

    def _span(self, messages: list[Message], start: int, end: int) -> Iterator[tuple[int, Entry]]:
        for i in range(start, end):
            if messages[i].get("role") != "system":
                yield from ((i, e) for e in self.of(messages, i))

    def text(self, messages: list[Message], end: int, pin: int | None) -> str:
        """The receipt of [start, ``end``) (``end`` >= ``upto``), ``pin`` kept (its entries
        are not lost: it is sent)."""
        extra: dict[Kind, dict[str, int]] = {}
        _fold(extra, self._span(messages, self.upto, end))
        kept = self.of(messages, pin) if pin is not None and self.start <= pin < end else ()
        heads: dict[Kind, tuple[list[str], int]] = {}
        for kind in ORDER:
            newer, older = extra.get(kind, {}), self.kinds.get(kind, {})
            heads[kind] = _newest(kind, newer, older, pin, kept)
        return _render(heads)


def _newest(
    kind: Kind,
    newer: dict[str, int],
    older: dict[str, int],
    pin: int | None,
    kept: tuple[Entry, ...],
) -> tuple[list[str], int]:
    """A kind's newest ``PER_KIND`` entries over ``older`` then ``newer`` (each entry's
    newest place wins; those whose newest place is the kept ``pin`` left out, ``kept``
    its entries) and how many there are in all. Reads only what it shows and the new
    part, not the whole ledger: the replay asks at every cut it weighs."""
    overlap = sum(1 for t in newer if t in older)
    pinned = sum(
        1
        for e in kept
        if e.kind == kind and (newer[e.text] if e.text in newer else older.get(e.text)) == pin
    )
    total = len(newer) + len(older) - overlap - pinned
    merged = chain(
        reversed(newer.items()), ((t, at) for t, at in reversed(older.items()) if t not in newer)
    )
    return [t for t, _ in islice(((t, at) for t, at in merged if at != pin), PER_KIND[kind])], total


def _fold(kinds: dict[Kind, dict[str, int]], found: Iterable[tuple[int, Entry]]) -> None:
    for i, entry in found:
        seen = kinds.setdefault(entry.kind, {})
        seen.pop(entry.text, None)
        seen[entry.text] = i


# ----------------------------------------------------------------------------- rendering


def _quoted(kind: Kind, text: str) -> str:
    if kind in ("instruction", "request"):
        return f'"{text}"'
    return f"`{text}`" if kind in ("command", "error") else text


def _line(kind: Kind, shown: list[str], more: int) -> str:
    tail = f" (and {more} more)" if more else ""
    return f"- {LABELS[kind]}: " + "; ".join(_quoted(kind, t) for t in shown) + tail


def _fit_kind(kind: Kind, texts: list[str], total: int, room: int) -> str | None:
    """The line of one kind in at most ``room`` characters: as many of its newest
    ``texts`` as fit (up to ``PER_KIND``), the rest of ``total`` counted; None if not
    even one fits."""
    best: str | None = None
    for n in range(1, min(len(texts), PER_KIND[kind]) + 1):
        line = _line(kind, texts[:n], total - n)
        if len(line) + 1 > room:
            break
        best = line
    return best


def render(lists: dict[Kind, list[str]]) -> str:
    """The receipt of each kind's entries (newest first), in ``RECEIPT_CHARS`` at most;
    "" when there is nothing to list. A kind that does not fit at all is left out and
    counted on the last line."""
    return _render({k: (v[: PER_KIND[k]], len(v)) for k, v in lists.items()})


def _render(heads: dict[Kind, tuple[list[str], int]]) -> str:
    """``render`` of each kind's newest entries (at most ``PER_KIND``) and its count."""
    if not any(total for _, total in heads.values()):
        return ""
    lines = [RECEIPT_HEAD]
    room = RECEIPT_CHARS - len(RECEIPT_HEAD) - len(RECEIPT_TAIL) - 1
    left = 0
    for kind in ORDER:
        texts, total = heads.get(kind, ([], 0))
        line = _fit_kind(kind, texts, total, room - 40) if texts else None  # 40: the last line
        if line is None:
            left += total
            continue
        lines.append(line)
        room -= len(line) + 1
    if left:
        lines.append(f"- and {left} more entries left out for room")
    lines.append(RECEIPT_TAIL)
    return "\n".join(lines)
