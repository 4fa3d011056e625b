"""Token counts kept between processes: a store of ``payload digest -> count``.

A long history in a fresh process is, in practice, a resumed session: an agent or a
proxy restarted, or a second proxy replica. Its messages were counted before, by us,
and a count is a pure function of the encoding, the counting rules and the text, so it
can outlive the process that made it. A count store keeps them: the key of a count is
the counting rules' fingerprint (``runs.rules_fingerprint``: the encoding's name and
``COUNT_RULES_VERSION``; other rules, another key space) followed by the 128-bit digest
an ``ExactCounter`` memoises the text's count under (``counters.digest``); the value is the
text's count (a message's count is it plus the per-message overhead).

Stores (URLs as the summary store's, stores.py): ``SqliteCountStore`` (one file in WAL
mode, shared by the processes of one machine; ``SELECT ... IN`` in batches),
``RedisCountStore`` (Redis or Valkey, for replicas on several machines: ``MGET`` and a
pipeline of ``SET ... EX``) and ``MemoryCountStore`` (tests, one process). Any object
with ``get_many(keys) -> {key: count}`` and ``put_many({key: count})`` works.

``CountLink`` is how governing uses a store, and what makes it optional: only an exact
counter (an encoding, no ``count`` hook, no chars/4 fallback) reads or writes; a read
that fails (a corrupt or locked file, a table of another shape, an unreachable server, a
value that is not a count) is reported in the report's notes ("count store: ...") and
everything is counted as without a store; a write that fails is dropped and warned about
once. After a failure the store is left alone for ``RETRY_AFTER`` seconds. A store never
fails a request and never changes a count.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import SimpleQueue
from typing import Any, Protocol, runtime_checkable

from ..errors import ConfigError
from ..messages import Message
from ..report import Note
from ..stores import SqliteFile, check_retention, expire, parse_url, redis_client
from ._background import in_background
from ._counters import (
    PER_MESSAGE_OVERHEAD,
    ExactCounter,
    Known,
    Pending,
    TokenCounter,
    digest,
    json_text,
    pending,
    seed_message_payload,
)

__all__ = [
    "KEY_PREFIX",
    "NOTE",
    "RETRY_AFTER",
    "CountLink",
    "CountStore",
    "Loaded",
    "MemoryCountStore",
    "RedisCountStore",
    "SqliteCountStore",
    "count_link",
    "flush",
    "open_count_store",
]

#: Key prefix in shared stores (Redis): names what the entries are.
KEY_PREFIX = "context-governor:count:"
#: Seconds a store that failed is left alone (its reads and writes are skipped).
RETRY_AFTER = 60.0
#: Every note about the store starts so (a Governor ignores them when it extends a result).
NOTE = "count store:"
#: Messages whose digests a big read makes before it hands their names to the store
#: (CountLink.read: the store looks them up while the next are made).
_READ_BATCH = 8192
#: Keys per SELECT at most (SQLite's own limit on host parameters may be lower: 999
#: before 3.32), and per MGET.
_BATCH = 10_000


@runtime_checkable
class CountStore(Protocol):
    """A count store: the counts of the keys it has, and a batch write."""

    def get_many(self, keys: Sequence[str]) -> dict[str, int]: ...

    def put_many(self, items: Mapping[str, int]) -> None: ...


def _count(value: Any, key: str) -> int:
    """A stored value as a count; ValueError (a failed read) when it is none."""
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"entry {key} is not a token count: {value!r}")
    return value


class MemoryCountStore:
    """A dict in this process (tests, one-off scripts); same retention rule as the others."""

    def __init__(self, retention_seconds: float | None = None) -> None:
        self.retention = check_retention(retention_seconds, "count store")
        self._data: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        oldest = -1.0 if self.retention is None else time.time() - self.retention
        with self._lock:
            found = [(key, self._data.get(key)) for key in keys]
        return {key: entry[0] for key, entry in found if entry is not None and entry[1] >= oldest}

    def put_many(self, items: Mapping[str, int]) -> None:
        now = time.time()
        with self._lock:
            self._data.update((key, (count, now)) for key, count in items.items())

    def __len__(self) -> int:
        return len(self._data)


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS counts ("
    "key TEXT PRIMARY KEY, count INTEGER NOT NULL, created REAL NOT NULL) WITHOUT ROWID"
)


class SqliteCountStore:
    """Counts in one SQLite file (WAL), shared by any number of processes.

    Reads are ``SELECT ... WHERE key IN (...)`` in batches; a write is one transaction
    (``INSERT OR REPLACE``: a count that is stored again is the same count, and its
    time is renewed). The file is opened on first use, not here: a file that cannot be
    read is a failed read (reported, counted instead), not a failed construction.
    Entries older than ``retention_seconds`` are not read, and are deleted on write.
    """

    def __init__(
        self, path: str | Path, retention_seconds: float | None = None, timeout: float = 5.0
    ) -> None:
        self.path = Path(path)
        self.retention = check_retention(retention_seconds, "count store")
        self._file = SqliteFile(self.path, _SCHEMA, "count store", timeout)

    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        conn = self._file.connect()
        if len(keys) > 1:
            joined = self._joined(conn, keys)
            if joined is not None:
                return joined
        return self._selected(conn, keys)

    def _joined(self, conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, int] | None:
        """The counts of ``keys`` from one query that returns one row (the positions and
        counts found, as text): SQLite runs all of it without holding the GIL, so a
        reader thread's query runs alongside the caller (CountLink.read). None when the
        query cannot be made (no JSON functions, another schema) or an entry is not a
        count: ``_selected`` then answers, or raises what a read must report."""
        fresh = "" if self.retention is None else " AND c.created >= ?"
        extra = () if self.retention is None else (time.time() - self.retention,)
        try:
            (text,) = conn.execute(
                "SELECT group_concat(j.key || ' ' || CASE WHEN typeof(c.count) = 'integer' "
                "AND c.count >= 0 THEN c.count ELSE '-' END, ' ') FROM json_each(?) AS j "
                f"JOIN counts AS c ON c.key = j.value{fresh}",
                (json.dumps(list(keys)), *extra),
            ).fetchone()
        except sqlite3.Error:
            return None
        if not text:
            return {}
        if "-" in text:
            return None  # a value that is not a count: _selected names it
        found = text.split(" ")
        return {keys[int(found[i])]: int(found[i + 1]) for i in range(0, len(found), 2)}

    def _selected(self, conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, int]:
        """The counts of ``keys`` by ``SELECT ... IN`` in batches; ValueError for an entry
        that is not a count."""
        size = min(_BATCH, conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
        # without retention, no entry is too old: the age is not even read
        fresh = "" if self.retention is None else " AND created >= ?"
        extra = () if self.retention is None else (time.time() - self.retention,)
        found: dict[str, int] = {}
        for start in range(0, len(keys), size - 1):
            batch = keys[start : start + size - 1]
            marks = ",".join("?" * len(batch))
            found.update(
                conn.execute(
                    f"SELECT key, count FROM counts WHERE key IN ({marks}){fresh}",
                    (*batch, *extra),
                ).fetchall()
            )
        for key, count in found.items():  # checked in one pass: ints are the rule
            if type(count) is not int or count < 0:
                raise ValueError(f"entry {key} is not a token count: {count!r}")
        return found

    def put_many(self, items: Mapping[str, int]) -> None:
        if not items:
            return
        conn = self._file.connect()
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO counts (key, count, created) VALUES (?, ?, ?)",
                [(key, count, now) for key, count in items.items()],
            )
            if self.retention is not None:
                expire(conn, "counts", now - self.retention, 1000)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


class RedisCountStore:
    """Counts in Redis or Valkey, shared by replicas on several machines: ``MGET`` reads,
    a pipeline of ``SET`` (with ``EX`` = the retention) writes. Needs the ``redis``
    client (``pip install context-governor[redis]``)."""

    def __init__(
        self, url: str, retention_seconds: float | None = None, timeout: float = 0.5
    ) -> None:
        self.url = url
        self.retention = check_retention(retention_seconds, "count store")
        self._client = redis_client(url, timeout, "count store")

    def get_many(self, keys: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for start in range(0, len(keys), _BATCH):
            batch = keys[start : start + _BATCH]
            values = self._client.mget([KEY_PREFIX + key for key in batch])
            for key, value in zip(batch, values, strict=True):
                if value is not None:
                    found[key] = _count(value, key)
        return found

    def put_many(self, items: Mapping[str, int]) -> None:
        ttl = None if self.retention is None else max(1, int(self.retention))
        pipe = self._client.pipeline(transaction=False)
        for key, count in items.items():
            pipe.set(KEY_PREFIX + key, count, ex=ttl)
        pipe.execute()


def open_count_store(url: str, retention_seconds: float | None = None) -> CountStore:
    """A count store from its URL (stores.parse_url: ``sqlite:///relative.db``,
    ``sqlite:////absolute.db``, ``redis://host:port/db``, ``valkey://``, ``memory://``);
    ConfigError for another URL."""
    kind, target = parse_url(url, "count store")
    if kind == "sqlite":
        return SqliteCountStore(target, retention_seconds)
    if kind == "redis":
        return RedisCountStore(target, retention_seconds)
    return MemoryCountStore(retention_seconds)


@dataclass(slots=True)
class Loaded:
    """What a read found: ``known`` (message counts by message identity, as
    ``counters.KnownCounts`` takes them: the memo's and the store's), the texts the store
    lacked (their digest and one message counted as that text, or None for the tool
    definitions), the rules read under and a note when the read failed."""

    rules: str
    known: Known = field(default_factory=Known)
    missing: list[tuple[bytes, Message | None]] = field(default_factory=list)
    note: str | None = None


class CountLink:
    """A count store as governing uses it: reads and writes that never raise (see the
    module docstring). One per Settings; thread-safe."""

    def __init__(self, store: CountStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._failed_at = -RETRY_AFTER
        self._warned = False
        #: the last failure, for callers and tests (None: none yet)
        self.failure: str | None = None

    def __repr__(self) -> str:
        return f"CountLink({self.store!r})"

    def _fail(self, what: str, exc: BaseException) -> str:
        with self._lock:
            self._failed_at = time.monotonic()
            self.failure = f"{NOTE} {what} failed ({exc!r})"
        return self.failure

    def _resting(self) -> bool:
        return time.monotonic() - self._failed_at < RETRY_AFTER

    def read(
        self,
        counter: TokenCounter,
        messages: Iterable[Message],
        tools: Sequence[Any] | None = None,
    ) -> Loaded | None:
        """The counts of ``messages`` (and of the tool definitions) that the counter's
        memo or the store has, the store's put into the memo; None when the counter's
        counts are not stored (see ExactCounter.store_rules). Builds the encoding."""
        if not isinstance(counter, ExactCounter):
            return None
        rules = counter.store_rules
        if rules is None:
            return None
        loaded = Loaded(rules)
        resting = self._resting()
        if not isinstance(messages, Sequence):
            messages = list(messages)
        # a big read: the store looks up each batch of names in a thread of its own while
        # this one makes the digests of the next (a SQLite query leaves the GIL)
        reader = None if resting or len(messages) <= _READ_BATCH else _Reader(self.store)
        wanted, names = _asked(counter, rules, messages, loaded.known, reader)
        tools_key = _tools_key(counter, tools, wanted)
        if tools_key is not None:
            names.append(rules + tools_key.hex())
            if reader is not None:
                reader.ask(names[-1:])
        found, error = self._look_up(names, reader, resting)
        if not names:
            return loaded
        if resting:
            loaded.note = Note(
                f"{self.failure}; not asked again yet: every count was made", "store"
            )
        elif error is not None:
            loaded.note = Note(self._fail("read", error) + ": every count was made", "store")
        keys = wanted.keys
        _take(counter, loaded, wanted, [found.get(name) for name in names[: len(keys)]])
        if tools_key is not None:
            count = found.get(names[-1])
            if count is None:
                loaded.missing.append((tools_key, None))
            else:
                counter.remember([(tools_key, count)])
        return loaded

    def _look_up(
        self, names: list[str], reader: _Reader | None, resting: bool
    ) -> tuple[dict[str, int], Exception | None]:
        """What the store has of ``names`` (from ``reader``, which was asked them all, or
        asked now), or nothing and what the look-up raised."""
        found: dict[str, int] = {}
        error: Exception | None = None
        if reader is not None:
            found, error = reader.result()
        elif names and not resting:
            try:
                found = self.store.get_many(names)
            except Exception as exc:
                error = exc
        return ({}, error) if error is not None else (found, None)

    def write(
        self,
        counter: TokenCounter,
        loaded: Loaded,
        known: Mapping[int, int],
    ) -> None:
        """Store the counts a run made of what ``loaded`` lacked: each message's from
        ``known`` (the run's KnownCounts), the tools' from the counter's memo."""
        items: dict[str, int] = {}
        for key, message in loaded.missing:
            if message is None:
                count = counter.memo(key) if isinstance(counter, ExactCounter) else None
            else:
                count = known.get(id(message))
                if count is not None:
                    count -= PER_MESSAGE_OVERHEAD
            if count is not None:
                items[loaded.rules + key.hex()] = count
        self.put(items)

    def write_later(
        self,
        counter: TokenCounter,
        loaded: Loaded,
        known: Mapping[int, int],
    ) -> None:
        """``write`` in the worker thread (background.in_background), off the caller's path."""
        if loaded.missing:
            in_background(_Call(lambda: self.write(counter, loaded, known)))

    def write_counts_later(
        self,
        counter: TokenCounter,
        messages: Sequence[Message],
        counts: Callable[[], Sequence[int]],
    ) -> None:
        """Store the counts of ``messages`` (a step's new messages; ``counts()`` gives
        them, waiting for the worker's counting if need be) in the worker thread."""

        def work() -> None:
            if not isinstance(counter, ExactCounter):
                return
            rules = counter.store_rules
            if rules is None:
                return
            items: dict[str, int] = {}
            for message, count in zip(messages, counts(), strict=True):
                if counter.rule_tokens(message):
                    continue  # a count with media or ciphertext in it is not the text's alone
                payload = seed_message_payload(message)
                if payload:
                    items[rules + digest(payload).hex()] = count - PER_MESSAGE_OVERHEAD
            self.put(items)

        in_background(_Call(work))

    def put(self, items: Mapping[str, int]) -> None:
        """One batch write; a failure is dropped and warned about once (never raised)."""
        if not items or self._resting():
            return
        try:
            self.store.put_many(items)
        except Exception as exc:
            message = self._fail("write", exc) + ": these counts were not stored"
            with self._lock:
                warned, self._warned = self._warned, True
            if not warned:
                warnings.warn(message, RuntimeWarning, stacklevel=2)


def _asked(
    counter: ExactCounter,
    rules: str,
    messages: Sequence[Message],
    known: Known,
    reader: _Reader | None,
) -> tuple[Pending, list[str]]:
    """The texts of ``messages`` the memo lacks and their names in the store, made a batch
    at a time; each batch's names are handed to ``reader`` as soon as they are made."""
    wanted = Pending()
    names: list[str] = []
    for start in range(0, len(messages), _READ_BATCH):
        pending(counter, messages[start : start + _READ_BATCH], known, wanted)
        made = len(names)
        names += [rules + key.hex() for key in wanted.keys[made:]]
        if reader is not None:
            reader.ask(names[made:])
    return wanted, names


def _tools_key(counter: ExactCounter, tools: Sequence[Any] | None, wanted: Pending) -> bytes | None:
    """The digest of the tool definitions' text when neither the memo nor ``wanted`` has it."""
    if tools:
        with contextlib.suppress(Exception):  # the run reports tools it cannot dump
            key = digest(json_text(tools))
            if counter.memo(key) is None and key not in wanted.index:
                return key
    return None


class _Reader:
    """A count store's ``get_many`` of batches of names, in a thread of its own: a big
    read asks for each batch as soon as its digests are made, and takes what was found
    once the last is asked. After a batch raises, the others are not asked."""

    def __init__(self, store: CountStore) -> None:
        self._store = store
        self._batches: SimpleQueue[list[str] | None] = SimpleQueue()
        self._found: dict[str, int] = {}
        self._error: Exception | None = None
        self._thread = threading.Thread(
            target=self._run, name="context-governor-count-read", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while (names := self._batches.get()) is not None:
            if self._error is None:
                try:
                    self._found.update(self._store.get_many(names))
                except Exception as exc:
                    self._error = exc

    def ask(self, names: list[str]) -> None:
        if names:
            self._batches.put(names)

    def result(self) -> tuple[dict[str, int], Exception | None]:
        """What the store had for every name asked, and what a look-up raised (if any)."""
        self._batches.put(None)
        self._thread.join()
        return self._found, self._error


def _take(counter: ExactCounter, loaded: Loaded, wanted: Pending, counts: list[int | None]) -> None:
    """What a read found for ``wanted``'s texts (``counts``, None where the store has
    none): found counts into the memo and, per message, into ``loaded.known``; the texts
    not found into ``loaded.missing``, each with the first message counted as it."""
    keys = wanted.keys
    counter.remember((key, c) for key, c in zip(keys, counts, strict=True) if c is not None)
    known = loaded.known
    for message, i in zip(wanted.messages, wanted.at, strict=True):
        count = counts[i]
        if count is not None:
            known[id(message)] = count + PER_MESSAGE_OVERHEAD
            known.kept.append(message)
    if None in counts:
        owners = wanted.owners()
        loaded.missing += [(keys[i], owners[i]) for i, c in enumerate(counts) if c is None]


class _Call:
    """A function as a worker job (background.Job); whatever it raises is dropped: a job
    must not end the worker, and a store write is optional."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn

    def run(self) -> None:
        try:
            self._fn()
        except Exception:  # a count hook or payload that fails: nothing stored
            return


def flush(timeout: float = 10.0) -> bool:
    """Wait until the worker thread has run every job queued so far (the writes queued by
    ``write_later`` and ``write_counts_later`` among them; jobs run in order); whether it
    did within ``timeout`` seconds. For tests, benchmarks and a process about to exit."""
    done = threading.Event()
    in_background(_Call(done.set))
    return done.wait(timeout)


def count_link(value: Any) -> CountLink | None:
    """``count_store=`` as Settings keep it: None, a URL (open_count_store), a store
    (get_many and put_many) or a CountLink. ConfigError otherwise."""
    if value is None or isinstance(value, CountLink):
        return value
    if isinstance(value, str):
        return CountLink(open_count_store(value))
    if callable(getattr(value, "get_many", None)) and callable(getattr(value, "put_many", None)):
        return CountLink(value)
    raise ConfigError(
        f"count_store must be a URL (sqlite:///file.db, redis://host:port/db, memory://) "
        f"or an object with get_many() and put_many(), got {value!r}"
    )
