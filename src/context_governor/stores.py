"""What the persistent stores share: their URLs, retention, SQLite files and Redis clients.

Two stores keep what a process worked out for other processes: the summary store
(summary/_store.py: key -> summary text) and the count store (counting/store.py: payload
digest -> token count). Both are named by the same URLs (``sqlite:///relative.db``,
``sqlite:////absolute.db``, ``redis://host:port/db``, ``rediss://``, ``valkey://``,
``memory://``), keep entries for the same kind of retention, and open SQLite files and
Redis clients the same way. ``what`` names the store in every error ("summary store",
"count store"), so a message says which option is wrong.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from .errors import ConfigError

__all__ = [
    "SCHEMES",
    "Kind",
    "SqliteFile",
    "check_retention",
    "expire",
    "parse_url",
    "redis_client",
]

Kind = Literal["sqlite", "redis", "memory"]
#: URL schemes a store accepts (proxy/_config.py checks URLs with it before opening one).
SCHEMES = ("sqlite", "redis", "rediss", "valkey", "valkeys", "memory")


def check_retention(value: Any, what: str) -> float | None:
    """Seconds an entry is kept, or None (kept as long as the store keeps it)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{what} retention must be a positive number of seconds, got {value!r}")
    return float(value)


def parse_url(url: Any, what: str) -> tuple[Kind, str]:
    """(kind, target) of a store URL: the file path of ``sqlite:///path`` (SQLAlchemy's
    convention: three slashes and a relative path, four and an absolute one), the
    ``redis://`` URL (``valkey://`` rewritten to it) or "" for ``memory://``."""
    if not isinstance(url, str) or not url:
        raise ConfigError(f"{what} must be a URL, got {url!r}")
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        path = url[len("sqlite:///") :] if url.lower().startswith("sqlite:///") else ""
        if not path:
            raise ConfigError(f"{what} {url!r}: sqlite:/// needs a file path")
        return "sqlite", path
    if scheme in ("redis", "rediss", "valkey", "valkeys"):
        if scheme.startswith("valkey"):
            url = "redis" + url[len("valkey") :]
        return "redis", url
    if scheme == "memory":
        return "memory", ""
    raise ConfigError(f"{what} {url!r}: use sqlite:///path, redis://host:port/db or memory://")


class SqliteFile:
    """One SQLite file in WAL mode, one connection per thread (a connection must not be
    shared between threads), autocommit unless a caller opens a transaction. WAL lets
    readers run while one process writes; writers wait for each other up to ``timeout``."""

    def __init__(self, path: str | Path, schema: str, what: str, timeout: float = 5.0) -> None:
        self.path = Path(path)
        self.schema = schema
        self.what = what
        self.timeout = timeout
        self._local = threading.local()

    def connect(self) -> sqlite3.Connection:
        """This thread's connection (opened, switched to WAL and given the schema on
        first use); ConfigError when the file cannot hold the database."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while True:
            try:
                conn = self._open()
                break
            except sqlite3.OperationalError as exc:
                # Switching a new file to WAL while another process does the same is
                # refused at once ("database is locked"): SQLite's busy handler does not
                # wait for that. Wait here instead, up to the same timeout.
                locked = "locked" in str(exc) or "busy" in str(exc)
                if not locked or time.monotonic() >= deadline:
                    raise ConfigError(f"{self.what} {self.path}: cannot open it ({exc})") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
            except sqlite3.Error as exc:
                raise ConfigError(f"{self.what} {self.path}: cannot open it ({exc})") from None
        self._local.conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(self.schema)
        except sqlite3.Error:
            conn.close()
            raise
        return conn


def expire(conn: sqlite3.Connection, table: str, before: float, limit: int = 100) -> None:
    """Delete up to ``limit`` entries of ``table`` created before ``before`` (a write does a
    few at a time, so no write pays for a whole expired store)."""
    conn.execute(
        f"DELETE FROM {table} WHERE key IN (SELECT key FROM {table} WHERE created < ? LIMIT ?)",
        (before, limit),
    )


def redis_client(url: str, timeout: float, what: str) -> Any:
    """A ``redis`` client for ``url`` (text replies); ConfigError without the client."""
    try:
        import redis
    except ImportError:
        raise ConfigError(
            f"{what} redis:// needs the redis client: pip install 'context-governor[redis]'"
        ) from None
    return redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, decode_responses=True
    )
