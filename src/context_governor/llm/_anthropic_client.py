"""A client for the Anthropic Messages API (``/v1/messages``) and servers that speak it.

Anthropic, and the Anthropic-compatible endpoints of GLM/Z.ai, Kimi/Moonshot,
DeepSeek and self-hosted servers: only the base URL and key change (from
``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` unless given).

How it fits the runner (one pipeline, one edge per format):

* The runner's history stays chat messages. An answer is turned into one by the
  Messages edge itself (``formats.anthropic.decode`` of the assistant message):
  ``tool_use`` blocks become ``tool_calls``, every other block — ``thinking`` and
  ``redacted_thinking`` with their signatures, text with citations, server tool
  blocks, block types we do not know — stays in ``content`` exactly as returned.
* ``request_body`` builds the Messages body for a history with the same edge
  (``formats.anthropic.encode``): the thinking blocks go back as the dicts they
  came in, byte for byte. The body is *not* governed here.
* The runner governs that body natively, with ``govern_request(api="anthropic")``,
  which enforces the Messages API's rules, the thinking rules (AN-9) included,
  and then calls ``send``. This module holds no governance logic.

Thinking is a setting of the client (``thinking=``: a token budget, "adaptive",
or None for off); tool schemas are given in the runner's chat format and sent as
Messages tools.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from ..errors import InputError
from ..formats import anthropic as edge
from ..messages import Message
from ._answers import answer_object, count, error_text, event_object, model_of, native_tools
from ._base import ModelResponse, Usage
from ._errors import ModelError, ModelResponseError
from ._http import Transport, base_url_from, from_env
from ._native_http import NativeHTTPClient

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_TOKENS",
    "FINISH",
    "MIN_THINKING_BUDGET",
    "RETRYABLE_ERRORS",
    "AnthropicClient",
    "MessageStream",
    "anthropic_tools",
    "chat_message",
    "parse_message",
    "thinking_setting",
    "usage_of",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
#: max_tokens when the caller gives none (the Messages API requires one).
DEFAULT_MAX_TOKENS = 4096
#: The API's smallest thinking budget.
MIN_THINKING_BUDGET = 1024
#: The API's stop reasons in the runner's (chat) terms; others are kept as they are.
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
#: Stream errors worth a retry (the API's own overload and internal errors).
RETRYABLE_ERRORS = frozenset({"overloaded_error", "api_error"})


def thinking_setting(thinking: int | str | None) -> dict[str, Any] | None:
    """The body's ``thinking`` for a client setting: a budget of tokens (>= 1024),
    "adaptive", or None / 0 / "off" for no thinking (the field is left out)."""
    if thinking is None or thinking == 0 or thinking == "off":
        return None
    if thinking == "adaptive":
        return {"type": "adaptive"}
    if isinstance(thinking, bool) or not isinstance(thinking, int):
        raise ValueError(f"thinking must be a token budget, 'adaptive' or 'off'; got {thinking!r}")
    if thinking < MIN_THINKING_BUDGET:
        raise ValueError(
            f"a thinking budget must be >= {MIN_THINKING_BUDGET} tokens, got {thinking}"
        )
    return {"type": "enabled", "budget_tokens": thinking}


def anthropic_tools(schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat-format function tools as Messages tools; a tool already in another shape
    (a Messages tool, a server tool) is sent as it is."""
    return native_tools(schemas, _messages_tool)


def _messages_tool(function: Mapping[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        tool["description"] = function["description"]
    parameters = function.get("parameters")
    tool["input_schema"] = (
        parameters if isinstance(parameters, Mapping) else {"type": "object", "properties": {}}
    )
    return tool


def chat_message(blocks: list[Any]) -> Message:
    """An answer's content blocks as the runner's assistant message, through the edge
    (so that encoding it again gives the blocks back)."""
    try:
        decoded = edge.decode({"messages": [{"role": "assistant", "content": blocks}]})
    except InputError as exc:
        # The edge names the place in the request it was given; in the answer it is here:
        where = exc.path.replace("messages[0].", "", 1)
        raise ModelResponseError(f"unreadable answer: {where}: {exc.problem}") from None
    message = decoded.messages[0]
    return {k: v for k, v in message.items() if k != edge.CARRY}


def usage_of(data: Any) -> Usage:
    """Messages usage in the runner's terms: the prompt is the input, cache reads and
    cache writes together (the API counts them apart)."""
    if not isinstance(data, Mapping):
        return Usage()
    read = count(data.get("cache_read_input_tokens"))
    written = count(data.get("cache_creation_input_tokens"))
    prompt = count(data.get("input_tokens")) + read + written
    return Usage(prompt, count(data.get("output_tokens")), read)


def parse_message(data: Any) -> ModelResponse:
    """A whole Messages answer (``{"type": "message", "content": [...], ...}``)."""
    data = answer_object(data)
    if data.get("type") == "error" or ("error" in data and "content" not in data):
        raise ModelResponseError(f"error in response: {error_text(data.get('error'), 'type')}")
    content = data.get("content")
    if not isinstance(content, list):
        raise ModelResponseError("response has no content blocks")
    stop = data.get("stop_reason")
    return ModelResponse(
        chat_message(content),
        usage_of(data.get("usage")),
        FINISH.get(stop, stop) if isinstance(stop, str) else None,
        model_of(data),
    )


class MessageStream:
    """Rebuilds a Messages answer from its stream events, block by block.

    Each block starts as the ``content_block_start`` object and grows with its
    deltas (text, thinking, signature, tool input JSON, citations), so a
    thinking block ends up exactly as the non-streamed answer would hold it.
    """

    def __init__(self) -> None:
        self.done = False
        self._message: dict[str, Any] = {}
        self._usage: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}

    def feed(self, event: Any) -> str:
        event = event_object(event)
        kind = event.get("type")
        if kind == "error":
            error = event.get("error")
            kind_of = error.get("type") if isinstance(error, Mapping) else None
            raise ModelResponseError(
                f"error in stream: {error_text(error, 'type')}",
                retryable=kind_of in RETRYABLE_ERRORS,
            )
        if kind == "message_start" and isinstance(event.get("message"), Mapping):
            self._message = dict(event["message"])
            self._merge_usage(self._message.get("usage"))
        elif kind == "content_block_start":
            self._start(event)
        elif kind == "content_block_delta":
            return self._delta(event)
        elif kind == "content_block_stop":
            self._stop(event)
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping):
                self._message.update({k: v for k, v in delta.items() if v is not None})
            self._merge_usage(event.get("usage"))
        elif kind == "message_stop":
            self.done = True
        return ""  # ping and event types we do not know

    def _merge_usage(self, usage: Any) -> None:
        if isinstance(usage, Mapping):
            self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _block(self, event: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        index = event.get("index")
        if not isinstance(index, int) or index not in self._blocks:
            raise ModelResponseError(f"stream event for an unknown content block: {index!r}")
        return index, self._blocks[index]

    def _start(self, event: Mapping[str, Any]) -> None:
        index, block = event.get("index"), event.get("content_block")
        if not isinstance(index, int) or not isinstance(block, Mapping):
            raise ModelResponseError("content_block_start without an index and a block")
        self._blocks[index] = dict(block)
        if block.get("type") in ("tool_use", "server_tool_use"):
            self._json[index] = []

    def _delta(self, event: Mapping[str, Any]) -> str:
        index, block = self._block(event)
        delta = event.get("delta")
        if not isinstance(delta, Mapping):
            return ""
        kind = delta.get("type")
        if kind == "text_delta" and isinstance(delta.get("text"), str):
            block["text"] = block.get("text", "") + delta["text"]
            return str(delta["text"])
        if kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = block.get("signature", "") + delta["signature"]
        elif kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            self._json.setdefault(index, []).append(delta["partial_json"])
        elif kind == "citations_delta" and "citation" in delta:
            citations = block.get("citations")
            block["citations"] = [*(citations if isinstance(citations, list) else []),
                                  delta["citation"]]  # fmt: skip
        return ""

    def _stop(self, event: Mapping[str, Any]) -> None:
        index, block = self._block(event)
        parts = self._json.pop(index, None)
        if parts:
            text = "".join(parts)
            try:
                block["input"] = json.loads(text)
            except ValueError:
                raise ModelResponseError(
                    f"tool input of content block {index} is not JSON: {text[:200]!r}"
                ) from None

    def response(self) -> ModelResponse:
        content = [self._blocks[i] for i in sorted(self._blocks)]
        return parse_message({**self._message, "content": content, "usage": self._usage})


class AnthropicClient(NativeHTTPClient):
    """Messages API over HTTP: tool use, thinking, streaming, timeouts and retries.

    >>> client = AnthropicClient("claude-sonnet-4-5", thinking=2048)   # doctest: +SKIP

    ``thinking``: a budget of tokens (enabled), "adaptive", or None (off).
    ``max_tokens`` is used when a call gives none. ``stream=True`` streams the
    answer (SSE) and passes text pieces to ``on_text`` as they arrive.
    ``extra_body`` is merged into every body (``temperature``, ``metadata``...);
    ``headers`` into every request (``anthropic-beta``...).

    The transport keywords (``stream``, ``timeout``, ``connect_timeout``, ``retry``,
    ``extra_body``, ``http_client``, ``on_retry``, ``sleep``) are ``_http.Transport``'s.
    """

    api = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        thinking: int | str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        version: str = API_VERSION,
        headers: Mapping[str, str] | None = None,
        **transport: Unpack[Transport],
    ) -> None:
        self.thinking = thinking_setting(thinking)
        self.max_tokens = max_tokens
        self._check_budget(max_tokens)
        self.base_url = base_url_from(base_url, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL)
        key = from_env(api_key, "ANTHROPIC_API_KEY")
        sent = {"anthropic-version": version, **(headers or {})}
        if key:
            sent["x-api-key"] = key
        super().__init__(model, url=f"{self.base_url}/v1/messages", headers=sent, **transport)

    def _check_budget(self, max_tokens: int) -> None:
        budget = self.thinking.get("budget_tokens") if self.thinking else None
        if isinstance(budget, int) and budget >= max_tokens:
            raise ValueError(
                f"the thinking budget ({budget}) must be below max_tokens ({max_tokens})"
            )

    def request_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        """The Messages body for a chat history, built by the edge; not governed."""
        out = max_tokens if max_tokens is not None else self.max_tokens
        try:
            self._check_budget(out)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        base: dict[str, Any] = {"model": self.model, "max_tokens": out, "messages": []}
        if tools:
            base["tools"] = anthropic_tools(tools)
        if self.thinking is not None:
            base["thinking"] = dict(self.thinking)
        if self.stream:
            base["stream"] = True
        base.update(self.extra_body)
        return edge.encode(list(messages), edge.decode(base))

    def parse(self, data: Any) -> ModelResponse:
        return parse_message(data)

    def stream_reader(self) -> MessageStream:
        return MessageStream()
