"""Configuration, read from SHORTLINK_* environment variables."""

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
