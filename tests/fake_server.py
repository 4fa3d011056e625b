"""What the fake upstreams share: a starlette app served by uvicorn in a thread, on a
free localhost port, and the streams they answer with.

Clients talk to a fake over real sockets, exactly as to a provider. The server
records each request's target (raw path and query, routed or not) in ``targets``;
a streamed answer can stall after its first event or break off (``cut_after``), and
how each stream ended is appended to a list the fake keeps (``stream_ends``).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, Self

import uvicorn
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send


def free_socket() -> socket.socket:
    """A localhost socket bound to a free port (not listening yet)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


def pieces(text: str, size: int) -> list[str]:
    """``text`` in deltas of ``size`` characters (one empty delta for "")."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse_data(data: Any, event: str | None = None) -> bytes:
    """One server-sent event carrying ``data`` as JSON (named ``event`` if given)."""
    head = f"event: {event}\n" if event is not None else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class Cut(Exception):
    """Raised inside a streamed answer: uvicorn then drops the connection mid-body."""


class ListeningStream(StreamingResponse):
    """A StreamingResponse that stops as soon as the client goes away, even while
    stalled (Starlette only notices at the next write under ASGI 2.4), so a test
    can tell when the proxy closed its upstream request."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        asgi = {**scope.get("asgi", {}), "spec_version": "2.3"}
        await super().__call__({**scope, "asgi": asgi}, receive, send)


async def sse(
    events: list[bytes],
    stall: float,
    cut_after: int | None,
    ends: list[tuple[float, str]],
    tail: bytes = b"",
) -> AsyncIterator[bytes]:
    """The events, then ``tail`` (e.g. ``data: [DONE]``); a pause of ``stall`` seconds
    after the first; broken off before event ``cut_after``. How it ended ("complete",
    "cut", or "aborted" when the client went away) is appended to ``ends``."""
    end = "aborted"
    try:
        for i, event in enumerate(events):
            if cut_after is not None and i == cut_after:
                end = "cut"
                raise Cut(f"cut after {cut_after} events")
            yield event
            if i == 0 and stall:
                await asyncio.sleep(stall)
        if tail:
            yield tail
        end = "complete"
    finally:
        ends.append((time.monotonic(), end))


class ThreadedServer:
    """``routes`` served on a free localhost port from a thread, once started."""

    def __init__(self, routes: list[Route], name: str) -> None:
        self.name = name
        #: every request's target as sent (raw path and query), whatever the route
        self.targets: list[str] = []
        self._lock = threading.Lock()
        self._sock = free_socket()
        self.port: int = self._sock.getsockname()[1]
        config = uvicorn.Config(
            self._recording(Starlette(routes=routes)),
            log_level="error",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(5)
        self._sock.close()

    def _recording(self, app: ASGIApp) -> ASGIApp:
        """``app``, recording each request's raw target first (any path, routed or not)."""

        async def recorded(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                query = scope.get("query_string", b"")
                target = scope["raw_path"] + (b"?" + query if query else b"")
                with self._lock:
                    self.targets.append(target.decode("latin-1"))
            await app(scope, receive, send)

        return recorded
