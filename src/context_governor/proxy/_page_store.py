"""The page's lasting record: what /ui shows and the savings it adds up survive a restart.

The journal (observer.py) keeps each conversation's totals and its requests' rows in
memory; with a page store, each request's row and its conversation's totals are also
written to a store, behind the request (a writer thread: a slow store never holds an
answer), and a starting proxy reads the newest of them back. Bounded as the journal
is: at most ``requests`` rows and ``conversations`` conversations are kept (the oldest
deleted as new ones come, a few hundred writes apart). Reports and message content are
not kept (they stay in memory, bounded): a row read back shows its figures, not its
report.

Stores (stores.parse_url): ``sqlite:///page.db`` (one machine; any number of processes),
``redis://host:port/db`` (replicas: a restarted one shows what the others served too,
and each conversation's totals are the last replica's to write them), ``memory://``
(none: a test's).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from ..stores import SqliteFile, parse_url, redis_client

__all__ = ["PageStore", "Saved", "open_page_store"]

log = logging.getLogger("context_governor.proxy")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS page (kind TEXT NOT NULL, key TEXT NOT NULL, "
    "at REAL NOT NULL, value TEXT NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID"
)
_PREFIX = "cg:page:"
#: rows written between two trims of the oldest
TRIM_EVERY = 200


@dataclass(frozen=True, slots=True)
class Saved:
    """What a store gives back: conversations (oldest active first) and rows (oldest
    first), each a JSON object as the journal wrote it."""

    conversations: list[dict[str, Any]]
    rows: list[dict[str, Any]]


class _Backend(Protocol):
    def write(self, conversation: dict[str, Any], row: dict[str, Any], key: str) -> None: ...

    def trim(self, conversations: int, rows: int) -> None: ...

    def read(self, conversations: int, rows: int) -> Saved: ...


class _Sqlite:
    def __init__(self, path: str) -> None:
        self._file = SqliteFile(path, _SCHEMA, "page store")

    def write(self, conversation: dict[str, Any], row: dict[str, Any], key: str) -> None:
        conn = self._file.connect()
        now = time.time()
        conn.executemany(
            "INSERT OR REPLACE INTO page (kind, key, at, value) VALUES (?, ?, ?, ?)",
            [
                ("c", conversation["id"], now, json.dumps(conversation)),
                ("r", key, now, json.dumps(row)),
            ],
        )

    def trim(self, conversations: int, rows: int) -> None:
        conn = self._file.connect()
        for kind, keep, order in (("c", conversations, "at"), ("r", rows, "key")):
            conn.execute(
                f"DELETE FROM page WHERE kind = ? AND key NOT IN (SELECT key FROM page "
                f"WHERE kind = ? ORDER BY {order} DESC LIMIT ?)",
                (kind, kind, keep),
            )

    def read(self, conversations: int, rows: int) -> Saved:
        conn = self._file.connect()
        convs = conn.execute(
            "SELECT value FROM page WHERE kind = 'c' ORDER BY at DESC LIMIT ?", (conversations,)
        ).fetchall()
        found = conn.execute(
            "SELECT value FROM page WHERE kind = 'r' ORDER BY key DESC LIMIT ?", (rows,)
        ).fetchall()
        return Saved(
            [json.loads(v) for (v,) in reversed(convs)], [json.loads(v) for (v,) in reversed(found)]
        )


class _Redis:
    def __init__(self, url: str) -> None:
        self._client = redis_client(url, 1.0, "page store")

    def write(self, conversation: dict[str, Any], row: dict[str, Any], key: str) -> None:
        pipe = self._client.pipeline(transaction=False)
        pipe.hset(_PREFIX + "conversations", conversation["id"], json.dumps(conversation))
        pipe.zadd(_PREFIX + "active", {conversation["id"]: time.time()})
        pipe.rpush(_PREFIX + "rows", json.dumps(row))
        pipe.execute()

    def trim(self, conversations: int, rows: int) -> None:
        client = self._client
        client.ltrim(_PREFIX + "rows", -rows, -1)
        old = client.zrange(_PREFIX + "active", 0, -(conversations + 1))
        if old:
            client.zrem(_PREFIX + "active", *old)
            client.hdel(_PREFIX + "conversations", *old)

    def read(self, conversations: int, rows: int) -> Saved:
        client = self._client
        ids = client.zrange(_PREFIX + "active", -conversations, -1)
        values = client.hmget(_PREFIX + "conversations", ids) if ids else []
        found = client.lrange(_PREFIX + "rows", -rows, -1)
        return Saved(
            [json.loads(v) for v in values if v is not None], [json.loads(v) for v in found]
        )


class PageStore:
    """Writes rows behind the requests (a daemon thread) and reads the newest back.
    A store that fails is said once in the log and then skipped: the page keeps
    working from memory."""

    def __init__(self, backend: _Backend, conversations: int, rows: int) -> None:
        self._backend = backend
        self._bounds = (conversations, rows)
        self._queue: queue.SimpleQueue[tuple[dict[str, Any], dict[str, Any]] | None] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._failed = False
        self._written = 0
        self._flushed = threading.Event()

    def load(self) -> Saved:
        """The newest conversations and rows (none when the store cannot be read)."""
        try:
            return self._backend.read(*self._bounds)
        except (sqlite3.Error, OSError, ValueError, ConnectionError) as exc:
            log.warning("page store: cannot read it (%s); the page starts empty", exc)
            return Saved([], [])

    def save(self, conversation: dict[str, Any], row: dict[str, Any]) -> None:
        """Queue a row and its conversation's totals for the writer (returns at once)."""
        if self._failed:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="page-store", daemon=True)
            self._thread.start()
        self._queue.put((conversation, row))

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until what was queued is written (tests; shutdown)."""
        if self._thread is None or self._failed:
            return
        self._flushed = threading.Event()
        self._queue.put(None)
        self._flushed.wait(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._flushed.set()
                continue
            try:
                self._write(*item)
            except Exception as exc:  # any store failure: said once, then skipped
                self._failed = True
                log.warning("page store: cannot write it (%s); the page stays in memory only", exc)
                return

    def _write(self, conversation: dict[str, Any], row: dict[str, Any]) -> None:
        key = f"{time.time_ns():020d}-{os.getpid()}-{self._written}"
        self._backend.write(conversation, row, key)
        self._written += 1
        if self._written % TRIM_EVERY == 1:
            self._backend.trim(*self._bounds)


def open_page_store(url: str, conversations: int, rows: int) -> PageStore | None:
    """The page store of ``url`` (None for ``memory://``); ConfigError for another URL."""
    kind, target = parse_url(url, "page store")
    if kind == "memory":
        return None
    backend: _Backend = _Sqlite(target) if kind == "sqlite" else _Redis(target)
    return PageStore(backend, conversations, rows)
