# ruff: noqa: E501  (file contents are data)
"""``shortlink``, a small Flask + SQLite URL shortener: the invented project of the
bundled example session (examples/make_coding_session.py edits an in-memory copy as
its agent works) and the sample workspace of ``context-governor demo``.

It lives in the package so that the demo works from an installed wheel; the demo
writes the files named in DEMO_FILES.
"""

FILES: dict[str, str] = {}

FILES[".gitignore"] = r"""__pycache__/
*.py[cod]
*.egg-info/
.venv/
.pytest_cache/
.mypy_cache/
.ruff_cache/
.coverage
htmlcov/
instance/
dist/
build/
"""

FILES["pyproject.toml"] = r"""[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "shortlink"
version = "0.4.2"
description = "A tiny self-hosted URL shortener (Flask + SQLite)"
readme = "README.md"
requires-python = ">=3.10"
license = { text = "MIT" }
authors = [{ name = "Mara Lindqvist", email = "mara@lindqvist.dev" }]
dependencies = [
    "Flask>=3.0",
    "itsdangerous>=2.1",
]

[project.optional-dependencies]
dev = [
    "pytest>=8.0",
    "pytest-cov>=5.0",
    "pytest-xdist>=3.5",
    "freezegun>=1.4",
    "ruff>=0.6",
    "mypy>=1.10",
]

[project.scripts]
shortlink = "shortlink.cli:main"

[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.package-data]
shortlink = ["schema.sql"]

[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-ra --strict-markers"
log_level = "INFO"
markers = ["slow: tests that sleep or hammer the rate limiter"]
filterwarnings = ["default::DeprecationWarning:shortlink.*"]

[tool.coverage.run]
source = ["shortlink"]
branch = true

[tool.ruff]
line-length = 100
target-version = "py310"

[tool.ruff.lint]
select = ["E", "F", "I", "B", "UP", "DTZ", "SIM"]

[tool.mypy]
python_version = "3.10"
strict = true
packages = ["shortlink"]
"""

FILES["README.md"] = r"""# shortlink

A tiny self-hosted URL shortener: one Flask app, one SQLite file, no JavaScript.

```
$ curl -s -X POST https://sho.rt/api/links \
    -H 'Content-Type: application/json' \
    -d '{"url": "https://example.com/some/very/long/path?utm_source=newsletter", "expires_in": "7d"}'
{
  "slug": "k3XbR9q",
  "short_url": "https://sho.rt/k3XbR9q",
  "url": "https://example.com/some/very/long/path?utm_source=newsletter",
  "created_at": "2024-11-02T09:14:03Z",
  "expires_at": "2024-11-09T09:14:03Z",
  "expires_in_seconds": 604800,
  "clicks": 0,
  "owner_token": "h0Vd2v1oQ0W8m5pQm3Qv7mC1xk2VQb6T"
}
```

## API

| Method | Path | What it does |
| --- | --- | --- |
| `POST` | `/api/links` | Create a link. Body: `url` (required), `slug`, `expires_in` (seconds or `"30m"`, `"2h"`, `"7d"`), `expires_at` (ISO-8601). |
| `GET` | `/api/links` | Your links (needs `X-Owner-Token`), newest first; `?limit=&offset=`. |
| `GET` | `/api/links/<slug>` | One link. |
| `GET` | `/api/links/<slug>/stats` | Clicks, last click, clicks per day for the last 30 days (needs `X-Owner-Token`). |
| `DELETE` | `/api/links/<slug>` | Delete a link (needs `X-Owner-Token`). |
| `GET` | `/<slug>` | `302` to the target; `404` if unknown; `410 Gone` once expired. |

The owner token is returned once, when the link is created. Send the same
`X-Owner-Token` header on create to group links under a token you already have.

### Expiry

A link stops working at its `expires_at`. `expires_in` is relative to the time
of the request; `expires_at` may carry an offset (`+02:00`) and is stored in
UTC. All timestamps in responses are UTC with a `Z` suffix.

## Configuration

Environment variables, all optional:

| Variable | Default | |
| --- | --- | --- |
| `SHORTLINK_DATABASE` | `instance/shortlink.sqlite3` | SQLite file |
| `SHORTLINK_BASE_URL` | `http://localhost:5000` | Used to build `short_url` |
| `SHORTLINK_SECRET_KEY` | `dev` | Flask secret key; **set this in production** |
| `SHORTLINK_SLUG_LENGTH` | `7` | Length of generated slugs |
| `SHORTLINK_DEFAULT_TTL` | `0` | Seconds; `0` means links never expire unless asked to |
| `SHORTLINK_MAX_TTL` | `31536000` | Longest allowed expiry (one year) |
| `SHORTLINK_RATE_LIMIT` | `60` | Write requests per minute per client |
| `SHORTLINK_RATE_BURST` | `20` | Bucket size of the rate limiter |
| `SHORTLINK_BLOCKED_HOSTS` | | Comma-separated hosts that cannot be shortened |

## Development

```
python -m venv .venv && . .venv/bin/activate
pip install -e '.[dev]'
pytest                 # the test-suite
ruff check . && mypy   # what CI runs besides the tests
flask --app shortlink run --debug
```

Maintenance commands: `flask --app shortlink purge-expired` and
`flask --app shortlink list-expiring --within 24h`.
"""

FILES["CHANGELOG.md"] = r"""# Changelog

All notable changes to this project are documented here. The format follows
[Keep a Changelog](https://keepachangelog.com/en/1.1.0/).

## [Unreleased]

## [0.4.2] - 2024-10-21

### Fixed
- `POST /api/links` returned 500 instead of 422 for `expires_in: true`.
- Custom slugs that collide with reserved paths (`api`, `healthz`, `static`) are rejected.

## [0.4.1] - 2024-09-30

### Added
- `expires_at` accepts an offset (`2024-10-01T12:00:00+02:00`); it is converted to UTC.
- `flask list-expiring --within 24h`.

### Changed
- Rate limiting only applies to write requests.

## [0.4.0] - 2024-09-02

### Added
- Per-link click statistics: `GET /api/links/<slug>/stats`.
- Owner tokens; listing and deleting links requires one.

### Changed
- Schema version 3 (new `clicks` table); migrated automatically on start.
"""

FILES[".github/workflows/ci.yml"] = r"""name: ci

on:
  push:
    branches: [main]
  pull_request:

jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.10", "3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python-version }}
          cache: pip
      - run: pip install -e '.[dev]'
      - run: ruff check .
      - run: mypy
      - run: pytest -n auto --cov --cov-report=term-missing
"""

FILES["src/shortlink/__init__.py"] = r'''"""shortlink: a tiny self-hosted URL shortener."""

from __future__ import annotations

import logging
import os
from typing import Any

from flask import Flask, jsonify

from . import db
from .cli import register_commands
from .config import load_config
from .ratelimit import RateLimiter

__version__ = "0.4.2"

log = logging.getLogger(__name__)


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    """Application factory.

    ``overrides`` is merged over the configuration read from the environment;
    the test-suite uses it to point the app at a temporary database.
    """
    app = Flask(__name__, instance_relative_config=True)
    config = load_config(os.environ)
    if overrides:
        config = config.replace(**overrides)
    app.config.from_mapping(config.as_flask_config())
    app.extensions["shortlink.config"] = config

    os.makedirs(app.instance_path, exist_ok=True)
    db.init_app(app)

    app.extensions["shortlink.limiter"] = RateLimiter(
        capacity=config.rate_limit_burst,
        refill_per_second=config.rate_limit_per_minute / 60.0,
    )

    from .routes import api, redirects

    app.register_blueprint(api, url_prefix="/api")
    app.register_blueprint(redirects)
    register_commands(app)

    @app.errorhandler(404)
    def not_found(err: Exception) -> tuple[Any, int]:
        return jsonify(error="not_found", message="No such link."), 404

    @app.errorhandler(405)
    def method_not_allowed(err: Exception) -> tuple[Any, int]:
        return jsonify(error="method_not_allowed", message=str(err)), 405

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok", "version": __version__}

    log.info("shortlink %s ready (db=%s)", __version__, config.database)
    return app
'''

FILES[
    "src/shortlink/config.py"
] = r'''"""Configuration, read from SHORTLINK_* environment variables."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PREFIX = "SHORTLINK_"


class ConfigError(ValueError):
    """An environment variable has a value we cannot use."""


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(PREFIX + key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{PREFIX}{key} must be an integer, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{PREFIX}{key} must be >= 0, got {value}")
    return value


@dataclass(frozen=True)
class Config:
    database: str = "instance/shortlink.sqlite3"
    base_url: str = "http://localhost:5000"
    secret_key: str = "dev"
    slug_length: int = 7
    max_url_length: int = 2048
    default_ttl_seconds: int = 0  # 0: links never expire unless asked to
    max_ttl_seconds: int = 60 * 60 * 24 * 365
    rate_limit_per_minute: int = 60
    rate_limit_burst: int = 20
    blocked_hosts: tuple[str, ...] = ()

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    def as_flask_config(self) -> dict[str, Any]:
        return {
            "SECRET_KEY": self.secret_key,
            "DATABASE": self.database,
            "BASE_URL": self.base_url.rstrip("/"),
        }


def load_config(env: Mapping[str, str]) -> Config:
    defaults = Config()
    blocked = tuple(
        host.strip().lower()
        for host in env.get(PREFIX + "BLOCKED_HOSTS", "").split(",")
        if host.strip()
    )
    slug_length = _int(env, "SLUG_LENGTH", defaults.slug_length)
    if not 4 <= slug_length <= 32:
        raise ConfigError(f"{PREFIX}SLUG_LENGTH must be between 4 and 32, got {slug_length}")
    return Config(
        database=env.get(PREFIX + "DATABASE", defaults.database),
        base_url=env.get(PREFIX + "BASE_URL", defaults.base_url),
        secret_key=env.get(PREFIX + "SECRET_KEY", defaults.secret_key),
        slug_length=slug_length,
        max_url_length=_int(env, "MAX_URL_LENGTH", defaults.max_url_length),
        default_ttl_seconds=_int(env, "DEFAULT_TTL", defaults.default_ttl_seconds),
        max_ttl_seconds=_int(env, "MAX_TTL", defaults.max_ttl_seconds),
        rate_limit_per_minute=_int(env, "RATE_LIMIT", defaults.rate_limit_per_minute),
        rate_limit_burst=_int(env, "RATE_BURST", defaults.rate_limit_burst),
        blocked_hosts=blocked,
    )
'''

FILES["src/shortlink/schema.sql"] = r"""-- shortlink schema, version 3.
-- Timestamps are TEXT, ISO-8601 in UTC with a Z suffix ("2024-03-01T12:00:00Z"),
-- so that they sort correctly as text and read well in the sqlite shell.

CREATE TABLE IF NOT EXISTS links (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    slug          TEXT    NOT NULL UNIQUE,
    url           TEXT    NOT NULL,
    created_at    TEXT    NOT NULL,
    expires_at    TEXT,
    clicks        INTEGER NOT NULL DEFAULT 0,
    last_click_at TEXT,
    owner_token   TEXT
);

CREATE INDEX IF NOT EXISTS idx_links_owner ON links (owner_token);
CREATE INDEX IF NOT EXISTS idx_links_expires ON links (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS clicks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    link_id    INTEGER NOT NULL REFERENCES links (id) ON DELETE CASCADE,
    clicked_at TEXT    NOT NULL,
    referrer   TEXT,
    user_agent TEXT
);

CREATE INDEX IF NOT EXISTS idx_clicks_link ON clicks (link_id, clicked_at);
"""

FILES[
    "src/shortlink/db.py"
] = r'''"""SQLite access: one connection per request, closed on teardown."""

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
'''

FILES["src/shortlink/timeutil.py"] = r'''"""Time helpers.

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
'''

FILES["src/shortlink/slugs.py"] = r'''"""Slugs: the short part of a short link."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

# Base62 without the characters people confuse when they type a link from a
# screenshot: 0/O, 1/l/I.
ALPHABET = "23456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"

RESERVED = frozenset({"api", "healthz", "static", "admin", "login", "logout", "favicon.ico"})

_CUSTOM = re.compile(r"^[A-Za-z0-9_-]{3,64}$")


def generate_slug(length: int = 7, choice: Callable[[str], str] = secrets.choice) -> str:
    """A random slug of ``length`` characters from :data:`ALPHABET`."""
    if length < 1:
        raise ValueError("slug length must be positive")
    return "".join(choice(ALPHABET) for _ in range(length))


def is_valid_custom_slug(slug: object) -> bool:
    """Custom slugs: 3-64 of letters, digits, '-' and '_', and not a reserved path."""
    return (
        isinstance(slug, str)
        and bool(_CUSTOM.match(slug))
        and slug.lower() not in RESERVED
    )


def keyspace(length: int) -> int:
    """How many distinct generated slugs of this length exist."""
    return int(len(ALPHABET) ** length)
'''

FILES[
    "src/shortlink/validators.py"
] = r'''"""URL validation and normalisation for links people submit."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}


class UrlError(ValueError):
    """The submitted URL cannot be shortened; the message says why."""


def _is_private_host(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
    )


def normalize_url(
    raw: object,
    *,
    max_length: int = 2048,
    blocked_hosts: tuple[str, ...] = (),
) -> str:
    """Return ``raw`` as a canonical http(s) URL, or raise UrlError.

    Canonical means: scheme and host lower-cased, IDNA-encoded host, default
    port removed, empty path turned into ``/``. Query and fragment are kept
    as they are (people shorten tracking links on purpose).
    """
    if not isinstance(raw, str) or not raw.strip():
        raise UrlError("url is required")
    text = raw.strip()
    if len(text) > max_length:
        raise UrlError(f"url is longer than {max_length} characters")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise UrlError("only http and https URLs can be shortened")
    if not parts.hostname:
        raise UrlError("url has no host")
    try:
        host = parts.hostname.encode("idna").decode("ascii")
    except UnicodeError:
        raise UrlError(f"invalid host name: {parts.hostname!r}") from None
    if _is_private_host(host):
        raise UrlError("links to private or local addresses are not allowed")
    if host in blocked_hosts or any(host.endswith("." + b) for b in blocked_hosts):
        raise UrlError(f"links to {host} are not allowed")
    try:
        port = parts.port
    except ValueError:
        raise UrlError("url has an invalid port") from None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    if parts.username or parts.password:
        raise UrlError("urls with credentials are not allowed")
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, parts.fragment))
'''

FILES[
    "src/shortlink/ratelimit.py"
] = r'''"""A token-bucket rate limiter, per client key, in process memory.

Good enough for one process; behind several workers each one has its own
buckets, which makes the effective limit N times higher. Documented, accepted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(
        self,
        capacity: int,
        refill_per_second: float,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 10_000,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if refill_per_second <= 0:
            raise ValueError("refill_per_second must be positive")
        self.capacity = capacity
        self.refill_per_second = refill_per_second
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def _refill(self, bucket: _Bucket, now: float) -> None:
        elapsed = max(0.0, now - bucket.updated)
        bucket.tokens = min(self.capacity, bucket.tokens + elapsed * self.refill_per_second)
        bucket.updated = now

    def _bucket(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._max_keys:
                self._evict(now)
            bucket = self._buckets[key] = _Bucket(tokens=float(self.capacity), updated=now)
        return bucket

    def _evict(self, now: float) -> None:
        """Forget buckets that have refilled completely (they carry no state)."""
        full_after = self.capacity / self.refill_per_second
        stale = [k for k, b in self._buckets.items() if now - b.updated >= full_after]
        for key in stale:
            del self._buckets[key]
        if len(self._buckets) >= self._max_keys:
            oldest = min(self._buckets, key=lambda k: self._buckets[k].updated)
            del self._buckets[oldest]

    def allow(self, key: str, cost: float = 1.0) -> bool:
        with self._lock:
            now = self._clock()
            bucket = self._bucket(key, now)
            self._refill(bucket, now)
            if bucket.tokens >= cost:
                bucket.tokens -= cost
                return True
            return False

    def retry_after(self, key: str, cost: float = 1.0) -> float:
        """Seconds until ``allow(key, cost)`` would succeed."""
        with self._lock:
            now = self._clock()
            bucket = self._bucket(key, now)
            self._refill(bucket, now)
            missing = cost - bucket.tokens
            return max(0.0, missing / self.refill_per_second)
'''

FILES["src/shortlink/models.py"] = r'''"""Link records and the queries that read and write them."""

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
'''

FILES[
    "src/shortlink/routes.py"
] = r'''"""HTTP endpoints: the JSON API under /api and the redirects at /<slug>."""

from __future__ import annotations

import logging
import secrets

from flask import Blueprint, Response, abort, current_app, jsonify, redirect, request
from werkzeug.wrappers import Response as BaseResponse

from . import models
from .config import Config
from .ratelimit import RateLimiter
from .timeutil import ExpiryError, format_ts, parse_expiry
from .validators import UrlError, normalize_url

log = logging.getLogger(__name__)

api = Blueprint("api", __name__)
redirects = Blueprint("redirects", __name__)

OWNER_HEADER = "X-Owner-Token"
MAX_PAGE = 200

ApiResponse = tuple[Response, int] | Response


def _config() -> Config:
    config: Config = current_app.extensions["shortlink.config"]
    return config


def _limiter() -> RateLimiter:
    limiter: RateLimiter = current_app.extensions["shortlink.limiter"]
    return limiter


def _client_key() -> str:
    forwarded = request.headers.get("X-Forwarded-For", "")
    return forwarded.split(",")[0].strip() or request.remote_addr or "unknown"


def _error(code: str, message: str, status: int) -> tuple[Response, int]:
    return jsonify(error=code, message=message), status


def _owner_or_401() -> str:
    token = request.headers.get(OWNER_HEADER, "").strip()
    if not token:
        resp, status = _error("unauthorized", f"Send your {OWNER_HEADER} header.", 401)
        resp.status_code = status
        abort(resp)
    return token


@api.before_request
def _rate_limit() -> tuple[Response, int] | None:
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return None
    key = _client_key()
    if _limiter().allow(key):
        return None
    retry = _limiter().retry_after(key)
    resp, status = _error("rate_limited", "Too many requests, slow down.", 429)
    resp.headers["Retry-After"] = str(max(1, round(retry)))
    log.warning("rate limited client=%s retry_after=%.1fs", key, retry)
    return resp, status


@api.post("/links")
def create_link() -> ApiResponse:
    payload = request.get_json(silent=True)
    if not isinstance(payload, dict):
        return _error("bad_request", "Expected a JSON object.", 400)
    config = _config()
    try:
        url = normalize_url(
            payload.get("url"),
            max_length=config.max_url_length,
            blocked_hosts=config.blocked_hosts,
        )
    except UrlError as exc:
        return _error("invalid_url", str(exc), 422)

    expires_at_raw = payload.get("expires_at")
    expires_in = payload.get("expires_in")
    if expires_at_raw is None and expires_in is None and config.default_ttl_seconds:
        expires_in = config.default_ttl_seconds
    try:
        expires_at = parse_expiry(expires_at_raw, expires_in, max_ttl=config.max_ttl_seconds)
    except ExpiryError as exc:
        return _error("invalid_expiry", str(exc), 422)

    slug = payload.get("slug")
    if slug is not None and not models.is_valid_custom_slug(slug):
        return _error(
            "invalid_slug",
            "Custom slugs are 3-64 characters of letters, digits, '-' and '_'.",
            422,
        )
    owner_token = request.headers.get(OWNER_HEADER, "").strip() or secrets.token_urlsafe(24)
    try:
        link = models.create_link(
            url,
            slug=slug,
            expires_at=expires_at,
            owner_token=owner_token,
            slug_length=config.slug_length,
        )
    except models.SlugTaken:
        return _error("slug_taken", f"The slug {slug!r} is already in use.", 409)

    log.info(
        "created slug=%s url=%s expires_at=%s", link.slug, link.url, format_ts(link.expires_at)
    )
    body = link.to_dict(config.base_url)
    body["owner_token"] = owner_token
    resp = jsonify(body)
    resp.headers["Location"] = f"{config.base_url}/api/links/{link.slug}"
    return resp, 201


@api.get("/links")
def list_links() -> ApiResponse:
    owner = _owner_or_401()
    try:
        limit = min(MAX_PAGE, max(1, int(request.args.get("limit", 50))))
        offset = max(0, int(request.args.get("offset", 0)))
    except ValueError:
        return _error("bad_request", "limit and offset must be integers.", 400)
    base = _config().base_url
    links = models.list_links(owner, limit=limit, offset=offset)
    return jsonify(
        links=[link.to_dict(base) for link in links],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if len(links) == limit else None,
    )


@api.get("/links/<slug>")
def get_link(slug: str) -> ApiResponse:
    link = models.get_link(slug)
    if link is None:
        abort(404)
    body = link.to_dict(_config().base_url)
    body["expired"] = link.expired
    return jsonify(body)


@api.get("/links/<slug>/stats")
def link_stats(slug: str) -> ApiResponse:
    owner = _owner_or_401()
    link = models.get_link(slug)
    if link is None or link.owner_token != owner:
        abort(404)
    return jsonify(
        slug=link.slug,
        clicks=link.clicks,
        last_click_at=format_ts(link.last_click_at),
        daily=models.click_histogram(link.id),
    )


@api.delete("/links/<slug>")
def delete_link(slug: str) -> ApiResponse:
    owner = _owner_or_401()
    if not models.delete_link(slug, owner):
        abort(404)
    log.info("deleted slug=%s", slug)
    return Response(status=204)


@redirects.route("/<slug>", methods=["GET", "HEAD"])
def follow(slug: str) -> tuple[Response, int] | BaseResponse:
    link = models.get_link(slug)
    if link is None:
        abort(404)
    if link.expired:
        log.info("redirect slug=%s expired at %s", slug, format_ts(link.expires_at))
        return _error("expired", "This link has expired.", 410)
    models.record_click(
        link.id,
        referrer=request.referrer,
        user_agent=request.user_agent.string,
    )
    return redirect(link.url, code=302)
'''

FILES[
    "src/shortlink/cli.py"
] = r'''"""Maintenance commands, registered on the Flask CLI (``flask --app shortlink ...``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import click
from flask import Flask
from flask.cli import with_appcontext

from . import models
from .db import get_db, init_db, schema_version
from .timeutil import ExpiryError, format_ts, parse_duration


def humanize(delta: timedelta) -> str:
    """``timedelta(hours=26, minutes=5)`` -> ``"1d 2h"``; coarse on purpose."""
    seconds = int(delta.total_seconds())
    if seconds < 0:
        return "expired"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m" if minutes else f"{seconds}s"


@click.command("init-db")
@click.option("--force", is_flag=True, help="Recreate the schema even if it exists.")
@with_appcontext
def init_db_command(force: bool) -> None:
    """Create the database schema."""
    conn = get_db()
    if schema_version(conn) and not force:
        click.echo(f"schema version {schema_version(conn)} already present (use --force)")
        return
    init_db(conn)
    click.echo("initialised the database")


@click.command("purge-expired")
@click.option("--grace", default="0s", show_default=True, help="Keep links this long after expiry.")
@with_appcontext
def purge_expired_command(grace: str) -> None:
    """Delete links that have expired."""
    try:
        older_than = parse_duration(grace) if grace not in ("0", "0s") else timedelta(0)
    except ExpiryError as exc:
        raise click.BadParameter(str(exc), param_hint="--grace") from None
    count = models.purge_expired(older_than)
    click.echo(f"purged {count} expired link{'s' if count != 1 else ''}")


@click.command("list-expiring")
@click.option("--within", default="24h", show_default=True, help="Look this far ahead.")
@with_appcontext
def list_expiring_command(within: str) -> None:
    """Show links that expire soon, soonest first."""
    try:
        horizon = datetime.utcnow() + parse_duration(within)  # noqa: DTZ003
    except ExpiryError as exc:
        raise click.BadParameter(str(exc), param_hint="--within") from None
    found = 0
    for link in models.iter_expiring(before=horizon):
        assert link.expires_at is not None
        remaining = link.expires_at - datetime.utcnow()  # noqa: DTZ003
        click.echo(f"{link.slug}\t{format_ts(link.expires_at)}\t{humanize(remaining)}\t{link.url}")
        found += 1
    if not found:
        click.echo(f"no links expire within {within}")


def register_commands(app: Flask) -> None:
    app.cli.add_command(init_db_command)
    app.cli.add_command(purge_expired_command)
    app.cli.add_command(list_expiring_command)


def main() -> None:
    """Entry point of the ``shortlink`` script: ``flask --app shortlink`` in disguise."""
    from flask.cli import FlaskGroup

    from . import create_app

    FlaskGroup(create_app=create_app)()
'''

FILES["tests/__init__.py"] = ""

FILES["tests/conftest.py"] = r'''from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from shortlink import create_app

OWNER = "test-owner-token-0001"


@pytest.fixture
def app(tmp_path) -> Iterator[Flask]:
    app = create_app(
        {
            "database": str(tmp_path / "shortlink.sqlite3"),
            "base_url": "https://sho.rt",
            # generous limits: only test_ratelimit.py wants to hit them
            "rate_limit_per_minute": 60_000,
            "rate_limit_burst": 1_000,
        }
    )
    app.config.update(TESTING=True)
    yield app


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    return app.test_cli_runner()


@pytest.fixture
def owner() -> dict[str, str]:
    return {"X-Owner-Token": OWNER}


@pytest.fixture
def make_link(client: FlaskClient, owner: dict[str, str]) -> Callable[..., dict[str, Any]]:
    """POST /api/links and return the JSON body; fails the test on anything but 201."""

    def _make(url: str = "https://example.com/", **fields: Any) -> dict[str, Any]:
        resp = client.post("/api/links", json={"url": url, **fields}, headers=owner)
        assert resp.status_code == 201, resp.get_json()
        body: dict[str, Any] = resp.get_json()
        return body

    return _make
'''

FILES["tests/test_create.py"] = r'''"""POST /api/links and GET /api/links/<slug>."""

import pytest


def test_create_returns_201_and_short_url(client, owner):
    resp = client.post("/api/links", json={"url": "https://example.com/a/b?c=d"}, headers=owner)
    assert resp.status_code == 201
    body = resp.get_json()
    assert body["url"] == "https://example.com/a/b?c=d"
    assert body["short_url"] == f"https://sho.rt/{body['slug']}"
    assert resp.headers["Location"] == f"https://sho.rt/api/links/{body['slug']}"
    assert body["expires_at"] is None
    assert body["clicks"] == 0


def test_create_generates_owner_token_when_missing(client):
    resp = client.post("/api/links", json={"url": "https://example.com/"})
    assert resp.status_code == 201
    assert len(resp.get_json()["owner_token"]) >= 24


def test_create_keeps_given_owner_token(make_link, owner):
    assert make_link()["owner_token"] == owner["X-Owner-Token"]


@pytest.mark.parametrize("payload", [None, [], "https://example.com", 42])
def test_create_rejects_non_object_body(client, payload):
    resp = client.post("/api/links", json=payload)
    assert resp.status_code == 400
    assert resp.get_json()["error"] == "bad_request"


def test_create_with_custom_slug(make_link):
    body = make_link(slug="launch-2024")
    assert body["slug"] == "launch-2024"


def test_custom_slug_taken_is_409(client, make_link, owner):
    make_link(slug="taken")
    resp = client.post(
        "/api/links", json={"url": "https://example.org/", "slug": "taken"}, headers=owner
    )
    assert resp.status_code == 409
    assert resp.get_json()["error"] == "slug_taken"


@pytest.mark.parametrize("slug", ["ab", "has space", "api", "healthz", "x" * 65, "émoji"])
def test_invalid_custom_slug_is_422(client, slug):
    resp = client.post("/api/links", json={"url": "https://example.com/", "slug": slug})
    assert resp.status_code == 422
    assert resp.get_json()["error"] == "invalid_slug"


def test_generated_slugs_differ(make_link):
    slugs = {make_link(url=f"https://example.com/{n}")["slug"] for n in range(25)}
    assert len(slugs) == 25


def test_get_link_returns_the_link(client, make_link):
    created = make_link(url="https://example.com/x")
    resp = client.get(f"/api/links/{created['slug']}")
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["url"] == "https://example.com/x"
    assert body["expired"] is False


def test_get_unknown_link_is_404(client):
    resp = client.get("/api/links/nope123")
    assert resp.status_code == 404
    assert resp.get_json() == {"error": "not_found", "message": "No such link."}


def test_created_at_is_utc_with_z(make_link):
    assert make_link()["created_at"].endswith("Z")


def test_list_links_needs_owner(client):
    assert client.get("/api/links").status_code == 401


def test_list_links_paginates(client, make_link, owner):
    for n in range(5):
        make_link(url=f"https://example.com/{n}")
    first = client.get("/api/links?limit=2", headers=owner).get_json()
    assert len(first["links"]) == 2
    assert first["next_offset"] == 2
    rest = client.get("/api/links?limit=10&offset=2", headers=owner).get_json()
    assert len(rest["links"]) == 3
    assert rest["next_offset"] is None


def test_delete_link(client, make_link, owner):
    slug = make_link()["slug"]
    assert client.delete(f"/api/links/{slug}", headers=owner).status_code == 204
    assert client.get(f"/api/links/{slug}").status_code == 404


def test_delete_needs_the_right_owner(client, make_link):
    slug = make_link()["slug"]
    resp = client.delete(f"/api/links/{slug}", headers={"X-Owner-Token": "someone-else"})
    assert resp.status_code == 404
'''

FILES["tests/test_validators.py"] = r"""import pytest

from shortlink.validators import UrlError, normalize_url


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://example.com", "https://example.com/"),
        ("HTTPS://Example.COM/Path", "https://example.com/Path"),
        ("http://example.com:80/", "http://example.com/"),
        ("https://example.com:8443/x", "https://example.com:8443/x"),
        ("  https://example.com/?q=1#frag  ", "https://example.com/?q=1#frag"),
        ("https://bücher.example/", "https://xn--bcher-kva.example/"),
    ],
)
def test_normalize(raw, expected):
    assert normalize_url(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        "ftp://example.com/file",
        "javascript:alert(1)",
        "https://",
        "http://localhost:5000/admin",
        "http://127.0.0.1/",
        "http://10.0.0.8/internal",
        "http://[::1]/",
        "https://user:pass@example.com/",
        "https://example.com:99999/",
    ],
)
def test_rejected(raw):
    with pytest.raises(UrlError):
        normalize_url(raw)


def test_too_long():
    with pytest.raises(UrlError, match="longer than 50"):
        normalize_url("https://example.com/" + "a" * 40, max_length=50)


def test_blocked_hosts_include_subdomains():
    with pytest.raises(UrlError, match="not allowed"):
        normalize_url("https://cdn.evil.example/x", blocked_hosts=("evil.example",))
    assert normalize_url("https://notevil.example/", blocked_hosts=("evil.example",))


def test_non_string_is_rejected():
    with pytest.raises(UrlError, match="required"):
        normalize_url(None)
"""

FILES["tests/test_slugs.py"] = r"""import random

import pytest

from shortlink.slugs import ALPHABET, generate_slug, is_valid_custom_slug, keyspace


def test_alphabet_has_no_confusables():
    for ch in "0O1lI":
        assert ch not in ALPHABET


@pytest.mark.parametrize("length", [4, 7, 12])
def test_generated_length(length):
    assert len(generate_slug(length)) == length


def test_generated_uses_alphabet_only():
    rng = random.Random(1234)
    slug = generate_slug(200, choice=rng.choice)
    assert set(slug) <= set(ALPHABET)


def test_zero_length_is_an_error():
    with pytest.raises(ValueError):
        generate_slug(0)


@pytest.mark.parametrize(
    ("slug", "ok"),
    [("abc", True), ("launch_2024-v2", True), ("ab", False), ("API", False), ("a/b", False)],
)
def test_custom_slugs(slug, ok):
    assert is_valid_custom_slug(slug) is ok


def test_keyspace():
    assert keyspace(7) == len(ALPHABET) ** 7
"""

FILES["tests/test_redirect.py"] = r'''"""GET /<slug>: the redirect itself."""


def test_redirects_with_302(client, make_link):
    slug = make_link(url="https://example.com/target")["slug"]
    resp = client.get(f"/{slug}")
    assert resp.status_code == 302
    assert resp.headers["Location"] == "https://example.com/target"


def test_unknown_slug_is_404(client):
    resp = client.get("/doesnotexist")
    assert resp.status_code == 404


def test_redirect_counts_a_click(client, make_link):
    slug = make_link()["slug"]
    client.get(f"/{slug}")
    client.get(f"/{slug}")
    assert client.get(f"/api/links/{slug}").get_json()["clicks"] == 2


def test_redirect_keeps_query_and_fragment(client, make_link):
    slug = make_link(url="https://example.com/p?utm_source=x#top")["slug"]
    assert client.get(f"/{slug}").headers["Location"] == "https://example.com/p?utm_source=x#top"


def test_healthz(client):
    resp = client.get("/healthz")
    assert resp.status_code == 200
    assert resp.get_json()["status"] == "ok"


def test_post_to_slug_is_405(client, make_link):
    slug = make_link()["slug"]
    assert client.post(f"/{slug}").status_code == 405
'''

FILES[
    "tests/test_expiry.py"
] = r'''"""Expiry: expires_in / expires_at on create, 410 Gone once expired."""

import pytest
from freezegun import freeze_time


@pytest.mark.parametrize("ttl", [60, 600, 86400])
def test_link_with_ttl_redirects(client, make_link, ttl):
    link = make_link(expires_in=ttl)
    resp = client.get(f"/{link['slug']}")
    assert resp.status_code == 302


@pytest.mark.parametrize("duration", ["30m", "2h", "1d", "1h30m"])
def test_duration_strings_are_accepted(client, make_link, duration):
    link = make_link(expires_in=duration)
    assert link["expires_at"].endswith("Z")
    assert client.get(f"/{link['slug']}").status_code == 302


def test_expires_in_seconds_is_reported(make_link):
    link = make_link(expires_in=3600)
    assert 3590 <= link["expires_in_seconds"] <= 3600


def test_expired_link_returns_410(client, make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_in=60)
    with freeze_time("2024-03-01 12:01:01"):
        resp = client.get(f"/{link['slug']}")
    assert resp.status_code == 410
    assert resp.get_json()["error"] == "expired"


def test_expired_link_does_not_count_clicks(client, make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_in="1m")
    with freeze_time("2024-03-01 13:00:00"):
        client.get(f"/{link['slug']}")
        body = client.get(f"/api/links/{link['slug']}").get_json()
    assert body["clicks"] == 0
    assert body["expired"] is True


def test_expires_at_with_offset_is_stored_in_utc(make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_at="2024-03-01T15:00:00+02:00")
    assert link["expires_at"] == "2024-03-01T13:00:00Z"


def test_naive_expires_at_is_taken_as_utc(make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_at="2024-03-02T08:30:00")
    assert link["expires_at"] == "2024-03-02T08:30:00Z"


def test_expires_at_in_the_past_is_422(client):
    with freeze_time("2024-03-01 12:00:00"):
        resp = client.post(
            "/api/links",
            json={"url": "https://example.com/", "expires_at": "2024-03-01T11:59:00Z"},
        )
    assert resp.status_code == 422
    assert resp.get_json()["error"] == "invalid_expiry"


def test_both_expiry_fields_is_422(client):
    resp = client.post(
        "/api/links",
        json={
            "url": "https://example.com/",
            "expires_in": 60,
            "expires_at": "2030-01-01T00:00:00Z",
        },
    )
    assert resp.status_code == 422


@pytest.mark.parametrize("bad", [0, -5, "soon", "", True, 1.5, [60]])
def test_bad_expires_in_is_422(client, bad):
    resp = client.post("/api/links", json={"url": "https://example.com/", "expires_in": bad})
    assert resp.status_code == 422
    assert resp.get_json()["error"] == "invalid_expiry"


def test_expiry_beyond_max_ttl_is_422(client):
    resp = client.post("/api/links", json={"url": "https://example.com/", "expires_in": "400d"})
    assert resp.status_code == 422
    assert "too far" in resp.get_json()["message"]
'''

FILES["tests/test_stats.py"] = r'''"""GET /api/links/<slug>/stats."""

from freezegun import freeze_time


def test_stats_need_owner(client, make_link):
    slug = make_link()["slug"]
    assert client.get(f"/api/links/{slug}/stats").status_code == 401


def test_stats_of_someone_elses_link_is_404(client, make_link):
    slug = make_link()["slug"]
    resp = client.get(f"/api/links/{slug}/stats", headers={"X-Owner-Token": "not-me"})
    assert resp.status_code == 404


def test_stats_count_clicks(client, make_link, owner):
    slug = make_link()["slug"]
    for _ in range(3):
        client.get(f"/{slug}")
    body = client.get(f"/api/links/{slug}/stats", headers=owner).get_json()
    assert body["clicks"] == 3


def test_stats_last_click_at(client, make_link, owner):
    with freeze_time("2024-03-01 12:00:00"):
        slug = make_link()["slug"]
    with freeze_time("2024-03-02 08:15:30"):
        client.get(f"/{slug}")
    body = client.get(f"/api/links/{slug}/stats", headers=owner).get_json()
    assert body["last_click_at"] == "2024-03-02T08:15:30Z"


def test_stats_daily_histogram(client, make_link, owner):
    with freeze_time("2024-03-01 12:00:00"):
        slug = make_link()["slug"]
    for day, clicks in (("2024-03-03", 2), ("2024-03-05", 1)):
        with freeze_time(f"{day} 09:00:00"):
            for _ in range(clicks):
                client.get(f"/{slug}")
    with freeze_time("2024-03-05 18:00:00"):
        daily = client.get(f"/api/links/{slug}/stats", headers=owner).get_json()["daily"]
    assert len(daily) == 30
    assert daily["2024-03-03"] == 2
    assert daily["2024-03-04"] == 0
    assert daily["2024-03-05"] == 1
    assert list(daily)[-1] == "2024-03-05"
'''

FILES["tests/test_ratelimit.py"] = r"""import pytest

from shortlink.ratelimit import RateLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


def test_burst_then_block(clock):
    limiter = RateLimiter(capacity=3, refill_per_second=1.0, clock=clock)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]


def test_refills_over_time(clock):
    limiter = RateLimiter(capacity=2, refill_per_second=0.5, clock=clock)
    assert limiter.allow("a") and limiter.allow("a")
    assert not limiter.allow("a")
    clock.advance(2.0)
    assert limiter.allow("a")


def test_keys_are_independent(clock):
    limiter = RateLimiter(capacity=1, refill_per_second=1.0, clock=clock)
    assert limiter.allow("a")
    assert limiter.allow("b")
    assert not limiter.allow("a")


def test_retry_after(clock):
    limiter = RateLimiter(capacity=1, refill_per_second=0.25, clock=clock)
    limiter.allow("a")
    assert limiter.retry_after("a") == pytest.approx(4.0)


def test_eviction_keeps_memory_bounded(clock):
    limiter = RateLimiter(capacity=1, refill_per_second=1.0, clock=clock, max_keys=100)
    for n in range(1_000):
        limiter.allow(f"client-{n}")
        clock.advance(0.01)
    assert len(limiter._buckets) <= 100


@pytest.mark.slow
def test_api_returns_429_with_retry_after(app, client):
    app.extensions["shortlink.limiter"] = RateLimiter(capacity=2, refill_per_second=0.1)
    for _ in range(2):
        assert client.post("/api/links", json={"url": "https://example.com/"}).status_code == 201
    resp = client.post("/api/links", json={"url": "https://example.com/"})
    assert resp.status_code == 429
    assert int(resp.headers["Retry-After"]) >= 1


def test_reads_are_not_limited(app, client):
    app.extensions["shortlink.limiter"] = RateLimiter(capacity=1, refill_per_second=0.01)
    for _ in range(5):
        assert client.get("/api/links/whatever").status_code == 404
"""

FILES["tests/test_cli.py"] = r"""from freezegun import freeze_time


def test_init_db_is_idempotent(runner):
    result = runner.invoke(args=["init-db"])
    assert result.exit_code == 0
    assert "already present" in result.output


def test_purge_expired(runner, make_link, client):
    with freeze_time("2024-03-01 12:00:00"):
        old = make_link(expires_in="1h")["slug"]
        keep = make_link(expires_in="7d")["slug"]
        forever = make_link()["slug"]
    with freeze_time("2024-03-02 12:00:00"):
        result = runner.invoke(args=["purge-expired"])
    assert result.exit_code == 0, result.output
    assert "purged 1 expired link" in result.output
    assert client.get(f"/api/links/{old}").status_code == 404
    assert client.get(f"/api/links/{keep}").status_code == 200
    assert client.get(f"/api/links/{forever}").status_code == 200


def test_purge_bad_grace(runner):
    result = runner.invoke(args=["purge-expired", "--grace", "soon"])
    assert result.exit_code == 2
    assert "Invalid value for --grace" in result.output


def test_list_expiring(runner, make_link):
    with freeze_time("2024-03-01 12:00:00"):
        soon = make_link(url="https://example.com/soon", expires_in="3h")["slug"]
        make_link(url="https://example.com/later", expires_in="3d")
        result = runner.invoke(args=["list-expiring", "--within", "1d"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{soon}\t2024-03-01T15:00:00Z\t3h 0m\t")


def test_list_expiring_none(runner):
    result = runner.invoke(args=["list-expiring"])
    assert result.output.strip() == "no links expire within 24h"


def test_humanize():
    from datetime import timedelta

    from shortlink.cli import humanize

    assert humanize(timedelta(hours=26, minutes=5)) == "1d 2h"
    assert humanize(timedelta(minutes=90)) == "1h 30m"
    assert humanize(timedelta(seconds=42)) == "42s"
    assert humanize(timedelta(seconds=-1)) == "expired"
"""

FILES["AGENTS.md"] = r"""# Notes for coding agents (and humans new to the repo)

## Layout
- `src/shortlink/`: the package. `routes.py` (HTTP), `models.py` (all SQL lives here,
  routes never touch the database directly), `timeutil.py` (every date/time helper),
  `validators.py`, `slugs.py`, `ratelimit.py`, `cli.py` (Flask CLI commands).
- `tests/`: pytest. Shared fixtures in `tests/conftest.py`: `app`, `client`, `runner`,
  `owner` (headers with a fixed owner token) and `make_link(url=..., **fields)`.
- `scripts/`: one-off maintenance scripts. Not packaged, not type-checked, but linted
  and tested like everything else.

## Rules
- Python 3.10+ (CI runs 3.10, 3.11 and 3.12). `from __future__ import annotations` in
  every module. Type hints everywhere in `src/`; mypy runs in strict mode.
- Timestamps: UTC, stored as `YYYY-MM-DDTHH:MM:SSZ` text. Use the helpers in
  `timeutil.py`; do not call `datetime.now()` / `datetime.utcnow()` anywhere else.
- API errors are JSON `{"error": <code>, "message": <text>}`, built with
  `routes._error()`. Error codes are part of the API; do not rename them.
- Tests freeze time with freezegun; never `time.sleep()` in a test.
- No new runtime dependencies without asking. Dev dependencies are fine if small.
- Before you say you are done: `pytest`, `ruff check .` and `mypy` must all pass. CI
  runs exactly these (see `.github/workflows/ci.yml`).

## Style
- Docstrings: one summary line, then details if needed. Comments say why, not what.
- Keep functions small; prefer a clear name over a comment.
- Changelog: every user-visible change gets a line under `## [Unreleased]` in
  `CHANGELOG.md` (Keep a Changelog format).
- Commit messages: imperative mood, subject at most 72 characters, then a blank line and
  a short body explaining why. Reference the issue (`#NN`) when there is one.
"""


#: The files the demo's workspace holds (its scripted session was written for them).
DEMO_FILES: tuple[str, ...] = (
    "README.md",
    "AGENTS.md",
    "pyproject.toml",
    "src/shortlink/__init__.py",
    "src/shortlink/config.py",
    "src/shortlink/schema.sql",
    "src/shortlink/db.py",
    "src/shortlink/timeutil.py",
    "src/shortlink/slugs.py",
    "src/shortlink/validators.py",
    "src/shortlink/ratelimit.py",
    "src/shortlink/models.py",
    "src/shortlink/routes.py",
    "src/shortlink/cli.py",
    "tests/conftest.py",
    "tests/test_expiry.py",
    "tests/test_ratelimit.py",
)
