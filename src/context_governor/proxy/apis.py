"""The APIs the proxy governs, and what differs between them: nothing but names and shapes.

Each governed route (Chat Completions, Anthropic Messages, OpenAI Responses) runs
the same machinery in app.py; an :class:`ApiRoute` says only which path it is,
which body format ``govern_request`` reads, which profile applies when none was
configured, which header carries the key, and how errors look, as JSON and as a
streaming event, in that API's own shape (so each SDK raises its usual exception
with our message).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from ..formats.request import Api

#: Longest value of the ``x-context-governor-ungoverned`` header; the rest is cut.
MAX_UNGOVERNED_HEADER = 1024
#: Printable ASCII but the separator (",") and the escape ("%"): kept as they are.
_HEADER_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in ",%")


def openai_error(
    message: str, kind: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error body (Chat Completions, Responses, and any other OpenAI path)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


#: Anthropic names errors by kind, not by code; ours map onto its kinds.
_ANTHROPIC_KINDS = {
    "invalid_request_error": "invalid_request_error",
    "request_too_large": "request_too_large",
    "upstream_error": "api_error",
}


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    """Anthropic's error body: ``{"type": "error", "error": {"type", "message"}}``."""
    error = {"type": _ANTHROPIC_KINDS.get(kind, "api_error"), "message": message}
    return {"type": "error", "error": error}


def _event(name: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {name}\n" if name else ""
    return (head + "data: " + json.dumps(data) + "\n\n").encode()


@dataclass(frozen=True, slots=True)
class ApiRoute:
    """One governed route of the proxy."""

    #: ``govern_request``'s name of the body's format
    api: Api
    #: below /v1/, on the proxy and on the upstream
    path: str
    #: the profile when the proxy was given none
    default_profile: str
    #: the body's field that must be present (a 400 in the API's shape otherwise);
    #: None for Responses, whose history may be all server-side (a stored prompt)
    required: str | None

    @property
    def anthropic(self) -> bool:
        return self.api == "anthropic"

    def error_body(
        self, message: str, kind: str, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        if self.anthropic:  # one kind, no code: a code Anthropic names as a kind wins
            return anthropic_error(message, code if code in _ANTHROPIC_KINDS else kind)
        return openai_error(message, kind, param, code)

    def stream_error(self, message: str) -> bytes:
        """One server-sent event saying the answer broke off, in this API's shape."""
        if self.anthropic:
            return _event("error", anthropic_error(message, "upstream_error"))
        if self.api == "responses":
            # The Responses API's own error event (what its SDKs yield as an ErrorEvent).
            data = {"type": "error", "code": "upstream_error", "message": message, "param": None}
            return _event("error", data)
        return _event(None, openai_error(message, "upstream_error"))

    def key_header(self, incoming: set[str]) -> str:
        """Where a configured --api-key goes: the header the client used for its own
        key, else the API's usual one."""
        if "x-api-key" in incoming:
            return "x-api-key"
        if "authorization" in incoming:
            return "authorization"
        return "x-api-key" if self.anthropic else "authorization"


CHAT = ApiRoute("openai", "chat/completions", "openai", "messages")
MESSAGES = ApiRoute("anthropic", "messages", "anthropic", "messages")
RESPONSES = ApiRoute("responses", "responses", "openai", None)
ROUTES: tuple[ApiRoute, ...] = (CHAT, MESSAGES, RESPONSES)
BY_API: dict[str, ApiRoute] = {route.api: route for route in ROUTES}


def route_for_path(path: str) -> ApiRoute:
    """Whose error shape a passed-through path gets: Anthropic's under ``messages``
    (count_tokens, batches), OpenAI's elsewhere."""
    return MESSAGES if path.split("/", 1)[0] == "messages" else CHAT


_WORD = re.compile(r"[a-z_]{1,40}")


def path_kind(path: str) -> str:
    """A passed-through path with its ids replaced by ``{id}``, so "not governed" is
    said once per kind (``responses/{id}/cancel``), not once per response."""
    return "/".join(
        seg if i == 0 or _WORD.fullmatch(seg) else "{id}" for i, seg in enumerate(path.split("/"))
    )


def header_value(parts: tuple[str, ...]) -> str:
    """What a request left ungoverned, as one header value: comma-separated, with
    anything but printable ASCII (and commas, and "%") percent-encoded, so a client's
    ids can neither break the header nor forge another one; cut at
    MAX_UNGOVERNED_HEADER."""
    value = ", ".join(quote(part, safe=_HEADER_SAFE) for part in parts)
    if len(value) <= MAX_UNGOVERNED_HEADER:
        return value
    return value[: MAX_UNGOVERNED_HEADER - 3] + "..."
