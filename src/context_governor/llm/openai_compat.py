"""A client for any OpenAI-compatible ``/chat/completions`` endpoint, on httpx.

OpenAI, Azure-style gateways, vLLM, Ollama, llama.cpp, LiteLLM, OpenRouter,
DeepSeek, Groq, ... all speak this protocol; only the base URL and key change.
Both come from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` unless given.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ..messages import Message
from .base import ModelResponse, TextCallback, Usage, assistant_message
from .errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    is_retryable_status,
)
from .retry import RetryCallback, RetryPolicy, Sleep, parse_retry_after, with_retries
from .streaming import DONE, SSEDecoder, StreamAssembler

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: How much of an error body goes into the error message.
ERROR_BODY_CHARS = 500


def _error_message(body: bytes) -> str:
    """The server's own words from an error body: ``error.message`` when it is JSON."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:ERROR_BODY_CHARS] or "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:ERROR_BODY_CHARS]
    if isinstance(error, str) and error:
        return error[:ERROR_BODY_CHARS]
    return text[:ERROR_BODY_CHARS]


def _retry_after(headers: httpx.Headers) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        seconds = parse_retry_after(millis)
        if seconds is not None:
            return seconds / 1000
    return parse_retry_after(headers.get("retry-after"))


def http_error(status: int, headers: httpx.Headers, body: bytes, url: str) -> ModelHTTPError:
    """The error for an HTTP error response, marked retryable for 408/409/429/5xx."""
    return ModelHTTPError(
        f"HTTP {status} from {url}: {_error_message(body)}",
        retryable=is_retryable_status(status),
        status=status,
        retry_after=_retry_after(headers),
    )


def parse_completion(data: Any) -> ModelResponse:
    """A non-streamed ``chat.completion`` object as a ModelResponse."""
    if not isinstance(data, Mapping):
        raise ModelResponseError(f"expected a JSON object, got {type(data).__name__}")
    if "error" in data and "choices" not in data:
        raise ModelResponseError(f"error in response: {_error_message(json.dumps(data).encode())}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise ModelResponseError("response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ModelResponseError("response choice has no message")
    calls = message.get("tool_calls")
    tool_calls = [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    finish = choice.get("finish_reason")
    return ModelResponse(
        assistant_message(message.get("content"), tool_calls, reasoning),
        Usage.from_openai(data.get("usage")),
        finish if isinstance(finish, str) else None,
        data.get("model") if isinstance(data.get("model"), str) else None,
    )


class OpenAICompatClient:
    """Chat completions over HTTP, with tool calls, streaming, timeouts and retries.

    >>> client = OpenAICompatClient("gpt-4o-mini")                # doctest: +SKIP
    >>> answer = await client.complete(messages, tools=schemas)   # doctest: +SKIP

    ``stream=True`` streams the answer (SSE) and passes text pieces to the
    ``on_text`` callback of :meth:`complete` as they arrive (without streaming
    it gets the whole text at once); tool calls are assembled from their
    deltas. ``timeout`` bounds each read (so a long streamed
    answer is fine as long as it keeps coming); ``retry`` retries 429/5xx,
    timeouts and dropped connections with backoff, honouring Retry-After.
    ``extra_body`` is merged into every request (``temperature``, ``seed``, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        stream: bool = False,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        max_tokens_field: str = "max_tokens",
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        on_retry: RetryCallback | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty string")
        self.model = model
        base = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.base_url = base.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.stream = stream
        self.retry = retry or RetryPolicy()
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        self.on_retry = on_retry
        self._sleep = sleep
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._owns_client = http_client is None
        self._http = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout)
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._http.aclose()

    async def __aenter__(self) -> OpenAICompatClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def request_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        """The JSON body of one request (public so callers can log or inspect it)."""
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        if max_tokens is not None:
            body[self.max_tokens_field] = max_tokens
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(self.extra_body)
        return body

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        """One chat completion; raises ModelError once retries are exhausted."""
        # Serialise once: a retry resends the same bytes, and a value JSON cannot
        # carry fails here, clearly, rather than inside httpx.
        try:
            content = json.dumps(
                self.request_body(messages, tools, max_tokens), ensure_ascii=False
            ).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise ModelError(f"request body is not JSON-serializable: {exc}") from None
        send = self._send_streamed if self.stream else self._send
        return await with_retries(
            lambda: send(content, on_text), self.retry, sleep=self._sleep, on_retry=self.on_retry
        )

    async def _send(self, content: bytes, on_text: TextCallback | None) -> ModelResponse:
        try:
            response = await self._http.post(self.url, content=content, headers=self._headers)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            raise http_error(response.status_code, response.headers, response.content, self.url)
        try:
            data = response.json()
        except ValueError:
            raise ModelResponseError(
                f"response from {self.url} is not JSON: {response.text[:200]!r}"
            ) from None
        answer = parse_completion(data)
        if on_text is not None and answer.text:
            on_text(answer.text)
        return answer

    async def _send_streamed(self, content: bytes, on_text: TextCallback | None) -> ModelResponse:
        assembler = StreamAssembler()
        emitted = False
        try:
            async with self._http.stream(
                "POST", self.url, content=content, headers=self._headers
            ) as response:
                if response.status_code >= 400:
                    body = await response.aread()
                    raise http_error(response.status_code, response.headers, body, self.url)
                if "json" in response.headers.get("content-type", ""):
                    # A server that ignores "stream": answer with the whole completion.
                    whole = (await response.aread()).decode("utf-8", "replace")
                    return parse_completion(_json_chunk(whole))
                decoder = SSEDecoder()
                async for line in response.aiter_lines():
                    data = decoder.feed(line)
                    if data is None:
                        continue
                    if data == DONE:
                        break
                    text = assembler.feed(_json_chunk(data))
                    if text and on_text is not None:
                        emitted = True
                        on_text(text)
                else:
                    tail = decoder.flush()
                    if tail is not None and tail != DONE:
                        assembler.feed(_json_chunk(tail))
        except httpx.HTTPError as exc:
            error = self._transport_error(exc)
            # Text already shown to the user cannot be taken back: no retry then.
            error.retryable = error.retryable and not emitted
            raise error from None
        return assembler.response()

    def _transport_error(self, exc: httpx.HTTPError) -> ModelError:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            return ModelTimeoutError(
                f"no answer from {self.url} in time ({type(exc).__name__})", retryable=True
            )
        if isinstance(exc, httpx.ConnectError):
            return ModelConnectionError(
                f"cannot reach the model server at {self.base_url} ({detail})", retryable=True
            )
        if isinstance(exc, httpx.TransportError):
            return ModelConnectionError(
                f"connection to {self.base_url} failed ({detail})", retryable=True
            )
        return ModelError(f"request to {self.url} failed ({detail})")


def _json_chunk(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ModelResponseError(f"stream event is not JSON: {data[:200]!r}") from None
