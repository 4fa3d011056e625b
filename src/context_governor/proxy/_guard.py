"""The proxy's gate: who may spend the key it holds, checked before a byte of body is read.

A pure ASGI middleware (app.py puts it in front of every route) that refuses, in
the API's own error shape and without forwarding anything:

1. a ``Host`` the proxy does not serve (421): a DNS-rebound page's name on a
   loopback address (access.host_allowed);
2. a web page (403): an ``Origin`` not in ``--allow-origin``, or
   ``Sec-Fetch-Site: cross-site`` without one; an allowed origin's CORS preflight
   is answered here (204) and its answers carry the CORS headers;
3. a missing or wrong client key (401), when ``--client-key`` gave some; the key is
   taken from where the API's SDKs send theirs and is never forwarded or logged;
4. a governed route's body that is not declared JSON (415): a browser's simple
   request (``text/plain``, a form, no type) cannot be;
5. a body that does not arrive within ``body-timeout`` (408) or is over ``max-body``
   (413), read here before the request counts in flight: an upload is not a slot, so
   clients that send a byte every few seconds hold no one else's (at most
   ``max-uploads`` bodies are read at once; more get a 429);
6. a request past the in-flight limits, per client key and in all (429 with
   ``Retry-After``), so one runaway agent neither starves the others nor fills the
   proxy's memory with bodies.

(A connection that never finishes its headers is closed by the server's protocol,
protocol.py, after ``header-timeout``.)

``GET /healthz`` needs no key and is not counted, so a load balancer can probe a
busy proxy. The page (``GET /ui/...``) needs no client key either: it spends no key,
and it has its own rule (ui.py: loopback clients, or ``--ui-token``), which a browser
can meet; it could not send a client key with the page's own loads. The client key's
name is put in the request's log lines (``client=NAME``) and in
``scope["state"]["client"]``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._access import (
    CLIENT_KEY_HEADER,
    KEY_HEADERS,
    QUERY_KEY,
    bearer,
    digest,
    host_allowed,
    is_json,
    matching_name,
    origin_refusal,
    query_keys,
    shown,
    without_query_values,
)
from ._apis import CHAT, ROUTES, VERSIONS, ApiRoute, route_for_path
from ._body import TooLarge, declared_length, read_limited
from ._config import ProxyConfig

__all__ = [
    "CLIENT",
    "PREFLIGHT_MAX_AGE",
    "RETRY_AFTER",
    "ClientNameFilter",
    "Guard",
    "Refusal",
    "cors_headers",
    "error_shape",
    "install_client_name_filter",
    "is_governed",
    "preflight_headers",
]

log = logging.getLogger("context_governor.proxy")

#: The client key's name of the request being served, for its log lines.
CLIENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("client", default=None)
#: Seconds a refused client is told to wait (the limits count requests in flight,
#: which end within seconds for most answers).
RETRY_AFTER = 1
#: How long a browser may reuse an answered preflight.
PREFLIGHT_MAX_AGE = 600
_METHODS = "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"
_TOKEN_LIST = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*")
#: Each governed route's paths (Starlette's ``{model}`` matches one segment).
_GOVERNED = re.compile(
    "|".join(
        re.escape(f"/{version}/{route.path}").replace(re.escape("{model}"), "[^/]+")
        for route in ROUTES
        for version in route.versions
    )
)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused: its status, the API's error kind and code, the message."""

    status: int
    kind: str
    code: str
    message: str


def error_shape(path: str) -> ApiRoute:
    """Whose error shape a refusal on ``path`` gets (as the routes' own errors)."""
    for version in VERSIONS:
        prefix = f"/{version}/"
        if path.startswith(prefix):
            return route_for_path(path[len(prefix) :], version)
    return CHAT


def is_governed(method: str, path: str) -> bool:
    return method == "POST" and _GOVERNED.fullmatch(path) is not None


def preflight_headers(origin: str, requested: str | None) -> list[tuple[bytes, bytes]]:
    """The answer to an allowed origin's preflight: the methods the proxy serves and the
    headers it asked for (the SDKs' own: authorization, x-stainless-*, ...)."""
    headers = [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-allow-methods", _METHODS.encode()),
        (b"access-control-max-age", str(PREFLIGHT_MAX_AGE).encode()),
        (b"vary", b"Origin"),
    ]
    if requested and _TOKEN_LIST.fullmatch(requested.strip()):
        headers.append((b"access-control-allow-headers", requested.strip().encode("latin-1")))
    return headers


def cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    """What an allowed origin's answers carry, so its page can read them (and our
    x-context-governor-* headers)."""
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", b"*"),
        (b"vary", b"Origin"),
    ]


class ClientNameFilter(logging.Filter):
    """Starts each line the proxy logs while serving a keyed client with ``client=NAME``
    (a name checked to be a plain word, so it cannot break the line's formatting)."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = CLIENT.get()
        if name is not None and isinstance(record.msg, str):
            record.msg = f"client={name} {record.msg}"
        return True


def install_client_name_filter() -> None:
    """ClientNameFilter on the proxy's logger, once per process."""
    if not any(isinstance(f, ClientNameFilter) for f in log.filters):
        log.addFilter(ClientNameFilter())


class Guard:
    """The checks of the module docstring, in front of ``app``."""

    def __init__(self, app: ASGIApp, config: ProxyConfig) -> None:
        self.app = app
        self._origins = frozenset(config.access.allow_origins)
        self._hosts = tuple(config.access.allow_hosts)
        self._keys = [(name, digest(key)) for name, key in config.access.client_keys.items()]
        self._max = config.limits.max_in_flight
        self._max_per_client = config.limits.max_in_flight_per_client
        self._in_flight = 0
        self._per_client: Counter[str] = Counter()
        self._max_body = config.limits.max_body_bytes
        self._body_timeout = config.limits.body_timeout
        self._max_uploads = config.limits.max_uploads
        self._uploads = 0
        install_client_name_filter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        refusal = self._refusal(scope, headers)
        if refusal is None and origin is not None and _is_preflight(method, headers):
            response = Response(status_code=204)
            requested = headers.get("access-control-request-headers")
            response.raw_headers.extend(preflight_headers(origin, requested))
            await response(scope, receive, send)
            return
        send = _with_cors(send, origin) if refusal is None and origin is not None else send
        name: str | None = None
        health = method in ("GET", "HEAD") and path == "/healthz"
        page = method in ("GET", "HEAD") and (path == "/ui" or path.startswith("/ui/"))
        if refusal is None and self._keys and not health and not page:
            name, scope, refusal = self._client(scope, headers)
        if (
            refusal is None
            and is_governed(method, path)
            and not is_json(headers.get("content-type"))
        ):
            refusal = Refusal(
                415, "invalid_request_error", "unsupported_media_type",
                f"{_target(scope)} takes a JSON body: send Content-Type: application/json "
                f"(got {shown(headers.get('content-type') or 'none')})",
            )  # fmt: skip
        if refusal is None and not health and _has_body(headers):
            buffered, refusal = await self._uploaded(receive, headers)
            if buffered is None:  # the client went away while sending
                return
            receive = buffered
        if refusal is None and not health:
            refusal = self._limited(name)
        if refusal is not None:
            await self._refuse(refusal, name, scope, receive, send)
            return
        if health:
            await self.app(scope, receive, send)
            return
        await self._serve(name, scope, receive, send)

    def _refusal(self, scope: Scope, headers: Headers) -> Refusal | None:
        """The Host and browser checks (access.py), which need no key."""
        host = headers.get("host")
        server = scope.get("server")
        if not host_allowed(host, None if server is None else str(server[0]), self._hosts):
            return Refusal(
                421, "permission_error", "host_not_allowed",
                f"Host {shown(host or '')} is not served here (a DNS rebinding?); start the "
                "proxy with --allow-host NAME to serve a name",
            )  # fmt: skip
        reason = origin_refusal(headers.get("origin"), headers.get("sec-fetch-site"), self._origins)
        if reason is not None:
            return Refusal(
                403, "permission_error", "origin_not_allowed",
                f"{reason}; start the proxy with --allow-origin ORIGIN to serve a page",
            )  # fmt: skip
        return None

    def _client(self, scope: Scope, headers: Headers) -> tuple[str | None, Scope, Refusal | None]:
        """The client key's name and the scope without it (every place that carried a
        client key, and our own header, dropped), or a 401."""
        query = scope.get("query_string", b"").decode("latin-1")
        presented: list[tuple[str, str]] = [
            (name, bearer(value) if name == "authorization" else value.strip())
            for name, value in headers.items()
            if name in KEY_HEADERS
        ]
        presented += [(QUERY_KEY, value) for value in query_keys(query)]
        name: str | None = None
        keys: set[str] = set()
        for _, value in presented:
            found = matching_name(value, self._keys)
            if found is not None:
                name = name or found
                keys.add(value)
        if name is None:
            said = "a wrong client key" if presented else "no client key"
            return None, scope, Refusal(
                401, "authentication_error", "invalid_api_key",
                f"{said}: this proxy needs one of its client keys, sent as the API key "
                "(Authorization: Bearer, x-api-key, x-goog-api-key or the key query "
                f"parameter) or in {CLIENT_KEY_HEADER}",
            )  # fmt: skip
        kept = [
            (raw_name, raw_value)
            for raw_name, raw_value in scope["headers"]
            if not _carries_key(raw_name, raw_value, keys)
        ]
        state = {**scope.get("state", {}), "client": name}
        query_string = without_query_values(query, keys).encode("latin-1")
        return name, {**scope, "headers": kept, "query_string": query_string, "state": state}, None

    async def _uploaded(
        self, receive: Receive, headers: Headers
    ) -> tuple[Receive | None, Refusal | None]:
        """The body read here, within the body timeout and the size limit, and a
        ``receive`` that hands it to the app at once; None when the client left."""
        if self._uploads >= self._max_uploads:
            return receive, Refusal(
                429, "rate_limit_error", "too_many_uploads",
                f"the proxy is reading {self._uploads} request bodies, its limit "
                "(max-uploads); retry shortly",
            )  # fmt: skip
        self._uploads += 1
        try:
            async with asyncio.timeout(self._body_timeout):
                body = await read_limited(
                    _chunks(receive), self._max_body, declared_length(headers.get("content-length"))
                )
        except TooLarge as exc:
            return receive, Refusal(413, "invalid_request_error", "request_too_large", exc.message)
        except TimeoutError:
            return receive, Refusal(
                408, "invalid_request_error", "request_timeout",
                f"the request body did not arrive within {self._body_timeout:g} s "
                "(body-timeout)",
            )  # fmt: skip
        except _ClientGone:
            return None, None
        finally:
            self._uploads -= 1
        return _replaying(body, receive), None

    def _limited(self, name: str | None) -> Refusal | None:
        if self._in_flight >= self._max:
            return Refusal(
                429, "rate_limit_error", "too_many_requests_in_flight",
                f"the proxy has {self._in_flight} requests in flight, its limit "
                "(--max-in-flight); retry shortly",
            )  # fmt: skip
        if name is not None and self._per_client[name] >= self._max_per_client:
            return Refusal(
                429, "rate_limit_error", "too_many_requests_in_flight",
                f"client {name} has {self._per_client[name]} requests in flight, its limit "
                "(--max-in-flight-per-client); retry shortly",
            )  # fmt: skip
        return None

    async def _serve(self, name: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        """Call the app with the request counted in flight (to its answer's last byte)."""
        self._in_flight += 1
        if name is not None:
            self._per_client[name] += 1
        token = CLIENT.set(name)
        try:
            await self.app(scope, receive, send)
        finally:
            CLIENT.reset(token)
            self._in_flight -= 1
            if name is not None:
                self._per_client[name] -= 1
                if not self._per_client[name]:
                    del self._per_client[name]

    async def _refuse(
        self, refusal: Refusal, name: str | None, scope: Scope, receive: Receive, send: Send
    ) -> None:
        who = f"client={name} " if name is not None else ""
        log.info(
            "%s%s %s %d (not forwarded): %s",
            who, scope["method"], _target(scope), refusal.status, refusal.message,
        )  # fmt: skip
        route = error_shape(scope["path"])
        body = route.error_body(refusal.message, refusal.kind, None, refusal.code, refusal.status)
        response = JSONResponse(body, status_code=refusal.status)
        if refusal.status == 429:
            response.headers["retry-after"] = str(RETRY_AFTER)
        if refusal.status in (408, 413):  # the rest of the body is not read: no next request
            response.headers["connection"] = "close"
        await response(scope, receive, send)


class _ClientGone(Exception):
    """The client disconnected before its body was in."""


def _has_body(headers: Headers) -> bool:
    """Whether the request carries a body to read (declared, or chunked)."""
    length = declared_length(headers.get("content-length"))
    return bool(length) or "transfer-encoding" in headers


async def _chunks(receive: Receive) -> AsyncIterator[bytes]:
    """The body's pieces as the server hands them over."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app the whole body first, then the server's own
    messages (a disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _target(scope: Scope) -> str:
    """The path as sent (still percent-encoded, so a decoded newline cannot break a log
    line), cut at 200 characters."""
    raw: bytes = scope.get("raw_path") or scope["path"].encode("utf-8", "replace")
    text = raw.decode("latin-1")
    return text if len(text) <= 200 else text[:200] + "..."


def _is_preflight(method: str, headers: Headers) -> bool:
    return method == "OPTIONS" and "access-control-request-method" in headers


def _carries_key(name: bytes, value: bytes, keys: set[str]) -> bool:
    """Whether a raw header is our client-key header or carries one of ``keys``."""
    lowered = name.decode("latin-1").lower()
    if lowered == CLIENT_KEY_HEADER:
        return True
    if lowered not in KEY_HEADERS:
        return False
    text = value.decode("latin-1")
    return (bearer(text) if lowered == "authorization" else text.strip()) in keys


def _with_cors(send: Send, origin: str) -> Callable[[Message], Awaitable[None]]:
    """``send`` adding an allowed origin's CORS headers to the answer's start."""
    extra = cors_headers(origin)

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *extra]}
        await send(message)

    return sending
