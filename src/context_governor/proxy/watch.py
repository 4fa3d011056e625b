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
gemini_stream.py's array elements), after they were sent on their way, and notes
whether the terminal one went by, and the last usage the upstream reported
(usage.py). :class:`WatchedFraming` puts it on a framing. The relay then ends a
stream that stopped without its terminal event as it ends one that broke off: with
the API's error event. Nothing is buffered or delayed: a piece is looked at only
when it may matter (a cheap substring test first).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .sse import Framing
from .usage import Usage, events, may_carry_usage, output_of, usage_of

_RESPONSE_ENDS = frozenset(
    {"response.completed", "response.incomplete", "response.failed", "error"}
)


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


def _gemini_ends(element: Any) -> bool:
    if not isinstance(element, dict):
        return False
    if "error" in element:
        return True
    candidates = element.get("candidates")
    return isinstance(candidates, list) and any(
        isinstance(c, dict) and c.get("finishReason") for c in candidates
    )


class StreamWatch:
    """Whether a stream of ``api`` showed its terminal event, and its last usage.
    ``array``: Gemini's JSON-array form (pieces are array elements, not events)."""

    def __init__(self, api: str, array: bool = False) -> None:
        self.api = api
        self.array = array
        self.finished = False
        self.usage: Usage | None = None

    def see(self, whole: bytes) -> None:
        """Look at whole pieces, as relayed."""
        if not whole:
            return
        if self.array:
            self._element(whole.strip(b" \t\r\n,[]"))
            return
        for name, data in events(whole):
            self._event(name, data)

    def _element(self, data: bytes) -> None:
        if not data:
            return
        mark = b"finishReason" in data or b'"error"' in data
        usage = may_carry_usage(data)
        if not (mark or usage):
            return
        element = _json(data)
        if mark and _gemini_ends(element):
            self.finished = True
        if usage:
            self._usage(element)

    def _event(self, name: str | None, data: bytes) -> None:
        api = self.api
        if api == "openai":
            if data.strip() == b"[DONE]":
                self.finished = True
        elif api == "anthropic":
            if name in ("message_stop", "error") or (
                name is None and b"message_stop" in data and _type(data) == "message_stop"
            ):
                self.finished = True
            elif name == "message_delta" and self.usage is not None and not may_carry_usage(data):
                # the answer's final count comes apart from the input's (message_start)
                out = output_of(data) if b'"output_tokens"' in data else None
                if out is not None:
                    self.usage = replace(self.usage, output_tokens=out)
        elif api == "responses":
            if name in _RESPONSE_ENDS or (
                name is None and b"response." in data and _type(data) in _RESPONSE_ENDS
            ):
                self.finished = True
        elif api == "gemini":  # every element carries usage: parsed once for both
            self._element(data)
            return
        if may_carry_usage(data):
            self._usage(data)

    def _usage(self, data: Any) -> None:
        found = usage_of(self.api, data)
        if found is not None:
            self.usage = found


def _type(data: bytes) -> Any:
    parsed = _json(data)
    return parsed.get("type") if isinstance(parsed, dict) else None


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


#: What the relay calls with a stream's watch once the stream is over (either way).
OnEnd = Callable[[StreamWatch], None]
