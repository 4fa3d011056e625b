"""The proxy's settings, checked once at start-up.

A bad setting must stop the proxy before it listens, not surface as a 500 on
the first request, so every field is validated here and a ConfigError names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..profiles import PROFILES

COMPACTIONS = ("cache", "seed")
#: None: a request's model's published window (windows.py), as everywhere else; set
#: --context-window or a per-model window for models the table does not know.
DEFAULT_CONTEXT_WINDOW: int | None = None
DEFAULT_MAX_OUTPUT = 4096


def _positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


@dataclass(frozen=True, slots=True)
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
    The answer's reserve is the body's ``max_completion_tokens``/``max_tokens``,
    else ``max_output``.
    """

    upstream: str
    api_key: str | None = None
    profile: str = "openai"
    context_window: int | None = DEFAULT_CONTEXT_WINDOW
    model_windows: Mapping[str, int] = field(default_factory=dict)
    max_output: int = DEFAULT_MAX_OUTPUT
    compaction: str = "cache"
    connect_timeout: float = 10.0
    #: between two bytes of the answer; generous, since a long answer may start late
    read_timeout: float = 600.0

    def __post_init__(self) -> None:
        parts = urlsplit(self.upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(f"upstream must be an http(s) URL, got {self.upstream!r}")
        object.__setattr__(self, "upstream", self.upstream.rstrip("/"))
        if self.profile not in PROFILES:
            raise ConfigError(
                f"unknown profile {self.profile!r}; choose from {', '.join(sorted(PROFILES))}"
            )
        if self.compaction not in COMPACTIONS:
            raise ConfigError(f"compaction must be 'cache' or 'seed', got {self.compaction!r}")
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
            value = getattr(self, name)
            if not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        # Frozen all the way down: a shared mapping edited later would make replicas disagree.
        object.__setattr__(self, "model_windows", MappingProxyType(dict(self.model_windows)))

    def window_for(self, model: str | None) -> int | None:
        """The context window of ``model`` (see the class docstring for the lookup)."""
        if model is not None:
            if model in self.model_windows:
                return self.model_windows[model]
            prefixes = [m for m in self.model_windows if model.startswith(m)]
            if prefixes:
                return self.model_windows[max(prefixes, key=len)]
        return self.context_window
