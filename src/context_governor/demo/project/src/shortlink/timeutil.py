"""Time helpers.

Everything in the database is UTC. Timestamps are written as
``YYYY-MM-DDTHH:MM:SSZ`` so that they sort as text and are readable in the
sqlite shell.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

TS_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_DURATION = re.compile(
    r"^\s*(?:(?P<days>\d+)\s*d)?\s*(?:(?P<hours>\d+)\s*h)?\s*"
    r"(?:(?P<minutes>\d+)\s*m)?\s*(?:(?P<seconds>\d+)\s*s)?\s*$"
)


class ExpiryError(ValueError):
    """The client sent an expiry we cannot use."""


def utcnow() -> datetime:
    """The current time, naive, to the second.

    Naive on purpose: sqlite hands back naive values, and comparing naive with
    aware datetimes raises TypeError.
    """
    return datetime.now().replace(microsecond=0)  # noqa: DTZ005


def parse_duration(text: str) -> timedelta:
    """Parse ``"30m"``, ``"2h"``, ``"1h30m"``, ``"7d"``, ``"90s"`` into a timedelta."""
    match = _DURATION.match(text)
    if not match or not any(match.groupdict().values()):
        raise ExpiryError(f"not a duration: {text!r} (try '30m', '2h' or '7d')")
    parts = {unit: int(value) for unit, value in match.groupdict().items() if value}
    delta = timedelta(**parts)
    if not delta:
        raise ExpiryError("expires_in must be positive")
    return delta


def parse_expiry(
    expires_at: str | None = None,
    expires_in: int | str | None = None,
    *,
    now: datetime | None = None,
    max_ttl: int | None = None,
) -> datetime | None:
    """Turn the API's ``expires_at`` / ``expires_in`` fields into a UTC datetime.

    ``expires_at`` is an ISO-8601 timestamp (an offset or ``Z`` is honoured, a
    naive value is taken as UTC); ``expires_in`` is seconds or a duration
    string. Both at once is an error; neither means "never expires".
    """
    if expires_at is not None and expires_in is not None:
        raise ExpiryError("give expires_at or expires_in, not both")
    if now is None:
        now = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)
    if expires_in is not None:
        if isinstance(expires_in, bool) or not isinstance(expires_in, int | str):
            raise ExpiryError("expires_in must be a number of seconds or a duration like '2h'")
        if isinstance(expires_in, int):
            if expires_in <= 0:
                raise ExpiryError("expires_in must be positive")
            delta = timedelta(seconds=expires_in)
        else:
            delta = parse_duration(expires_in)
        result = now + delta
    elif expires_at is not None:
        if not isinstance(expires_at, str):
            raise ExpiryError("expires_at must be an ISO-8601 string")
        try:
            parsed = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
        except ValueError:
            raise ExpiryError(f"expires_at is not an ISO-8601 timestamp: {expires_at!r}") from None
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(timezone.utc).replace(tzinfo=None)
        result = parsed
    else:
        return None
    if result <= now:
        raise ExpiryError("expiry must be in the future")
    if max_ttl and result - now > timedelta(seconds=max_ttl):
        raise ExpiryError(f"expiry is too far in the future (at most {max_ttl // 86400} days)")
    return result.replace(microsecond=0)


def format_ts(dt: datetime | None) -> str | None:
    """Render a UTC timestamp the way it is stored (``None`` stays ``None``)."""
    if dt is None:
        return None
    return dt.strftime(TS_FORMAT)


def parse_ts(raw: str | None) -> datetime | None:
    """Inverse of :func:`format_ts`."""
    if raw is None:
        return None
    return datetime.strptime(raw, TS_FORMAT)  # noqa: DTZ007


def is_expired(expires_at: datetime | None, now: datetime | None = None) -> bool:
    if expires_at is None:
        return False
    now = now or utcnow()
    return now > expires_at


def seconds_until(when: datetime | None, now: datetime | None = None) -> int | None:
    """Whole seconds from ``now`` until ``when`` (negative once passed)."""
    if when is None:
        return None
    now = now or utcnow()
    return int((when - now).total_seconds())
