"""uvicorn's HTTP/1.1 protocol with a time limit on a request's headers.

uvicorn closes an idle keep-alive connection, but a connection that sends part of a
request line and then a byte every few seconds is kept for as long as it does: 400
such connections were never closed. ``HeaderTimeoutH11`` closes a connection that has
not sent a whole request head within ``header_timeout`` seconds of its first byte (or
of the connection, for one that sends nothing). The body is the Guard's to time
(guard.py, ``body-timeout``).

The CLI serves with it (``http=HeaderTimeoutH11``); a worker process started by an
import string gets it by name and its limit from the config (app.app_from_env).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._settings import DEFAULT_HEADER_TIMEOUT

__all__ = ["PROTOCOL_PATH", "HeaderTimeoutH11"]

#: The class as an import string, for uvicorn's worker processes.
PROTOCOL_PATH = "context_governor.proxy._protocol:HeaderTimeoutH11"


class HeaderTimeoutH11(H11Protocol):
    """H11Protocol that closes a connection slow to send a request head."""

    #: seconds; set from LimitsConfig.header_timeout before serving
    header_timeout: float = DEFAULT_HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self.conn.their_state is h11.IDLE:
            self._arm()  # the next request of a kept-alive connection starts
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm()  # its head is in

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _too_slow(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()
