"""One Governor per conversation, for adapters whose framework names conversations.

A Governor caches what it saw last, so that a step costs only what is new; that
cache is only useful within one conversation, and a Governor is not thread-safe.
Frameworks run many conversations through one hook object (LangGraph threads,
LiteLLM sessions), so the hook keeps a small table: a Governor per conversation
key, the least recently used dropped past a bound (a dropped conversation only
costs one full pass when it comes back: the cache is never a decision), and a
lock per Governor so that two calls of one conversation never interleave.
A call that names no conversation is governed statelessly.

This module imports no framework.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from ..governor import Governor
from ..messages import Message
from ..pipeline import GovernResult, govern

#: How many conversations a hook keeps a Governor for, unless told otherwise.
DEFAULT_CONVERSATIONS = 256

_Key = tuple[Hashable, Hashable]  # (conversation, settings)
_Entry = tuple[Governor, threading.Lock]


class Conversations:
    """Governors by conversation key, least recently used dropped past ``limit``."""

    def __init__(self, limit: int = DEFAULT_CONVERSATIONS) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"max_conversations must be a positive integer, got {limit!r}")
        self.limit = limit
        self._table: OrderedDict[_Key, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._table)

    def get(self, key: Hashable) -> Governor | None:
        """The most recently used Governor of conversation ``key``, if one is kept."""
        for (conversation, _settings), (governor, _lock) in reversed(self._table.items()):
            if conversation == key:
                return governor
        return None

    def _entry(self, key: _Key, make: Callable[[], Governor]) -> _Entry:
        with self._lock:
            entry = self._table.get(key)
            if entry is None:
                entry = (make(), threading.Lock())
                self._table[key] = entry
                while len(self._table) > self.limit:
                    self._table.popitem(last=False)
            else:
                self._table.move_to_end(key)
            return entry

    def govern(
        self,
        key: Hashable | None,
        settings: dict[str, Any],
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
    ) -> GovernResult:
        """Govern ``messages`` in conversation ``key`` (statelessly when ``key`` is None).

        ``settings`` are Governor keyword arguments; they are part of the key, so a
        conversation that switches model gets a Governor for the new target.
        """
        if key is None:
            return govern(messages, tools=tools, **settings)
        full_key = (key, tuple(sorted((k, repr(v)) for k, v in settings.items())))
        governor, lock = self._entry(full_key, lambda: Governor(tools=tools, **settings))
        with lock:
            return governor.govern(messages, tools=tools)


def thread_id() -> str | None:
    """The LangGraph thread of the running graph, or None outside one (or without one)."""
    try:
        from langgraph.config import get_config
    except ImportError:  # pragma: no cover - langchain v1 depends on langgraph
        return None
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a runnable
        return None
    found = configurable.get("thread_id")
    return None if found is None else str(found)
