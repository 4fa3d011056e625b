"""Relaying a server-sent-event stream so that a broken upstream cannot pass for a
finished answer.

Relayed byte for byte, a stream whose upstream dies mid-answer ends like a
complete one: status 200, no error, only the ``[DONE]`` missing, which most
clients do not check. So events are relayed whole (a partial event is held until
its blank line arrives) and, when the upstream breaks off, the client gets one
more event in the API's own streaming error shape, ``data: {"error": {...}}``,
which the OpenAI SDKs raise as an APIError, and then the end of the stream.

The relay (upstream.RelayedStream) knows a stream's framing only as
:class:`Framing`: whole pieces in, and the bytes that end it honestly if it breaks
off. :class:`EventFraming` is this module's, for server-sent events; a wire format
whose streams take another form names its own (``WireFormat.stream_framing``: Gemini's
streamed JSON array, formats/_gemini_stream.py); apis.ApiRoute.framing picks one by the
route and the answer's content type.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Protocol

from ._usage import events

__all__ = [
    "MAX_HELD",
    "EventFraming",
    "EventSplitter",
    "Framing",
    "complete_events",
    "error_event",
    "is_event_stream",
]

#: The ways an SSE event can end (a blank line, in any of the three line endings).
_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")
#: An "event" longer than this is relayed without waiting for its end, so a stream
#: that never sends a blank line cannot make us buffer without bound.
MAX_HELD = 1 << 20


def complete_events(buffer: bytes) -> int:
    """How many leading bytes of ``buffer`` are whole events (0 if none is)."""
    ends = [buffer.rfind(end) + len(end) for end in _EVENT_ENDS if buffer.rfind(end) >= 0]
    return max(ends, default=0)


class EventSplitter:
    """Feeds on upstream chunks, gives back only whole events."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk
        cut = len(data) if len(data) > MAX_HELD else complete_events(data)
        self._held = data[cut:]
        return data[:cut]

    @property
    def held(self) -> int:
        """Bytes of an unfinished event, dropped if the stream breaks off now."""
        return len(self._held)

    def flush(self) -> bytes:
        """What is left when the stream ended normally (relayed as sent)."""
        data, self._held = self._held, b""
        return data


def is_event_stream(content_type: str) -> bool:
    """Whether a ``content-type`` header says server-sent events."""
    return content_type.split(";")[0].strip().lower() == "text/event-stream"


class Framing(Protocol):
    """A streamed body's framing, as the relay uses it."""

    @property
    def held(self) -> int:
        """Bytes of an unfinished piece, dropped if the stream breaks off now."""
        ...

    def feed(self, chunk: bytes) -> bytes:
        """What of ``chunk`` (and what was held) is whole pieces, to relay now."""
        ...

    def flush(self) -> bytes:
        """What is left when the stream ended normally."""
        ...

    def broken(self, message: str) -> bytes | None:
        """What ends the stream after a break (``message`` says why), or None: nothing
        can, so the connection is dropped."""
        ...

    def pieces(self, whole: bytes) -> Iterable[tuple[str | None, bytes]]:
        """The (event name or None, data) of each piece in bytes this framing relayed:
        what a watch (watch.py) reads."""
        ...


class EventFraming(EventSplitter):
    """Server-sent events relayed whole, ended by one more event (``error`` makes it
    from the message: the route's own streaming error shape)."""

    def __init__(self, error: Callable[[str], bytes]) -> None:
        super().__init__()
        self._error = error

    def broken(self, message: str) -> bytes | None:
        return self._error(message)

    def pieces(self, whole: bytes) -> Iterable[tuple[str | None, bytes]]:
        return events(whole)


def error_event(message: str, kind: str = "upstream_error") -> bytes:
    """One event in the chat-completions streaming error shape."""
    error = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return b"data: " + json.dumps(error).encode() + b"\n\n"
