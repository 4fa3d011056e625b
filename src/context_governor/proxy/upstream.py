"""Talking to the upstream server: which headers cross, and relaying its answer.

Headers that describe one hop (connection, transfer encoding, the body's length
and encoding) are dropped both ways: httpx and the ASGI server set their own,
and a stale ``content-length`` or ``content-encoding`` would corrupt the body.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable

import httpx
from starlette.datastructures import Headers
from starlette.responses import Response, StreamingResponse

from .config import ProxyConfig

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


class Upstream:
    """One pooled HTTP client to the upstream, made on first use (inside the event loop)."""

    def __init__(self, config: ProxyConfig) -> None:
        self._config = config
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(self._config.read_timeout, connect=self._config.connect_timeout)
            self._client = httpx.AsyncClient(timeout=timeout)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def headers(
        self, incoming: Headers, *, content_type: str | None = None
    ) -> list[tuple[str, str]]:
        """The client's headers to forward; the fixed key, if any, replaces its own, and
        ``content_type`` the client's (the governed body is always JSON, whatever it said)."""
        drop = _REQUEST_DROP | ({"content-type"} if content_type else set())
        out = [(k, v) for k, v in incoming.items() if k.lower() not in drop]
        if content_type:
            out.append(("content-type", content_type))
        if self._config.api_key is not None:
            out = [(k, v) for k, v in out if k.lower() != "authorization"]
            out.append(("authorization", f"Bearer {self._config.api_key}"))
        return out

    async def send(
        self,
        method: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        content: bytes,
    ) -> httpx.Response:
        """Send, returning as soon as the status and headers are in (the body streams)."""
        url = f"{self._config.upstream}/{path.lstrip('/')}"
        if query:
            url = f"{url}?{query}"
        request = self.client.build_request(method, url, headers=headers, content=content)
        return await self.client.send(request, stream=True)


def _relayed_headers(
    response: httpx.Response, extra: Iterable[tuple[str, str]]
) -> list[tuple[bytes, bytes]]:
    items = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _RESPONSE_DROP]
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in [*items, *extra]]


async def _chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The upstream's bytes as they arrive; a broken upstream ends the stream early."""
    try:
        async for chunk in response.aiter_bytes():
            yield chunk
    except httpx.HTTPError as exc:
        log.warning("upstream stream broke off: %r", exc)
    finally:
        await response.aclose()


async def relay(
    response: httpx.Response, *, stream: bool, extra: Iterable[tuple[str, str]] = ()
) -> Response:
    """The upstream's answer as ours: status, headers and body unchanged.

    Streamed (server-sent events, downloads) when asked and successful; otherwise
    read whole, so an error body arrives as one JSON document.
    """
    headers = _relayed_headers(response, extra)
    relayed: Response
    if stream and response.status_code < 400:
        relayed = StreamingResponse(_chunks(response), status_code=response.status_code)
    else:
        try:
            content = await response.aread()
        finally:
            await response.aclose()
        relayed = Response(content, status_code=response.status_code)
    # raw_headers, not a dict: repeated headers (set-cookie) must all survive.
    relayed.raw_headers.extend(headers)
    return relayed
