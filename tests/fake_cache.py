"""A fake upstream with a prompt cache, for the observability tests: every answer
reports usage the way its provider does, cache figures included, and the fake
records what it reported, so a test can check /metrics and the page against it.

The four governed APIs, on one server: ``POST /v1/chat/completions`` and
``/v1/responses`` (OpenAI), ``/v1/messages`` (Anthropic), and Gemini's
``/v1beta/models/{model}:generateContent`` / ``:streamGenerateContent`` (a JSON
array, or events with ``?alt=sse``). JSON or streamed, as asked.

The cache: a request's prompt is its list of messages (system first); its tokens are
the characters of each message's JSON over 4. It reads the longest prefix (whole
messages) that an earlier request also sent, when that is at least ``MIN_CACHED``
tokens (as providers do), and everything it sent is cached for later requests. So a
client that keeps its prefix reads it back, a compaction or an edit of an old message
reads less: the behaviour the proxy's cache figures are about, decided here, not by
the proxy.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from fake_server import ThreadedServer, sse_data
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MIN_CACHED = 1024
OUTPUT = 7


def tokens(message: Any) -> int:
    return max(1, len(json.dumps(message, sort_keys=True)) // 4)


def prompt_of(api: str, body: dict[str, Any]) -> list[Any]:
    """The prompt's messages, system first, in the API's own shape."""
    if api == "anthropic":
        head = [body["system"]] if body.get("system") else []
        return head + list(body.get("messages", []))
    if api == "responses":
        head = [body["instructions"]] if body.get("instructions") else []
        given = body.get("input", [])
        return head + ([given] if isinstance(given, str) else list(given))
    if api == "gemini":
        head = [body["systemInstruction"]] if body.get("systemInstruction") else []
        return head + list(body.get("contents", []))
    return list(body.get("messages", []))


class FakeCache:
    def __init__(self) -> None:
        self._prefixes: set[str] = set()
        self._lock = threading.Lock()
        #: what each answer reported: api, input (whole prompt), read, write, output
        self.reported: list[dict[str, Any]] = []
        self.bodies: list[dict[str, Any]] = []
        routes = [
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1beta/models/{rest:path}", self._gemini, methods=["POST"]),
        ]
        self._server = ThreadedServer(routes, "fake cache upstream")

    def start(self) -> FakeCache:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    @property
    def base_url(self) -> str:
        return self._server.root_url + "/v1"

    @property
    def root_url(self) -> str:
        return self._server.root_url

    def totals(self) -> dict[str, int]:
        return {k: sum(r[k] for r in self.reported) for k in ("input", "read", "write", "output")}

    def _usage(self, api: str, body: dict[str, Any]) -> dict[str, int]:
        """Read and fill the cache for ``body``; the figures to report."""
        prompt = prompt_of(api, body)
        sizes = [tokens(m) for m in prompt]
        running = hashlib.sha256(api.encode())
        digests = []
        for message in prompt:
            running.update(json.dumps(message, sort_keys=True).encode())
            digests.append(running.hexdigest())
        with self._lock:
            hit = 0
            for i, digest in enumerate(digests):
                if digest in self._prefixes:
                    hit = i + 1
            read = sum(sizes[:hit])
            if read < MIN_CACHED:
                read = 0
            self._prefixes.update(digests)
            total = sum(sizes)
            last = sizes[-1] if sizes else 0
            write = max(0, total - read - last) if api == "anthropic" else 0
            figures = {"api": api, "input": total, "read": read, "write": write, "output": OUTPUT}
            self.reported.append(figures)
            self.bodies.append(body)
        return figures

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        u = self._usage("openai", body)
        usage = {"prompt_tokens": u["input"], "completion_tokens": OUTPUT,
                 "total_tokens": u["input"] + OUTPUT,
                 "prompt_tokens_details": {"cached_tokens": u["read"]}}  # fmt: skip
        message = {"role": "assistant", "content": "ok"}
        if not body.get("stream"):
            return JSONResponse({"id": "c1", "object": "chat.completion", "model": body["model"],
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "stop"}], "usage": usage})  # fmt: skip
        chunk = {"id": "c1", "object": "chat.completion.chunk", "model": body["model"]}
        events = [
            sse_data({**chunk, "choices": [{"index": 0, "delta": message, "finish_reason": None}]}),
            sse_data({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            sse_data({**chunk, "choices": [], "usage": usage}),
            b"data: [DONE]\n\n",
        ]
        return _stream(events)

    async def _messages(self, request: Request) -> Response:
        body = await request.json()
        u = self._usage("anthropic", body)
        usage = {"input_tokens": u["input"] - u["read"] - u["write"],
                 "cache_read_input_tokens": u["read"],
                 "cache_creation_input_tokens": u["write"], "output_tokens": OUTPUT}  # fmt: skip
        message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
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
            sse_data({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                      "usage": {"output_tokens": OUTPUT}}, "message_delta"),
            sse_data({"type": "message_stop"}, "message_stop"),
        ]  # fmt: skip
        return _stream(events)

    async def _responses(self, request: Request) -> Response:
        body = await request.json()
        u = self._usage("responses", body)
        usage = {"input_tokens": u["input"], "output_tokens": OUTPUT,
                 "input_tokens_details": {"cached_tokens": u["read"]},
                 "total_tokens": u["input"] + OUTPUT}  # fmt: skip
        response = {"id": "resp_1", "object": "response", "status": "completed",
                    "model": body["model"], "output": [{"type": "message", "id": "m1",
                    "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
                    "usage": usage}  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(response)
        events = [
            sse_data({"type": "response.created", "response": {**response, "usage": None}},
                     "response.created"),
            sse_data({"type": "response.completed", "response": response}, "response.completed"),
        ]  # fmt: skip
        return _stream(events)

    async def _gemini(self, request: Request) -> Response:
        body = await request.json()
        u = self._usage("gemini", body)
        element = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
                                   "finishReason": "STOP"}],
                   "usageMetadata": {"promptTokenCount": u["input"],
                                     "cachedContentTokenCount": u["read"],
                                     "candidatesTokenCount": OUTPUT}}  # fmt: skip
        if not request.path_params["rest"].endswith(":streamGenerateContent"):
            return JSONResponse(element)
        if request.query_params.get("alt") == "sse":
            return _stream([sse_data(element)])
        text = json.dumps([element]).encode()
        return Response(text, media_type="application/json")


def _stream(events: list[bytes]) -> Response:
    async def gen() -> Any:
        for event in events:
            yield event

    return StreamingResponse(gen(), media_type="text/event-stream")
