"""Counting a large text in chunks, each chunk's count memoised: a text is encoded once.

One request asks for a large text's count many times, and not always as the same
string: the budget checks count each message's payload, and a stage that rewrites a
message around its large text (a provider's tool-call ids, ``content: null`` made
``""``, tool results flattened into text, two turns merged) makes a new payload that
holds the same large text; the seed's whole-prompt estimate joins every message's text
into one string. A memo keyed by the whole payload misses each of them, and a 900 KB
tool argument was encoded three or four times per request.

So a large text is cut into chunks where both encodings must split (a space right
after a character that is not white space: no pre-token reaches across it and none
looks behind, as ``runs.bounded_segments`` cuts), and each chunk's count is memoised by
a digest of its UTF-8 bytes. A count is additive over such cuts, so the sum is the
whole text's count, exactly. Where a text is cut depends only on the text around each
cut (content-defined chunking: the cut follows the first place where a fixed pattern
of bits, read off the bytes through a fixed table, occurs): a payload that wraps the same
large text in another way, or joins it with others, is cut at the same places inside
it, and only the chunks at its edges are encoded again.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

__all__ = [
    "CHUNK_MIN_TEXT",
    "MEMO_MIN_TEXT",
    "ChunkedCount",
    "chunk_cuts",
]

#: Texts shorter than this are counted whole (chunking them saves nothing worth its cost),
#: their counts memoised from MEMO_MIN_TEXT characters on (shorter ones are cheaper to count
#: again than to look up; an exact counter memoises each message's payload anyway).
CHUNK_MIN_TEXT = 32_768
MEMO_MIN_TEXT = 1_024
#: No two cuts closer than this many bytes: chunks of about 5 KB on average (counting a
#: chunk costs a few microseconds more than counting its text whole), and none of a few
#: bytes for a text whose pattern recurs every few bytes.
_MIN_CHUNK = 4096
#: Each byte read as one bit (ASCII white space as neither), by a fixed shuffle; a cut
#: follows each place where _PATTERN occurs in the bits. The shuffle's seed is the one of
#: 60 tried that cut prose, code, JSON-escaped code and code-like prose most evenly (the
#: pattern starts at about one byte in 700 of each, and no stretch of 30 KB lacks it).
_PATTERN = b"110100101"
_SHUFFLE = random.Random(48)
_BITS = bytes(
    ord("w") if byte in b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f " else ord("01"[_SHUFFLE.getrandbits(1)])
    for byte in range(256)
)
#: A cut: the space of an ASCII non-space character and a space (the space starts the chunk).
_CUT = re.compile(rb"[\x21-\x7e] ")


def chunk_cuts(data: bytes) -> list[int]:
    """Byte offsets, inside ``data`` (a text's UTF-8 bytes), where the text may be cut
    and is: each is the offset of a space right after an ASCII character that is not white
    space, the first such offset after the first occurrence of the pattern that starts
    _MIN_CHUNK bytes or more after the cut before it (or the start). Where a cut falls
    depends on the text around it, and on where the cut before it fell only through the
    minimum: two texts that hold the same long text, wrapped otherwise, are cut at the same
    places inside it after a cut or two. Increasing; never 0 or len(data)."""
    bits = data.translate(_BITS)
    cuts: list[int] = []
    find = bits.find
    search = _CUT.search
    at = find(_PATTERN, _MIN_CHUNK)
    while at >= 0:
        match = search(data, at + len(_PATTERN) - 1)
        if match is None:
            break
        cut = match.start() + 1
        cuts.append(cut)
        at = find(_PATTERN, cut + _MIN_CHUNK)
    return cuts


class ChunkedCount:
    """``count`` (an encoding's ``text -> tokens``, additive over the cuts above) with a
    large text counted chunk by chunk, each chunk's count memoised (by a 128-bit blake2b
    digest of its bytes; the ``size`` most recently used). One per encoding and process,
    shared by every counter that counts with it and every thread.

    ``encodes`` counts the calls of ``count`` (tests count work with it). ``journal``,
    when a list, gets each chunk count made, as (digest, count): a counting worker
    process sends them with its counts, so that the process that asked remembers them
    (``remember``) and does not encode the text again when a stage rewrites the message
    around it (counting/pool.py)."""

    def __init__(self, count: Callable[[str], int], size: int = 65_536) -> None:
        self.count = count
        self.size = size
        self.encodes = 0
        self.journal: list[tuple[bytes, int]] | None = None
        self._memo: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, entries: Iterable[tuple[bytes, int]]) -> None:
        """Memoise chunk counts made elsewhere (a worker's ``journal``)."""
        with self._lock:
            memo = self._memo
            memo.update(entries)
            while len(memo) > self.size:
                memo.popitem(last=False)

    def clear(self) -> None:
        """Forget every chunk count (tests and benchmarks: a first sight of every text)."""
        with self._lock:
            self._memo.clear()

    def __call__(self, text: str) -> int:
        if len(text) < MEMO_MIN_TEXT:
            self.encodes += 1
            return self.count(text)
        data = text.encode("utf-8", "surrogatepass")
        if len(text) < CHUNK_MIN_TEXT:
            return self._chunk(data, text)
        total = 0
        start = 0
        for end in [*chunk_cuts(data), len(data)]:
            total += self._chunk(data[start:end])
            start = end
        return total

    def _chunk(self, data: bytes, text: str | None = None) -> int:
        """The count of the text whose UTF-8 bytes are ``data`` (``text``, when the caller
        has it: not decoded again), memoised by their digest."""
        key = hashlib.blake2b(data, digest_size=16).digest()
        memo = self._memo
        count = memo.get(key)
        if count is not None:
            with contextlib.suppress(KeyError):  # evicted by another thread
                memo.move_to_end(key)
            return count
        self.encodes += 1
        count = self.count(data.decode("utf-8", "surrogatepass") if text is None else text)
        with self._lock:
            memo[key] = count
            while len(memo) > self.size:
                memo.popitem(last=False)
        journal = self.journal
        if journal is not None:
            journal.append((key, count))
        return count
