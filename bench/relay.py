"""A plain pass-through proxy for the load test's baseline (``python -m bench.relay PORT
UPSTREAM``): the proxy's server stack and upstream client, no governance.

What it shares with ``context-governor proxy``: uvicorn serving a Starlette app in one
process, and the upstream reached through ``POOL_SHARDS`` httpx clients round-robin,
made on first use with one shared TLS context, the same limits and timeouts (the load
test's ``READ_TIMEOUT``, the proxy's default connect timeout). What it leaves out is what
the proxy adds: parsing the body, governing it, the report and its headers, redaction,
error mapping (an upstream that goes silent ends the relayed answer; a body that is not
JSON is forwarded as is). So the proxy's latency minus the relay's, measured in the same
run, is what governance and the proxy's own bookkeeping cost under load.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import AsyncIterator

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from context_governor.proxy._config import DEFAULT_CONNECT_TIMEOUT
from context_governor.proxy._upstream import POOL_SHARDS

#: Headers a relay must not copy (hop-by-hop, or set again by httpx or the server).
_DROP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "host",
    "accept-encoding",
    "content-encoding",
    "date",
    "server",
}


def make_app(upstream: str, read_timeout: float) -> Starlette:
    """The relay: POST /v1/chat/completions forwarded to ``upstream``/chat/completions."""
    clients: list[httpx.AsyncClient] = []
    turn = itertools.count()

    def client() -> httpx.AsyncClient:
        if not clients:  # made inside the event loop, as the proxy's are
            timeout = httpx.Timeout(read_timeout, connect=DEFAULT_CONNECT_TIMEOUT)
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=16)
            # one TLS context for all (building one per client costs ~0.1 s each), as
            # the proxy does
            ssl_context = httpx.create_ssl_context()
            clients.extend(
                httpx.AsyncClient(timeout=timeout, limits=limits, verify=ssl_context)
                for _ in range(POOL_SHARDS)
            )
        return clients[next(turn) % len(clients)]

    async def chat(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP}
        http = client()
        outgoing = http.build_request(
            "POST", f"{upstream}/chat/completions", content=await request.body(), headers=headers
        )
        try:
            answer = await http.send(outgoing, stream=True)
        except httpx.TimeoutException:
            return JSONResponse({"error": {"message": "upstream timed out"}}, 504)
        except httpx.HTTPError as exc:
            return JSONResponse({"error": {"message": f"upstream: {exc}"}}, 502)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            except httpx.HTTPError:
                return  # the upstream cut or went silent: the relayed answer just ends

        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _DROP}
        return StreamingResponse(
            body(), answer.status_code, headers=kept, background=BackgroundTask(answer.aclose)
        )

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/healthz", healthz)]
    )


if __name__ == "__main__":
    from .load import READ_TIMEOUT

    port, upstream = int(sys.argv[1]), sys.argv[2].rstrip("/")
    uvicorn.Server(
        uvicorn.Config(
            make_app(upstream, READ_TIMEOUT), host="127.0.0.1", port=port, log_level="warning"
        )
    ).run()
