"""The proxy's settings by concern: the groups ProxyConfig holds (config.py).

Each group is a small frozen dataclass, checked when it is made: a bad value raises a
ConfigError that names the setting by its place in ProxyConfig (``timeouts.read``,
``page.requests``), so a bad setting stops the proxy before it listens. A config
file gives each group as a table of the ``proxy`` command (``[proxy.timeouts]``...;
docs/cli.md, "Config file").

What shows a group (``repr``) never shows a secret: store and endpoint URLs are shown
redacted, client keys by their names, the page's token as ``***``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..stores import parse_url
from ._access import (
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_IN_FLIGHT_PER_CLIENT,
    check_client_keys,
    normalize_host,
    normalize_origin,
)
from ._redact import MASK, redact_url

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_READ_TIMEOUT",
    "DEFAULT_SUMMARY_TIMEOUT",
    "DEFAULT_UI_CONTENT_BYTES",
    "DEFAULT_UI_CONVERSATIONS",
    "DEFAULT_UI_REPORT_BYTES",
    "DEFAULT_UI_REQUESTS",
    "GOVERN_IN",
    "AccessConfig",
    "CountingConfig",
    "GoverningConfig",
    "LimitsConfig",
    "PageConfig",
    "SummariesConfig",
    "TelemetryConfig",
    "TimeoutsConfig",
    "check_positive",
    "check_seconds",
    "shown",
]

#: OpenAI's own cap on a request's total payload (images included); a history that
#: fills a 1M-token window is a few MB of JSON, far below it.
DEFAULT_MAX_BODY = 50 * 1024 * 1024
DEFAULT_CONNECT_TIMEOUT = 10.0
#: between two bytes of the answer; generous, since a long answer may start late
DEFAULT_READ_TIMEOUT = 600.0
DEFAULT_SUMMARY_TIMEOUT = 60.0
GOVERN_IN = ("thread", "process")
#: What the page keeps in memory (proxy/_observer.py, docs/observability.md): the
#: conversations, the requests in all, and about this many bytes of reports and of
#: message content (--ui-content). A record is ~0.6 KB, a long session's report tens of
#: KB, so at these defaults the page holds at most ~12 MB of records and 64 MB of
#: reports (and 64 MB of content when asked), whatever the traffic.
DEFAULT_UI_CONVERSATIONS = 500
DEFAULT_UI_REQUESTS = 20_000
DEFAULT_UI_REPORT_BYTES = 64 * 1024 * 1024
DEFAULT_UI_CONTENT_BYTES = 64 * 1024 * 1024

#: The settings shown redacted (URLs that may carry a password) or masked (secrets).
_URLS = frozenset({"upstream", "store", "base_url", "otlp_endpoint"})
_SECRETS = frozenset({"api_key", "token"})


def check_seconds(name: str, value: object) -> None:
    """A positive, finite number of seconds, or a ConfigError naming ``name``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")


def check_positive(name: str, value: object) -> None:
    """A positive integer, or a ConfigError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


def _check_flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")


def _check_store(name: str, value: object) -> None:
    """A store URL (stores.py: sqlite, redis/valkey or memory), shown redacted when refused."""
    try:
        if not isinstance(value, str):
            raise ConfigError(name)
        parse_url(value, name)
    except ConfigError:
        text = redact_url(value) if isinstance(value, str) else None
        raise ConfigError(
            f"{name} must be sqlite:///file.db, redis://host:port/db or memory://, got {text!r}"
        ) from None


def _check_http_url(name: str, value: object) -> None:
    if urlsplit(str(value)).scheme not in ("http", "https"):
        raise ConfigError(f"{name} must be an http(s) URL")


def shown(name: str, value: object) -> object:
    """``value`` of the setting ``name`` as a repr may show it: URLs redacted (the
    upstreams' too), secrets
    masked, client keys by name only, mappings as plain dicts."""
    if value is None:
        return None
    if name in _URLS and isinstance(value, str):
        return redact_url(value)
    if name in _SECRETS:
        return MASK
    if name == "upstreams" and isinstance(value, Mapping):
        return {api: redact_url(url) for api, url in value.items()}
    if name == "client_keys" and isinstance(value, Mapping):
        return {key_name: MASK for key_name in value}
    return dict(value) if isinstance(value, Mapping) else value


class _Shown:
    """A group's repr through ``shown``: no secret in any log line or traceback."""

    __slots__ = ()

    def __repr__(self) -> str:
        values = ", ".join(
            f"{f.name}={shown(f.name, getattr(self, f.name))!r}"
            for f in fields(self)  # type: ignore[arg-type]
        )
        return f"{type(self).__name__}({values})"


@dataclass(frozen=True, slots=True, repr=False)
class TimeoutsConfig(_Shown):
    """How long the proxy waits on the upstream, in seconds: ``connect`` to reach it,
    ``read`` between two bytes of its answer (then 504, or an error event or element
    mid-stream). ``[proxy.timeouts]``: connect-timeout, read-timeout."""

    connect: float = DEFAULT_CONNECT_TIMEOUT
    read: float = DEFAULT_READ_TIMEOUT

    def __post_init__(self) -> None:
        check_seconds("timeouts.connect", self.connect)
        check_seconds("timeouts.read", self.read)


#: Bodies being read at once (each bounded by max-body and body-timeout).
DEFAULT_MAX_UPLOADS = 1024
#: Seconds a connection has to send a request's headers (a client that sends them a
#: byte at a time holds a connection, never a slot, and not for long).
DEFAULT_HEADER_TIMEOUT = 10.0
#: Seconds a request's whole body has to arrive in (50 MiB at about 0.5 MB/s).
DEFAULT_BODY_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True, repr=False)
class LimitsConfig(_Shown):
    """What one server process takes on: bodies over ``max_body_bytes`` get a 413, and
    at most ``max_in_flight`` requests are in flight in all and
    ``max_in_flight_per_client`` per client key (more get a 429; guard.py). A request
    counts in flight once its body is in: a body still arriving is an upload, at most
    ``max_uploads`` at once, each within ``body_timeout`` seconds (else a 408), and a
    connection must send a request's headers within ``header_timeout`` seconds (else it
    is closed), so slow clients cannot hold the slots of the others.
    ``[proxy.limits]``: max-body, max-in-flight, max-in-flight-per-client, max-uploads,
    header-timeout, body-timeout."""

    max_body_bytes: int = DEFAULT_MAX_BODY
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    max_in_flight_per_client: int = DEFAULT_MAX_IN_FLIGHT_PER_CLIENT
    max_uploads: int = DEFAULT_MAX_UPLOADS
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT

    def __post_init__(self) -> None:
        for f in fields(self):
            check = check_seconds if f.name.endswith("timeout") else check_positive
            check(f"limits.{f.name}", getattr(self, f.name))


@dataclass(frozen=True, slots=True, repr=False)
class GoverningConfig(_Shown):
    """Where each body is governed, never on the event loop: in a thread
    (``run_in="thread"``) or in a pool of ``processes`` worker processes
    (``"process"``; executor.py). ``[proxy.governing]``: govern-in, govern-processes."""

    run_in: str = "thread"
    processes: int = 2

    def __post_init__(self) -> None:
        if self.run_in not in GOVERN_IN:
            raise ConfigError(
                f"governing.run_in must be 'thread' or 'process', got {self.run_in!r}"
            )
        check_positive("governing.processes", self.processes)


@dataclass(frozen=True, slots=True, repr=False)
class CountingConfig(_Shown):
    """Token counts: ``store`` keeps exact counts between processes and replicas
    (counting/store.py: sqlite:///file.db, redis://host:port/db or memory://; None: each
    process's memo only) for ``retention`` seconds (None: as long as the store keeps
    them); ``calibrate_upstream`` scales a Messages body's estimate near the budget by
    the upstream's count_tokens (count_tokens.py). ``[proxy.counting]``: count-store,
    count-retention, count-tokens-upstream (and the command's count-workers)."""

    store: str | None = None
    retention: float | None = None
    calibrate_upstream: bool = False

    def __post_init__(self) -> None:
        _check_flag("counting.calibrate_upstream", self.calibrate_upstream)
        if self.store is None:
            if self.retention is not None:
                raise ConfigError("counting.retention needs counting.store")
            return
        _check_store("counting.store", self.store)
        if self.retention is not None:
            check_seconds("counting.retention", self.retention)


@dataclass(frozen=True, slots=True, repr=False)
class SummariesConfig(_Shown):
    """Summaries where the cache policy cuts (summaries.py, docs/summaries.md): the
    ``model`` that writes them (Chat Completions at ``base_url``, else the upstream),
    waited on for ``timeout`` seconds; kept in ``store`` (sqlite:///file.db,
    redis://host:port/db between replicas, or memory://) for ``retention`` seconds
    (None: as long as the store keeps them). No model: no summaries, and no other
    setting. ``[proxy.summaries]``: summary-model, summary-store, summary-base-url,
    summary-timeout, summary-retention."""

    model: str | None = None
    store: str | None = None
    base_url: str | None = None
    timeout: float = DEFAULT_SUMMARY_TIMEOUT
    retention: float | None = None

    def __post_init__(self) -> None:
        if self.model is None:
            for name in ("store", "base_url", "retention"):
                if getattr(self, name) is not None:
                    raise ConfigError(f"summaries.{name} needs summaries.model")
            return
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError(f"summaries.model must be a model name, got {self.model!r}")
        if self.store is not None and (
            not isinstance(self.store, str)
            or urlsplit(self.store).scheme.lower()
            not in ("sqlite", "redis", "rediss", "valkey", "valkeys", "memory")
        ):
            text = redact_url(self.store) if isinstance(self.store, str) else None
            raise ConfigError(
                f"summaries.store must be sqlite:///file.db, redis://host:port/db or "
                f"memory://, got {text!r}"
            )
        if self.base_url is not None:
            _check_http_url("summaries.base_url", self.base_url)
        check_seconds("summaries.timeout", self.timeout)
        if self.retention is not None:
            check_seconds("summaries.retention", self.retention)


@dataclass(frozen=True, slots=True, repr=False)
class AccessConfig(_Shown):
    """Who may use the proxy (access.py, guard.py, docs/proxy.md#security): the web
    origins whose pages may call it, the Host names served besides loopback ones, and
    the client keys by name (none: no key asked). Origins and hosts are normalized
    once (lists, as JSON gives them, become tuples), so the guard compares plain
    strings. ``[proxy.access]``: allow-origin, allow-host, client-key,
    client-keys-file, allow-open-relay."""

    allow_origins: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    client_keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        checks = (("allow_origins", normalize_origin), ("allow_hosts", normalize_host))
        for name, normalize in checks:
            values = getattr(self, name)
            if isinstance(values, str) or not isinstance(values, list | tuple):
                raise ConfigError(f"access.{name} must be a list of strings, got {values!r}")
            if not all(isinstance(v, str) for v in values):
                raise ConfigError(f"access.{name} must be a list of strings")
            object.__setattr__(self, name, tuple(dict.fromkeys(normalize(v) for v in values)))
        if not isinstance(self.client_keys, Mapping):
            raise ConfigError("access.client_keys must map names to keys")
        check_client_keys(self.client_keys)
        # Frozen all the way down: a shared mapping edited later would make replicas disagree.
        object.__setattr__(self, "client_keys", MappingProxyType(dict(self.client_keys)))


@dataclass(frozen=True, slots=True, repr=False)
class PageConfig(_Shown):
    """The page at /ui and the records it shows (observer.py, docs/observability.md):
    off (``enabled=False``) it is a 404 and no record is kept. It keeps
    ``conversations``, ``requests`` in all and about ``report_bytes`` of reports (the
    oldest forgotten first); with ``content`` it shows message content, kept in memory
    (at most ``content_bytes``). It is served to whoever presents ``token`` (at least
    16 characters), else to loopback clients only. Its rows and totals last across
    restarts in ``store`` (page_store.py: sqlite:///page.db, redis://...; None: the
    count store's, when there is one, else memory only). ``[proxy.page]``: no-ui,
    ui-conversations, ui-requests, ui-reports-mb, ui-content, ui-content-mb, ui-token,
    page-store."""

    enabled: bool = True
    conversations: int = DEFAULT_UI_CONVERSATIONS
    requests: int = DEFAULT_UI_REQUESTS
    report_bytes: int = DEFAULT_UI_REPORT_BYTES
    content: bool = False
    content_bytes: int = DEFAULT_UI_CONTENT_BYTES
    token: str | None = None
    store: str | None = None

    def __post_init__(self) -> None:
        _check_flag("page.enabled", self.enabled)
        if self.store is not None:
            _check_store("page.store", self.store)
        _check_flag("page.content", self.content)
        if self.content and not self.enabled:
            raise ConfigError(
                "page.content needs the page (page.enabled): content is kept only to show it"
            )
        for name in ("conversations", "requests", "report_bytes", "content_bytes"):
            check_positive(f"page.{name}", getattr(self, name))
        if self.token is not None and (not isinstance(self.token, str) or len(self.token) < 16):
            raise ConfigError("page.token must be a string of at least 16 characters")


@dataclass(frozen=True, slots=True, repr=False)
class TelemetryConfig(_Shown):
    """What the proxy tells monitoring: GET /metrics and the counters behind it
    (``metrics``; prometheus-client; off: a 404), and a span per request over OTLP/HTTP
    to ``otlp_endpoint`` (else OTEL_EXPORTER_OTLP_*; none: no spans; tracing.py).
    ``[proxy.telemetry]``: no-metrics, otlp-endpoint."""

    metrics: bool = True
    otlp_endpoint: str | None = None

    def __post_init__(self) -> None:
        _check_flag("telemetry.metrics", self.metrics)
        if self.otlp_endpoint is not None:
            _check_http_url("telemetry.otlp_endpoint", self.otlp_endpoint)
