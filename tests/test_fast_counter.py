"""rs-bpe (the ``fast`` extra) against tiktoken, the reference: every count equal.

Counters count with rs-bpe when it is installed (it is, in the dev extra), so these
differential tests are what keeps every reported count tiktoken's: a generated
corpus (bench/counters.py: code, JSON, prose, CJK, emoji, whitespace runs, long
lines, random mixed-script text, lone surrogates), random text from hypothesis,
and whole governance results with and without rs-bpe. CG_TEST_LEVEL=full draws
more texts.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples

from bench.counters import corpus
from bench.sessions import coding_session
from context_governor import counting as tokens
from context_governor import govern
from context_governor.counting import (
    FAST_PROBE,
    FAST_PROBE_IDS,
    FastEncoding,
    clean_surrogates,
    counting_encoding,
    load_encoding,
)
from context_governor.counting import (
    _encodings as encodings,
)

ENCODINGS = ["cl100k_base", "o200k_base"]


def reference(name: str) -> Any:
    enc = load_encoding(name)
    assert enc is not None and not isinstance(enc, FastEncoding)
    return enc


def fast(name: str) -> FastEncoding:
    enc = counting_encoding(name)
    assert isinstance(enc, FastEncoding), "rs-bpe is in the dev extra and must pass its probe"
    return enc


def truth(name: str, text: str) -> int:
    return len(reference(name).encode(text, disallowed_special=()))


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_probe_pins_tiktokens_token_ids(name: str) -> None:
    ids = reference(name).encode(FAST_PROBE, disallowed_special=())
    assert hashlib.sha256(json.dumps(ids).encode()).hexdigest() == FAST_PROBE_IDS[name]
    assert fast(name).encode(FAST_PROBE) == ids


@pytest.mark.parametrize("name", ENCODINGS)
def test_rs_bpe_counts_a_generated_corpus_as_tiktoken_does(name: str) -> None:
    texts = corpus(examples(full=8_000, fast=1_500), seed=7)
    assert any(t != clean_surrogates(t) for t in texts), "the corpus must hold surrogates"
    enc = fast(name)
    wrong = [t for t in texts if enc.count(t) != truth(name, t)]
    assert wrong == []


@pytest.mark.parametrize("name", ENCODINGS)
@given(text=st.text(max_size=300))  # any code point, lone surrogates included
@settings(max_examples=examples(full=800, fast=200), deadline=None)
def test_rs_bpe_counts_any_text_as_tiktoken_does(name: str, text: str) -> None:
    assert fast(name).count(text) == truth(name, text)
    assert fast(name).encode(text) == reference(name).encode(text, disallowed_special=())


def test_the_counters_count_with_rs_bpe() -> None:
    assert isinstance(tokens.exact_counter("gpt-4o")._enc, FastEncoding)
    assert isinstance(tokens.exact_counter("gpt-4")._enc, FastEncoding)
    assert tokens.exact_counter("gpt-4o").name == "o200k_base"
    assert tokens.seed_counter().name == "seed:cl100k_base"


def test_a_build_that_fails_the_probe_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encodings, "_COUNTING", {})
    monkeypatch.setitem(tokens.FAST_PROBE_IDS, "o200k_base", "0" * 64)
    assert counting_encoding("o200k_base") is load_encoding("o200k_base")


def test_counting_with_tiktoken_is_one_setting_away(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encodings, "_COUNTING", {})
    monkeypatch.setenv(tokens.FAST_ENV, "0")
    assert counting_encoding("cl100k_base") is load_encoding("cl100k_base")


@pytest.mark.parametrize(("profile", "model"), [("openai", "gpt-4o"), ("nanobot", "gpt-4")])
def test_governance_is_byte_identical_with_either_counter(
    monkeypatch: pytest.MonkeyPatch, profile: str, model: str
) -> None:
    """A long replay governed at a small window (snips, compactions, a cut tool result)
    gives the same messages and report whichever encoding counts."""
    replay = coding_session(40)
    history = [m for step in replay.steps for m in step]

    def run() -> tuple[str, str]:
        result = govern(
            history, tools=replay.tools, profile=profile, model=model, context_window=16_000
        )
        return json.dumps(result.messages), json.dumps(result.report.to_dict())

    with_fast = run()
    monkeypatch.setattr(encodings, "_COUNTING", {})
    monkeypatch.setenv(tokens.FAST_ENV, "0")
    from context_governor import profiles

    profiles._cached_exact_counter.cache_clear()
    profiles._cached_seed_counter.cache_clear()
    try:
        assert run() == with_fast
    finally:
        profiles._cached_exact_counter.cache_clear()
        profiles._cached_seed_counter.cache_clear()


def test_warm_up_in_background_builds_the_encodings_off_the_callers_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(encodings, "_COUNTING", {})
    builds: list[tuple[str, str]] = []
    monkeypatch.setattr(
        encodings, "build_hooks", [lambda name: builds.append((name, threading.current_thread().name))]
    )
    thread = tokens.warm_up_in_background(["gpt-4o"])
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert builds == [
        ("cl100k_base", "context-governor-warm-up"),
        ("o200k_base", "context-governor-warm-up"),
    ]
    tokens.exact_counter("gpt-4o").message_tokens({"role": "user", "content": "hi"})
    assert len(builds) == 2  # the first count builds nothing
