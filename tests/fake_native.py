"""A fake native upstream: Anthropic Messages and OpenAI Responses on localhost.

A real starlette app served by uvicorn in a thread on a free port (as
fake_upstream.py serves the Chat Completions one), answering

* ``POST /v1/messages`` like the Anthropic Messages API: thinking blocks with
  signatures (when the request turns thinking on), text, ``tool_use``; JSON or
  server-sent events (``message_start``, ``content_block_*``, ``message_delta``,
  ``message_stop``), errors as ``{"type": "error", "error": {...}}``;
* ``POST /v1/responses`` like the OpenAI Responses API: ``reasoning`` items (when
  the request sets ``reasoning``; with ``encrypted_content`` when ``include`` asks
  for ``reasoning.encrypted_content``), an assistant ``message``,
  ``function_call`` items; JSON or events (``response.created`` ...
  ``response.completed``), errors as ``{"error": {...}}``;
* ``POST /v1/messages/count_tokens`` and ``GET /v1/responses/{id}`` (so tests can
  see that the proxy passes them through).

Every request body is VALIDATED the way the provider would: ``validate_request``
under the API's own rules, plus the context window (``context_window``, counted
with the library's counter for ``profile``: the prompt plus the requested output
must fit). An invalid request is answered with a 400 in the provider's error
shape and recorded in ``rejections`` (also ``violations``, the name the chat
fake uses), so a test asserts there were none.

Replies are scripted with :class:`NativeReply` (``push``); each request takes the
next one. ``auto`` (a callable of the api and the body) answers when nothing is
scripted, for long sessions. Every request is recorded: ``requests`` (bodies),
``apis``, ``request_headers``, ``targets`` (raw path and query), and how each
stream ended (``stream_ends``).

Public interface (other branches copy this file; keep it stable): NativeReply
(``answer``, ``tool_calls``, ``error``, ``raw``, fields ``cut_after``, ``stall``,
``delay``), FakeNative (``start``, ``stop``, ``reset``, ``push``, ``base_url``,
``root_url``, ``context_window``, ``profile``, ``auto``, ``requests``, ``apis``,
``request_headers``, ``targets``, ``rejections``, ``violations``,
``stream_ends``), fake_signature(text). The server itself is fake_server.py's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from fake_server import ListeningStream, ThreadedServer, pieces, sse, sse_data
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from context_governor.errors import ContextGovernorError
from context_governor.formats import govern_request, validate_request

Call = tuple[str, dict[str, Any]]


@dataclass
class NativeReply:
    """One scripted answer, in whichever API the request used. Build with the class methods."""

    kind: str  # "message" | "error" | "raw"
    text: str | None = None
    #: Anthropic: a thinking block (signed); Responses: a reasoning item (summary text)
    thinking: str | None = None
    calls: list[Call] = field(default_factory=list)
    status: int = 200
    message: str = ""
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: streamed replies: pause this long after the first event
    stall: float = 0.0
    #: streamed replies: drop the connection after this many events
    cut_after: int | None = None

    @classmethod
    def answer(cls, text: str, *, thinking: str | None = None) -> NativeReply:
        """A text answer, after a thinking block / reasoning item when ``thinking``."""
        return cls("message", text=text, thinking=thinking)

    @classmethod
    def tool_calls(
        cls, *calls: Call, text: str | None = None, thinking: str | None = None
    ) -> NativeReply:
        """Tool calls, each (name, input); ids are given by the server."""
        return cls("message", text=text, thinking=thinking, calls=list(calls))

    @classmethod
    def error(cls, status: int, message: str) -> NativeReply:
        """An error in the request's API's shape."""
        return cls("error", status=status, message=message)

    @classmethod
    def raw(cls, status: int, body: bytes, content_type: str = "text/plain") -> NativeReply:
        return cls("raw", status=status, body=body, headers={"content-type": content_type})


AutoReply = Callable[[str, dict[str, Any]], NativeReply]


def fake_signature(text: str) -> str:
    """A deterministic stand-in for a provider's signature over ``text``."""
    return "sig_" + hashlib.sha256(text.encode()).hexdigest()[:32]


def anthropic_error(status: int, message: str) -> JSONResponse:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
             413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}  # fmt: skip
    kind = kinds.get(status, "api_error")
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return JSONResponse(body, status_code=status)


def responses_error(status: int, message: str) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return JSONResponse(body, status_code=status)


class FakeNative(ThreadedServer):
    """The server and its script; one instance serves a whole test session."""

    def __init__(self) -> None:
        #: the window every request must fit (prompt + requested output); None: no check
        self.context_window: int | None = None
        #: whose counter measures the prompt (per api); the proxy's profile, normally
        self.profile: dict[str, str] = {"anthropic": "anthropic", "responses": "openai"}
        self.auto: AutoReply | None = None
        self.replies: deque[NativeReply | AutoReply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.apis: list[str] = []
        self.request_headers: list[dict[str, str]] = []
        self.rejections: list[str] = []
        self.stream_ends: list[tuple[float, str]] = []
        #: the prompt tokens of each accepted request, as counted for the window check
        self.prompt_tokens: list[int] = []
        self._ids = 0
        routes = [
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/responses/{rid}", self._retrieve, methods=["GET"]),
        ]
        super().__init__(routes, "the fake native upstream")

    @property
    def violations(self) -> list[str]:
        """The rejections, under the chat fake's name."""
        return self.rejections

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def reset(self) -> None:
        with self._lock:
            self.replies.clear()
            self.requests.clear()
            self.apis.clear()
            self.request_headers.clear()
            self.rejections.clear()
            self.targets.clear()
            self.stream_ends.clear()
            self.prompt_tokens.clear()
            self.context_window = None
            self.profile = {"anthropic": "anthropic", "responses": "openai"}
            self.auto = None

    def push(self, *replies: NativeReply | AutoReply) -> None:
        self.replies.extend(replies)

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}{self._ids:04d}"

    # ------------------------------------------------------------------ checks

    def _check(self, api: str, body: Any) -> tuple[list[str], int]:
        """What the provider would reject in ``body``, and the prompt's tokens."""
        if not isinstance(body, dict):
            return ["body: expected a JSON object"], 0
        if not isinstance(body.get("model"), str):
            return ["model: Field required"], 0
        reserve_key = "max_tokens" if api == "anthropic" else "max_output_tokens"
        if api == "anthropic" and not isinstance(body.get("max_tokens"), int):
            return ["max_tokens: Field required"], 0
        # settings of the wrong type, which the provider's schema check refuses
        shapes = {"thinking": dict, "reasoning": dict, "include": list, "stream": bool}
        wrong = [
            f"{name}: expected {kind.__name__}"
            for name, kind in shapes.items()
            if body.get(name) is not None and not isinstance(body[name], kind)
        ]
        if wrong:
            return wrong, 0
        try:
            problems = [
                f"{v.rule} at {'request' if v.index < 0 else v.index}: {v.error}"
                for v in validate_request(body, api=api)  # type: ignore[arg-type]
            ]
            # The library's own count of what was sent (a window so large nothing is cut).
            counted = govern_request(
                body, api=api, profile=self.profile[api], context_window=1 << 40  # type: ignore[arg-type]
            ).report.tokens_before
        except ContextGovernorError as exc:
            return [f"unreadable body: {exc}"], 0
        reserve = body.get(reserve_key) or 0
        if self.context_window is not None and counted + reserve > self.context_window:
            problems.append(
                f"prompt is too long: {counted} prompt + {reserve} output tokens > "
                f"{self.context_window}"
            )
        return problems, counted

    async def _accept(self, api: str, request: Request) -> tuple[Any, Response | None, int]:
        raw = await request.body()
        error = anthropic_error if api == "anthropic" else responses_error
        try:
            body = json.loads(raw)
        except ValueError:
            self.rejections.append(f"{api}: request body is not JSON")
            return None, error(400, "invalid JSON"), 0
        with self._lock:
            self.requests.append(body)
            self.apis.append(api)
            self.request_headers.append(dict(request.headers))
        problems, counted = await asyncio.to_thread(self._check, api, body)
        if problems:
            self.rejections.extend(f"{api}: {p}" for p in problems)
            return body, error(400, "; ".join(problems)), counted
        self.prompt_tokens.append(counted)
        return body, None, counted

    def _reply(self, api: str, body: dict[str, Any]) -> NativeReply | None:
        if self.replies:
            reply = self.replies.popleft()
        elif self.auto is not None:
            reply = self.auto
        else:
            self.rejections.append(f"{api}: request {len(self.requests)} arrived with no reply")
            return None
        return reply(api, body) if callable(reply) else reply

    # ------------------------------------------------------------------ Anthropic

    async def _messages(self, request: Request) -> Response:
        body, refused, counted = await self._accept("anthropic", request)
        if refused is not None:
            return refused
        reply = self._reply("anthropic", body)
        if reply is None:
            return anthropic_error(500, "no reply scripted")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.kind == "error":
            return anthropic_error(reply.status, reply.message)
        if reply.kind == "raw":
            return Response(reply.body, status_code=reply.status, headers=reply.headers)
        thinking = (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
        content = self._anthropic_content(reply, thinking)
        message = {
            "id": self._next_id("msg_fake"),
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if reply.calls else "end_turn",
            "stop_sequence": None,
            "usage": self._anthropic_usage(counted, content),
        }
        if not body.get("stream"):
            return JSONResponse(message)
        events = _anthropic_events(message)
        return ListeningStream(_sse(events, reply, self.stream_ends), media_type="text/event-stream")

    def _anthropic_usage(self, counted: int, content: list[dict[str, Any]]) -> dict[str, Any]:
        """The answer's ``usage``: the prompt's count, a fixed answer length."""
        return {
            "input_tokens": counted,
            "output_tokens": 9,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }

    def _anthropic_content(self, reply: NativeReply, thinking: bool) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = []
        if thinking and reply.thinking is not None:
            signature = fake_signature(reply.thinking)
            content.append({"type": "thinking", "thinking": reply.thinking, "signature": signature})
        if reply.text is not None:
            content.append({"type": "text", "text": reply.text})
        for name, args in reply.calls:
            content.append(
                {"type": "tool_use", "id": self._next_id("toolu_fake"), "name": name, "input": args}
            )
        return content

    async def _count_tokens(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
            counted = govern_request(
                {"max_tokens": 0, **body}, api="anthropic", context_window=1 << 40
            ).report.tokens_before
        except (ValueError, ContextGovernorError) as exc:
            return anthropic_error(400, f"unreadable body: {exc}")
        return JSONResponse({"input_tokens": counted})

    # ------------------------------------------------------------------ Responses

    async def _responses(self, request: Request) -> Response:
        body, refused, counted = await self._accept("responses", request)
        if refused is not None:
            return refused
        reply = self._reply("responses", body)
        if reply is None:
            return responses_error(500, "no reply scripted")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.kind == "error":
            return responses_error(reply.status, reply.message)
        if reply.kind == "raw":
            return Response(reply.body, status_code=reply.status, headers=reply.headers)
        response = self._response_object(body, reply, counted)
        if not body.get("stream"):
            return JSONResponse(response)
        events = _responses_events(response)
        return ListeningStream(_sse(events, reply, self.stream_ends), media_type="text/event-stream")

    def _response_object(
        self, body: dict[str, Any], reply: NativeReply, counted: int
    ) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        if reply.thinking is not None and body.get("reasoning") is not None:
            item: dict[str, Any] = {
                "type": "reasoning",
                "id": self._next_id("rs_fake"),
                "summary": [{"type": "summary_text", "text": reply.thinking}],
            }
            if "reasoning.encrypted_content" in (body.get("include") or []):
                item["encrypted_content"] = "gAAAA" + fake_signature(reply.thinking)
            output.append(item)
        if reply.text is not None:
            output.append(
                {
                    "type": "message",
                    "id": self._next_id("msg_fake"),
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for name, args in reply.calls:
            output.append(
                {
                    "type": "function_call",
                    "id": self._next_id("fc_fake"),
                    "call_id": self._next_id("call_fake"),
                    "name": name,
                    "arguments": json.dumps(args),
                    "status": "completed",
                }
            )
        return {
            "id": self._next_id("resp_fake"),
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [],
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "store": body.get("store", True),
            "previous_response_id": body.get("previous_response_id"),
            "usage": {
                "input_tokens": counted,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 9,
                "output_tokens_details": {"reasoning_tokens": 3 if reply.thinking else 0},
                "total_tokens": counted + 9,
            },
        }

    async def _retrieve(self, request: Request) -> Response:
        rid = request.path_params["rid"]
        return JSONResponse({"id": rid, "object": "response", "status": "completed", "output": []})


# ---------------------------------------------------------------------- event streams


def _anthropic_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The events the Messages API streams for ``message``, deltas in small pieces."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "thinking":
            opening: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"], 8)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"], 5)]
        else:
            opening = {**block, "input": {}}
            text = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(text, 7)]
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _responses_events(response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The events the Responses API streams for ``response``."""
    pending = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"type": "response.created", "response": pending}),
        ("response.in_progress", {"type": "response.in_progress", "response": pending}),
    ]
    for n, item in enumerate(response["output"]):
        kind = item["type"]
        if kind == "message":
            added = {**item, "status": "in_progress", "content": []}
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": n, "item": added}))
            text = item["content"][0]["text"]
            where = {"item_id": item["id"], "output_index": n, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": []}
            events.append(("response.content_part.added", {"type": "response.content_part.added", **where, "part": empty}))
            events += [
                ("response.output_text.delta", {"type": "response.output_text.delta", **where, "delta": p, "logprobs": []})
                for p in pieces(text, 5)
            ]
            events.append(("response.output_text.done", {"type": "response.output_text.done", **where, "text": text, "logprobs": []}))
            events.append(("response.content_part.done", {"type": "response.content_part.done", **where, "part": item["content"][0]}))
        elif kind == "function_call":
            added = {**item, "status": "in_progress", "arguments": ""}
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": n, "item": added}))
            where = {"item_id": item["id"], "output_index": n}
            events += [
                ("response.function_call_arguments.delta", {"type": "response.function_call_arguments.delta", **where, "delta": p})
                for p in pieces(item["arguments"], 7)
            ]
            events.append(("response.function_call_arguments.done", {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"], "name": item["name"]}))
        else:
            added = {**item, "summary": []}
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": n, "item": added}))
        events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": n, "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    for seq, (_, data) in enumerate(events):
        data["sequence_number"] = seq
    return events


def _sse(
    events: list[tuple[str, dict[str, Any]]], reply: NativeReply, ends: list[tuple[float, str]]
) -> AsyncIterator[bytes]:
    """The named events as a stream, stalled or cut as ``reply`` says."""
    frames = [sse_data(data, name) for name, data in events]
    return sse(frames, reply.stall, reply.cut_after, ends)
