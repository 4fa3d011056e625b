"""The proxy's settings, checked once at start-up.

A bad setting must stop the proxy before it listens, not surface as a 500 on
the first request, so every field is validated here (and in each group,
settings.py) and a ConfigError names it.

ProxyConfig keeps at its top what governs each request (upstream, profile, windows,
reserve, compaction) and holds the rest by concern, one frozen group each:
``timeouts``, ``limits``, ``governing``, ``counting``, ``summaries``, ``access``,
``page`` and ``telemetry``. The flat names the settings had before the groups
(``read_timeout``, ``ui_requests``...: FLAT) still work for one release, as keywords
and as attributes, each with a DeprecationWarning that names its new place.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, TypedDict, Unpack
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..formats import APIS, WIRE_FORMATS, Compacted, check_compacted
from ..policies import policy_from_settings
from ..profiles import PROFILES
from ._redact import Redactor, redact_url, url_secrets
from ._settings import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_BODY,
    DEFAULT_READ_TIMEOUT,
    DEFAULT_UI_CONTENT_BYTES,
    DEFAULT_UI_CONVERSATIONS,
    DEFAULT_UI_REPORT_BYTES,
    DEFAULT_UI_REQUESTS,
    GOVERN_IN,
    AccessConfig,
    CountingConfig,
    GoverningConfig,
    LimitsConfig,
    PageConfig,
    SummariesConfig,
    TelemetryConfig,
    TimeoutsConfig,
    check_positive,
    shown,
)

__all__ = [
    "COMPACTIONS",
    "CONFIG_ENV",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_MAX_BODY",
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_READ_TIMEOUT",
    "DEFAULT_UI_CONTENT_BYTES",
    "DEFAULT_UI_CONVERSATIONS",
    "DEFAULT_UI_REPORT_BYTES",
    "DEFAULT_UI_REQUESTS",
    "FLAT",
    "GOVERN_IN",
    "GROUPS",
    "AccessConfig",
    "CountingConfig",
    "FlatSettings",
    "GoverningConfig",
    "LimitsConfig",
    "PageConfig",
    "ProxyConfig",
    "SummariesConfig",
    "TelemetryConfig",
    "TimeoutsConfig",
    "api_version",
    "upstream_key",
]

COMPACTIONS = ("cache", "seed")
#: None: a request's model's published window (providers/windows.py), as everywhere else; set
#: --context-window or a per-model window for models the table does not know.
DEFAULT_CONTEXT_WINDOW: int | None = None
DEFAULT_MAX_OUTPUT = 4096
#: The environment variable through which ``proxy --workers N`` hands the config to
#: each worker process (see app.app_from_env).
CONFIG_ENV = "CONTEXT_GOVERNOR_PROXY_CONFIG"

#: ProxyConfig's groups by attribute name, each with its class.
GROUPS: Mapping[str, type[Any]] = MappingProxyType(
    {
        "timeouts": TimeoutsConfig,
        "limits": LimitsConfig,
        "governing": GoverningConfig,
        "counting": CountingConfig,
        "summaries": SummariesConfig,
        "access": AccessConfig,
        "page": PageConfig,
        "telemetry": TelemetryConfig,
    }
)

#: The deprecated flat names (ProxyConfig's fields before the groups), each with its
#: group and its name there.
FLAT: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "connect_timeout": ("timeouts", "connect"),
        "read_timeout": ("timeouts", "read"),
        "max_body_bytes": ("limits", "max_body_bytes"),
        "max_in_flight": ("limits", "max_in_flight"),
        "max_in_flight_per_client": ("limits", "max_in_flight_per_client"),
        "govern_in": ("governing", "run_in"),
        "govern_processes": ("governing", "processes"),
        "count_store": ("counting", "store"),
        "count_retention": ("counting", "retention"),
        "count_tokens_upstream": ("counting", "calibrate_upstream"),
        "summary_model": ("summaries", "model"),
        "summary_store": ("summaries", "store"),
        "summary_base_url": ("summaries", "base_url"),
        "summary_timeout": ("summaries", "timeout"),
        "summary_retention": ("summaries", "retention"),
        "allow_origins": ("access", "allow_origins"),
        "allow_hosts": ("access", "allow_hosts"),
        "client_keys": ("access", "client_keys"),
        "ui": ("page", "enabled"),
        "ui_conversations": ("page", "conversations"),
        "ui_requests": ("page", "requests"),
        "ui_report_bytes": ("page", "report_bytes"),
        "ui_content": ("page", "content"),
        "ui_content_bytes": ("page", "content_bytes"),
        "ui_token": ("page", "token"),
        "metrics": ("telemetry", "metrics"),
        "otlp_endpoint": ("telemetry", "otlp_endpoint"),
    }
)


class FlatSettings(TypedDict, total=False):
    """The deprecated flat keywords of ProxyConfig (FLAT says where each went)."""

    connect_timeout: float
    read_timeout: float
    max_body_bytes: int
    max_in_flight: int
    max_in_flight_per_client: int
    govern_in: str
    govern_processes: int
    count_store: str | None
    count_retention: float | None
    count_tokens_upstream: bool
    summary_model: str | None
    summary_store: str | None
    summary_base_url: str | None
    summary_timeout: float
    summary_retention: float | None
    allow_origins: tuple[str, ...] | list[str]
    allow_hosts: tuple[str, ...] | list[str]
    client_keys: Mapping[str, str]
    ui: bool
    ui_conversations: int
    ui_requests: int
    ui_report_bytes: int
    ui_content: bool
    ui_content_bytes: int
    ui_token: str | None
    metrics: bool
    otlp_endpoint: str | None


_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True, init=False, repr=False)
class ProxyConfig:
    """Where to forward and how to govern.

    ``upstream`` is the provider's base URL as an SDK would take it (for OpenAI
    ``https://api.openai.com/v1``): the proxy's ``/v1/X`` goes to ``upstream/X``.
    ``upstreams`` gives an API its own (keys: "openai" for Chat Completions and, unless
    given apart, Responses; "responses", "anthropic", "gemini"), so one proxy serves
    every agent; ``upstream`` is then the others' (None: an API with no upstream is
    answered 404). A URL with no path gets its API's version (``/v1``; Gemini
    ``/v1beta``): ``https://api.anthropic.com`` and ``.../v1`` are the same upstream.
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
    ``compaction`` is the policy by name, ``compaction_settings`` the cache policy's
    settings (policies.SETTINGS: trigger, target, keep_recent...), as the
    [compaction] table of a config file gives them; none: its defaults.

    The rest is grouped by concern (settings.py): ``timeouts`` on the upstream,
    ``limits`` on bodies and requests in flight, where governance runs
    (``governing``), token ``counting``, ``summaries`` where the policy cuts, who may
    call (``access``), the ``page`` at /ui, and ``telemetry`` (metrics, spans). Each
    defaults to its group's defaults.

    Credentials in ``upstream`` (``user:password@`` or a ``key=``/``token=`` query
    parameter) are used but never shown: ``repr`` and every log line redact them,
    as they do ``api_key``, the store URLs, the client keys and the page's token.
    Userinfo is sent as basic auth in the ``Authorization`` header, so it and
    ``api_key`` together are refused (one would silently replace the other).
    """

    upstream: str | None
    upstreams: Mapping[str, str]
    api_key: str | None
    #: the target's rules; None: each route's own provider (openai for chat completions
    #: and responses, anthropic for messages)
    profile: str | None
    context_window: int | None
    model_windows: Mapping[str, int]
    max_output: int
    compaction: str
    compaction_settings: Mapping[str, Any]
    #: what precedes the newest compaction block or item (which the provider does not
    #: read): "keep" forwards it as it came, "drop" leaves it out (govern_request's)
    compacted: Compacted
    #: Messages: mark where the stable prefix ends with cache_control (govern_request's)
    cache_breakpoints: bool
    timeouts: TimeoutsConfig
    limits: LimitsConfig
    governing: GoverningConfig
    counting: CountingConfig
    summaries: SummariesConfig
    access: AccessConfig
    page: PageConfig
    telemetry: TelemetryConfig

    def __init__(
        self,
        upstream: str | None = None,
        api_key: str | None = None,
        profile: str | None = None,
        context_window: int | None = DEFAULT_CONTEXT_WINDOW,
        model_windows: Mapping[str, int] = _EMPTY,
        max_output: int = DEFAULT_MAX_OUTPUT,
        compaction: str = "cache",
        compaction_settings: Mapping[str, Any] = _EMPTY,
        *,
        upstreams: Mapping[str, str] = _EMPTY,
        compacted: str = "keep",
        cache_breakpoints: bool = True,
        timeouts: TimeoutsConfig | None = None,
        limits: LimitsConfig | None = None,
        governing: GoverningConfig | None = None,
        counting: CountingConfig | None = None,
        summaries: SummariesConfig | None = None,
        access: AccessConfig | None = None,
        page: PageConfig | None = None,
        telemetry: TelemetryConfig | None = None,
        **flat: Unpack[FlatSettings],
    ) -> None:
        top = {
            "upstream": upstream,
            "upstreams": upstreams,
            "api_key": api_key,
            "profile": profile,
            "context_window": context_window,
            "model_windows": model_windows,
            "max_output": max_output,
            "compaction": compaction,
            "compaction_settings": compaction_settings,
            "compacted": compacted,
            "cache_breakpoints": cache_breakpoints,
        }
        given = {
            "timeouts": timeouts,
            "limits": limits,
            "governing": governing,
            "counting": counting,
            "summaries": summaries,
            "access": access,
            "page": page,
            "telemetry": telemetry,
        }
        if not flat:
            self._build(top, given)
            return
        old = dict(flat)
        _warn_flat(old, given)
        try:
            self._build(top, _with_flat(given, old))
        except ConfigError as exc:  # named as the caller named it
            raise ConfigError(_as_given(str(exc), old)) from None

    def _build(self, top: dict[str, Any], groups: Mapping[str, Any]) -> None:
        for name, value in top.items():
            object.__setattr__(self, name, value)
        for name, cls in GROUPS.items():
            group = groups[name]
            if group is None:
                group = cls()
            elif not isinstance(group, cls):
                raise ConfigError(f"{name} must be a {cls.__name__}, got {group!r}")
            object.__setattr__(self, name, group)
        self._check()

    def _check(self) -> None:
        if not isinstance(self.upstreams, Mapping):
            raise ConfigError(f"upstreams must be a mapping of API to URL, got {self.upstreams!r}")
        unknown = sorted(str(api) for api in self.upstreams if api not in APIS)
        if unknown:
            raise ConfigError(
                f"no API is named {', '.join(unknown)}; an upstream per API takes {', '.join(APIS)}"
            )
        if self.upstream is None and not self.upstreams:
            raise ConfigError(
                "give an upstream: its base URL (upstream), or one per API (upstreams)"
            )
        if self.upstream is not None:
            object.__setattr__(self, "upstream", self._checked_url("upstream", self.upstream))
        urls = {
            api: self._checked_url(f"the {api} upstream", u) for api, u in self.upstreams.items()
        }
        object.__setattr__(self, "upstreams", MappingProxyType(urls))
        if self.profile is not None and self.profile not in PROFILES:
            raise ConfigError(
                f"unknown profile {self.profile!r}; choose from {', '.join(sorted(PROFILES))}"
            )
        self._check_governance()
        if self.summaries.model is not None and self.compaction != "cache":
            raise ConfigError(
                "summaries.model needs compaction 'cache' (summaries replace its cuts)"
            )
        # Frozen all the way down: a shared mapping edited later would make replicas disagree.
        object.__setattr__(self, "model_windows", MappingProxyType(dict(self.model_windows)))
        object.__setattr__(
            self, "compaction_settings", MappingProxyType(dict(self.compaction_settings))
        )

    def _check_governance(self) -> None:
        if self.compaction not in COMPACTIONS:
            raise ConfigError(f"compaction must be 'cache' or 'seed', got {self.compaction!r}")
        if not isinstance(self.compaction_settings, Mapping):
            raise ConfigError(
                f"compaction_settings must be a mapping, got {self.compaction_settings!r}"
            )
        policy_from_settings(self.compaction, self.compaction_settings)  # its ConfigError
        object.__setattr__(self, "compacted", check_compacted(self.compacted))
        if not isinstance(self.cache_breakpoints, bool):
            raise ConfigError(
                f"cache_breakpoints must be true or false, got {self.cache_breakpoints!r}"
            )
        if self.context_window is not None:
            check_positive("context_window", self.context_window)
        if not isinstance(self.model_windows, Mapping):
            raise ConfigError(f"model_windows must be a mapping, got {self.model_windows!r}")
        for model, window in self.model_windows.items():
            check_positive(f"the window of {model!r}", window)
        if (
            isinstance(self.max_output, bool)
            or not isinstance(self.max_output, int)
            or (self.max_output < 0)
        ):
            raise ConfigError(f"max_output must be a non-negative integer, got {self.max_output!r}")

    def _checked_url(self, name: str, url: Any) -> str:
        """An upstream URL, checked (http(s), no fragment, no userinfo beside api_key),
        without its trailing slash."""
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            shown_url = redact_url(url) if isinstance(url, str) else url
            raise ConfigError(f"{name} must be an http(s) URL, got {shown_url!r}")
        if parts.fragment:
            raise ConfigError(f"{name} must not have a #fragment: {redact_url(url)!r}")
        if "@" in parts.netloc and self.api_key is not None:
            raise ConfigError(
                f"{name} carries credentials (user:password@, sent as basic auth in the "
                "Authorization header, where api_key would go too): give one of them"
            )
        return parts._replace(path=parts.path.rstrip("/")).geturl()

    def upstream_for(self, api: str) -> str | None:
        """The base URL requests of ``api`` go to: its own, else the one its wire format
        borrows (Responses: OpenAI's), else ``upstream``; a URL with no path gets the
        API's version. None: no upstream."""
        url = self.upstreams.get(api)
        borrowed = upstream_key(api)
        if url is None and borrowed != api:
            url = self.upstreams.get(borrowed)
        url = url or self.upstream
        if url is None:
            return None
        parts = urlsplit(url)
        return url if parts.path else parts._replace(path=f"/{api_version(api)}").geturl()

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
        """The upstream URL as it may be printed (credentials masked), or "one per API"."""
        return "one per API" if self.upstream is None else redact_url(self.upstream)

    def redactor(self) -> Redactor:
        """Scrubs this config's secrets (upstream credentials, api_key, the store and
        endpoint URLs' credentials, client keys, the page's token) from any text."""
        urls = (
            self.summaries.store,
            self.summaries.base_url,
            self.counting.store,
            self.telemetry.otlp_endpoint,
        )
        return Redactor(
            [
                *(secret for url in self._urls() for secret in url_secrets(url)),
                *(secret for url in urls if url for secret in url_secrets(url)),
                self.api_key,
                *self.access.client_keys.values(),
                self.page.token,
            ]
        )

    def _urls(self) -> list[str]:
        return [u for u in (self.upstream, *self.upstreams.values()) if u is not None]

    def __repr__(self) -> str:
        values = ", ".join(
            f"{f.name}={shown(f.name, getattr(self, f.name))!r}" for f in fields(self)
        )
        return f"ProxyConfig({values})"

    def to_json(self) -> str:
        """Every setting, for a worker process to rebuild the same config (from_json):
        the top-level ones, and each group as an object of its own."""
        data: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in GROUPS:
                value = {g.name: _plain(getattr(value, g.name)) for g in fields(value)}
            data[f.name] = _plain(value)
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> ProxyConfig:
        try:
            data: Any = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{CONFIG_ENV} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{CONFIG_ENV} must be a JSON object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        for name, group in GROUPS.items():
            values = data.get(name, {})
            if not isinstance(values, dict):
                raise ConfigError(f"{CONFIG_ENV}: {name} must be a JSON object")
            known = {f.name for f in fields(group)}
            unknown += sorted(f"{name}.{key}" for key in set(values) - known)
        if unknown:
            raise ConfigError(f"{CONFIG_ENV} has unknown settings: {', '.join(unknown)}")
        groups = {name: group(**data.pop(name, {})) for name, group in GROUPS.items()}
        return cls(**data, **groups)


def upstream_key(api: str) -> str:
    """The ``upstreams`` key that gives ``api`` its upstream (its own, or the one its
    wire format borrows: "openai" for Responses)."""
    wire = WIRE_FORMATS.get(api)  # type: ignore[call-overload]
    return api if wire is None or wire.upstream_of is None else str(wire.upstream_of)


def api_version(api: str) -> str:
    """The version an API's routes are served under first (v1; Gemini v1beta)."""
    wire = WIRE_FORMATS.get(api)  # type: ignore[call-overload]
    return "v1" if wire is None else wire.routes[0].versions[0]


def _plain(value: Any) -> Any:
    """A setting's value as JSON takes it (mappings as dicts)."""
    return dict(value) if isinstance(value, Mapping) else value


def _flat_place(old: str) -> str:
    group, name = FLAT[old]
    return f"{group}={GROUPS[group].__name__}({name}=...)"


def _warn_flat(flat: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """One DeprecationWarning for the flat keywords of one call, naming each one's place.
    A keyword no setting ever had is a TypeError, as for any function; a group given as
    well as one of its flat keywords a ConfigError (which one would be meant?)."""
    unknown = sorted(set(flat) - set(FLAT))
    if unknown:
        raise TypeError(f"ProxyConfig() got an unexpected keyword argument {unknown[0]!r}")
    for old in flat:
        group, name = FLAT[old]
        if given[group] is not None:
            raise ConfigError(f"give {group} or {old} (deprecated: {group}.{name}), not both")
    said = ", ".join(f"{old} -> {_flat_place(old)}" for old in flat)
    warnings.warn(
        f"ProxyConfig's flat settings are deprecated and will be removed in the next release: "
        f"give each in its group ({said})",
        DeprecationWarning,
        stacklevel=3,
    )


def _with_flat(given: Mapping[str, Any], flat: Mapping[str, Any]) -> dict[str, Any]:
    """The groups given, and those of the flat keywords made from them."""
    values: dict[str, dict[str, Any]] = {}
    for old, value in flat.items():
        group, name = FLAT[old]
        values.setdefault(group, {})[name] = value
    made = {group: GROUPS[group](**kwargs) for group, kwargs in values.items()}
    return {**given, **made}


def _as_given(message: str, flat: Mapping[str, Any]) -> str:
    """``message`` with the settings of the groups made from flat keywords named by
    their flat names, as the caller gave them (``page.requests`` -> ``ui_requests``)."""
    groups = {FLAT[old][0] for old in flat}
    for old, (group, name) in FLAT.items():
        if group in groups:
            message = re.sub(rf"\b{re.escape(group)}\.{re.escape(name)}\b", old, message)
    return message


def _flat_alias(old: str) -> property:
    group, name = FLAT[old]

    def read(self: ProxyConfig) -> Any:
        warnings.warn(
            f"ProxyConfig.{old} is deprecated and will be removed in the next release: "
            f"read .{group}.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(getattr(self, group), name)

    return property(read, doc=f"Deprecated: ``{group}.{name}``.")


# The flat names read for one release (FLAT), each with a DeprecationWarning; not
# declared to type checkers, so new code cannot use them unawares.
for _old in FLAT:
    setattr(ProxyConfig, _old, _flat_alias(_old))
del _old
