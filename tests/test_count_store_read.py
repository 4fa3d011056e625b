"""A big read of the count store (CountLink.read): the store is asked once per batch of
messages, in a thread of its own while the next batch's digests are made, and answers
what one look-up of everything would; SQLite answers a batch in one query.

What must hold: the work is O(messages / batch) look-ups, not one per message; the
facts a read leaves (the counts by message, the texts to write back, the memo) are those
of a single look-up; a look-up that raises half way is a failed read, as before."""

from __future__ import annotations

import gc
import math
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import counting as tokens
from context_governor.counting import ExactCounter, KnownCounts, counting_encoding
from context_governor.counting import store as cs

Message = dict[str, Any]
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


class Counting(cs.MemoryCountStore):
    """A store that records the size of each look-up (and can fail at one of them)."""

    def __init__(self, fail_at: int | None = None) -> None:
        super().__init__()
        self.batches: list[int] = []
        self.fail_at = fail_at

    def get_many(self, keys: Any) -> dict[str, int]:
        self.batches.append(len(keys))
        if self.fail_at is not None and len(self.batches) == self.fail_at:
            raise OSError("disk on fire")
        return super().get_many(keys)


def _counter() -> ExactCounter:
    return ExactCounter(counting_encoding("o200k_base"))


def _history(n: int, seed: int = 5) -> list[Message]:
    """``n`` messages, some texts repeated (one look-up each), some with no text."""
    rng = random.Random(seed)
    out: list[Message] = []
    for i in range(n):
        text = f"text {rng.randrange(n)}" if i % 7 else ""
        out.append({"role": "user" if i % 2 else "assistant", "content": text})
    return out


def _filled(store: cs.MemoryCountStore, history: list[Message], share: float) -> None:
    """Counts for about ``share`` of the history's texts (as another process stored them)."""
    rules = tokens.rules_fingerprint("o200k_base")
    rng = random.Random(1)
    texts = {tokens.seed_message_payload(m) for m in history} - {""}
    store.put_many(
        {rules + tokens.digest(t).hex(): len(t) for t in sorted(texts) if rng.random() < share}
    )


def _read(
    monkeypatch: pytest.MonkeyPatch, batch: int, history: list[Message], store: Any
) -> tuple[cs.Loaded, ExactCounter]:
    monkeypatch.setattr(cs, "_READ_BATCH", batch)
    counter = _counter()
    loaded = cs.CountLink(store).read(counter, history, TOOLS)
    assert loaded is not None
    return loaded, counter


@pytest.mark.parametrize("n", [1_000, 2_000])
def test_a_big_read_asks_once_per_batch_and_finds_what_one_look_up_finds(
    monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    history = _history(n)
    batched, whole = Counting(), Counting()
    for store in (batched, whole):
        _filled(store, history, 0.6)
    loaded, counter = _read(monkeypatch, 64, history, batched)
    expected, reference = _read(monkeypatch, 10**9, history, whole)
    # O(n / batch) look-ups (one per batch of messages, the tools with the last), each
    # text asked once: never one look-up per message
    assert len(batched.batches) == math.ceil(n / 64) + 1
    assert len(whole.batches) == 1
    assert sum(batched.batches) == sum(whole.batches)
    assert loaded.known == expected.known
    assert loaded.missing == expected.missing
    assert loaded.note is None and expected.note is None
    assert list(counter._cache.items()) == list(reference._cache.items())


def test_a_look_up_that_raises_half_way_is_a_failed_read(monkeypatch: pytest.MonkeyPatch) -> None:
    history = _history(1_000)
    store = Counting(fail_at=3)
    _filled(store, history, 1.0)
    loaded, counter = _read(monkeypatch, 64, history, store)
    assert loaded.note is not None and "read failed" in loaded.note
    assert loaded.note.endswith("every count was made")
    assert loaded.known == {}  # nothing found is used: every text is counted
    texts = {tokens.seed_message_payload(m) for m in history} - {""}
    assert len(loaded.missing) == len(texts) + 1  # and the tools
    assert len(store.batches) == 3  # the batches after the failure are not asked
    assert not counter._cache


@settings(max_examples=60, deadline=None)
@given(
    present=st.lists(st.integers(0, 60), max_size=40),
    asked=st.lists(st.integers(0, 80), max_size=60),
    retention=st.sampled_from([None, 100.0]),
)
def test_sqlite_answers_a_batch_in_one_query_as_the_plain_query_does(
    tmp_path_factory: pytest.TempPathFactory,
    present: list[int],
    asked: list[int],
    retention: float | None,
) -> None:
    path = tmp_path_factory.mktemp("joined") / "c.db"
    store = cs.SqliteCountStore(path, retention)
    store.put_many({f"k{i}": i * 3 for i in present})
    conn = store._file.connect()
    keys = [f"k{i}" for i in asked]
    joined = store._joined(conn, keys)
    assert joined == store._selected(conn, keys)
    assert store.get_many(keys) == {k: int(k[1:]) * 3 for k in keys if int(k[1:]) in present}


@pytest.mark.parametrize("bad", ["'many'", "-1", "2.5", "NULL"])
def test_a_value_that_is_not_a_count_fails_the_read_as_before(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "v.db"
    store = cs.SqliteCountStore(path)
    store.put_many({"a": 1, "b": 2})
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE other (key TEXT PRIMARY KEY, count, created REAL)")
    conn.execute("INSERT INTO other SELECT key, count, created FROM counts")
    conn.execute("DROP TABLE counts")
    conn.execute("ALTER TABLE other RENAME TO counts")  # NOT NULL dropped: NULL can be held
    conn.execute(f"UPDATE counts SET count = {bad} WHERE key = 'b'")
    conn.commit()
    with pytest.raises(ValueError, match="entry b is not a token count"):
        store.get_many(["a", "b"])


def _containers_made(run: Any) -> int:
    """How many objects the garbage collector tracks after ``run()`` that it did not
    before (collection off meanwhile, so nothing made is untracked or collected)."""
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        kept = run()
        made = len(gc.get_objects()) - before
        del kept
    finally:
        gc.enable()
    return made


@pytest.mark.parametrize("n", [2_000, 4_000])
def test_a_read_and_its_counts_make_no_container_per_message(n: int) -> None:
    """Each container a long history's first call keeps made the garbage collector walk
    the whole heap once more every quarter of it (a tuple per message in the counts by
    identity, a tuple and a list per text in the read, at 100,000 messages two or three
    full collections). What a read and a KnownCounts over its counts make is a handful of
    containers whatever the length."""
    history = _history(n)
    store = Counting()
    _filled(store, history, 1.0)

    def read_and_ask() -> Any:
        counter = _counter()
        loaded = cs.CountLink(store).read(counter, history)
        assert loaded is not None
        known = KnownCounts(counter, loaded.known)
        assert all(known.message_tokens(m) > 0 for m in history)
        return loaded, known

    read_and_ask()  # what a first read makes once per process (compiled patterns...)
    assert _containers_made(read_and_ask) < 40
