"""Each large text is encoded once per request, whatever the profile (issue 38, item 6).

A 900 KB tool argument was encoded three or four times per request: the memo keyed the
whole payload of a message, and the stages make new payloads around the same text
(mistral's tool-call ids, ``content: null`` made ``""``, flattened tool results, merged
turns, the seed's whole-prompt estimate). Large texts are now counted in content-defined
chunks whose counts are memoised (counting/_chunks.py). These tests count the work: what
the tokenizer is handed, per request, against the texts the request holds. The times are
bench/large_texts.py's.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.large_texts import MODELS, arg_body, result_body, text
from context_governor import govern_request
from context_governor.counting import (
    CHUNK_MIN_TEXT,
    ChunkedCount,
    bounded_tokens,
    chunk_cuts,
    chunked_count,
    count_ordinary,
    counting_encoding,
    load_encoding,
    pool,
)
from context_governor.profiles import PROFILES

ENCODINGS = ["cl100k_base", "o200k_base"]
PIECES = [
    "a", "Z", "é", "e\u0301", "中", "文", "'s", "1", "42", " ", "  ", "\t", "\n", "\r\n",
    "\u3000", "\xa0", "/", "!", ".", "，", "😀", "<|endoftext|>", "\x1c", "_", "\ud800",
    "\ud83d\ude00", "x" * 1200, " " * 1100, "\\n", '\\"',
]  # fmt: skip


def exact(name: str, value: str) -> int:
    enc = load_encoding(name)
    assert enc is not None
    return len(enc.encode(value, disallowed_special=()))


class Handed:
    """Every string an encoding's chunked count hands its tokenizer."""

    def __init__(self) -> None:
        self.strings: list[str] = []

    def wrap(self, count: Callable[[str], int]) -> Callable[[str], int]:
        def recorded(value: str) -> int:
            self.strings.append(value)
            return count(value)

        return recorded

    @property
    def chars(self) -> int:
        return sum(map(len, self.strings))

    def repeats(self, at_least: int = 1_000) -> int:
        seen = Counter(s for s in self.strings if len(s) >= at_least)
        return max(seen.values(), default=0)


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Handed]:
    """What the shared encodings' tokenizers are handed, counting in this process only."""
    record = Handed()
    for name in ENCODINGS:
        encoding = counting_encoding(name)
        assert encoding is not None
        chunked = chunked_count(encoding)
        assert chunked is not None
        monkeypatch.setattr(chunked, "count", record.wrap(chunked.count))
    pool.set_workers(0)
    try:
        yield record
    finally:
        pool.set_workers(None)


def _mixed(seed: int, size: int) -> str:
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    while total < size:
        piece = text(rng, rng.randrange(20, 400)) if rng.random() < 0.7 else rng.choice(PIECES)
        out.append(piece)
        total += len(piece)
    return "".join(out)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(CHUNK_MIN_TEXT, 3 * CHUNK_MIN_TEXT))
def test_a_large_text_counted_in_chunks_counts_as_tiktoken_does(seed: int, size: int) -> None:
    """The chunks' counts add up to the whole text's, exactly: code-like prose with CJK,
    emoji, lone surrogates and surrogate pairs, special-token text, long runs, escapes."""
    value = _mixed(seed, size)
    for name in ENCODINGS:
        want = exact(name, value)
        enc = load_encoding(name)
        assert enc is not None
        fresh = ChunkedCount(lambda t, e=enc: len(e.encode(t, disallowed_special=())))
        assert fresh(value) == want
        assert fresh(value) == want  # from the memo
        assert fresh.encodes <= len(chunk_cuts(value.encode("utf-8", "surrogatepass"))) + 1
        shared = counting_encoding(name)
        assert shared is not None
        assert count_ordinary(shared)(value) == want


def test_cuts_fall_where_both_encodings_split_and_are_not_too_close() -> None:
    data = text(random.Random(7), 400_000).encode()
    cuts = chunk_cuts(data)
    assert len(cuts) > 20, "code-like prose is cut every few KB"
    assert all(data[c : c + 1] == b" " and 0x21 <= data[c - 1] <= 0x7E for c in cuts)
    assert all(b - a >= 512 for a, b in zip([0, *cuts], cuts, strict=False))


def test_a_text_met_again_inside_another_payload_is_not_encoded_again() -> None:
    """The same large text, wrapped otherwise (an id rewritten before it, a name after it,
    joined with others): only the chunks at its edges are encoded again."""
    enc = load_encoding("cl100k_base")
    assert enc is not None
    record = Handed()
    chunked = ChunkedCount(record.wrap(lambda t: len(enc.encode(t, disallowed_special=()))))
    big = json.dumps(text(random.Random(3), 300_000))
    first = '[{"id": "call_abc123", "arguments": ' + big + "}]"
    assert chunked(first) == exact("cl100k_base", first)
    once = record.chars
    for wrapped in (
        '\n[{"id": "18902cfeb", "arguments": ' + big + "}]",
        "You are a coding agent.\nWrite it.\n" + first + "\nok\ncall_abc123\nNow test it.",
    ):
        before = record.chars
        assert chunked(wrapped) == exact("cl100k_base", wrapped)
        assert record.chars - before < 0.1 * len(big), "only its edges are encoded again"
    assert once >= len(first)


#: Forms a text takes in the request under a profile: bedrock flattens tool calls into
#: text, so the argument is there once JSON-escaped (in tool_calls) and once as it is.
FORMS = {("bedrock", "arg"): 2}


@pytest.mark.parametrize("body", ["arg", "result"])
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_each_large_text_is_encoded_once_per_request(
    handed: Handed, profile: str, body: str
) -> None:
    """A 200 KB tool argument or result, seen for the first time, under every built-in
    profile: no string of 1,000 characters or more is handed to the tokenizer twice, and
    what it is handed adds up to the body once (twice where the request holds the text in
    two forms). Before: the argument was encoded three times under mistral and nanobot."""
    rng = random.Random(f"{profile}/{body}/once")
    make = arg_body if body == "arg" else result_body
    request: dict[str, Any] = make(rng, MODELS.get(profile, "gpt-4o"), 200_000)
    size = len(json.dumps(request))
    govern_request(request, api="openai", profile=profile, context_window=1_000_000)
    assert handed.repeats() <= 1, "a string was encoded twice"
    forms = FORMS.get((profile, body), 1)
    assert handed.chars <= (forms + 0.2) * size, (handed.chars / size, forms)
    assert handed.chars >= 0.5 * size  # the texts were counted (not all by byte bounds)


def test_a_worker_process_sends_its_chunk_counts_back() -> None:
    """A text a counting worker counted (a big first call, counting/pool.py) is known
    here chunk by chunk: a payload rewritten around it is not encoded again here."""
    encoding = counting_encoding("cl100k_base")
    assert encoding is not None
    chunked = chunked_count(encoding)
    assert chunked is not None
    big = text(random.Random("worker"), 200_000)
    worker = pool._Worker("cl100k_base")  # one worker, driven by hand
    try:
        assert worker.ready(lambda value: bounded_tokens(chunked, value))  # as counters count
        counts = worker.count([big])
    finally:
        worker.close()
    assert counts[0] == exact("cl100k_base", big)
    record = Handed()
    original = chunked.count
    chunked.count = record.wrap(original)
    try:
        assert chunked("\n" + big + "\ncall_1") == exact("cl100k_base", "\n" + big + "\ncall_1")
    finally:
        chunked.count = original
    assert record.chars < 0.1 * len(big)
