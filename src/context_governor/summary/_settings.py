"""``Summaries``: the summary option of the cache policy (CompactionPolicy.summary)."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..messages import Message
from ._store import MemoryStore, SummaryStore

__all__ = ["KEY_VERSION", "Summaries", "public"]

#: Bumped when what a key covers or how a summary is placed changes.
KEY_VERSION = 1


@dataclass(frozen=True, eq=False, slots=True)
class Summaries:
    """Replace each block of turns the cache policy cuts by one summary.

    ``summarizer`` is any callable, sync or async, from messages to text (see
    summarizer.py; ``model_summarizer`` wraps a model client). ``store`` keeps the
    summaries (default: a MemoryStore of this object; use SqliteStore or RedisStore to
    share them between processes). ``timeout`` is how long one request waits for a
    summary that is not stored yet; ``max_tokens`` is the room a summary gets in the
    request (the cut is planned with it, and a longer summary is shortened to it);
    ``input_tokens`` is the summarizer's own budget (its input is governed to it).
    ``name`` identifies the summarizer in the store's keys: change it when the model
    or prompt changes (default: the callable's qualified name).
    """

    summarizer: Callable[[list[Message]], Any]
    store: SummaryStore | None = None
    timeout: float = 30.0
    max_tokens: int = 1024
    input_tokens: int = 32_000
    name: str | None = None
    #: keys whose summary failed in this process: not asked again (the plain cut stays)
    failed: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.summarizer):
            raise ConfigError(f"summarizer must be a callable, got {self.summarizer!r}")
        if self.store is None:
            object.__setattr__(self, "store", MemoryStore())
        elif not (
            callable(getattr(self.store, "get", None))
            and callable(getattr(self.store, "put", None))
        ):
            raise ConfigError(f"summary store must have get() and put(), got {self.store!r}")
        t = self.timeout
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t <= 0:
            raise ConfigError(f"summary timeout must be a positive number of seconds, got {t!r}")
        for name, least in (("max_tokens", 16), ("input_tokens", 256)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ConfigError(f"summary {name} must be an integer >= {least}, got {value!r}")
        if self.name is None:
            qualname = getattr(self.summarizer, "__qualname__", None)
            object.__setattr__(self, "name", str(qualname or type(self.summarizer).__name__))

    def settings_digest(self) -> str:
        """What, besides the summarized messages, a stored summary depends on."""
        data = [KEY_VERSION, self.name, self.max_tokens, self.input_tokens]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()

    def digest(self, message: Message) -> str:
        """The digest of one message as sent (see ``public``): the same in any process."""
        text = json.dumps(public(message), sort_keys=True, ensure_ascii=False, default=_type_name)
        return hashlib.sha256(text.encode()).hexdigest()

    def key_of(self, digests: list[str]) -> str:
        """The store key of the summary of the messages with these digests, in order."""
        h = hashlib.sha256(self.settings_digest().encode())
        for d in digests:
            h.update(d.encode())
        return h.hexdigest()

    def key(self, messages: list[Message]) -> str:
        """The store key of the summary of ``messages`` (everything cut so far)."""
        return self.key_of([self.digest(m) for m in messages])


def _type_name(value: Any) -> str:
    """Objects JSON cannot carry are named by type: never by repr, which may hold an
    address that differs between processes."""
    return f"<{type(value).__name__}>"


def public(value: Any) -> Any:
    """``value`` without the private keys (a leading "_") the format edges and adapters
    attach to messages and content parts to carry native state: the summarizer sees, and
    a key covers, only what goes on the wire."""
    if isinstance(value, dict):
        return {k: public(v) for k, v in value.items() if not (isinstance(k, str) and k[:1] == "_")}
    if isinstance(value, list):
        return [public(v) for v in value]
    return value
