"""SQLite access: one connection per request, closed on teardown."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources

from flask import Flask, current_app, g

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA journal_mode = WAL")
    return conn


def get_db() -> sqlite3.Connection:
    """The current request's connection, opened on first use."""
    if "db" not in g:
        g.db = connect(current_app.config["DATABASE"])
    conn: sqlite3.Connection = g.db
    return conn


def close_db(exc: BaseException | None = None) -> None:
    conn = g.pop("db", None)
    if conn is not None:
        conn.close()


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK if the block raises."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def schema_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0])


def init_db(conn: sqlite3.Connection) -> None:
    schema = resources.files("shortlink").joinpath("schema.sql").read_text(encoding="utf-8")
    conn.executescript(schema)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def migrate(conn: sqlite3.Connection) -> None:
    """Bring an existing database up to SCHEMA_VERSION (a new one is created)."""
    version = schema_version(conn)
    if version == SCHEMA_VERSION:
        return
    if version == 0:
        log.info("creating schema version %d", SCHEMA_VERSION)
        init_db(conn)
        return
    if version > SCHEMA_VERSION:
        raise RuntimeError(
            f"database schema {version} is newer than this shortlink ({SCHEMA_VERSION})"
        )
    with transaction(conn):
        if version == 1:
            log.info("migrating schema 1 -> 2: links.owner_token")
            conn.execute("ALTER TABLE links ADD COLUMN owner_token TEXT")
            conn.execute("CREATE INDEX IF NOT EXISTS idx_links_owner ON links (owner_token)")
            version = 2
        if version == 2:
            log.info("migrating schema 2 -> 3: clicks table")
            conn.execute(
                """
                CREATE TABLE IF NOT EXISTS clicks (
                    id         INTEGER PRIMARY KEY AUTOINCREMENT,
                    link_id    INTEGER NOT NULL REFERENCES links (id) ON DELETE CASCADE,
                    clicked_at TEXT    NOT NULL,
                    referrer   TEXT,
                    user_agent TEXT
                )
                """
            )
            conn.execute(
                "CREATE INDEX IF NOT EXISTS idx_clicks_link ON clicks (link_id, clicked_at)"
            )
            version = 3
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def init_app(app: Flask) -> None:
    app.teardown_appcontext(close_db)
    with app.app_context():
        migrate(get_db())
