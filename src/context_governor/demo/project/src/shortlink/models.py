"""Link records and the queries that read and write them."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .db import get_db, transaction
from .slugs import generate_slug, is_valid_custom_slug
from .timeutil import format_ts, is_expired, parse_ts, seconds_until, utcnow

__all__ = [
    "Link",
    "SlugTaken",
    "click_histogram",
    "create_link",
    "delete_link",
    "get_link",
    "is_valid_custom_slug",
    "iter_expiring",
    "list_links",
    "purge_expired",
    "record_click",
]


class SlugTaken(Exception):
    """A custom slug is already in use (generated slugs are retried instead)."""


@dataclass
class Link:
    id: int
    slug: str
    url: str
    created_at: datetime
    expires_at: datetime | None
    clicks: int
    last_click_at: datetime | None
    owner_token: str | None

    @property
    def expired(self) -> bool:
        return is_expired(self.expires_at)

    def to_dict(self, base_url: str) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "short_url": f"{base_url}/{self.slug}",
            "url": self.url,
            "created_at": format_ts(self.created_at),
            "expires_at": format_ts(self.expires_at),
            "expires_in_seconds": seconds_until(self.expires_at),
            "clicks": self.clicks,
        }


def _row_to_link(row: sqlite3.Row) -> Link:
    created_at = parse_ts(row["created_at"])
    assert created_at is not None, "created_at is NOT NULL"
    return Link(
        id=row["id"],
        slug=row["slug"],
        url=row["url"],
        created_at=created_at,
        expires_at=parse_ts(row["expires_at"]),
        clicks=row["clicks"],
        last_click_at=parse_ts(row["last_click_at"]),
        owner_token=row["owner_token"],
    )


def create_link(
    url: str,
    *,
    slug: str | None = None,
    expires_at: datetime | None = None,
    owner_token: str | None = None,
    slug_length: int = 7,
    attempts: int = 5,
) -> Link:
    """Insert a link. A custom ``slug`` that is taken raises SlugTaken; a
    generated one is retried up to ``attempts`` times."""
    conn = get_db()
    now = utcnow()
    if slug is not None:
        candidates = [slug]
    else:
        candidates = [generate_slug(slug_length) for _ in range(attempts)]
    for candidate in candidates:
        try:
            with transaction(conn):
                cur = conn.execute(
                    "INSERT INTO links (slug, url, created_at, expires_at, owner_token)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (candidate, url, format_ts(now), format_ts(expires_at), owner_token),
                )
        except sqlite3.IntegrityError:
            if slug is not None:
                raise SlugTaken(slug) from None
            continue
        link_id = cur.lastrowid
        assert link_id is not None
        return Link(link_id, candidate, url, now, expires_at, 0, None, owner_token)
    raise RuntimeError(f"could not find a free slug in {attempts} attempts; increase slug_length")


def get_link(slug: str) -> Link | None:
    row = get_db().execute("SELECT * FROM links WHERE slug = ?", (slug,)).fetchone()
    return None if row is None else _row_to_link(row)


def record_click(
    link_id: int, *, referrer: str | None = None, user_agent: str | None = None
) -> None:
    conn = get_db()
    stamp = format_ts(utcnow())
    with transaction(conn):
        conn.execute(
            "UPDATE links SET clicks = clicks + 1, last_click_at = ? WHERE id = ?",
            (stamp, link_id),
        )
        conn.execute(
            "INSERT INTO clicks (link_id, clicked_at, referrer, user_agent) VALUES (?, ?, ?, ?)",
            (link_id, stamp, referrer, (user_agent or "")[:512] or None),
        )


def delete_link(slug: str, owner_token: str) -> bool:
    """Delete ``slug`` if ``owner_token`` owns it; False if not found or not owned."""
    conn = get_db()
    with transaction(conn):
        cur = conn.execute(
            "DELETE FROM links WHERE slug = ? AND owner_token = ?", (slug, owner_token)
        )
    return cur.rowcount > 0


def list_links(owner_token: str, *, limit: int = 50, offset: int = 0) -> list[Link]:
    rows = get_db().execute(
        "SELECT * FROM links WHERE owner_token = ? ORDER BY created_at DESC, id DESC"
        " LIMIT ? OFFSET ?",
        (owner_token, limit, offset),
    )
    return [_row_to_link(row) for row in rows]


def click_histogram(link_id: int, *, days: int = 30) -> dict[str, int]:
    """Clicks per UTC day for the last ``days`` days, oldest first, zeros included."""
    today = utcnow().date()
    first = today - timedelta(days=days - 1)
    counts = {(first + timedelta(days=n)).isoformat(): 0 for n in range(days)}
    rows = get_db().execute(
        "SELECT substr(clicked_at, 1, 10) AS day, COUNT(*) AS n FROM clicks"
        " WHERE link_id = ? AND clicked_at >= ? GROUP BY day",
        (link_id, first.isoformat()),
    )
    for row in rows:
        if row["day"] in counts:
            counts[row["day"]] = row["n"]
    return counts


def iter_expiring(before: datetime) -> Iterator[Link]:
    """Links that have not expired yet but will before ``before``."""
    rows = get_db().execute(
        "SELECT * FROM links WHERE expires_at IS NOT NULL AND expires_at > ? AND expires_at <= ?"
        " ORDER BY expires_at",
        (format_ts(utcnow()), format_ts(before)),
    )
    for row in rows:
        yield _row_to_link(row)


def purge_expired(older_than: timedelta = timedelta(0)) -> int:
    """Delete links that expired more than ``older_than`` ago; returns how many."""
    cutoff = format_ts(utcnow() - older_than)
    conn = get_db()
    with transaction(conn):
        cur = conn.execute(
            "DELETE FROM links WHERE expires_at IS NOT NULL AND expires_at <= ?", (cutoff,)
        )
    return cur.rowcount
