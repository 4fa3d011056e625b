"""Which conversation a request belongs to, the same answer on every replica.

The proxy keeps no session state, yet the figures a team asks for are per
conversation (did request 214 of that session read the cache?). The id is taken,
in this order, from:

1. a header the client sends for its session: ``x-context-governor-conversation``
   (ours, for any client), ``session_id`` / ``conversation_id`` (Codex sends these),
   ``x-claude-code-session-id``, ``x-session-id``;
2. the body: Anthropic's ``metadata.user_id`` when it names a session (Claude Code
   sends ``user_<hash>_account_<uuid>_session_<uuid>``, newer versions a JSON object
   with ``session_id``), the Responses API's ``prompt_cache_key`` (Codex sets it to
   its conversation id);
3. otherwise a digest of what stays fixed for a whole conversation: the model, the
   system prompt and the first user message, so two replicas (or a restarted proxy)
   name the same conversation the same way. Never a random id.

The id is shown on the page and in traces, never used as a metric label (its
cardinality is unbounded). A client-given id is cut to ``MAX_ID`` characters and
kept to a safe alphabet, since it is echoed into HTML, logs and span attributes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from ..formats import wire_or_fallback

__all__ = ["MAX_ID", "SESSION_HEADERS", "clean", "digest", "from_body", "from_headers"]

#: headers naming the client's session, most specific first
SESSION_HEADERS = (
    "x-context-governor-conversation",
    "session_id",
    "conversation_id",
    "x-claude-code-session-id",
    "x-session-id",
)
MAX_ID = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._:@/+=-]")


def clean(value: str) -> str | None:
    """A client-given id made safe to show and bounded; None when nothing is left."""
    cleaned = _UNSAFE.sub("_", value.strip())[:MAX_ID]
    return cleaned or None


def from_headers(headers: Mapping[str, str]) -> str | None:
    """The session a client names in a header (``SESSION_HEADERS``), or None."""
    for name in SESSION_HEADERS:
        value = headers.get(name)
        if value:
            found = clean(value)
            if found is not None:
                return found
    return None


def digest(api: str, data: dict[str, Any], model: str | None) -> str:
    """A stable id of what stays fixed for a conversation: model, system, first user
    message (canonical JSON, so key order or spacing does not matter)."""
    system, first = wire_or_fallback(api).fixed_parts(data)
    text = json.dumps([api, model, system, first], sort_keys=True, separators=(",", ":"))
    return "d-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def from_body(api: str, data: dict[str, Any], model: str | None) -> str:
    """The conversation a body names (Claude Code's session, Codex's cache key: its
    wire format's ``session``), else the digest of its fixed parts."""
    named = wire_or_fallback(api).session(data)
    session = clean(named) if named is not None else None
    return session if session is not None else digest(api, data, model)
