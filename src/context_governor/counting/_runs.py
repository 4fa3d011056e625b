"""Bounded counting: work per text stays linear, whatever the text.

tiktoken's byte-pair merge is superlinear in the length of one pre-token, and a
single 10 MB run of one character would take seconds (a 1 MB run of spaces even makes
its regex give up). Counts are exact for any text without a run of ``RUN_LIMIT``
characters of one kind; the part of a text around such a run is counted as its UTF-8
length, an upper bound, so budgets can only err on the safe side.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence

__all__ = [
    "COUNT_RULES_VERSION",
    "MAX_PIECE",
    "RUN_LIMIT",
    "bounded_count",
    "bounded_segments",
    "bounded_tokens",
    "rules_fingerprint",
]

#: A run of this many characters of one kind (letters, symbols, whitespace) can make
#: one pre-token this long, which is where byte-pair merging gets slow.
RUN_LIMIT = 1000
#: The version of the rules that make a text's count (bounded_count: RUN_LIMIT, MAX_PIECE,
#: the character classes, the cleaning of surrogates). Bump it when a text's count can
#: change: counts persisted by a count store (counting/store.py) are keyed by it and the
#: encoding, so counts made under other rules are never read. (What text a message is
#: counted as, seed_message_payload, needs no bump: a store is keyed by that text's digest.)
COUNT_RULES_VERSION = 1
#: Longest piece the byte-pair merge is ever handed by bounded_count (a symbol run
#: and its newline/slash tail are the longest pre-tokens of both encodings).
MAX_PIECE = 2 * RUN_LIMIT
# Characters that end a letter pre-token (none is a letter or a combining mark): ASCII
# other than letters, general punctuation, CJK and fullwidth punctuation.
_NOT_LETTER = (
    r"\x00-\x40\x5b-\x60\x7b-\x7f\u2000-\u206f\u3000-\u3004\u3008-\u3020"
    r"\uff01-\uff20\uff3b-\uff40\uff5b-\uff65"
)
# Unicode White_Space, as the pre-tokenizers' \s means it (not Python's isspace()).
_SPACE = r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Characters that end a symbol pre-token: white space, ASCII letters and digits.
_NOT_SYMBOL = _SPACE + "A-Za-z0-9"
_CLASSES = (f"[^{_NOT_LETTER}]", f"[^{_NOT_SYMBOL}]", f"[{_SPACE}]", r"[\r\n/]")
# Every run of RUN_LIMIT characters of one class holds a whole window of _STEP + 1
# characters starting at a multiple of _STEP: looking there finds every long run in
# len(text) / _STEP short regex matches (most fail on their first character).
_STEP = RUN_LIMIT // 2
_WINDOWS = tuple(re.compile(f"{cls}{{{_STEP + 1}}}") for cls in _CLASSES)
_RUNS = tuple(re.compile(f"{cls}*") for cls in _CLASSES)
# Whether any class's window starts at a position: one match instead of four at each of
# the len(text) / _STEP positions (nearly all fail; the call, not the match, was the cost).
_ANY_WINDOW = re.compile("|".join(f"(?:{cls}{{{_STEP + 1}}})" for cls in _CLASSES))


def _long_run(text: str, start: int) -> tuple[int, int] | None:
    """The first run of at least RUN_LIMIT characters of one class that holds a
    window starting at or after ``start``, as (start, end); None when there is none."""
    first = -(-start // _STEP) * _STEP
    any_window = _ANY_WINDOW.match
    for position in range(first, len(text) - _STEP, _STEP):
        if any_window(text, position) is None:
            continue
        for window, run in zip(_WINDOWS, _RUNS, strict=True):
            if window.match(text, position) is None:
                continue
            end = run.match(text, position).end()  # type: ignore[union-attr]
            # an earlier window would have found a run starting _STEP or more before
            back = text[max(0, position - _STEP) : position][::-1]
            begin = position - run.match(back).end()  # type: ignore[union-attr]
            if end - begin >= RUN_LIMIT:
                return begin, end
    return None


def _cut_before(text: str, index: int) -> int:
    """The last position <= ``index`` where both pre-tokenizers must split: a space
    right after a character that is not white space (no pre-token reaches from such a
    character into a following space, and none looks behind), or 0."""
    limit = max(0, index - RUN_LIMIT)
    while index > limit:
        index = text.rfind(" ", limit, index + 1)
        if index <= 0:
            return 0
        if not text[index - 1].isspace():
            return index
        index -= 1
    return 0


def _cut_after(text: str, index: int) -> int:
    """The first such position >= ``index``, or ``len(text)``."""
    limit = min(len(text), index + RUN_LIMIT)
    while index < limit:
        index = text.find(" ", index, limit)
        if index < 0:
            break
        if index > 0 and not text[index - 1].isspace():
            return index
        index += 1
    return len(text)


def bounded_segments(text: str) -> list[tuple[str, bool]]:
    """``text`` cut, at positions where every pre-token ends, into pieces to count
    exactly (True) and pieces around a run of RUN_LIMIT letters, symbols, white
    space or newlines/slashes, to bound by their UTF-8 length (False). The exact
    pieces pre-tokenize into pre-tokens of at most MAX_PIECE characters."""
    if len(text) < RUN_LIMIT:
        return [(text, True)]  # the common case: nothing to look for
    segments: list[tuple[str, bool]] = []
    done = 0
    while (run := _long_run(text, done)) is not None:
        start = max(done, _cut_before(text, run[0]))
        end = _cut_after(text, run[1])
        if start > done:
            segments.append((text[done:start], True))
        if segments and not segments[-1][1] and start == done:
            segments[-1] = (segments[-1][0] + text[start:end], False)
        else:
            segments.append((text[start:end], False))
        done = end
    if done < len(text):
        segments.append((text[done:], True))
    return segments


def bounded_count(encode: Callable[[str], Sequence[int]], text: str) -> int:
    """Tokens of ``text`` by ``encode``: exact when ``text`` has no run of RUN_LIMIT
    characters of one kind, else an upper bound (byte-level BPE never yields more
    tokens than bytes, and the cuts are where the encodings cut anyway, so the exact
    parts add up exactly). Time is linear in the length of ``text``."""
    return bounded_tokens(lambda segment: len(encode(segment)), text)


def bounded_tokens(count: Callable[[str], int], text: str) -> int:
    """bounded_count with a counter (``text -> tokens``) instead of an encoder."""
    if len(text) < RUN_LIMIT:
        return count(text)  # the common case (bounded_segments' first test)
    total = 0
    for segment, exact in bounded_segments(text):
        total += count(segment) if exact else len(segment.encode("utf-8", "surrogatepass"))
    return total


def rules_fingerprint(encoding: str) -> str:
    """A short digest of the counting rules (COUNT_RULES_VERSION, RUN_LIMIT, MAX_PIECE) and
    the encoding's name: counts made under other rules live under another fingerprint."""
    data = json.dumps([COUNT_RULES_VERSION, RUN_LIMIT, MAX_PIECE, encoding]).encode()
    return hashlib.sha256(data).hexdigest()[:16]
