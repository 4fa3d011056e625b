"""Gemini's other streaming form: ``:streamGenerateContent`` without ``?alt=sse``.

Asked without ``alt=sse``, Gemini streams one JSON array (``application/json``) whose
elements are the answer's chunks (each a ``GenerateContentResponse``), sent as they
are made: ``[{...}`` then ``,\\r\\n{...}`` ... then ``]``. A relay that passes those
bytes as they come has the problem server-sent events have (proxy/_sse.py): an
upstream that breaks off mid-answer leaves the client half an element and no
``]``, a body no JSON parser reads, with nothing saying why.

:class:`ArrayStream` is the relay's edge for this form, as sse.EventSplitter is for
events: it gives back only whole elements (a partial one is held until it closes),
and when the upstream breaks off it ends the array with one more element, the error
the caller names (Google's ``{"error": {...}}``), so the client reads a complete
array whose last element says the answer is incomplete. What is relayed is the
upstream's bytes, unchanged; only the ending is added.

It reads JSON's structure and nothing else: brackets and braces outside strings,
strings with their escapes, across chunk boundaries. A body that does not start
with ``[`` (not this form after all) is relayed as it comes, untouched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

#: Outside a string: everything up to the next bracket, whole strings (escapes
#: included) and all; it stops early only at a quote whose string does not end in
#: these bytes. Possessive, so a failed string match never backtracks.
_SKIP = re.compile(rb'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.DOTALL)
#: Inside a string: the rest of it, up to its closing quote.
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPENING = frozenset(b"[{")
_QUOTE = ord('"')
_WHITESPACE = b" \t\r\n"
#: Held past this, a partial element is relayed anyway: an element that never closes
#: cannot make the relay buffer without bound (the ending is then not added).
MAX_HELD = 1 << 20


class ArrayStream:
    """Feeds on the upstream's chunks, gives back only whole elements of the array.

    ``error`` makes the element that ends a broken-off array, from a message.
    """

    def __init__(self, error: Callable[[str], Any], limit: int = MAX_HELD) -> None:
        self._error = error
        self._limit = limit
        self._held = b""
        #: None until the first byte that is not whitespace says which form this is
        self._array: bool | None = None
        self._depth = 0
        self._in_string = False
        self._escaped = False  # the held bytes end inside a string, after a backslash
        self._elements = 0
        self._closed = False
        self._partial = False  # part of an unfinished element was relayed (over the limit)

    @property
    def held(self) -> int:
        """Bytes of an unfinished element, dropped if the stream breaks off now."""
        return len(self._held)

    def feed(self, chunk: bytes) -> bytes:
        """What of ``chunk`` (and what was held) can be relayed: up to the last
        element that closed."""
        if self._array is False:
            return chunk
        data = self._held + chunk
        start = len(self._held)
        if self._array is None:
            first = _first_non_space(data)
            if first < 0:
                self._held = data
                return b""
            if data[first] != ord("["):
                self._array, self._held = False, b""
                return data
            self._array, self._depth, start = True, 1, first + 1
            cut = start
        else:
            cut = 0
        cut = max(cut, self._scan(data, start))
        if len(data) - cut > self._limit:
            cut = len(data)
            self._partial = self._depth > 1 or self._in_string
        elif cut:
            self._partial = False
        self._held = data[cut:]
        return data[:cut]

    def flush(self) -> bytes:
        """What is left when the stream ended normally (relayed as sent)."""
        data, self._held = self._held, b""
        return data

    def pieces(self, whole: bytes) -> Iterator[tuple[str | None, bytes]]:
        """The elements of relayed bytes, each on its own (as (None, element)); what is
        not whole elements (a part relayed over the limit) as one piece."""
        return elements(whole)

    def broken(self, message: str) -> bytes | None:
        """The bytes that end the array after what was relayed, with the error element;
        None if no ending can make it whole (part of an element went out, or this
        is not an array), so the caller drops the connection instead."""
        if self._array is False or self._partial:
            return None
        if self._closed:
            return b""
        element = json.dumps(self._error(message)).encode()
        if not self._array:
            return b"[" + element + b"]"
        return (b",\r\n" if self._elements else b"") + element + b"\r\n]"

    def _scan(self, data: bytes, pos: int) -> int:
        """Walk ``data`` from ``pos``, keeping the depth; the end of the last element
        that closed (or of the array), or 0 if none did. One regex match skips to the
        next bracket outside a string (whole strings, escapes included, are skipped
        inside the regex engine), so the relay's cost is one step per bracket."""
        cut = 0
        end = len(data)
        if self._escaped and pos < end:
            self._escaped, pos = False, pos + 1
        if self._in_string:
            rest = _STRING_REST.match(data, pos)
            if rest is None:  # the string goes on past these bytes
                self._escaped = _ends_escaped(data, pos)
                return cut
            self._in_string, pos = False, rest.end()
        skip = _SKIP.match
        while not self._closed:
            pos = skip(data, pos).end()  # type: ignore[union-attr]  # it matches "" at worst
            if pos >= end:
                break
            byte = data[pos]
            pos += 1
            if byte == _QUOTE:  # a string that does not end in these bytes
                self._in_string = True
                self._escaped = _ends_escaped(data, pos)
                break
            if byte in _OPENING:
                self._depth += 1
                continue
            self._depth -= 1
            if self._depth == 1:
                self._elements += 1
                cut = pos
            elif self._depth == 0:
                self._closed = True
                cut = pos
        return cut


_DECODER = json.JSONDecoder()
_BETWEEN = re.compile(r"[\s,\[\]]*")


def elements(whole: bytes) -> Iterator[tuple[str | None, bytes]]:
    """The JSON values of a run of an array's bytes (``[``, ``,`` and ``]`` between
    them), each as (None, its bytes); from the first one that does not parse, the rest
    as one piece."""
    text = whole.decode("utf-8", "replace")
    pos = _BETWEEN.match(text).end()  # type: ignore[union-attr]  # it matches "" at worst
    while pos < len(text):
        try:
            _, end = _DECODER.raw_decode(text, pos)
        except ValueError:
            rest = text[pos:].strip(" \t\r\n,[]")
            if rest:
                yield None, rest.encode()
            return
        yield None, text[pos:end].encode()
        pos = _BETWEEN.match(text, end).end()  # type: ignore[union-attr]


def _ends_escaped(data: bytes, start: int) -> bool:
    """Whether string bytes ``data[start:]`` (no closing quote among them) end in a
    backslash that escapes the next chunk's first byte: an odd run of them."""
    run = len(data) - len(data.rstrip(b"\\"))
    return min(run, len(data) - start) % 2 == 1


def _first_non_space(data: bytes) -> int:
    """The index of the first byte of ``data`` that is not JSON whitespace, or -1."""
    stripped = data.lstrip(_WHITESPACE)
    return len(data) - len(stripped) if stripped else -1
