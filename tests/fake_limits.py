"""A fake upstream with a real window: it counts what it is sent, refuses a request
over its limit in a chosen provider's words, and reports usage the way that API does.

Served on localhost by uvicorn (fake_server.ThreadedServer) under ``/v1``:
``messages`` (Anthropic), ``chat/completions``, ``responses`` and Gemini's
``models/{model}:generateContent`` / ``:streamGenerateContent``.

Its count of a body is the library's own count (``govern_request(...).report.
tokens_before``, the counter the proxy uses for that API) times ``factor``, rounded up:
with ``factor=1.3`` it is a tokenizer that needs 30% more tokens than our estimate, as
Claude's does. A request whose count plus its output reserve exceeds ``limit`` is
refused with status 400 and the body of ``style`` (``REFUSALS``: the providers'
wordings as collected in tests/data/refusals.json); any other is answered, JSON or
streamed, with its count as the usage. ``truncate=True`` ends every stream without
its terminal event (``[DONE]``, ``message_stop``, ``response.completed``, a Gemini
``finishReason``), as a gateway that closes early does; ``stall`` pauses a stream
after its first event. Every request is recorded in ``seen`` (api, count, reserve,
status) and how each stream ended in ``stream_ends``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fake_server import ListeningStream, ThreadedServer, sse, sse_data
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from context_governor.formats import govern_request


def _anthropic(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = f"prompt is too long: {count} tokens > {limit} maximum"
    return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def _openai(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {count} tokens. Please reduce the length of the messages."
    )
    error = {"message": message, "type": "invalid_request_error", "param": "messages",
             "code": "context_length_exceeded"}  # fmt: skip
    return 400, {"error": error}


def _gemini(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = (
        f"The input token count ({count}) exceeds the maximum number of tokens allowed ({limit})."
    )
    return 400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}


def _vllm(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = (
        f"This model's maximum context length is {limit} tokens. However, you requested "
        f"{count + reserve} tokens ({count} in the messages, {reserve} in the completion). "
        "Please reduce the length of the messages or completion."
    )
    return 400, {"object": "error", "message": message, "type": "BadRequestError",
                 "param": None, "code": 400}  # fmt: skip


def _sglang(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = f"The input ({count} tokens) is longer than the model's context length ({limit} tokens)."
    return 400, {"object": "error", "message": message, "type": "BadRequestError",
                 "param": None, "code": 400}  # fmt: skip


def _llama_cpp(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    error = {"code": 400, "message": "the request exceeds the available context size. try "
             "increasing the context size or enable context shift",
             "type": "exceed_context_size_error", "n_prompt_tokens": count, "n_ctx": limit}  # fmt: skip
    return 400, {"error": error}


def _openrouter(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = (
        f"This endpoint's maximum context length is {limit} tokens. However, you requested "
        f"about {count + reserve} tokens ({count} of text input, {reserve} in the output). "
        'Please reduce the length of either one, or use the "middle-out" transform to '
        "compress your prompt automatically."
    )
    return 400, {"error": {"message": message, "code": 400}}


def _litellm(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = (
        "litellm.ContextWindowExceededError: litellm.BadRequestError: "
        f"ContextWindowExceededError: OpenAIException - Input tokens exceed the configured "
        f"limit of {limit} tokens."
    )
    error = {"message": message, "type": None, "param": None, "code": "400"}
    return 400, {"error": error}


def _unreadable(count: int, limit: int, reserve: int) -> tuple[int, dict[str, Any]]:
    message = "Your input exceeds the context window of this model. Please adjust your input and try again."
    error = {"message": message, "type": "invalid_request_error", "param": "input",
             "code": "context_length_exceeded"}  # fmt: skip
    return 400, {"error": error}


Refuse = Callable[[int, int, int], tuple[int, dict[str, Any]]]
REFUSALS: dict[str, Refuse] = {
    "anthropic": _anthropic, "openai": _openai, "gemini": _gemini, "vllm": _vllm,
    "sglang": _sglang, "llama.cpp": _llama_cpp, "openrouter": _openrouter,
    "litellm": _litellm, "unreadable": _unreadable,
}  # fmt: skip
_RESERVE = {"anthropic": "max_tokens", "responses": "max_output_tokens"}


@dataclass
class Seen:
    api: str
    model: str | None
    count: int
    reserve: int
    status: int


class FakeLimits:
    """The fake upstream (see the module docstring)."""

    def __init__(
        self, limit: int, style: str = "anthropic", factor: float = 1.0, max_output: int = 4096
    ) -> None:
        self.limit = limit
        self.style = style
        self.factor = factor
        #: the reserve counted for a chat body that names none (the proxy's --max-output)
        self.max_output = max_output
        self.truncate = False
        self.stall = 0.0
        self.seen: list[Seen] = []
        self.stream_ends: list[tuple[float, str]] = []
        routes = [
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/models/{rest:path}", self._gemini, methods=["POST"]),
        ]
        self._server = ThreadedServer(routes, "fake limits upstream")

    @property
    def base_url(self) -> str:
        return f"{self._server.root_url}/v1"

    def start(self) -> FakeLimits:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    # -- counting and refusing ------------------------------------------------------

    def count(self, body: dict[str, Any], api: str, model: str | None) -> int:
        ours = govern_request(body, api=api, model=model).report.tokens_before  # type: ignore[arg-type]
        return math.ceil(ours * self.factor)

    def _judge(self, body: dict[str, Any], api: str, model: str | None) -> tuple[int, Response | None]:
        count = self.count(body, api, model)
        if api == "gemini":
            reserve = int((body.get("generationConfig") or {}).get("maxOutputTokens") or 0)
        elif api == "openai":
            reserve = int(body.get("max_completion_tokens") or body.get("max_tokens") or self.max_output)
        else:
            reserve = int(body.get(_RESERVE[api]) or 0)
        refused = count + reserve > self.limit
        status = 200
        answer: Response | None = None
        if refused:
            status, error = REFUSALS[self.style](count, self.limit, reserve)
            answer = JSONResponse(error, status_code=status)
        self.seen.append(Seen(api, model, count, reserve, status))
        return count, answer

    def _stream(self, events: list[bytes], tail: bytes = b"") -> Response:
        if self.truncate:
            events, tail = events[:-1], b""
        return ListeningStream(
            sse(events, self.stall, None, self.stream_ends, tail), media_type="text/event-stream"
        )

    # -- the APIs --------------------------------------------------------------------

    async def _messages(self, request: Request) -> Response:
        body = json.loads(await request.body())
        count, refused = self._judge(body, "anthropic", body.get("model"))
        if refused is not None:
            return refused
        usage = {"input_tokens": count - count // 4, "cache_read_input_tokens": count // 4,
                 "cache_creation_input_tokens": 0, "output_tokens": 3}  # fmt: skip
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                   "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                   "stop_sequence": None, "usage": usage}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(message)
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [
            sse_data({"type": "message_start", "message": start}, "message_start"),
            sse_data({"type": "content_block_start", "index": 0,
                      "content_block": {"type": "text", "text": ""}}, "content_block_start"),
            sse_data({"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": "ok"}}, "content_block_delta"),
            sse_data({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            sse_data({"type": "message_delta", "delta": {"stop_reason": "end_turn",
                      "stop_sequence": None}, "usage": {"output_tokens": 3}}, "message_delta"),
            sse_data({"type": "message_stop"}, "message_stop"),
        ]  # fmt: skip
        return self._stream(events)

    async def _chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        count, refused = self._judge(body, "openai", body.get("model"))
        if refused is not None:
            return refused
        usage = {"prompt_tokens": count, "completion_tokens": 1, "total_tokens": count + 1}
        if not body.get("stream"):
            return JSONResponse({
                "id": "c1", "object": "chat.completion", "created": 1, "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                             "finish_reason": "stop"}],
                "usage": usage,
            })  # fmt: skip
        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body.get("model")}
        events = [
            sse_data({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"},
                                            "finish_reason": None}]}),
            sse_data({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            sse_data({**chunk, "choices": [], "usage": usage}),
            b"data: [DONE]\n\n",
        ]  # fmt: skip
        return self._stream(events)

    async def _responses(self, request: Request) -> Response:
        body = json.loads(await request.body())
        count, refused = self._judge(body, "responses", body.get("model"))
        if refused is not None:
            return refused
        response = {
            "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
            "model": body.get("model"), "output": [{"type": "message", "id": "m1", "status": "completed",
            "role": "assistant", "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
            "usage": {"input_tokens": count, "output_tokens": 1, "total_tokens": count + 1,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}},
        }  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(response)
        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        events = [
            sse_data({"type": "response.created", "sequence_number": 0, "response": pending}, "response.created"),
            sse_data({"type": "response.output_text.delta", "sequence_number": 1, "item_id": "m1",
                      "output_index": 0, "content_index": 0, "delta": "ok"}, "response.output_text.delta"),
            sse_data({"type": "response.completed", "sequence_number": 2, "response": response},
                     "response.completed"),
        ]  # fmt: skip
        return self._stream(events)

    async def _gemini(self, request: Request) -> Response:
        rest = request.path_params["rest"]
        model, _, action = rest.partition(":")
        body = json.loads(await request.body())
        count, refused = self._judge(body, "gemini", model)
        if refused is not None:
            return refused
        usage = {"promptTokenCount": count, "candidatesTokenCount": 1, "totalTokenCount": count + 1}
        first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "o"}]}, "index": 0}],
                 "usageMetadata": usage}  # fmt: skip
        last = {"candidates": [{"content": {"role": "model", "parts": [{"text": "k"}]},
                                "finishReason": "STOP", "index": 0}], "usageMetadata": usage}  # fmt: skip
        if action == "generateContent":
            return JSONResponse({**last, "candidates": [{**last["candidates"][0],
                                 "content": {"role": "model", "parts": [{"text": "ok"}]}}]})  # fmt: skip
        if request.query_params.get("alt") == "sse":
            return self._stream([sse_data(first), sse_data(last)])
        pieces = [b"[" + json.dumps(first).encode(), b",\r\n" + json.dumps(last).encode()]
        tail = b"]"
        if self.truncate:
            pieces, tail = pieces[:-1], b""
        return ListeningStream(
            sse(pieces, self.stall, None, self.stream_ends, tail), media_type="application/json"
        )
