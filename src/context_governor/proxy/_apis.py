"""The APIs the proxy governs, and what differs between them: their wire formats' entries.

Each governed route (Chat Completions, Anthropic Messages, OpenAI Responses, Gemini
generateContent) runs the same machinery in app.py; an :class:`ApiRoute` is one of
its wire format's routes (formats/_registry.py: every path, the body format
``govern_request`` reads, where the key goes, and how errors look, as JSON and as a
streaming event, in that API's own shape, so each SDK raises its usual exception with
our message), and frames its streamed answers (``framing``). Nothing here names an
API: the routes are the registry's, in its order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from ..formats import (
    ANTHROPIC_WIRE,
    FALLBACK,
    GEMINI_WIRE,
    WIRE_FORMATS,
    Api,
    WireFormat,
    anthropic_error,
    google_error,
    openai_error,
)
from ._sse import EventFraming, Framing, is_event_stream

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


def _event(name: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {name}\n" if name else ""
    return (head + "data: " + json.dumps(data) + "\n\n").encode()


@dataclass(frozen=True, slots=True)
class ApiRoute:
    """One governed route of the proxy."""

    #: ``govern_request``'s name of the body's format (formats/_base.py APIS)
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
    def wire(self) -> WireFormat:
        """The route's wire format (formats/_registry.py)."""
        return WIRE_FORMATS[self.api]

    @property
    def anthropic(self) -> bool:
        """Whether the route speaks Anthropic Messages (a name kept for callers)."""
        return self.wire is ANTHROPIC_WIRE

    @property
    def google(self) -> bool:
        """Whether the route speaks Gemini's ``generateContent`` (a name kept for callers)."""
        return self.wire is GEMINI_WIRE

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
        return self.wire.error_body(message, kind, param, code, status)

    def stream_error(self, message: str) -> bytes:
        """One server-sent event saying the answer broke off, in this API's shape."""
        return _event(*self.wire.stream_error(message))

    def framing(self, content_type: str) -> Framing | None:
        """How a streamed answer of ``content_type`` is relayed whole and ended if it
        breaks off: server-sent events with this API's error event; another form as
        its wire format's ``stream_framing`` relays it (on Gemini's streaming route, the
        JSON array it streams without ``?alt=sse``, with Google's error as the last
        element: formats/_gemini_stream.py); anything else raw."""
        if is_event_stream(content_type):
            return EventFraming(self.stream_error)
        wire = self.wire
        if wire.stream_framing is None:
            return None
        media = content_type.split(";")[0].strip().lower()
        framing: Framing | None = wire.stream_framing(
            media, self.streams, lambda message: wire.stream_error(message)[1]
        )
        return framing

    def key_header(self, incoming: set[str], query: str = "") -> str:
        """Where a configured --api-key goes: where the client put its own key (one of
        KEY_HEADERS, or QUERY_KEY for Gemini's ``?key=``), else the API's usual header."""
        for name in KEY_HEADERS:
            if name in incoming:
                return name
        if has_query_key(query):
            return QUERY_KEY
        return self.wire.key_header


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


#: Every governed route: each wire format's, in the registry's order.
ROUTES: tuple[ApiRoute, ...] = tuple(
    ApiRoute(wire.api, route.path, wire.required, route.versions, route.streams)
    for wire in WIRE_FORMATS.values()
    for route in wire.routes
)
#: What governing needs of a route (its format, required field); both Gemini routes
#: agree on it.
BY_API: dict[str, ApiRoute] = {route.api: route for route in ROUTES}
#: Each API's first route: the one whose error shape a passed-through path gets.
_FIRST: dict[str, ApiRoute] = {route.api: route for route in reversed(ROUTES)}
CHAT = _FIRST["openai"]
MESSAGES = _FIRST["anthropic"]
RESPONSES = _FIRST["responses"]
GEMINI = _FIRST["gemini"]
GEMINI_STREAM = BY_API["gemini"]
#: The version prefixes passed-through paths are accepted under.
VERSIONS: tuple[str, ...] = tuple(dict.fromkeys(v for r in ROUTES for v in r.versions))
#: Gemini's resource collections (files, cachedContents, tunedModels...) and a model's
#: ``:action``s get Google's error shape when passed through under /v1/.
_ACTION = re.compile(r"[A-Za-z]{1,40}")


def route_for_path(path: str, version: str = "v1") -> ApiRoute:
    """Whose error shape a passed-through path gets: the first wire format's whose
    ``passthrough`` claims it (Google's under /v1beta/ and for a
    ``models/{model}:action`` path, Anthropic's under ``messages``: count_tokens,
    batches), the fallback's (OpenAI's) elsewhere."""
    for wire in WIRE_FORMATS.values():
        if wire.passthrough is not None and wire.passthrough(path, version):
            return _FIRST[wire.api]
    return _FIRST[FALLBACK.api]


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
