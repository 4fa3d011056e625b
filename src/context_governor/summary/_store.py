"""Where summaries live between requests and processes: a key -> text store.

A summary is keyed by the digest of what it summarizes and of the settings that
made it (see stages/_summary.py), so a store never needs invalidating: a changed
history or setting is a different key. Entries are small (one summary each) and
expire after ``retention_seconds`` (None keeps them).

Two real stores: ``SqliteStore`` (stdlib sqlite3, one file in WAL mode: several
processes on one machine share it safely) and ``RedisStore`` (Redis or Valkey,
for proxy replicas on several machines; the ``redis`` client is an extra,
imported when the store is made). ``MemoryStore`` is for tests and one-process
use. Any object with ``get`` and ``put`` works. A store that raises is reported
and the cut falls back to the plain note: a store never fails a request.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..stores import SqliteFile, check_retention, expire, parse_url, redis_client

__all__ = ["KEY_PREFIX", "MemoryStore", "RedisStore", "SqliteStore", "SummaryStore", "open_store"]

#: Key prefix in shared stores (Redis): names what the entries are.
KEY_PREFIX = "context-governor:summary:"


@runtime_checkable
class SummaryStore(Protocol):
    """A summary store: ``get`` a summary by key (None when absent), ``put`` one."""

    def get(self, key: str) -> str | None: ...

    def put(self, key: str, text: str) -> None: ...


def _check_retention(value: Any) -> float | None:
    return check_retention(value, "summary")


class MemoryStore:
    """A dict in this process (tests, one-off scripts); same retention rule as the others."""

    def __init__(self, retention_seconds: float | None = None) -> None:
        self.retention = _check_retention(retention_seconds)
        self._data: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            found = self._data.get(key)
        if found is None:
            return None
        text, at = found
        if self.retention is not None and time.time() - at > self.retention:
            return None
        return text

    def put(self, key: str, text: str) -> None:
        with self._lock:
            self._data.setdefault(key, (text, time.time()))


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS summaries ("
    "key TEXT PRIMARY KEY, text TEXT NOT NULL, created REAL NOT NULL)"
)


class SqliteStore:
    """Summaries in one SQLite file (WAL), shared by any number of processes.

    The first writer of a key wins (``INSERT OR IGNORE``): two processes that
    summarize the same block at once both end up sending the one stored text,
    because every request reads the summary back from the store after writing.
    Expired entries are deleted on write, a few at a time.
    """

    def __init__(
        self, path: str | Path, retention_seconds: float | None = None, timeout: float = 5.0
    ) -> None:
        self.path = Path(path)
        self.retention = _check_retention(retention_seconds)
        self.timeout = timeout
        self._file = SqliteFile(self.path, _SCHEMA, "summary store", timeout)
        self._connect = self._file.connect
        self._connect()  # fail early (ConfigError) on a path that cannot hold a database

    def get(self, key: str) -> str | None:
        row = (
            self._connect()
            .execute("SELECT text, created FROM summaries WHERE key = ?", (key,))
            .fetchone()
        )
        if row is None:
            return None
        text, created = row
        if not isinstance(text, str):
            raise ValueError(f"summary store {self.path}: entry {key} is not text")
        if self.retention is not None and time.time() - float(created) > self.retention:
            return None
        return text

    def put(self, key: str, text: str) -> None:
        conn = self._connect()
        now = time.time()
        conn.execute(
            "INSERT OR IGNORE INTO summaries (key, text, created) VALUES (?, ?, ?)",
            (key, text, now),
        )
        if self.retention is not None:
            expire(conn, "summaries", now - self.retention)


class RedisStore:
    """Summaries in Redis or Valkey, shared by proxy replicas on several machines.

    ``SET NX`` makes the first writer win, as in SqliteStore; retention is the
    key's expiry. Needs the ``redis`` client (``pip install context-governor[redis]``).
    """

    def __init__(
        self, url: str, retention_seconds: float | None = None, timeout: float = 2.0
    ) -> None:
        self.url = url
        self.retention = _check_retention(retention_seconds)
        self._client = redis_client(url, timeout, "summary store")

    def get(self, key: str) -> str | None:
        value = self._client.get(KEY_PREFIX + key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"summary store: entry {key} is not text")
        return value

    def put(self, key: str, text: str) -> None:
        ttl = None if self.retention is None else max(1, int(self.retention))
        self._client.set(KEY_PREFIX + key, text, nx=True, ex=ttl)


def open_store(url: str, retention_seconds: float | None = None) -> SummaryStore:
    """A store from its URL: ``sqlite:///relative.db`` or ``sqlite:////absolute.db``, ``redis://host:port/db``
    (``rediss://`` and ``valkey://`` too) or ``memory://``. ConfigError otherwise."""
    kind, target = parse_url(url, "summary store")
    if kind == "sqlite":
        return SqliteStore(target, retention_seconds)
    if kind == "redis":
        return RedisStore(target, retention_seconds)
    return MemoryStore(retention_seconds)
