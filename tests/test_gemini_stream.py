"""formats/_gemini_stream.py: Gemini's streamed JSON array relayed in whole elements.

Properties over random arrays of random JSON (strings full of brackets, quotes and
backslashes), serialized in Gemini's layouts and cut into random chunks: nothing is
lost or changed, every relayed prefix is whole elements, and a stream broken off at
any byte ends as a complete array whose last element is the error. The route picks
this framing only for Gemini's streaming route (apis.ApiRoute.framing).
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor.formats._gemini_stream import ArrayStream
from context_governor.proxy._apis import CHAT, GEMINI, GEMINI_STREAM, MESSAGES
from context_governor.proxy._sse import EventFraming

ERROR = {"error": {"code": 502, "message": "cut", "status": "UNAVAILABLE"}}
TRICKY = st.text(alphabet='[]{}"\\,: \n\tab\u00e9\u2028\U0001f600', max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
    max_leaves=12,
)
ELEMENTS = st.lists(st.dictionaries(TRICKY, JSON, max_size=4), max_size=5)
#: element layouts: Gemini's (indented, ",\r\n" between), compact, and odd whitespace
LAYOUTS = st.sampled_from([(2, ",\r\n", "\n]"), (None, ",", "]"), (1, " ,\n\n ", " ] "), (None, ",\n", "\r\n]")])


def _serialize(elements: list[Any], layout: tuple[int | None, str, str]) -> tuple[bytes, list[int]]:
    """The array's bytes, and where each element ends."""
    indent, between, closing = layout
    out, ends = b" [", []
    for i, element in enumerate(elements):
        out += (between.encode() if i else b"") + json.dumps(element, indent=indent).encode()
        ends.append(len(out))
    return out + closing.encode(), ends


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in pairwise(points)]


def _stream() -> ArrayStream:
    return ArrayStream(lambda message: {"error": {**ERROR["error"], "message": message}})


def _whole(relayed: bytes, elements: list[Any]) -> bool:
    """``relayed`` is the whole array, or its opening and a run of whole elements."""
    for candidate in (relayed, relayed + b"]"):
        try:
            parsed = json.loads(candidate)
        except ValueError:
            continue
        return bool(parsed == elements[: len(parsed)])
    return False


@settings(max_examples=examples(400, 100))
@given(elements=ELEMENTS, layout=LAYOUTS, cuts=st.lists(st.integers(0, 10_000), max_size=20))
def test_whole_elements_only_and_nothing_lost(
    elements: list[Any], layout: tuple[int | None, str, str], cuts: list[int]
) -> None:
    data, _ = _serialize(elements, layout)
    stream, relayed = _stream(), b""
    for chunk in _chunks(data, cuts):
        relayed += stream.feed(chunk)
        assert not relayed or _whole(relayed, elements)
    assert relayed + stream.flush() == data
    assert json.loads(relayed) == elements  # all of it came out before the end


@settings(max_examples=examples(400, 100))
@given(
    elements=ELEMENTS,
    layout=LAYOUTS,
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
    at=st.integers(0, 10_000),
)
def test_a_break_at_any_byte_ends_as_a_complete_array_with_the_error_last(
    elements: list[Any], layout: tuple[int | None, str, str], cuts: list[int], at: int
) -> None:
    data, ends = _serialize(elements, layout)
    at %= len(data) + 1
    stream, relayed = _stream(), b""
    for chunk in _chunks(data[:at], cuts):
        relayed += stream.feed(chunk)
    ending = stream.broken("cut")
    assert ending is not None
    whole = sum(1 for end in ends if end <= at)
    parsed = json.loads(relayed + ending)
    if at >= len(data.rstrip()):  # the array had closed: nothing is added
        assert ending == b"" and parsed == elements
    else:
        assert parsed == [*elements[:whole], ERROR]
        assert relayed == data[: len(relayed)]  # the upstream's bytes, unchanged


def test_an_escape_split_across_chunks_is_still_an_escape() -> None:
    stream = _stream()
    assert stream.feed(b'[{"a": "x\\') == b"["
    assert stream.feed(b'"}]"') == b""  # the quote was escaped: still inside the string
    assert stream.feed(b"}") == b'{"a": "x\\"}]"}'
    assert stream.broken("cut") == b',\r\n{"error": {"code": 502, "message": "cut", "status": "UNAVAILABLE"}}\r\n]'


def test_a_break_before_anything_arrived_is_an_array_of_the_error() -> None:
    stream = _stream()
    assert stream.feed(b" \r\n") == b""
    assert json.loads(stream.broken("cut") or b"") == [ERROR]


def test_a_body_that_is_not_an_array_is_relayed_raw_and_not_ended() -> None:
    stream = _stream()
    assert stream.feed(b' {"error": {"code": 4') == b' {"error": {"code": 4'
    assert stream.feed(b"00}") == b"00}"
    assert stream.broken("cut") is None  # the caller drops the connection


def test_an_element_past_the_limit_is_relayed_unfinished_and_then_not_ended() -> None:
    stream = ArrayStream(lambda message: ERROR, limit=64)
    big = b'{"text": "' + b"x" * 100
    assert stream.feed(b"[" + big) == b"[" + big  # held past the limit: relayed
    assert stream.broken("cut") is None  # half an element went out: no honest ending
    assert stream.feed(b'"}') == b'"}'
    assert stream.broken("cut") == b',\r\n' + json.dumps(ERROR).encode() + b"\r\n]"


@given(st.binary(max_size=200), st.lists(st.integers(0, 300), max_size=6))
def test_any_bytes_come_out_unchanged(data: bytes, cuts: list[int]) -> None:
    """Whatever the upstream sends (not JSON at all), the stream relays it unchanged."""
    stream, relayed = _stream(), b""
    for chunk in _chunks(data, cuts):
        relayed += stream.feed(chunk)
    assert relayed + stream.flush() == data


def test_the_route_and_content_type_pick_the_framing() -> None:
    assert isinstance(GEMINI_STREAM.framing("application/json; charset=UTF-8"), ArrayStream)
    assert isinstance(GEMINI_STREAM.framing("text/event-stream"), EventFraming)
    assert GEMINI.framing("application/json") is None  # a passed-through Gemini path's answer
    assert CHAT.framing("application/json") is None
    assert isinstance(MESSAGES.framing("Text/Event-Stream; charset=utf-8"), EventFraming)
