"""Lossless shrink: each tool result made smaller where it enters the request, once.

Under the cache policy's ``shrink`` (on by default; never under the seed policy), a tool
result is rewritten by transforms that keep what it says:

* ``json``: a result that is one JSON document is re-serialised compactly (the same keys
  in the same order, ``ensure_ascii=False``), only when that is smaller, parses to an
  equal value, and writes every number exactly as it was written (``1.0`` stays ``1.0``:
  a result where re-serialising would change a number's text is left alone);
* ``ansi``: terminal colour codes (SGR), erase-to-end-of-line at the end of the text and
  cursor show/hide removed;
* ``redraw``: a line a terminal redraws (carriage returns, erase-in-line, cursor to a
  column; a progress bar) replaced by what the terminal shows at its end;
* ``trailing``: trailing spaces and tabs of each line (but a line left with escapes or
  carriage returns, where spaces overwrite), only along with another transform: alone
  they cost no tokens, and a result changed for nothing is a new message to count;
* ``repeats``: a run of at least ``MIN_RUN`` identical non-blank lines kept as its first
  line and ``[the line above repeated N more times]`` (only where that is shorter, and
  never in a result that already has a line of that form: it can be read back exactly).

The rendered text of ``ansi`` and ``redraw`` is the terminal's (tests render both); a line
with any other escape or control character, or a redrawn line with a tab or characters a
terminal draws wider than one cell, is left as it is.

A result whose text a format edge made from a structure (Gemini's ``functionResponse``
with a structured ``response``) is never touched either: the structure goes back.

What the agent must reproduce exactly is never touched (``exact``): results of the tools
named in ``exact_tools`` (file reads an edit quotes), of shell calls that run one of
``exact_commands`` (``cat``, ``git diff``), and results whose lines carry line numbers
(``exact_content``). The cache policy masks such a result later like any other.

A result's shrunk form depends only on its own content and its call (name and
arguments), so it is the same on every request and in any process: the prefix the
provider caches does not change when the result ages, and the stage has nothing to
remember. The compaction after it sees the smaller results. The forms of long texts are
remembered all the same (``shrink_text``), since every request carries every result
again; a Governor appends each new result in its form (``shrink_forms``), with the
actions a whole run would report.
"""

from __future__ import annotations

import bisect
import json
import re
import threading
import unicodedata
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..messages import Message, declared_calls
from ..messages.inputs import has_surrogate
from ..policies import Compaction, CompactionPolicy, SeedPolicy, settings_of
from ._base import Context, MessageCheck, leaves_alone_when
from ._exact import ExactRules, exact_rules
from ._pairing import Pairing, pair, pair_in

__all__ = [
    "MEMO_MAX_CHARS",
    "MEMO_MIN_CHARS",
    "MIN_RUN",
    "STAGE",
    "ExactRules",
    "Shrunk",
    "exact_rules",
    "repeat_marker",
    "settled",
    "shrink",
    "shrink_forms",
    "shrink_policy",
    "shrink_text",
    "shrunk_form",
]

STAGE = "shrink"
#: The shortest run of identical lines folded into one line and a count.
MIN_RUN = 4


def repeat_marker(more: int) -> str:
    """The line that stands for ``more`` further copies of the line above it."""
    return f"[the line above repeated {more} more times]"


_MARKER = re.compile(r"\[the line above repeated \d+ more times\]")
#: One control sequence introducer sequence: parameters, then its final letter.
_CSI = re.compile(r"\x1b\[([0-9;:?]*)([@-~])")
#: C0 controls a line may not carry for its escapes to be removed (tab is text).
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")


# ---------------------------------------------------------------- json


def _tagged(text: str) -> Any:
    """The JSON value of ``text`` with every number as its text and every object as its
    list of pairs: equal for two texts exactly when they hold the same data, keys in the
    same order, numbers written the same."""
    return json.loads(
        text,
        parse_float=lambda s: ("number", s),
        parse_int=lambda s: ("number", s),
        parse_constant=lambda s: ("number", s),
        object_pairs_hook=lambda pairs: ("object", pairs),
    )


def compact_json(text: str) -> str | None:
    """``text`` re-serialised compactly, when it is one JSON document and that is smaller
    and exact (see the module docstring); None otherwise."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        out = json.dumps(json.loads(stripped), ensure_ascii=False, separators=(",", ":"))
        if len(out) >= len(text) or has_surrogate(out) or _tagged(out) != _tagged(stripped):
            return None
    except (ValueError, RecursionError):
        return None
    return out


# ---------------------------------------------------------------- terminal lines


@dataclass(slots=True)
class _Line:
    """A terminal line being drawn: its cells and the cursor's column."""

    cells: list[str]
    cursor: int = 0

    def write(self, text: str) -> None:
        for char in text:
            if self.cursor < len(self.cells):
                self.cells[self.cursor] = char
            else:
                self.cells.extend(" " * (self.cursor - len(self.cells)))
                self.cells.append(char)
            self.cursor += 1

    def erase(self, mode: str) -> None:
        """Erase in line: 0 (or nothing) from the cursor on, 1 up to it, 2 all of it."""
        if mode in ("", "0"):
            del self.cells[self.cursor :]
        elif mode == "1":
            end = min(self.cursor + 1, len(self.cells))
            self.cells[:end] = " " * end
        else:
            self.cells[:] = " " * len(self.cells)


def _sequences(line: str) -> list[tuple[str, str, str]] | None:
    """The line as (text, parameters, final) steps: text, then the CSI sequence after it
    (``final`` "" after the last text). None when the line has an escape that is not a
    CSI sequence or a control character other than tab and carriage return."""
    steps: list[tuple[str, str, str]] = []
    at = 0
    for found in _CSI.finditer(line):
        steps.append((line[at : found.start()], found.group(1), found.group(2)))
        at = found.end()
    steps.append((line[at:], "", ""))
    if any("\x1b" in text or _CONTROLS.search(text) for text, _, _ in steps):
        return None
    return steps


def _invisible(params: str, final: str) -> bool:
    """A sequence that draws nothing and moves nothing: colours, cursor shown or hidden."""
    return final == "m" or (final in "hl" and params.startswith("?"))


def _narrow(text: str) -> bool:
    """Whether every character takes one cell (East Asian ambiguous ones, such as the
    block of a progress bar, as terminals draw them by default; wide ones and combining
    marks do not)."""
    return all(
        " " <= c <= "~"
        or (
            c.isprintable()
            and unicodedata.east_asian_width(c) in "NaHA"  # ambiguous: narrow by default
            and not unicodedata.combining(c)
        )
        for c in text
    )


def _drawn(steps: list[tuple[str, str, str]]) -> str | None:
    """What a terminal shows of a line that redraws itself (see ``render_line``)."""
    line = _Line([])
    for text, params, final in steps:
        for k, part in enumerate(text.split("\r")):
            if k:
                line.cursor = 0
            if "\t" in part or not _narrow(part):
                return None
            line.write(part)
        if final == "K" and params in ("", "0", "1", "2"):
            line.erase(params)
        elif final == "G" and (params.isdigit() or not params):
            line.cursor = max(int(params or 1), 1) - 1
        elif final and not _invisible(params, final):
            return None
    return "".join(line.cells)


def render_line(line: str) -> str | None:
    """What a terminal shows of ``line`` (one line, no newline), as text, when that differs
    from ``line`` and can be known for sure; None otherwise. A line with colours only (or
    an erase at its end) loses them; a redrawn one becomes its last picture."""
    if "\x1b" not in line and "\r" not in line:
        return None
    steps = _sequences(line)
    if steps is None:
        return None
    moves = "\r" in line or any(
        final == "G" or (final == "K" and params not in ("", "0")) for _, params, final in steps
    )
    if moves:
        drawn = _drawn(steps)
    elif all(_invisible(p, f) or f == "K" for _, p, f in steps[:-1]):
        # nothing moves the cursor back: it is always at the end of what is drawn, so an
        # erase to the end of the line erases nothing
        drawn = "".join(text for text, _, _ in steps)
    else:
        drawn = None
    return None if drawn is None or drawn == line else drawn


# ---------------------------------------------------------------- text


def _fold(lines: list[str]) -> list[str]:
    """Runs of at least MIN_RUN identical non-blank lines as the line and a count, where
    that is shorter."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        j = i + 1
        while j < len(lines) and lines[j] == line:
            j += 1
        more = j - i - 1
        marker = repeat_marker(more)
        if j - i >= MIN_RUN and line.strip() and more * (len(line) + 1) > len(marker) + 1:
            out.extend((line, marker))
        else:
            out.extend(lines[i:j])
        i = j
    return out


#: Texts at least this long have their shrunk form remembered (``_Remembered``).
MEMO_MIN_CHARS = 512
#: The most characters (texts and their shrunk forms) the memo holds.
MEMO_MAX_CHARS = 16_000_000


class _Remembered:
    """The shrunk forms of the longest texts seen lately, least recently used first out.

    A request carries every result of the conversation, and the next request carries
    them again: without this, each request would shrink the whole history once more
    (a 2,000-line log takes milliseconds to render). Bounded by characters, not entries,
    so a few huge logs cannot hold memory without end; shared by threads (a lock)."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.forms: OrderedDict[str, tuple[str, tuple[str, ...]]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, text: str) -> tuple[str, tuple[str, ...]] | None:
        with self.lock:
            found = self.forms.get(text)
            if found is not None:
                self.forms.move_to_end(text)
            return found

    def put(self, text: str, form: tuple[str, tuple[str, ...]]) -> None:
        size = len(text) + (len(form[0]) if form[0] is not text else 0)
        if size > self.max_chars:
            return
        with self.lock:
            if text in self.forms:
                return
            self.forms[text] = form
            self.chars += size
            while self.chars > self.max_chars:
                old, (shrunk, _) = self.forms.popitem(last=False)
                self.chars -= len(old) + (len(shrunk) if shrunk is not old else 0)


_MEMO = _Remembered(MEMO_MAX_CHARS)


def shrink_text(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` shrunk losslessly (see the module docstring), with the names of the
    transforms that changed it; ``text`` itself and () when none did. Idempotent.
    Remembered for long texts (the same text always has the same form)."""
    if len(text) < MEMO_MIN_CHARS:
        return _shrink_text(text)
    found = _MEMO.get(text)
    if found is None:
        found = _shrink_text(text)
        _MEMO.put(text, found)
        if found[1] and len(found[0]) >= MEMO_MIN_CHARS:
            # the form is a fixed point (idempotent): a Governor's probe asks about it next
            _MEMO.put(found[0], (found[0], ()))
    return found


#: MIN_RUN identical non-empty lines in a row (what ``repeats`` may fold): at the start
#: (``match``), or after a newline (``search``: a literal first, which the engine scans
#: for quickly; the possessive line never backtracks).
_RUN_AT_START = re.compile(r"([^\n]++)" + r"\n\1" * (MIN_RUN - 1) + r"(?=\n|\Z)")
_RUN = re.compile(r"\n([^\n]++)" + r"\n\1" * (MIN_RUN - 1) + r"(?=\n|\Z)")


def _shrink_text(text: str) -> tuple[str, tuple[str, ...]]:
    """shrink_text, worked out. Most output is clean text: a few searches over the whole
    text tell that no transform applies before it is split into lines (trailing blanks
    are removed only along with another transform)."""
    compact = compact_json(text)
    if compact is not None:
        return compact, ("json",)
    if (
        "\x1b" not in text
        and "\r" not in text
        and not _RUN_AT_START.match(text)
        and not _RUN.search(text)
    ):
        return text, ()
    return _shrink_lines(text)


def _shrink_lines(text: str) -> tuple[str, tuple[str, ...]]:
    """The line transforms of ``_shrink_text`` (``text`` is not JSON to compact)."""
    lines = text.split("\n")
    done: list[str] = []
    drawn = [render_line(line) for line in lines]
    if any(d is not None for d in drawn):
        redraws = any("\r" in line for line, d in zip(lines, drawn, strict=True) if d is not None)
        done.append("redraw" if redraws else "ansi")
        lines = [line if d is None else d for line, d in zip(lines, drawn, strict=True)]
    if not any(_MARKER.fullmatch(line) for line in lines):
        folded = _fold(lines)
        if len(folded) != len(lines):
            done.append("repeats")
            lines = folded
    if not done:
        # trailing blanks alone are left: they cost no tokens (a blank run and its newline
        # are one token to the BPE tokenizers), and a changed result is a new message to
        # count and report
        return text, ()
    # a line a terminal still redraws is left as it is: there spaces overwrite
    trimmed = [line if "\r" in line or "\x1b" in line else line.rstrip(" \t") for line in lines]
    if trimmed != lines:
        done.append("trailing")
        lines = trimmed
    return "\n".join(lines), tuple(done)


# ---------------------------------------------------------------- the stage


def _shrunk(content: Any) -> tuple[Any, tuple[str, ...]]:
    """A result's content shrunk (a text, or each text part of a list), with what changed
    it; ``content`` itself and () when nothing did."""
    if isinstance(content, str):
        return shrink_text(content)
    if not isinstance(content, list):
        return content, ()
    parts: list[Any] = []
    done: list[str] = []
    for part in content:
        text = part.get("text") if isinstance(part, dict) else None
        new, names = shrink_text(text) if isinstance(text, str) else (text, ())
        parts.append({**part, "text": new} if names else part)
        done.extend(n for n in names if n not in done)
    return (parts, tuple(done)) if done else (content, ())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def shrink_policy(compaction: Compaction | None) -> CompactionPolicy | None:
    """The cache policy's settings when it shrinks, else None (the seed policy never;
    no policy given is the defaults)."""
    if isinstance(compaction, SeedPolicy):
        return None
    policy = settings_of(compaction)
    return policy if policy.shrink else None


def _policy(ctx: Context) -> CompactionPolicy | None:
    return shrink_policy(ctx.compaction)


def _renders_structure(message: Message) -> bool:
    """Whether ``message``'s text is a format edge's JSON of a structured result (Gemini's
    ``functionResponse.response``): the edge writes the structure back, so that text is
    not what is sent, and shrinking it would turn the structure into a string. An edge
    says so by a carried value (under a private ``_`` key) whose ``renders_structure``
    is True."""
    return any(
        isinstance(key, str)
        and key.startswith("_")
        and getattr(value, "renders_structure", False) is True
        for key, value in message.items()
    )


def _unshrinkable(message: Message) -> bool:
    """Not a tool result, or one no transform changes (whatever its tool)."""
    return (
        message.get("role") != "tool"
        or not _shrunk(message.get("content"))[1]
        or _renders_structure(message)
    )


def _shrinks(ctx: Context) -> MessageCheck | None:
    """shrink changes a tool result some transform changes, and nothing else."""
    return None if _policy(ctx) is None else _unshrinkable


@dataclass(frozen=True, slots=True)
class Shrunk:
    """One tool result the shrink changes: its position, its shrunk form and what the
    report says of it."""

    index: int
    message: Message
    detail: str
    #: whether the call it answers is in the list (its name and arguments decide whether
    #: it is exact text)
    called: bool


def shrink_forms(
    messages: list[Message],
    policy: CompactionPolicy,
    start: int = 0,
    pairing: Pairing | None = None,
) -> list[Shrunk]:
    """The tool results from ``messages[start]`` on that the shrink changes, each with its
    shrunk form: what the stage does, as data (a Governor appending new results shrinks
    them with it). Exact text is left out: results of ``exact_tools``, of calls running
    ``exact_commands`` and with numbered lines. A result's call is the one the pairing
    of the strict profiles gives it (``pairing``, else worked out here), the call whose
    id the provider's id repair gives it later: the same call on every request."""
    rules = exact_rules(policy.exact_tools, policy.exact_commands, policy.exact_content)
    found: list[Shrunk] = []
    for index in range(start, len(messages)):
        message = messages[index]
        if message.get("role") != "tool" or _renders_structure(message):
            continue
        content = message.get("content")
        new, done = _shrunk(content)
        if not done:
            continue
        pairing = pair(messages) if pairing is None else pairing  # only where some result shrinks
        call = _answered(messages, pairing, index)
        if _exact(message, call, rules):
            continue
        detail = _detail(done, _text(content), new)
        found.append(Shrunk(index, {**message, "content": new}, detail, call is not None))
    return found


def _answered(messages: list[Message], pairing: Pairing, index: int) -> dict[str, Any] | None:
    """The call the result ``messages[index]`` answers under ``pairing`` (None: none)."""
    number = pairing.result_call.get(index)
    if number is None:
        return None
    assistant = pairing.calls[number][0]
    first = bisect.bisect_left(pairing.calls, assistant, key=lambda call: call[0])
    return list(declared_calls(messages[assistant]))[number - first]


def _exact(message: Message, call: dict[str, Any] | None, rules: ExactRules) -> bool:
    """Whether the result ``message`` (answering ``call``, None for none) is exact text."""
    function = (call or {}).get("function")
    name, arguments = (
        (function.get("name"), function.get("arguments"))
        if isinstance(function, dict)
        else (None, None)
    )
    text = _text(message.get("content"))
    return rules.exact(name, arguments, text) or rules.exact(message.get("name"), None, "")


def settled(messages: list[Message], index: int, cut: Message, ctx: Context) -> Message:
    """A tool result a later stage cut (``cut``, for ``messages[index]``) as the shrink
    leaves it: shrunk again unless it is exact text. A cut can make text the shrink
    changes (a line left ending in a space, a run of lines); without this, governing the
    output again would shrink it (a second pass must change nothing)."""
    policy = _policy(ctx)
    if policy is None or cut.get("role") != "tool" or _renders_structure(cut):
        return cut
    new, done = _shrunk(cut.get("content"))
    if not done:
        return cut
    rules = exact_rules(policy.exact_tools, policy.exact_commands, policy.exact_content)
    if _exact(cut, _answered(messages, pair_in(messages, ctx), index), rules):
        return cut
    return {**cut, "content": new}


def _detail(done: tuple[str, ...], text: str, new: Any) -> str:
    return (
        f"tool result shrunk losslessly ({', '.join(done)}) from {len(text)} to "
        f"{len(_text(new))} characters"
    )


def shrunk_form(message: Message) -> Message | None:
    """``message``'s shrunk form, where a transform changes it (exact text aside: the
    caller knows the stage shrank it), else None."""
    new, done = _shrunk(message.get("content"))
    return {**message, "content": new} if done else None


@leaves_alone_when(_shrinks)
def shrink(messages: list[Message], ctx: Context) -> list[Message]:
    """Each tool result shrunk losslessly unless it is exact text (module docstring)."""
    policy = _policy(ctx)
    if policy is None:
        return messages
    forms = shrink_forms(messages, policy, pairing=pair_in(messages, ctx))
    if not forms:
        return messages
    updated = list(messages)
    for form in forms:
        original = messages[form.index]
        updated[form.index] = form.message
        ctx.record(
            STAGE,
            "replace",
            form.index,
            form.detail,
            tool_call_id=original.get("tool_call_id"),
            tokens_saved=ctx.tokens(original) - ctx.tokens(form.message),
        )
    return updated
