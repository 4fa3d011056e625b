"""A client for any OpenAI-compatible ``/chat/completions`` endpoint, on httpx.

OpenAI, Azure-style gateways, vLLM, Ollama, llama.cpp, LiteLLM, OpenRouter,
DeepSeek, Groq, ... all speak this protocol; only the base URL and key change.
Both come from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` unless given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

import httpx

from ..messages import Message
from ._base import ModelResponse, TextCallback, Usage, assistant_message
from ._errors import ModelResponseError
from ._http import (
    HTTPModelClient,
    Transport,
    base_url_from,
    bearer,
    error_body_message,
    http_error,
    json_value,
)
from ._streaming import DONE, SSEDecoder, StreamAssembler

__all__ = ["DEFAULT_BASE_URL", "OpenAICompatClient", "parse_completion"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


def parse_completion(data: Any) -> ModelResponse:
    """A non-streamed ``chat.completion`` object as a ModelResponse."""
    if not isinstance(data, Mapping):
        raise ModelResponseError(f"expected a JSON object, got {type(data).__name__}")
    if "error" in data and "choices" not in data:
        raise ModelResponseError(f"error in response: {error_body_message(data)}")
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


class OpenAICompatClient(HTTPModelClient):
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

    The transport keywords (``stream``, ``timeout``, ``connect_timeout``, ``retry``,
    ``extra_body``, ``http_client``, ``on_retry``, ``sleep``) are ``_http.Transport``'s.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens_field: str = "max_tokens",
        headers: Mapping[str, str] | None = None,
        **transport: Unpack[Transport],
    ) -> None:
        self.base_url = base_url_from(base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        auth = bearer(api_key, "OPENAI_API_KEY")
        super().__init__(
            model,
            url=f"{self.base_url}/chat/completions",
            headers={**(headers or {}), **auth},
            server=self.base_url,
            **transport,
        )
        self.max_tokens_field = max_tokens_field

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
        send = self._send_streamed if self.stream else self._send
        return await self._send_with_retries(
            self.request_body(messages, tools, max_tokens), lambda content: send(content, on_text)
        )

    async def _send(self, content: bytes, on_text: TextCallback | None) -> ModelResponse:
        answer = parse_completion(await self._post_json(content))
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


def _json_chunk(data: str) -> Any:
    return json_value(data, "stream event")
