"""The observation benchmark's upstream (``python -m bench.observe_upstream PORT``): an
OpenAI-compatible Chat Completions server that answers at once, in its own process.

No delay, so the latency through a proxy less the latency straight to this server is
the proxy's own time, and nothing else. Every answer reports usage the way OpenAI
does, cached tokens included (``prompt_tokens`` from the body's size, three quarters of
it cached), so every part of the proxy's observer runs: usage, the cached share, cost,
cache-bust checks. Deterministic: the same body gets the same answer.
"""

from __future__ import annotations

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

OUTPUT_TOKENS = 5


def usage_for(body: bytes) -> dict[str, object]:
    """The usage this server reports for ``body``: a token per 4 bytes, 3/4 cached."""
    prompt = max(1, len(body) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": prompt + OUTPUT_TOKENS,
        "prompt_tokens_details": {"cached_tokens": prompt * 3 // 4},
    }


async def chat(request: Request) -> Response:
    body = await request.body()
    message = {"role": "assistant", "content": "Done."}
    return JSONResponse(
        {
            "id": "chatcmpl-observe",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": usage_for(body),
        }
    )


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


app = Starlette(
    routes=[Route("/v1/chat/completions", chat, methods=["POST"]), Route("/healthz", healthz)]
)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="critical")
