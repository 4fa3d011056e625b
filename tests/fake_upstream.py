"""A fake OpenAI-compatible upstream: a real HTTP server on localhost.

uvicorn serves a small starlette app on a free port in a thread, so clients
talk to it over real sockets, exactly as to a provider. Every request is
checked the way a strict provider would: its messages with ``validate()``,
its prompt against a context window; a request that breaks a rule is answered
with a 400 (as the provider would) and recorded in ``violations``, which the
tests' fixture turns into a failure.

Replies are scripted: push :class:`Reply` objects; each request takes the
next one. A chat reply is served as JSON or as server-sent events, whichever
the request asked for, with tool-call arguments split into small deltas.
A streamed reply can break off (``cut_after``) or stall (``stall``); the
server records the request target of every request it gets (``targets``) and
how each stream ended (``stream_ends``). :class:`HangUp` is a raw socket
server that reads a request and closes the connection without answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fake_server import ListeningStream, ThreadedServer, pieces, sse, sse_data
from fake_server import free_socket as _free_socket  # the name other tests import
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from context_governor.counting import exact_counter
from context_governor.providers import validate


@dataclass
class Reply:
    """One scripted answer. Build with the class methods."""

    kind: str  # "chat" | "error" | "raw"
    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0
    #: streamed replies: pause this long after the first chunk (for read timeouts)
    stall: float = 0.0
    #: streamed replies: drop the connection after this many events (no [DONE])
    cut_after: int | None = None

    @classmethod
    def text(cls, content: str, *, delay: float = 0.0, finish_reason: str = "stop") -> Reply:
        return cls("chat", content=content, finish_reason=finish_reason, delay=delay)

    @classmethod
    def calls(cls, *calls: tuple[str, dict[str, Any]] | tuple[str, str], content: str | None = None) -> Reply:
        """Tool calls, each (name, arguments); ids are given by the server like OpenAI's."""
        built = []
        for name, args in calls:
            arguments = args if isinstance(args, str) else json.dumps(args)
            built.append({"type": "function", "function": {"name": name, "arguments": arguments}})
        return cls("chat", content=content, tool_calls=built, finish_reason="tool_calls")

    @classmethod
    def error(cls, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
        body = json.dumps({"error": {"message": message, "type": "fake", "code": status}})
        return cls("error", status=status, headers=headers or {}, body=body.encode())

    @classmethod
    def raw(cls, status: int, body: bytes, content_type: str = "text/plain") -> Reply:
        return cls("raw", status=status, body=body, headers={"content-type": content_type})


class FakeUpstream(ThreadedServer):
    """The server and its script; one instance serves a whole test session."""

    def __init__(self, provider: str = "openai") -> None:
        self.provider = provider
        self.context_window: int | None = None
        self.replies: deque[Reply | Callable[[dict[str, Any]], Reply]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.violations: list[str] = []
        #: how each streamed answer ended: (monotonic time, "complete" | "aborted" | "cut")
        self.stream_ends: list[tuple[float, str]] = []
        self._counter = exact_counter("gpt-4o-mini")
        self._ids = 0
        routes = [
            Route("/v1/chat/completions", self._handle, methods=["POST"]),
            Route("/v1/models", self._models, methods=["GET"]),
        ]
        super().__init__(routes, "the fake upstream")

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def reset(self) -> None:
        with self._lock:
            self.replies.clear()
            self.requests.clear()
            self.request_headers.clear()
            self.violations.clear()
            self.targets.clear()
            self.stream_ends.clear()
            self.context_window = None

    def push(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        self.replies.extend(replies)

    # ------------------------------------------------------------------ checks

    def _check(self, body: Any) -> list[str]:
        """What a strict provider would reject in this request body."""
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return ["body: expected an object with a 'messages' list"]
        if not isinstance(body.get("model"), str):
            return ["body: 'model' is required"]
        problems = [
            f"{v.rule} at message {v.index}: {v.error}"
            for v in validate(body["messages"], provider=self.provider, model=body["model"])
        ]
        for i, tool in enumerate(body.get("tools") or []):
            function = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                problems.append(f"tools[{i}]: not a function tool")
        if self.context_window is not None:
            prompt = self._counter.prompt_tokens(body["messages"], body.get("tools"))
            reserve = body.get("max_tokens") or body.get("max_completion_tokens") or 0
            if prompt + reserve > self.context_window:
                problems.append(
                    f"context_length_exceeded: {prompt} prompt + {reserve} output tokens "
                    f"> {self.context_window}"
                )
        return problems

    # ------------------------------------------------------------------ serving

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    async def _handle(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = json.loads(raw)
        except ValueError:
            self.violations.append("request body is not JSON")
            return JSONResponse({"error": {"message": "invalid JSON"}}, status_code=400)
        with self._lock:
            self.requests.append(body)
            self.request_headers.append(dict(request.headers))
        problems = self._check(body)
        if problems:
            self.violations.extend(problems)
            message = "; ".join(problems)
            return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=400)
        if not self.replies:
            self.violations.append(f"request {len(self.requests)} arrived with no reply scripted")
            return JSONResponse({"error": {"message": "no reply scripted"}}, status_code=500)
        reply = self.replies.popleft()
        if callable(reply):
            reply = reply(body)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.kind in ("error", "raw"):
            headers = {"content-type": "application/json", **reply.headers}
            return Response(reply.body, status_code=reply.status, headers=headers)
        completion_id = f"chatcmpl-{len(self.requests)}"
        calls = [self._with_id(c) for c in reply.tool_calls]
        usage = {
            "prompt_tokens": self._counter.prompt_tokens(body["messages"], body.get("tools")),
            "completion_tokens": 7,
            "total_tokens": 0,
            "prompt_tokens_details": {"cached_tokens": 3},
        }
        usage["total_tokens"] = usage["prompt_tokens"] + 7
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            chunks = _stream_chunks(completion_id, body["model"], reply, calls, usage if include_usage else None)
            frames = [sse_data(c) for c in chunks]
            events = sse(frames, reply.stall, reply.cut_after, self.stream_ends, b"data: [DONE]\n\n")
            return ListeningStream(events, media_type="text/event-stream")
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if calls:
            message["tool_calls"] = calls
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
                ],
                "usage": usage,
            }
        )

    def _with_id(self, call: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._ids += 1
            return {"id": f"call_fake{self._ids}", **call}


def _stream_chunks(
    completion_id: str,
    model: str,
    reply: Reply,
    calls: list[dict[str, Any]],
    usage: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """The chunks OpenAI would send: role first, then content and tool-call deltas."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": "" if reply.content is not None else None})]
    if reply.content:
        chunks += [chunk({"content": piece}) for piece in pieces(reply.content, 5)]
    for index, call in enumerate(calls):
        first = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [first]}))
        for piece in pieces(call["function"]["arguments"], 7):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, reply.finish_reason))
    if usage is not None:
        chunks.append({"id": completion_id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": [], "usage": usage})
    return chunks


class HangUp:
    """A raw TCP server that reads each request's head and body, then closes the
    connection without a byte of answer (a crashed or restarting upstream)."""

    def __init__(self) -> None:
        self._sock = _free_socket()
        self._sock.listen(16)
        self.port: int = self._sock.getsockname()[1]
        self.requests = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
                while len(body) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    body += chunk
                self.requests += 1

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._sock.close()
        self._thread.join(5)
