"""Watching a relayed stream go by: did it end the API's own way, and what did it count?

A stream can end cleanly at the transport level and still be incomplete: an upstream
(or a gateway in front of it) that closes the connection after half an answer sends
no error, and most clients take the end of the body for the end of the answer. Each
API has a last event that says the answer is whole:

- Chat Completions: ``data: [DONE]``;
- Messages: ``message_stop`` (or an ``error`` event: the API's own way to fail);
- Responses: ``response.completed``, ``response.incomplete`` or ``response.failed``
  (or ``error``);
- Gemini: an element whose candidate has a ``finishReason`` (or an ``error`` element).

:class:`StreamWatch` sees the whole pieces the relay passes on (sse.py's events,
gemini_stream.py's array elements: each framing's ``pieces``), after they were sent
on their way, and notes
whether the terminal one went by, and the last usage the upstream reported
(usage.py). :class:`WatchedFraming` puts it on a framing. The relay then ends a
stream that stopped without its terminal event as it ends one that broke off: with
the API's error event. Nothing is buffered or delayed: a piece is looked at only
when it may matter (a cheap substring test first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from ..formats import wire_or_fallback
from ._sse import Framing
from ._usage import Usage, events, may_carry_usage, output_of, usage_of

__all__ = ["OnEnd", "Pieces", "StreamWatch", "WatchedFraming"]

#: The pieces (event name or None, data) in relayed bytes: a framing's ``pieces``.
Pieces = Callable[[bytes], Iterable[tuple[str | None, bytes]]]


class StreamWatch:
    """Whether a stream of ``api`` showed its terminal event (its wire format's
    ``stream_end``), and its last usage. ``pieces`` reads the relayed bytes as its
    framing relays them (default: server-sent events; the relay sets its framing's)."""

    def __init__(self, api: str, pieces: Pieces = events) -> None:
        self.api = api
        self.pieces = pieces
        self.finished = False
        self.usage: Usage | None = None
        wire = wire_or_fallback(api)
        self._ends = wire.stream_end
        self._output_event = wire.output_event

    def see(self, whole: bytes) -> None:
        """Look at whole pieces, as relayed."""
        if not whole:
            return
        for name, data in self.pieces(whole):
            self._event(name, data)

    def _event(self, name: str | None, data: bytes) -> None:
        if self._ends(name, data):
            self.finished = True
        elif (
            name is not None
            and name == self._output_event
            and self.usage is not None
            and not may_carry_usage(data)
        ):
            # the answer's final count comes apart from the input's (message_start)
            out = output_of(data) if b'"output_tokens"' in data else None
            if out is not None:
                self.usage = replace(self.usage, output_tokens=out)
        if may_carry_usage(data):
            self._usage(data)

    def _usage(self, data: Any) -> None:
        found = usage_of(self.api, data)
        if found is not None:
            self.usage = found


class WatchedFraming:
    """A framing (sse.Framing) whose relayed pieces a StreamWatch sees."""

    def __init__(self, inner: Framing, watch: StreamWatch) -> None:
        self.inner = inner
        self.watch = watch

    @property
    def held(self) -> int:
        return self.inner.held

    def feed(self, chunk: bytes) -> bytes:
        out = self.inner.feed(chunk)
        self.watch.see(out)
        return out

    def flush(self) -> bytes:
        out = self.inner.flush()
        self.watch.see(out)
        return out

    def broken(self, message: str) -> bytes | None:
        return self.inner.broken(message)

    def pieces(self, whole: bytes) -> Iterable[tuple[str | None, bytes]]:
        return self.inner.pieces(whole)


#: What the relay calls with a stream's watch once the stream is over (either way).
OnEnd = Callable[[StreamWatch], None]
