"""Token counting under hostile text, and encodings built once under concurrency.

bounded_count must equal tiktoken's count for any text without a long run of one
kind of character, never count less than tiktoken otherwise, and never hand the
byte-pair merge a pre-token longer than MAX_PIECE characters (that is what bounds
its time: the merge is superlinear in the length of one pre-token).
"""

from __future__ import annotations

import base64
import random
import re
import threading
import unicodedata
from collections.abc import Sequence
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

import context_governor
from context_governor import counting as tokens
from context_governor import govern
from context_governor.counting import (
    MAX_PIECE,
    RUN_LIMIT,
    bounded_count,
    bounded_segments,
    load_encoding,
)
from context_governor.counting import (
    _encodings as encodings,
)
from context_governor.counting import _runs as run_rules

ENCODINGS = ["cl100k_base", "o200k_base"]
# Short runs of characters from every class the pre-tokenizers tell apart.
PIECES = [
    "a", "Z", "é", "e\u0301", "中", "文", "ا", "а", "'s", "'", "1", "42", "٣",
    " ", "  ", "\t", "\n", "\r\n", "\u3000", "\xa0", "/", "!", ".", "，", "。",
    "😀", "\u200d", "<|endoftext|>", "\x1c", "_", "-", "\ud800",
]  # fmt: skip


def encoding(name: str) -> Any:
    enc = load_encoding(name)
    assert enc is not None, f"{name} must load offline"
    return enc


def exact(enc: Any, text: str) -> int:
    return len(enc.encode(text, disallowed_special=()))


class Recorder:
    """An encode() that records what it was handed."""

    def __init__(self, enc: Any) -> None:
        self.enc = enc
        self.seen: list[str] = []

    def __call__(self, text: str) -> Sequence[int]:
        self.seen.append(text)
        return self.enc.encode(text, disallowed_special=())  # type: ignore[no-any-return]

    def longest_piece(self) -> int:
        pattern = regex.compile(self.enc._pat_str)
        return max((len(p) for t in self.seen for p in pattern.findall(t)), default=0)


ordinary = st.lists(st.sampled_from(PIECES), max_size=400).map("".join)
runs = st.lists(
    st.tuples(st.sampled_from(PIECES), st.integers(1, 3 * RUN_LIMIT)), min_size=1, max_size=6
).map(lambda parts: "".join(piece * n for piece, n in parts))


@pytest.mark.parametrize("name", ENCODINGS)
@given(text=ordinary)
@settings(max_examples=150, deadline=None)
def test_exact_on_text_without_long_runs(name: str, text: str) -> None:
    enc = encoding(name)
    assert bounded_segments(text) == [(text, True)] or all(e for _, e in bounded_segments(text))
    assert bounded_count(lambda t: enc.encode(t, disallowed_special=()), text) == exact(enc, text)


@pytest.mark.parametrize("name", ENCODINGS)
@given(text=runs, prefix=ordinary, suffix=ordinary)
@settings(max_examples=100, deadline=None)
def test_an_upper_bound_on_long_runs_and_the_merge_never_sees_a_long_piece(
    name: str, text: str, prefix: str, suffix: str
) -> None:
    enc = encoding(name)
    whole = prefix + text + suffix
    record = Recorder(enc)
    counted = bounded_count(record, whole)
    assert counted >= exact(enc, whole)
    assert record.longest_piece() <= MAX_PIECE
    segments = bounded_segments(whole)
    assert "".join(s for s, _ in segments) == whole
    # the cuts are where both encodings cut anyway: the exact parts add up exactly
    assert sum(exact(enc, s) for s, _ in segments) == exact(enc, whole)
    if all(e for _, e in segments):
        assert counted == exact(enc, whole)  # no run found: the count is the exact one


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize(
    "text",
    [
        "a" * 2_000_000,  # one pre-token of 2 MB: seconds of merging on main
        "😀" * 500_000,
        " " * 1_000_000,  # o200k's own pre-tokenizer gives up on this (ValueError on main)
        ("x" * 5_000 + " ") * 200,
        "\n/" * 100_000,
        base64.b64encode(random.Random(3).randbytes(300_000)).decode(),
    ],
    ids=["one-char", "emoji", "spaces", "runs", "newline-slash", "base64"],
)
def test_pathological_text_is_bounded(name: str, text: str) -> None:
    enc = encoding(name)
    record = Recorder(enc)
    counted = bounded_count(record, text)
    assert record.longest_piece() <= MAX_PIECE
    assert counted <= len(text.encode("utf-8"))
    if len(text) <= 600_000:  # cheap enough to compare with tiktoken itself
        assert counted >= exact(enc, text)


def test_governing_a_huge_run_counts_it_and_never_fails() -> None:
    for model in ("gpt-4o", "gpt-4"):
        messages = [{"role": "user", "content": " " * 1_000_000}]
        report = govern(messages, model=model, context_window=100_000).report
        assert report.tokens_before >= 1_000_000  # the UTF-8 length: an upper bound


def test_character_classes_match_the_pre_tokenizers() -> None:
    """The run classes in counting/_runs.py stand for \\p classes Python's re lacks: check them."""
    not_letter = re.compile(f"[{run_rules._NOT_LETTER}]")
    space = re.compile(f"[{run_rules._SPACE}]")
    not_symbol = re.compile(f"[{run_rules._NOT_SYMBOL}]")
    white = regex.compile(r"\s")
    letter_like = regex.compile(r"[\p{L}\p{M}]")
    word = regex.compile(r"[\s\p{L}\p{N}]")
    for code in range(0x110000):
        char = chr(code)
        if not_letter.match(char):
            assert not letter_like.match(char), (hex(code), unicodedata.category(char))
        assert bool(space.match(char)) == bool(white.match(char)), hex(code)
        if not_symbol.match(char):
            assert word.match(char), hex(code)


def test_the_seed_counter_keeps_its_special_token_quirk_inside_long_text() -> None:
    counter = tokens.seed_counter()
    long_run = "." * (2 * RUN_LIMIT)
    message = {"role": "user", "content": "<|endoftext|> " + long_run}
    # the seed's encode raises on special-token text: len // 4 + 4
    assert counter.message_tokens(message) == len(message["content"]) // 4 + 4
    assert counter.prompt_tokens([message], None) == 0  # ... and "fits" for the whole prompt


def test_twenty_threads_build_an_encoding_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encodings, "_ENCODINGS", {})
    monkeypatch.setattr(encodings, "_COUNTING", {})
    builds: list[str] = []
    monkeypatch.setattr(encodings, "build_hooks", [builds.append])
    barrier = threading.Barrier(20)
    got: list[Any] = []

    def first_request() -> None:
        barrier.wait()
        got.append(tokens.exact_counter("gpt-4o")._enc)

    threads = [threading.Thread(target=first_request) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == ["o200k_base"]
    assert len(got) == 20 and all(enc is got[0] for enc in got) and got[0] is not None


def test_warm_up_builds_ahead_and_requests_build_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encodings, "_ENCODINGS", {})
    monkeypatch.setattr(encodings, "_COUNTING", {})
    builds: list[str] = []
    monkeypatch.setattr(encodings, "build_hooks", [builds.append])
    assert context_governor.warm_up(["gpt-4o", "claude-sonnet-4", None]) == [
        "cl100k_base",
        "o200k_base",
    ]
    assert builds == ["cl100k_base", "o200k_base"]
    tokens.exact_counter("gpt-4o-mini").message_tokens({"role": "user", "content": "hi"})
    tokens.exact_counter("gpt-4").message_tokens({"role": "user", "content": "hi"})
    assert builds == ["cl100k_base", "o200k_base"]


def test_the_seed_counter_is_exact_on_runs_up_to_a_quarter_megabyte() -> None:
    """The nanobot profile must count as the seed does: a 16,019-char run of one letter
    (an over-cap tool result of the differential test) counted as its byte length made
    snip cut differently from nanobot-ai 0.2.2."""
    from context_governor.counting import SEED_EXACT_CHARS, load_encoding, seed_counter

    encoding = load_encoding("cl100k_base")
    assert encoding is not None
    counter = seed_counter()
    for text in ("x" * 16_019, " " * 50_000, "ab" * 30_000):
        message = {"role": "tool", "tool_call_id": "c", "content": text}
        expected = len(encoding.encode("\n".join([text, "c"]))) + 4
        assert counter.message_tokens(message) == expected
    assert SEED_EXACT_CHARS >= 200_000


def test_the_seed_counter_bounds_a_run_just_under_a_megabyte() -> None:
    """Fuzz 101:66235: a 900,000-char run in the nanobot profile's system prompt was
    encoded exactly five times in one govern() (2.4 s of CPU). Past SEED_EXACT_CHARS it
    is an upper bound, never under the exact count."""
    from context_governor.counting import SEED_EXACT_CHARS, load_encoding, seed_counter

    encoding = load_encoding("cl100k_base")
    assert encoding is not None
    text = "=" * (SEED_EXACT_CHARS + 1)
    message = {"role": "system", "content": text}
    counted = seed_counter().message_tokens(message)
    assert len(encoding.encode(text)) < counted <= len(text.encode()) + 8
