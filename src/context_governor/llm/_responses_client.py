"""A client for the OpenAI Responses API (``/v1/responses``), stateless (``store=false``).

How it fits the runner (one pipeline, one edge per format):

* Every request carries the whole history (``store: false``: the server keeps
  nothing), and asks for ``include: ["reasoning.encrypted_content"]`` so that
  reasoning comes back in a form that can be sent again.
* An answer's output items become the runner's assistant message through the
  Responses edge itself (``formats.responses.decode`` of the items: function
  calls as ``tool_calls``, the text as content parts). The items the chat view
  has no place for — ``reasoning`` with its ``encrypted_content``, hosted-tool
  items, item types we do not know — ride along: the message keeps the answer's
  items, exactly as returned, under :data:`ITEMS` (plain JSON, so a saved
  history keeps them too).
* ``request_body`` hands each such message to the edge with those items as its
  origin (``formats.responses.Origin``), and ``formats.responses.encode``
  emits them as they were: reasoning goes back byte for byte, next to the item
  it preceded. Function results become ``function_call_output`` items, system
  messages ``developer`` messages. The body is *not* governed here.
* The runner governs that body natively, with ``govern_request(api="responses")``
  (pairing, reasoning adjacency, call_id length, the window), then calls ``send``.
  This module holds no governance logic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from ..errors import InputError
from ..formats import responses as edge
from ..messages import Message
from ._answers import answer_object, count, error_text, event_object, model_of, native_tools
from ._base import ModelResponse, Usage
from ._errors import ModelResponseError
from ._http import Transport, base_url_from, bearer
from ._native_http import NativeHTTPClient

__all__ = [
    "DEFAULT_BASE_URL",
    "INCLUDE",
    "ITEMS",
    "RETRYABLE_CODES",
    "ResponseStream",
    "ResponsesClient",
    "chat_message",
    "parse_response",
    "responses_tools",
    "usage_of",
    "with_origin",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Key of a runner assistant message: the output items of the answer it holds, as returned.
ITEMS = "responses_items"
#: Origin index of a message rebuilt from ITEMS (no position in any body).
_NEW = -1
INCLUDE = ("reasoning.encrypted_content",)
#: Stream errors worth a retry.
RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded"})


def responses_tools(schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat-format function tools as Responses function tools (flat: name, description,
    parameters); a tool already in another shape (a hosted tool) is sent as it is."""
    return native_tools(schemas, _flat_tool)


def _flat_tool(function: Mapping[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": function.get("name")}
    for key in ("description", "parameters", "strict"):
        if key in function:
            tool[key] = function[key]
    return tool


def chat_message(items: list[Any]) -> Message:
    """An answer's output items as the runner's assistant message, through the edge;
    the items ride along under :data:`ITEMS`."""
    try:
        decoded = edge.decode({"input": items})
    except InputError as exc:
        # The edge names the place in the request it was given: the answer's "output".
        where = exc.path.replace("input", "output", 1)
        raise ModelResponseError(f"unreadable answer: {where}: {exc.problem}") from None
    if len(decoded.messages) > 1 or any(edge.input_side(item) for item in items):
        raise ModelResponseError("the answer's output holds input items (user messages or outputs)")
    message: Message = (
        {k: v for k, v in decoded.messages[0].items() if k != edge.CARRY}
        if decoded.messages
        else {"role": "assistant", "content": None}
    )
    message[ITEMS] = items
    return message


def with_origin(message: Message) -> Message:
    """A runner message as the edge's encoder reads it: one that holds an answer's
    items carries them as its origin (and not as a field of its own)."""
    items = message.get(ITEMS)
    if message.get("role") != "assistant" or not isinstance(items, list):
        return message
    out = {k: v for k, v in message.items() if k != ITEMS}
    out[edge.CARRY] = edge.Origin(_NEW, tuple(items))
    return out


def usage_of(data: Any) -> Usage:
    if not isinstance(data, Mapping):
        return Usage()
    details = data.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
    return Usage(count(data.get("input_tokens")), count(data.get("output_tokens")), count(cached))


def _finish(data: Mapping[str, Any], message: Message) -> str:
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return "length" if reason in (None, "max_output_tokens") else str(reason)
    return "tool_calls" if message.get("tool_calls") else "stop"


def parse_response(data: Any) -> ModelResponse:
    """A whole Responses answer (``{"object": "response", "output": [...], ...}``)."""
    data = answer_object(data)
    if data.get("status") == "failed" or (data.get("error") and "output" not in data):
        raise ModelResponseError(f"error in response: {error_text(data.get('error'), 'code')}")
    output = data.get("output")
    if not isinstance(output, list):
        raise ModelResponseError("response has no output items")
    message = chat_message(output)
    return ModelResponse(
        message, usage_of(data.get("usage")), _finish(data, message), model_of(data)
    )


class ResponseStream:
    """Rebuilds a Responses answer from its stream events.

    Text deltas are passed on as they come; the answer itself is the final
    ``response.completed`` (or ``response.incomplete``) object, whose output
    holds every item whole. Should a server leave that output out, the items of
    the ``response.output_item.done`` events are used.
    """

    def __init__(self) -> None:
        self.done = False
        self._final: dict[str, Any] = {}
        self._items: dict[int, Any] = {}

    def feed(self, event: Any) -> str:
        event = event_object(event)
        kind = event.get("type")
        if kind == "error":
            code = event.get("code")
            error = event.get("error", event)
            raise ModelResponseError(
                f"error in stream: {error_text(error, 'code')}", retryable=code in RETRYABLE_CODES
            )
        if kind == "response.failed":
            response = event.get("response")
            error = response.get("error") if isinstance(response, Mapping) else None
            raise ModelResponseError(f"the response failed: {error_text(error, 'code')}")
        if kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
            return str(event["delta"])
        if kind == "response.output_item.done" and isinstance(event.get("output_index"), int):
            self._items[event["output_index"]] = event.get("item")
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response")
            if not isinstance(response, Mapping):
                raise ModelResponseError(f"{kind} event without a response object")
            self._final = dict(response)
            self.done = True
        return ""

    def response(self) -> ModelResponse:
        final = self._final
        if not final.get("output") and self._items:
            final = {**final, "output": [self._items[i] for i in sorted(self._items)]}
        return parse_response(final)


class ResponsesClient(NativeHTTPClient):
    """Responses API over HTTP: function calls, reasoning items, streaming, retries.

    >>> client = ResponsesClient("o4-mini", reasoning={"effort": "low"})  # doctest: +SKIP

    ``reasoning`` is sent as the body's ``reasoning`` setting (None: left out).
    ``include_reasoning=False`` leaves out ``include: ["reasoning.encrypted_content"]``,
    for a model or server that refuses it (one without reasoning): with ``store=false``
    a reasoning item cannot be sent back without its encrypted content.
    ``stream=True`` streams the answer and passes text pieces to ``on_text``.
    ``extra_body`` is merged into every body. The key and base URL come from
    ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` unless given.

    The transport keywords (``stream``, ``timeout``, ``connect_timeout``, ``retry``,
    ``extra_body``, ``http_client``, ``on_retry``, ``sleep``) are ``_http.Transport``'s.
    """

    api = "responses"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        reasoning: Mapping[str, Any] | None = None,
        include_reasoning: bool = True,
        headers: Mapping[str, str] | None = None,
        **transport: Unpack[Transport],
    ) -> None:
        self.reasoning = dict(reasoning) if reasoning is not None else None
        self.include_reasoning = include_reasoning
        self.base_url = base_url_from(base_url, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        auth = bearer(api_key, "OPENAI_API_KEY")
        super().__init__(
            model,
            url=f"{self.base_url}/responses",
            headers={**(headers or {}), **auth},
            **transport,
        )

    def request_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        """The Responses body for a chat history, built by the edge; not governed."""
        base: dict[str, Any] = {"model": self.model, "input": [], "store": False}
        if self.include_reasoning:
            base["include"] = list(INCLUDE)
        if max_tokens is not None:
            base["max_output_tokens"] = max_tokens
        if tools:
            base["tools"] = responses_tools(tools)
        if self.reasoning is not None:
            base["reasoning"] = dict(self.reasoning)
        if self.stream:
            base["stream"] = True
        base.update(self.extra_body)
        return edge.encode([with_origin(m) for m in messages], edge.decode(base))

    def parse(self, data: Any) -> ModelResponse:
        return parse_response(data)

    def stream_reader(self) -> ResponseStream:
        return ResponseStream()
