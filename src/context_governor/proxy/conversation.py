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
_SESSION_IN_USER_ID = re.compile(r"session_([0-9A-Za-z-]{8,64})")


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


def _claude_session(metadata: Any) -> str | None:
    """Claude Code's session id inside ``metadata.user_id`` (either of its spellings)."""
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str):
        return None
    if user_id.lstrip().startswith("{"):
        try:
            parsed = json.loads(user_id)
        except ValueError:
            parsed = None
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        return clean(session) if isinstance(session, str) else None
    found = _SESSION_IN_USER_ID.search(user_id)
    return clean(found.group(1)) if found else None


def _first_user(items: Any, role_key: str = "role") -> Any:
    """The first element of ``items`` whose role is user (Gemini's contents too)."""
    if isinstance(items, str):  # a Responses input given as one string
        return items
    if not isinstance(items, list):
        return None
    return next(
        (i for i in items if isinstance(i, dict) and i.get(role_key, "user") == "user"), None
    )


def _fixed_parts(api: str, data: dict[str, Any]) -> tuple[Any, Any]:
    """(system, first user message) of a body, in its API's own shape."""
    if api == "anthropic":
        return data.get("system"), _first_user(data.get("messages"))
    if api == "responses":
        return data.get("instructions"), _first_user(data.get("input"))
    if api == "gemini":
        return data.get("systemInstruction"), _first_user(data.get("contents"))
    messages = data.get("messages")
    if not isinstance(messages, list):
        return None, None
    system = [
        m for m in messages
        if isinstance(m, dict) and m.get("role") in ("system", "developer")
    ][:1]  # fmt: skip
    return system, _first_user(messages)


def digest(api: str, data: dict[str, Any], model: str | None) -> str:
    """A stable id of what stays fixed for a conversation: model, system, first user
    message (canonical JSON, so key order or spacing does not matter)."""
    system, first = _fixed_parts(api, data)
    text = json.dumps([api, model, system, first], sort_keys=True, separators=(",", ":"))
    return "d-" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def from_body(api: str, data: dict[str, Any], model: str | None) -> str:
    """The conversation a body names (Claude Code's session, Codex's cache key), else
    the digest of its fixed parts."""
    if api == "anthropic":
        session = _claude_session(data.get("metadata"))
        if session is not None:
            return session
    if api == "responses":
        key = data.get("prompt_cache_key")
        if isinstance(key, str) and clean(key):
            return clean(key) or ""
    return digest(api, data, model)
