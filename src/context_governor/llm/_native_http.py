"""The HTTP side the native clients share: send a request body, as JSON or SSE, with retries.

The Anthropic Messages and OpenAI Responses clients differ in their bodies and
in the events of their streams, not in how bytes move: both POST a JSON body,
get either one JSON answer or a ``text/event-stream`` whose events are JSON
objects with a ``type``, and fail with the same kinds of HTTP and transport
errors. This base class does the moving; a client supplies the body
(``request_body``), the reading of a whole answer (``parse``) and a stream
state machine (``stream_reader``), all pure and tested without a network.

Whether a request streams is read from the body it sends (``"stream": true``),
not from the client: the body is what the server sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import httpx

from ..messages import Message
from ._base import ModelResponse, TextCallback
from ._errors import ModelConnectionError, ModelError
from ._http import HTTPModelClient, http_error, json_value
from ._streaming import SSEDecoder

__all__ = ["NativeHTTPClient", "StreamReader"]


class StreamReader(Protocol):
    """Rebuilds one answer from the JSON events of a stream."""

    #: True once the stream's final event arrived (an answer without it is cut short)
    done: bool

    def feed(self, event: Any) -> str:
        """Take one event; returns the answer text it added ("" if none)."""
        ...

    def response(self) -> ModelResponse:
        """The answer (call once ``done``)."""
        ...


class NativeHTTPClient(HTTPModelClient):
    """Posts native request bodies to ``url``; subclasses say how to build and read them.

    ``timeout`` bounds each read (a long streamed answer is fine while it keeps
    coming); ``retry`` retries 429/5xx, timeouts and dropped connections with
    backoff, honouring Retry-After, except once streamed text was shown.
    """

    api = ""

    # -- what a subclass supplies ---------------------------------------------------------

    def request_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, data: Any) -> ModelResponse:
        """A whole (non-streamed) answer."""
        raise NotImplementedError

    def stream_reader(self) -> StreamReader:
        raise NotImplementedError

    # -- sending --------------------------------------------------------------------------

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        """Build the body for ``messages`` and send it, ungoverned (the runner governs
        native bodies itself: it calls ``request_body`` and ``send`` apart)."""
        try:
            body = self.request_body(messages, tools, max_tokens)
        except ModelError:
            raise
        except Exception as exc:  # e.g. an InputError of the edge on a malformed history
            raise ModelError(f"cannot build the request body: {exc}") from None
        return await self.send(body, on_text=on_text)

    async def send(
        self, body: dict[str, Any], *, on_text: TextCallback | None = None
    ) -> ModelResponse:
        """Send ``body`` as it is; raises ModelError once retries are exhausted."""
        streamed = body.get("stream") is True
        return await self._send_with_retries(
            body,
            lambda content: (
                self._send_streamed(content, on_text) if streamed else self._send(content, on_text)
            ),
        )

    async def _send(self, content: bytes, on_text: TextCallback | None) -> ModelResponse:
        answer = self.parse(await self._post_json(content))
        if on_text is not None and answer.text:
            on_text(answer.text)
        return answer

    async def _send_streamed(self, content: bytes, on_text: TextCallback | None) -> ModelResponse:
        reader = self.stream_reader()
        emitted = False
        try:
            async with self._http.stream(
                "POST", self.url, content=content, headers=self._headers
            ) as response:
                if response.status_code >= 400:
                    body = await response.aread()
                    raise http_error(response.status_code, response.headers, body, self.url)
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    # A server that ignores "stream" answers with the whole response (or
                    # with something else, which is then reported as not JSON).
                    whole = (await response.aread()).decode("utf-8", "replace")
                    return self.parse(json_value(whole, f"response from {self.url}"))
                decoder = SSEDecoder()
                async for line in response.aiter_lines():
                    data = decoder.feed(line)
                    if data is None:
                        continue
                    try:
                        text = reader.feed(json_value(data, "stream event"))
                    except ModelError as failed:
                        # An error event after text was shown cannot be retried either.
                        failed.retryable = failed.retryable and not emitted
                        raise
                    if text and on_text is not None:
                        emitted = True
                        on_text(text)
                    if reader.done:
                        break
                else:
                    tail = decoder.flush()
                    if tail is not None:
                        reader.feed(json_value(tail, "stream event"))
        except httpx.HTTPError as exc:
            error = self._transport_error(exc)
            # Text already shown to the user cannot be taken back: no retry then.
            error.retryable = error.retryable and not emitted
            raise error from None
        if not reader.done:
            raise ModelConnectionError(
                f"the stream from {self.url} ended before the answer was complete",
                retryable=not emitted,
            )
        return reader.response()
