"""The APIs the proxy governs, and what differs between them: nothing but names and shapes.

Each governed route (Chat Completions, Anthropic Messages, OpenAI Responses, Gemini
generateContent) runs the same machinery in app.py; an :class:`ApiRoute` says only
which path it is, which body format ``govern_request`` reads (its table also gives
the profile when none was configured), where the key goes, and how errors look, as
JSON and as a streaming event, in that API's own shape (so each SDK raises its usual
exception with our message), and how its streamed answers are framed (``framing``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from ..formats.base import Api
from ..formats.gemini_stream import ArrayStream
from .sse import EventFraming, Framing, is_event_stream

__all__ = [
    "BY_API",
    "CHAT",
    "GEMINI",
    "GEMINI_STREAM",
    "KEY_HEADERS",
    "MAX_UNGOVERNED_HEADER",
    "MESSAGES",
    "QUERY_KEY",
    "RESPONSES",
    "ROUTES",
    "VERSIONS",
    "ApiRoute",
    "anthropic_error",
    "google_error",
    "has_query_key",
    "header_value",
    "openai_error",
    "path_kind",
    "route_for_path",
    "with_query_key",
]

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
    # the proxy's own refusals (guard.py), named as Anthropic names them
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "rate_limit_error": "rate_limit_error",
}


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    """Anthropic's error body: ``{"type": "error", "error": {"type", "message"}}``."""
    error = {"type": _ANTHROPIC_KINDS.get(kind, "api_error"), "message": message}
    return {"type": "error", "error": error}


#: Google's canonical status names for the HTTP statuses the proxy answers with itself
#: (google.rpc.Code's HTTP mapping). A body over the limit is INVALID_ARGUMENT, as
#: Gemini's own "Request payload size exceeds the limit" error is; so is a body that is
#: not JSON (415); a Host not served (421, which the mapping does not name) is refused
#: as PERMISSION_DENIED, as a page's origin is (403).
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT", 421: "PERMISSION_DENIED",
                  429: "RESOURCE_EXHAUSTED", 502: "UNAVAILABLE", 503: "UNAVAILABLE",
                  504: "DEADLINE_EXCEEDED"}  # fmt: skip


def google_error(message: str, status: int) -> dict[str, Any]:
    """Google's error body: ``{"error": {"code", "message", "status"}}`` (what the
    google-genai SDK reads into its ClientError / ServerError)."""
    name = _GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
    return {"error": {"code": status, "message": message, "status": name}}


def _event(name: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {name}\n" if name else ""
    return (head + "data: " + json.dumps(data) + "\n\n").encode()


@dataclass(frozen=True, slots=True)
class ApiRoute:
    """One governed route of the proxy."""

    #: ``govern_request``'s name of the body's format (formats/base.py APIS)
    api: Api
    #: below /v1/, on the proxy and on the upstream
    path: str
    #: the body's field that must be present (a 400 in the API's shape otherwise);
    #: None for Responses, whose history may be all server-side (a stored prompt)
    required: str | None
    #: the proxy's version prefixes the route is served under (each maps to the
    #: upstream's base, as /v1/ does)
    versions: tuple[str, ...] = ("v1",)
    #: streaming is chosen by the path (Gemini's :streamGenerateContent), not the body
    streams: bool = False

    @property
    def anthropic(self) -> bool:
        return self.api == "anthropic"

    @property
    def google(self) -> bool:
        return self.api == "gemini"

    @property
    def paths(self) -> tuple[str, ...]:
        """Where the proxy serves the route (a Starlette path template: Gemini's names
        the model, ``/v1beta/models/{model}:generateContent``)."""
        return tuple(f"/{version}/{self.path}" for version in self.versions)

    def error_body(
        self,
        message: str,
        kind: str,
        param: str | None = None,
        code: str | None = None,
        status: int = 400,
    ) -> dict[str, Any]:
        if self.google:
            return google_error(message, status)
        if self.anthropic:  # one kind, no code: a code Anthropic names as a kind wins
            return anthropic_error(message, code if code in _ANTHROPIC_KINDS else kind)
        return openai_error(message, kind, param, code)

    def stream_error(self, message: str) -> bytes:
        """One server-sent event saying the answer broke off, in this API's shape."""
        if self.anthropic:
            return _event("error", anthropic_error(message, "upstream_error"))
        if self.google:  # the SDK raises a chunk that is {"error": ...} as a ServerError
            return _event(None, google_error(message, 502))
        if self.api == "responses":
            # The Responses API's own error event (what its SDKs yield as an ErrorEvent).
            data = {"type": "error", "code": "upstream_error", "message": message, "param": None}
            return _event("error", data)
        return _event(None, openai_error(message, "upstream_error"))

    def framing(self, content_type: str) -> Framing | None:
        """How a streamed answer of ``content_type`` is relayed whole and ended if it
        breaks off: server-sent events with this API's error event; on Gemini's
        streaming route, the JSON array it streams without ``?alt=sse`` with Google's
        error as the last element (formats/gemini_stream.py); anything else raw."""
        if is_event_stream(content_type):
            return EventFraming(self.stream_error)
        media = content_type.split(";")[0].strip().lower()
        if self.google and self.streams and media == "application/json":
            return ArrayStream(lambda message: google_error(message, 502))
        return None

    def key_header(self, incoming: set[str], query: str = "") -> str:
        """Where a configured --api-key goes: where the client put its own key (one of
        KEY_HEADERS, or QUERY_KEY for Gemini's ``?key=``), else the API's usual header."""
        for name in KEY_HEADERS:
            if name in incoming:
                return name
        if has_query_key(query):
            return QUERY_KEY
        if self.google:
            return "x-goog-api-key"
        return "x-api-key" if self.anthropic else "authorization"


#: The headers a client's key travels in (a fixed --api-key replaces them all).
KEY_HEADERS = ("x-goog-api-key", "x-api-key", "authorization")
#: key_header's answer for "in the query, as ``key=``" (Gemini's other way to send it).
QUERY_KEY = "?key"


def has_query_key(query: str) -> bool:
    """Whether the (still encoded) query carries a ``key=`` parameter."""
    return any(unquote(piece.partition("=")[0]) == "key" for piece in query.split("&"))


def with_query_key(query: str, key: str) -> str:
    """``query`` with every ``key=`` parameter's value replaced by ``key`` (encoded)."""
    pieces = [piece for piece in query.split("&") if piece]
    return "&".join(
        f"{piece.partition('=')[0]}={quote(key, safe='')}"
        if unquote(piece.partition("=")[0]) == "key"
        else piece
        for piece in pieces
    )


CHAT = ApiRoute("openai", "chat/completions", "messages")
MESSAGES = ApiRoute("anthropic", "messages", "messages")
RESPONSES = ApiRoute("responses", "responses", None)
#: The google-genai SDK calls /v1/models/... (its default API version), others /v1beta/.
_GOOGLE_VERSIONS = ("v1beta", "v1")
GEMINI = ApiRoute("gemini", "models/{model}:generateContent", "contents", _GOOGLE_VERSIONS)
GEMINI_STREAM = ApiRoute(
    "gemini", "models/{model}:streamGenerateContent", "contents", _GOOGLE_VERSIONS, streams=True
)
ROUTES: tuple[ApiRoute, ...] = (CHAT, MESSAGES, RESPONSES, GEMINI, GEMINI_STREAM)
#: What governing needs of a route (its format, required field); both Gemini routes
#: agree on it.
BY_API: dict[str, ApiRoute] = {route.api: route for route in ROUTES}
#: The version prefixes passed-through paths are accepted under.
VERSIONS: tuple[str, ...] = tuple(dict.fromkeys(v for r in ROUTES for v in r.versions))
#: Gemini's resource collections (files, cachedContents, tunedModels...) and a model's
#: ``:action``s get Google's error shape when passed through under /v1/.
_ACTION = re.compile(r"[A-Za-z]{1,40}")


def route_for_path(path: str, version: str = "v1") -> ApiRoute:
    """Whose error shape a passed-through path gets: Google's under /v1beta/ and for a
    ``models/{model}:action`` path, Anthropic's under ``messages`` (count_tokens,
    batches), OpenAI's elsewhere."""
    first, _, rest = path.partition("/")
    if version != "v1" or (first == "models" and ":" in rest):
        return GEMINI
    return MESSAGES if first == "messages" else CHAT


_WORD = re.compile(r"[a-z_]{1,40}")


def _segment_kind(segment: str) -> str:
    if _WORD.fullmatch(segment):
        return segment
    _, colon, action = segment.rpartition(":")
    return "{id}:" + action if colon and _ACTION.fullmatch(action) else "{id}"


def path_kind(path: str) -> str:
    """A passed-through path with its ids replaced by ``{id}``, so "not governed" is
    said once per kind (``responses/{id}/cancel``, ``models/{id}:countTokens``), not
    once per response or model."""
    return "/".join(seg if i == 0 else _segment_kind(seg) for i, seg in enumerate(path.split("/")))


def header_value(parts: tuple[str, ...]) -> str:
    """What a request left ungoverned, as one header value: comma-separated, with
    anything but printable ASCII (and commas, and "%") percent-encoded, so a client's
    ids can neither break the header nor forge another one; cut at
    MAX_UNGOVERNED_HEADER."""
    value = ", ".join(quote(part, safe=_HEADER_SAFE) for part in parts)
    if len(value) <= MAX_UNGOVERNED_HEADER:
        return value
    return value[: MAX_UNGOVERNED_HEADER - 3] + "..."
