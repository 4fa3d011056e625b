"""Talking to the upstream server: which headers cross, and relaying its answer.

Headers that describe one hop (connection, transfer encoding, the body's length
and encoding) are dropped both ways: httpx and the ASGI server set their own,
and a stale ``content-length`` or ``content-encoding`` would corrupt the body.

Credentials in the upstream URL are taken out of it once: userinfo becomes the
client's basic auth (what httpx did with it anyway) and the base query is added
to each request, so the URL httpx logs and puts in its errors is the bare base.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

import anyio
import httpx
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..formats import APIS
from ._apis import KEY_HEADERS
from ._config import ProxyConfig
from ._paths import BadPath
from ._redact import Redactor
from ._sse import EventFraming, Framing, error_event, is_event_stream
from ._watch import OnEnd, StreamWatch, WatchedFraming

__all__ = [
    "POOL_SHARDS",
    "RelayedStream",
    "Upstream",
    "describe",
    "forward_headers",
    "relay",
    "sse_framing",
    "upstreams_of",
]

log = logging.getLogger("context_governor.proxy")

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
#: Not forwarded: the upstream's host is not ours, and httpx negotiates its own encoding
#: (it decodes the answer, which is relayed decoded).
_REQUEST_DROP = _HOP_BY_HOP | {"host", "accept-encoding"}
#: ``date`` and ``server`` are set by the ASGI server serving us; relayed too, they would
#: appear twice.
_RESPONSE_DROP = _HOP_BY_HOP | {"content-encoding", "date", "server"}


#: How many HTTP clients share the upstream connections. One httpx pool gets slow
#: with hundreds of connections in flight (its bookkeeping grows with the pool: 450
#: concurrent requests took 18 s through one client and 4.5 s spread over 50 in
#: bench/load.py's set-up), so requests are spread round-robin over a few pools.
POOL_SHARDS = 16


class Upstream:
    """Pooled HTTP clients to one upstream base URL, made on first use (inside the event
    loop); the app keeps one per distinct base (ProxyConfig.upstream_for)."""

    def __init__(self, config: ProxyConfig, url: str) -> None:
        self._config = config
        self._clients: list[httpx.AsyncClient] = []
        self._turn = itertools.count()
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
        self._base = urlunsplit((parts.scheme, host, parts.path, "", ""))
        self._base_query = parts.query
        self._auth = (
            httpx.BasicAuth(unquote(parts.username or ""), unquote(parts.password or ""))
            if "@" in parts.netloc
            else None
        )
        self.redact = config.redactor()

    def start(self) -> None:
        """Make the pools. Each client would load the CA bundle into its own SSL context
        (tens of ms); they share one, made here, at start-up, not on the event loop
        of the first request."""
        if self._clients:
            return
        timeout = httpx.Timeout(self._config.timeouts.read, connect=self._config.timeouts.connect)
        # No connection cap: concurrency is the clients' to choose, as if they called
        # the upstream directly (httpx's default cap of 100 would queue the rest).
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=16)
        ssl_context = httpx.create_ssl_context()
        self._clients = [
            httpx.AsyncClient(timeout=timeout, limits=limits, auth=self._auth, verify=ssl_context)
            for _ in range(POOL_SHARDS)
        ]

    @property
    def client(self) -> httpx.AsyncClient:
        """The next pool, round-robin."""
        self.start()
        return self._clients[next(self._turn) % len(self._clients)]

    async def aclose(self) -> None:
        clients, self._clients = self._clients, []
        for client in clients:
            await client.aclose()

    async def send(
        self,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        content: bytes,
    ) -> httpx.Response:
        """Send, returning as soon as the status and headers are in (the body streams).

        ``path`` and ``query`` must come from paths.forward_path/forward_query (or be
        our own constants); the URL is checked again to be under the base.
        """
        url = httpx.URL(self.url(path, query))
        base = httpx.URL(self._base)
        if url.host != base.host or not url.raw_path.startswith(base.raw_path.rstrip(b"/") + b"/"):
            raise BadPath(f"refusing to forward outside the upstream's base path: {path!r}")
        client = self.client
        request = client.build_request(method, url, headers=headers, content=content)
        return await client.send(request, stream=True)

    def url(self, path: str, query: str) -> str:
        """The upstream URL of ``path`` below the base, with the base's query first."""
        joined = "&".join(q for q in (self._base_query, query) if q)
        return f"{self._base}/{path}" + (f"?{joined}" if joined else "")


def forward_headers(
    config: ProxyConfig,
    incoming: Headers,
    *,
    content_type: str | None = None,
    key_header: Callable[[set[str]], str] | None = None,
) -> list[tuple[str, str]]:
    """The client's headers to forward (``x-api-key``, ``anthropic-version``,
    ``anthropic-beta`` and the like unchanged); the fixed key, if any, replaces the
    client's own, in the header ``key_header`` picks from the names the client sent
    (default ``authorization``; apis.QUERY_KEY: none, the key goes in the query);
    ``content_type`` replaces the client's (the governed body is always JSON,
    whatever it said)."""
    drop = _REQUEST_DROP | ({"content-type"} if content_type else set())
    out = [(k, v) for k, v in incoming.items() if k.lower() not in drop]
    if content_type:
        out.append(("content-type", content_type))
    if config.api_key is not None:
        names = {k.lower() for k, _ in out}
        where = key_header(names) if key_header else "authorization"
        out = [(k, v) for k, v in out if k.lower() not in KEY_HEADERS]
        key = config.api_key
        if where in KEY_HEADERS:  # else in the query (the caller's: with_query_key)
            out.append((where, f"Bearer {key}" if where == "authorization" else key))
    return out


def upstreams_of(config: ProxyConfig) -> dict[str, Upstream]:
    """An Upstream for each API the config gives one (ProxyConfig.upstream_for), one
    per distinct base URL: APIs that share a base share its pools."""
    pools: dict[str, Upstream] = {}
    found: dict[str, Upstream] = {}
    for api in APIS:
        url = config.upstream_for(api)
        if url is not None:
            found[api] = pools.setdefault(url, Upstream(config, url))
    return found


def _relayed_headers(
    response: httpx.Response, extra: Iterable[tuple[str, str]]
) -> list[tuple[bytes, bytes]]:
    items = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _RESPONSE_DROP]
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in [*items, *extra]]


def describe(exc: BaseException, redact: Redactor) -> str:
    """An exception as one line for a log or an error message, secrets masked."""
    return redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


def sse_framing(content_type: str) -> Framing | None:
    """Server-sent events, ended by a chat-completions error event; anything else raw."""
    return EventFraming(error_event) if is_event_stream(content_type) else None


class RelayedStream(Response):
    """The upstream's body relayed as it arrives, ending honestly.

    - A stream with a framing (``framing(content_type)``: server-sent events, a wire
      format's own, such as Gemini's streamed JSON array) is relayed in whole pieces
      (sse.py); if the upstream breaks off or goes silent past the read timeout, the
      framing ends it in the API's own error shape (an error event, or an error
      element and ``]``).
    - Any other body that breaks off is not completed: the connection is
      dropped, so the client sees a truncated transfer, not a short file.
    - If the client goes away, the upstream response is closed at once instead
      of being read to its end (and logged; a client that leaves once the answer is
      complete is not "going away mid-stream").
    - With a ``watch`` (watch.py), a stream that ends without its API's terminal event
      is ended as one that broke off, and ``on_end`` gets the watch when it is over
      (the usage it saw).
    """

    def __init__(
        self,
        response: httpx.Response,
        redact: Redactor,
        framing: Callable[[str], Framing | None] = sse_framing,
        watch: StreamWatch | None = None,
        on_end: OnEnd | None = None,
    ) -> None:
        self.status_code = response.status_code
        self.background = None
        self.raw_headers = []
        self._response = response
        found = framing(response.headers.get("content-type", ""))
        if watch is not None and found is not None:  # the watch reads what the framing relays
            watch.pieces = found.pieces
        self._framing: Framing | None = (
            WatchedFraming(found, watch) if found is not None and watch is not None else found
        )
        self._redact = redact
        self._watch = watch
        self._on_end = on_end
        #: the answer is all sent: a disconnect from now on is the client's normal leave
        self._complete = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    if not self._complete:  # the server says so after a complete answer too
                        log.info("client went away mid-stream; closing the upstream response")
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                await self._stream(send)
                group.cancel_scope.cancel()
        except OSError:  # the client's socket broke while we were sending
            if not self._complete:
                log.info("client went away mid-stream; closing the upstream response")
        finally:
            with anyio.CancelScope(shield=True):
                await self._response.aclose()
            if self._on_end is not None and self._watch is not None:
                try:
                    self._on_end(self._watch)
                except Exception:  # what is learned from a stream never fails it
                    log.exception("reading the stream's usage failed")

    async def _stream(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        framing = self._framing
        try:
            async for chunk in self._response.aiter_bytes():
                out = framing.feed(chunk) if framing else chunk
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
        except httpx.HTTPError as exc:
            what = describe(exc, self._redact)
            timed_out = isinstance(exc, httpx.TimeoutException)
            reason = "went silent past the read timeout" if timed_out else "broke off the stream"
            message = f"the upstream {reason} ({what}); the answer is incomplete"
            ending = framing.broken(message) if framing else None
            if framing is None or ending is None:
                log.warning("upstream body broke off (%s); dropping the client connection", what)
                return  # without the final message: the server closes the connection
            held = framing.held
            log.warning("upstream %s (%s, %d unfinished bytes dropped)", reason, what, held)
            if ending:
                await send({"type": "http.response.body", "body": ending, "more_body": True})
        else:
            rest = self._unfinished() if framing else b""
            if rest is None:
                rest = framing.flush() if framing else b""
            if rest:
                await send({"type": "http.response.body", "body": rest, "more_body": True})
        self._complete = True
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _unfinished(self) -> bytes | None:
        """The ending of a stream that closed without its API's terminal event (the
        watch saw none): the API's error event, the unfinished piece dropped; None
        when it ended properly (or nothing watches it)."""
        framing, watch = self._framing, self._watch
        if framing is None or watch is None or watch.finished:
            return None
        held = framing.held
        message = "the upstream ended the stream without its final event; the answer is incomplete"
        ending = framing.broken(message)
        if ending is None:
            return None
        log.warning(
            "upstream stream ended without its final event (%d unfinished bytes dropped); "
            "ended with an error event",
            held,
        )
        return ending


async def relay(
    response: httpx.Response,
    *,
    stream: bool,
    redact: Redactor,
    extra: Iterable[tuple[str, str]] = (),
    framing: Callable[[str], Framing | None] = sse_framing,
    watch: StreamWatch | None = None,
    on_end: OnEnd | None = None,
) -> Response:
    """The upstream's answer as ours: status, headers and body unchanged.

    Streamed (server-sent events, downloads) when asked and successful; otherwise
    read whole, so an error body arrives as one JSON document. ``framing`` gives
    the framing of a streamed answer by its content type (None: relayed raw), which
    relays it in whole pieces and ends it in the API's own shape if it breaks off;
    ``watch`` and ``on_end``: see RelayedStream.
    """
    headers = _relayed_headers(response, extra)
    relayed: Response
    if stream and response.status_code < 400:
        relayed = RelayedStream(response, redact, framing, watch, on_end)
    else:
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        relayed = Response(content, status_code=response.status_code)
    # raw_headers, not a dict: repeated headers (set-cookie) must all survive.
    relayed.raw_headers.extend(headers)
    return relayed
