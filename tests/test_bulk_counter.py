"""The bulk counter (quicktok) against tiktoken, the reference: every count equal.

A call with ``BULK_CHARS`` of text or more to count switches the process's shared
encoding to quicktok (counting/_encodings.py, ``bulk_counting``). Decisions cannot
change only if every count is tiktoken's: a generated corpus (code, JSON, prose, CJK,
emoji, whitespace runs, long lines, mixed scripts, lone surrogates), any text from
hypothesis, special-token text, and whole governance results before and after the
switch. CG_TEST_LEVEL=full draws more texts.
"""

from __future__ import annotations

import contextlib
import io
import json
import marshal
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples

from bench.counters import corpus
from bench.sessions import coding_session
from context_governor import govern, profiles
from context_governor.counting import (
    ExactCounter,
    Known,
    _worker,
    bounded_tokens,
    chunked_count,
    clean_surrogates,
    count_ordinary,
    counting_encoding,
    load_encoding,
    pool,
)
from context_governor.counting import _encodings as encodings

ENCODINGS = ["cl100k_base", "o200k_base"]


def truth(name: str, text: str) -> int:
    reference = load_encoding(name)
    assert reference is not None
    return len(reference.encode(text, disallowed_special=()))


def bulk(name: str) -> Callable[[str], int]:
    count = encodings._BULK.get(name) or encodings._load_bulk(name)
    assert count is not None, "quicktok is a dependency and must pass its probe"
    return count


@pytest.fixture
def shared_count() -> Iterator[None]:
    """Put back each shared encoding's count after a test that switches it (and allow
    loading, which a proxy started in this process turns off)."""
    loading = encodings._BULK_LOADING[0]
    encodings.set_bulk_loading(True)
    before = {}
    for name in ENCODINGS:
        encoding = counting_encoding(name)
        assert encoding is not None
        chunked = chunked_count(encoding)
        assert chunked is not None
        before[name] = (chunked, chunked.count, chunked.journal)
    yield
    for chunked, count, journal in before.values():
        chunked.count = count
        chunked.journal = journal
    encodings.set_bulk_loading(loading)


@pytest.mark.parametrize("name", ENCODINGS)
def test_quicktok_counts_a_generated_corpus_as_tiktoken_does(name: str) -> None:
    texts = corpus(examples(full=8_000, fast=1_500), seed=11)
    assert any(t != clean_surrogates(t) for t in texts), "the corpus must hold surrogates"
    count = bulk(name)
    assert [t for t in texts if count(t) != truth(name, t)] == []


@pytest.mark.parametrize("name", ENCODINGS)
@given(text=st.text(max_size=300))  # any code point, lone surrogates included
@settings(max_examples=examples(full=800, fast=200), deadline=None)
def test_quicktok_counts_any_text_as_tiktoken_does(name: str, text: str) -> None:
    assert bulk(name)(text) == truth(name, text)


@pytest.mark.parametrize("name", ENCODINGS)
def test_special_token_text_is_ordinary_text(name: str) -> None:
    text = "a <|endoftext|> b <|endofprompt|> <|fim_prefix|>x"
    assert bulk(name)(text) == truth(name, text)


def test_a_build_that_fails_the_probe_is_not_used(
    monkeypatch: pytest.MonkeyPatch, shared_count: None
) -> None:
    monkeypatch.setattr(encodings, "_BULK", {})
    monkeypatch.setitem(encodings.FAST_PROBE_IDS, "o200k_base", "0" * 64)
    before = chunked_count(counting_encoding("o200k_base"))  # type: ignore[arg-type]
    assert before is not None
    count = before.count
    assert encodings.bulk_counting("o200k_base") is False
    assert before.count is count


def test_counting_with_tiktoken_is_one_setting_away(
    monkeypatch: pytest.MonkeyPatch, shared_count: None
) -> None:
    monkeypatch.setenv(encodings.FAST_ENV, "0")
    assert encodings.bulk_counting("o200k_base") is False


def test_a_big_call_switches_the_shared_encoding_and_keeps_every_count(
    monkeypatch: pytest.MonkeyPatch, shared_count: None
) -> None:
    """precount loads the bulk counter for a call with BULK_CHARS or more to count (here
    made small), with or without worker processes; the counts it hands the call are the
    counts the encoding gave before the switch."""
    replay = coding_session(40)
    history = [m for step in replay.steps for m in step]
    encoding = counting_encoding("o200k_base")
    assert encoding is not None
    chunked = chunked_count(encoding)
    assert chunked is not None
    expected = [ExactCounter(encoding, cache_size=0).message_tokens(m) for m in history]
    monkeypatch.setattr(pool, "BULK_CHARS", 1_000)
    pool.set_workers(0)
    try:
        known = Known()
        pool.precount(ExactCounter(encoding, cache_size=0), history, known)
    finally:
        pool.set_workers(None)
    assert chunked.count is encodings._BULK["o200k_base"]
    chunked.clear()  # counted again, by the bulk counter
    assert [ExactCounter(encoding, cache_size=0).message_tokens(m) for m in history] == expected


@pytest.mark.parametrize(("profile", "model"), [("openai", "gpt-4o"), ("openai", "gpt-4")])
def test_governance_is_byte_identical_before_and_after_the_switch(
    shared_count: None, profile: str, model: str
) -> None:
    """A long replay governed at a small window (compactions, cuts with their receipt)
    gives the same messages and report whichever counter the shared encoding uses."""
    replay = coding_session(40)
    history = [m for step in replay.steps for m in step]

    def run() -> tuple[str, str]:
        result = govern(
            history, tools=replay.tools, profile=profile, model=model, context_window=16_000
        )
        return json.dumps(result.messages), json.dumps(result.report.to_dict())

    encoding = counting_encoding(encodings.encoding_for_model(model))
    assert encoding is not None
    chunked = chunked_count(encoding)
    assert chunked is not None
    before = run()
    assert encodings.bulk_counting(encoding.name.removesuffix("_offline")) is True
    fresh()
    try:
        assert run() == before
    finally:
        fresh()


def fresh() -> None:
    """Counters with empty memos, and no chunk count remembered: every text counted again."""
    profiles._cached_exact_counter.cache_clear()
    profiles._cached_seed_counter.cache_clear()
    for name in ENCODINGS:
        chunked = chunked_count(counting_encoding(name))  # type: ignore[arg-type]
        assert chunked is not None
        chunked.clear()


def test_the_proxy_never_loads_it_in_a_call(
    monkeypatch: pytest.MonkeyPatch, shared_count: None
) -> None:
    """The proxy's preload turns loading off: a big call then counts as before (loading
    holds the GIL for half a second, and the proxy's other requests with it)."""
    from context_governor.proxy import ProxyConfig
    from context_governor.proxy._governing import preload

    preload(ProxyConfig(upstream="http://127.0.0.1:9"))
    monkeypatch.setattr(encodings, "_BULK", {})
    encoding = counting_encoding("o200k_base")
    assert encoding is not None
    chunked = chunked_count(encoding)
    assert chunked is not None
    count = chunked.count
    monkeypatch.setattr(pool, "BULK_CHARS", 1_000)
    replay = coding_session(10)
    history = [m for step in replay.steps for m in step]
    pool.set_workers(0)
    try:
        pool.precount(ExactCounter(encoding, cache_size=0), history, Known())
    finally:
        pool.set_workers(None)
    assert chunked.count is count
    assert encodings.bulk_counting("o200k_base") is False


def test_without_the_fast_extra_quicktok_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without rs-bpe, the shared encodings count through quicktok (not tiktoken): the
    same counts as tiktoken on a generated corpus."""
    import sys

    monkeypatch.setitem(sys.modules, "rs_bpe", None)  # import rs_bpe raises ImportError
    monkeypatch.setitem(sys.modules, "rs_bpe.bpe", None)
    monkeypatch.setattr(encodings, "_COUNTING", {})
    monkeypatch.setattr(encodings, "_CHUNKED", {})
    texts = corpus(examples(full=2_000, fast=400), seed=13)
    for name in ENCODINGS:
        encoding = counting_encoding(name)
        assert isinstance(encoding, encodings.FastEncoding)
        assert isinstance(encoding._tokenizer, encodings._QuickTokenizer)
        assert [t for t in texts if encoding.count(t) != truth(name, t)] == []
        assert encoding.encode(encodings.FAST_PROBE) == load_encoding(name).encode(  # type: ignore[union-attr]
            encodings.FAST_PROBE, disallowed_special=()
        )


@contextlib.contextmanager
def worker_on_pipes(
    monkeypatch: pytest.MonkeyPatch, texts: list[str]
) -> Iterator[tuple[Callable[[], list[int]], Callable[[object], None]]]:
    """A counting worker (counting/_worker.py's ``main``) run in a thread on two pipes:
    yields ``ask`` (send ``texts`` as a frame, return the counts answered) and ``send``
    (any frame, not waited on). On leaving, its input is closed and it must end with 0."""
    monkeypatch.setattr(encodings, "_BULK", {})
    into_worker, worker_in = os.pipe()
    worker_out, from_worker = os.pipe()
    with open(into_worker, "rb") as stdin, open(from_worker, "wb") as sink:
        monkeypatch.setattr(sys, "stdin", stdin)
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(sink))
        ended: list[int] = []
        thread = threading.Thread(target=lambda: ended.append(_worker.main(["o200k_base"])))
        with open(worker_in, "wb") as frames, open(worker_out, "rb") as answers:
            thread.start()

            def send(payload: object) -> None:
                _worker.write_frame(frames, marshal.dumps(payload))

            def ask() -> list[int]:
                send(texts)
                frame = _worker.read_frame(answers.fileno())
                assert frame is not None
                counts, _chunks = marshal.loads(frame)
                return list(counts)

            yield ask, send
        thread.join(10)
    assert ended == [0]


def expected_counts(texts: list[str]) -> list[int]:
    """What this process counts for ``texts`` (runs.bounded_tokens, shared encoding)."""
    encoding = counting_encoding("o200k_base")
    assert encoding is not None
    return [bounded_tokens(count_ordinary(encoding), t) for t in texts]


def test_an_idle_counting_worker_loads_it_and_counts_the_same(
    monkeypatch: pytest.MonkeyPatch, shared_count: None
) -> None:
    """A counting worker (counting/_worker.py, run here in a thread on two pipes) loads
    the bulk counter once it is idle after a job (not after the probe: the job that
    follows would wait for the load), and its counts stay what this process counts
    (runs.bounded_tokens over the shared encoding)."""
    texts = corpus(200, seed=17)
    expected = expected_counts(texts)
    with worker_on_pipes(monkeypatch, texts) as (ask, _send):
        assert ask() == expected  # the probe a worker answers first: no load after it
        time.sleep(2 * _worker.IDLE)
        assert "o200k_base" not in encodings._BULK
        assert ask() == expected  # a job: the load comes once the worker is idle
        deadline = time.monotonic() + 30
        while "o200k_base" not in encodings._BULK and time.monotonic() < deadline:
            time.sleep(0.02)
        assert encodings._BULK.get("o200k_base") is not None
        assert ask() == expected


def test_a_worker_asked_to_load_it_does_so_at_once_and_answers_only_texts(
    monkeypatch: pytest.MonkeyPatch, shared_count: None
) -> None:
    """For a call big enough for the bulk counter, the worker is asked to load it right
    after the probe (a frame holding None, not answered), so that it counts the call's
    first chunk with it: the load is done before that chunk, the next answer is that
    chunk's, and the counts stay what this process counts."""
    texts = corpus(200, seed=19)
    expected = expected_counts(texts)
    with worker_on_pipes(monkeypatch, texts) as (ask, send):
        assert ask() == expected  # the probe
        assert "o200k_base" not in encodings._BULK
        send(None)  # load it now
        assert ask() == expected  # answered after the load, with it
        assert encodings._BULK.get("o200k_base") is not None
