"""The load test's upstream: an OpenAI-compatible server with random delays and
scripted faults, run in its own process (``python -m bench.load_upstream PORT``).

Each request's last user message carries a marker (``mk-<hex>``) and may name a
fault (``fault=500``). The answer echoes the marker, so the client can tell its
own answer from another request's; a delay drawn from the marker (so the direct
and the proxied runs see the same delays) stands in for the model's latency.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MARKER = re.compile(r"mk-[0-9a-f]{12}")
FAULT = re.compile(r"fault=(\w+)")
#: Delay before the answer (seconds), uniform in this range.
DELAY = (0.0, 0.25)
#: How long a "hang" fault stays silent: past the proxy's read timeout in the load test.
HANG = 4.0


class Cut(Exception):
    """Raised mid-stream: the server drops the connection."""


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _chunk(marker: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    data = {
        "id": f"chatcmpl-{marker}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [choice],
    }
    return f"data: {json.dumps(data)}\n\n".encode()


async def _events(marker: str, text: str, fault: str | None) -> AsyncIterator[bytes]:
    yield _chunk(marker, {"role": "assistant", "content": ""})
    pieces = [text[i : i + 8] for i in range(0, len(text), 8)]
    for i, piece in enumerate(pieces):
        if fault == "cut" and i == len(pieces) // 2:
            raise Cut(marker)
        if fault == "hang" and i == len(pieces) // 2:
            await asyncio.sleep(HANG)
        yield _chunk(marker, {"content": piece})
        await asyncio.sleep(0.002)
    yield _chunk(marker, {}, "stop")
    yield b"data: [DONE]\n\n"


async def chat(request: Request) -> Response:
    body = json.loads(await request.body())
    text = _last_user_text(body)
    found = MARKER.search(text)
    marker = found.group(0) if found else "mk-none"
    fault_match = FAULT.search(text)
    fault = fault_match.group(1) if fault_match else None
    await asyncio.sleep(random.Random(marker).uniform(*DELAY))
    if fault == "500":
        error = {"error": {"message": "upstream exploded", "type": "server_error"}}
        return JSONResponse(error, 500)
    if fault == "429":
        error = {"error": {"message": "Rate limit reached", "type": "rate_limit"}}
        return JSONResponse(error, 429, headers={"retry-after": "7"})
    if fault == "hang" and not body.get("stream"):
        await asyncio.sleep(HANG)
    answer = f"Answer for {marker}: done with {len(body['messages'])} messages."
    if body.get("stream"):
        return StreamingResponse(_events(marker, answer, fault), media_type="text/event-stream")
    message = {"role": "assistant", "content": answer}
    return JSONResponse(
        {
            "id": f"chatcmpl-{marker}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


app = Starlette(
    routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/healthz", healthz)]
)

if __name__ == "__main__":
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        log_level="critical",
        backlog=2048,
        timeout_keep_alive=30,
    )
