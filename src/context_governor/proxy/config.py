"""The proxy's settings, checked once at start-up.

A bad setting must stop the proxy before it listens, not surface as a 500 on
the first request, so every field is validated here and a ConfigError names it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..policies import policy_from_settings
from ..profiles import PROFILES
from ..stores import parse_url
from .access import (
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_IN_FLIGHT_PER_CLIENT,
    check_client_keys,
    normalize_host,
    normalize_origin,
)
from .redact import Redactor, redact_url, url_secrets

__all__ = [
    "COMPACTIONS",
    "CONFIG_ENV",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_READ_TIMEOUT",
    "GOVERN_IN",
    "ProxyConfig",
]

COMPACTIONS = ("cache", "seed")
#: None: a request's model's published window (targets/windows.py), as everywhere else; set
#: --context-window or a per-model window for models the table does not know.
DEFAULT_CONTEXT_WINDOW: int | None = None
DEFAULT_MAX_OUTPUT = 4096
#: OpenAI's own cap on a request's total payload (images included); a history that
#: fills a 1M-token window is a few MB of JSON, far below it.
DEFAULT_MAX_BODY = 50 * 1024 * 1024
DEFAULT_CONNECT_TIMEOUT = 10.0
#: between two bytes of the answer; generous, since a long answer may start late
DEFAULT_READ_TIMEOUT = 600.0
GOVERN_IN = ("thread", "process")
#: The environment variable through which ``proxy --workers N`` hands the config to
#: each worker process (see app.app_from_env).
CONFIG_ENV = "CONTEXT_GOVERNOR_PROXY_CONFIG"
#: What the page keeps in memory (proxy/observer.py, docs/observability.md): the
#: conversations, the requests in all, and about this many bytes of reports and of
#: message content (--ui-content). A record is ~0.6 KB, a long session's report tens of
#: KB, so at these defaults the page holds at most ~12 MB of records and 64 MB of
#: reports (and 64 MB of content when asked), whatever the traffic.
DEFAULT_UI_CONVERSATIONS = 500
DEFAULT_UI_REQUESTS = 20_000
DEFAULT_UI_REPORT_BYTES = 64 * 1024 * 1024
DEFAULT_UI_CONTENT_BYTES = 64 * 1024 * 1024


def _seconds(name: str, value: object) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, slots=True, repr=False)
class ProxyConfig:
    """Where to forward and how to govern.

    ``upstream`` is the provider's base URL as an SDK would take it (for OpenAI
    ``https://api.openai.com/v1``): the proxy's ``/v1/X`` goes to ``upstream/X``.
    The client's own ``Authorization`` header is forwarded unless ``api_key`` is
    set, in which case every request uses that key (the clients then need none).

    The window of a request is ``model_windows[model]`` when the model is listed,
    else the longest listed prefix of the model name (``gpt-4o`` covers
    ``gpt-4o-2024-08-06``), else ``context_window``, else (``None``) govern()'s own
    rule: the model's published window when it is well known, else no cut.
    The answer's reserve is the body's own (Chat Completions'
    ``max_completion_tokens``/``max_tokens``, Messages' ``max_tokens``, Responses'
    ``max_output_tokens``, Gemini's ``generationConfig.maxOutputTokens``), else
    ``max_output``, on every route (govern_request's ``max_output``).
    ``profile`` is the target's rules for every route; None (the default) lets
    each route use its own API's provider (apis.py: anthropic for messages).

    Credentials in ``upstream`` (``user:password@`` or a ``key=``/``token=`` query
    parameter) are used but never shown: ``repr`` and every log line redact them,
    as they do ``api_key``. Bodies over ``max_body_bytes`` get a 413. Governance
    runs in a thread (``govern_in="thread"``) or in a pool of ``govern_processes``
    worker processes (``"process"``), never on the event loop.

    Who may call it (guard.py): no web page unless its origin is in ``allow_origins``,
    loopback Host names (and ``allow_hosts``), and, when ``client_keys`` are given,
    only clients presenting one; at most ``max_in_flight_per_client`` requests in
    flight per client key and ``max_in_flight`` in all.
    """

    upstream: str
    api_key: str | None = None
    #: the target's rules; None: each route's own provider (openai for chat completions
    #: and responses, anthropic for messages)
    profile: str | None = None
    context_window: int | None = DEFAULT_CONTEXT_WINDOW
    model_windows: Mapping[str, int] = field(default_factory=dict)
    max_output: int = DEFAULT_MAX_OUTPUT
    compaction: str = "cache"
    #: the cache policy's settings (policies.SETTINGS: trigger, target, keep_recent...),
    #: as the [compaction] table of a config file gives them; none: its defaults
    compaction_settings: Mapping[str, Any] = field(default_factory=dict)
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_body_bytes: int = DEFAULT_MAX_BODY
    govern_in: str = "thread"
    govern_processes: int = 2
    #: Messages API: calibrate the estimate with the upstream's count_tokens near the
    #: budget (proxy/count_tokens.py)
    count_tokens_upstream: bool = False
    #: summaries where the cache policy cuts (proxy/summaries.py, docs/summaries.md): the
    #: model that writes them (Chat Completions at ``summary_base_url``, else upstream)
    summary_model: str | None = None
    #: where they are kept: sqlite:///file.db, redis://host:port/db (replicas) or memory://
    summary_store: str | None = None
    summary_base_url: str | None = None
    summary_timeout: float = 60.0
    #: seconds a stored summary is kept (None: as long as the store keeps it)
    summary_retention: float | None = None
    #: where exact token counts persist between processes and replicas (counting/store.py):
    #: sqlite:///file.db, redis://host:port/db or memory://; None: each process's memo only
    count_store: str | None = None
    #: seconds a stored count is kept (None: as long as the store keeps it)
    count_retention: float | None = None
    #: who may use the proxy (access.py, guard.py, docs/proxy.md#security): the web
    #: origins whose pages may call it, the Host names served besides loopback ones,
    #: the client keys by name (none: no key asked), and the requests in flight allowed
    #: per client key and in all, in each server process
    allow_origins: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    client_keys: Mapping[str, str] = field(default_factory=dict)
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    max_in_flight_per_client: int = DEFAULT_MAX_IN_FLIGHT_PER_CLIENT
    #: GET /metrics and the counters behind it (prometheus-client); off: a 404
    metrics: bool = True
    #: the page at /ui and the records it shows (observer.py); off: a 404, no record kept
    ui: bool = True
    #: what the page keeps (observer.Journal): conversations, requests in all, and about
    #: this many bytes of reports (the oldest forgotten first)
    ui_conversations: int = DEFAULT_UI_CONVERSATIONS
    ui_requests: int = DEFAULT_UI_REQUESTS
    ui_report_bytes: int = DEFAULT_UI_REPORT_BYTES
    #: /ui shows message content (kept in memory, at most ui_content_bytes; observer.py)
    ui_content: bool = False
    ui_content_bytes: int = DEFAULT_UI_CONTENT_BYTES
    #: /ui served to whoever presents this token (else to loopback clients only)
    ui_token: str | None = None
    #: where spans go over OTLP/HTTP (else OTEL_EXPORTER_OTLP_*; none: no spans)
    otlp_endpoint: str | None = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            shown = redact_url(self.upstream) if isinstance(self.upstream, str) else self.upstream
            raise ConfigError(f"upstream must be an http(s) URL, got {shown!r}")
        if parts.fragment:
            raise ConfigError(f"upstream must not have a #fragment: {redact_url(self.upstream)!r}")
        object.__setattr__(self, "upstream", parts._replace(path=parts.path.rstrip("/")).geturl())
        if self.profile is not None and self.profile not in PROFILES:
            raise ConfigError(
                f"unknown profile {self.profile!r}; choose from {', '.join(sorted(PROFILES))}"
            )
        if self.compaction not in COMPACTIONS:
            raise ConfigError(f"compaction must be 'cache' or 'seed', got {self.compaction!r}")
        if not isinstance(self.compaction_settings, Mapping):
            raise ConfigError(
                f"compaction_settings must be a mapping, got {self.compaction_settings!r}"
            )
        policy_from_settings(self.compaction, self.compaction_settings)  # its ConfigError
        if self.context_window is not None:
            _positive("context_window", self.context_window)
        for model, window in self.model_windows.items():
            _positive(f"the window of {model!r}", window)
        if (
            isinstance(self.max_output, bool)
            or not isinstance(self.max_output, int)
            or (self.max_output < 0)
        ):
            raise ConfigError(f"max_output must be a non-negative integer, got {self.max_output!r}")
        for name in ("connect_timeout", "read_timeout"):
            _seconds(name, getattr(self, name))
        _positive("max_body_bytes", self.max_body_bytes)
        if self.govern_in not in GOVERN_IN:
            raise ConfigError(f"govern_in must be 'thread' or 'process', got {self.govern_in!r}")
        _positive("govern_processes", self.govern_processes)
        if not isinstance(self.count_tokens_upstream, bool):
            raise ConfigError(
                f"count_tokens_upstream must be true or false, got {self.count_tokens_upstream!r}"
            )
        self._check_summaries()
        self._check_count_store()
        self._check_access()
        self._check_observing()
        # Frozen all the way down: a shared mapping edited later would make replicas disagree.
        object.__setattr__(self, "model_windows", MappingProxyType(dict(self.model_windows)))
        object.__setattr__(
            self, "compaction_settings", MappingProxyType(dict(self.compaction_settings))
        )

    def _check_summaries(self) -> None:
        if self.summary_model is None:
            for name in ("summary_store", "summary_base_url", "summary_retention"):
                if getattr(self, name) is not None:
                    raise ConfigError(f"{name} needs summary_model")
            return
        if not isinstance(self.summary_model, str) or not self.summary_model:
            raise ConfigError(f"summary_model must be a model name, got {self.summary_model!r}")
        if self.compaction != "cache":
            raise ConfigError("summary_model needs compaction 'cache' (summaries replace its cuts)")
        if self.summary_store is not None and (
            not isinstance(self.summary_store, str)
            or urlsplit(self.summary_store).scheme.lower()
            not in ("sqlite", "redis", "rediss", "valkey", "valkeys", "memory")
        ):
            shown = redact_url(self.summary_store) if isinstance(self.summary_store, str) else None
            raise ConfigError(
                f"summary_store must be sqlite:///file.db, redis://host:port/db or memory://, "
                f"got {shown!r}"
            )
        if self.summary_base_url is not None and urlsplit(
            str(self.summary_base_url)
        ).scheme not in ("http", "https"):
            raise ConfigError("summary_base_url must be an http(s) URL")
        _seconds("summary_timeout", self.summary_timeout)
        if self.summary_retention is not None:
            _seconds("summary_retention", self.summary_retention)

    def _check_access(self) -> None:
        """Normalized once (access.py), so the guard compares plain strings; lists
        (the JSON a worker process reads) become tuples."""
        checks = (("allow_origins", normalize_origin), ("allow_hosts", normalize_host))
        for name, normalize in checks:
            values = getattr(self, name)
            if isinstance(values, str) or not isinstance(values, list | tuple):
                raise ConfigError(f"{name} must be a list of strings, got {values!r}")
            if not all(isinstance(v, str) for v in values):
                raise ConfigError(f"{name} must be a list of strings")
            object.__setattr__(self, name, tuple(dict.fromkeys(normalize(v) for v in values)))
        if not isinstance(self.client_keys, Mapping):
            raise ConfigError("client_keys must map names to keys")
        check_client_keys(self.client_keys)
        object.__setattr__(self, "client_keys", MappingProxyType(dict(self.client_keys)))
        _positive("max_in_flight", self.max_in_flight)
        _positive("max_in_flight_per_client", self.max_in_flight_per_client)

    def _check_count_store(self) -> None:
        if self.count_store is None:
            if self.count_retention is not None:
                raise ConfigError("count_retention needs count_store")
            return
        try:
            parse_url(self.count_store, "count_store")
        except ConfigError:
            shown = redact_url(self.count_store) if isinstance(self.count_store, str) else None
            raise ConfigError(
                f"count_store must be sqlite:///file.db, redis://host:port/db or memory://, "
                f"got {shown!r}"
            ) from None
        if self.count_retention is not None:
            _seconds("count_retention", self.count_retention)

    def _check_observing(self) -> None:
        for name in ("metrics", "ui", "ui_content"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.ui_content and not self.ui:
            raise ConfigError("ui_content needs the page (ui): content is kept only to show it")
        for name in ("ui_conversations", "ui_requests", "ui_report_bytes", "ui_content_bytes"):
            _positive(name, getattr(self, name))
        if self.ui_token is not None and (
            not isinstance(self.ui_token, str) or len(self.ui_token) < 16
        ):
            raise ConfigError("ui_token must be a string of at least 16 characters")
        if self.otlp_endpoint is not None and urlsplit(str(self.otlp_endpoint)).scheme not in (
            "http",
            "https",
        ):
            raise ConfigError("otlp_endpoint must be an http(s) URL")

    def window_for(self, model: str | None) -> int | None:
        """The context window of ``model`` (see the class docstring for the lookup)."""
        if model is not None:
            if model in self.model_windows:
                return self.model_windows[model]
            prefixes = [m for m in self.model_windows if model.startswith(m)]
            if prefixes:
                return self.model_windows[max(prefixes, key=len)]
        return self.context_window

    @property
    def shown_upstream(self) -> str:
        """The upstream URL as it may be printed: credentials masked."""
        return redact_url(self.upstream)

    def redactor(self) -> Redactor:
        """Scrubs this config's secrets (upstream credentials, api_key) from any text."""
        return Redactor(
            [
                *url_secrets(self.upstream),
                *(
                    secret
                    for url in (self.summary_store, self.summary_base_url, self.count_store)
                    if url
                    for secret in url_secrets(url)
                ),
                self.api_key,
                *self.client_keys.values(),
                self.ui_token,
                *(url_secrets(self.otlp_endpoint) if self.otlp_endpoint else ()),
            ]
        )

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={self._shown(f.name)!r}"
            for f in fields(self)
            if f.name not in ("api_key", "ui_token")
        )
        key = "None" if self.api_key is None else "'***'"
        token = "None" if self.ui_token is None else "'***'"
        return f"ProxyConfig({shown}, api_key={key}, ui_token={token})"

    def _shown(self, name: str) -> object:
        if name == "upstream":
            return self.shown_upstream
        value = getattr(self, name)
        if (
            name in ("summary_store", "summary_base_url", "count_store", "otlp_endpoint")
            and value is not None
        ):
            return redact_url(value)
        if name == "client_keys":  # the names only, never a key
            return {key_name: "***" for key_name in value}
        return dict(value) if name in ("model_windows", "compaction_settings") else value

    def to_json(self) -> str:
        """Every field, for a worker process to rebuild the same config (from_json)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["model_windows"] = dict(self.model_windows)
        data["compaction_settings"] = dict(self.compaction_settings)
        data["client_keys"] = dict(self.client_keys)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> ProxyConfig:
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{CONFIG_ENV} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{CONFIG_ENV} must be a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{CONFIG_ENV} has unknown settings: {', '.join(unknown)}")
        return cls(**data)
