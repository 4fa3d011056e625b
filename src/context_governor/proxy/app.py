"""The proxy's ASGI app: govern ``POST /v1/chat/completions``, pass the rest through.

Every request is governed on its own, from its body and the config alone: no
conversation state is kept, so any number of replicas behind a load balancer
forward the same bytes for the same request (see governing.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..report import Report
from .config import ProxyConfig
from .governing import BadRequest, Governed, govern_body
from .upstream import Upstream, relay

log = logging.getLogger("context_governor.proxy")

HEADER_PREFIX = "x-context-governor-"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def error_response(status: int, message: str, kind: str, param: str | None = None) -> Response:
    """An error in OpenAI's shape, so SDKs raise their usual exception with our message."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status_code=status)


def report_headers(report: Report) -> list[tuple[str, str]]:
    """The figures a client can read without parsing logs."""
    budget = "none" if report.budget is None else str(report.budget)
    return [
        (f"{HEADER_PREFIX}tokens-before", str(report.tokens_before)),
        (f"{HEADER_PREFIX}tokens-after", str(report.tokens_after)),
        (f"{HEADER_PREFIX}actions", str(len(report.actions))),
        (f"{HEADER_PREFIX}budget", budget),
        (f"{HEADER_PREFIX}violations", str(len(report.violations))),
    ]


def summary(governed: Governed) -> str:
    """One log line's worth: tokens before→after and actions by stage."""
    report = governed.report
    stages = ", ".join(f"{stage} {len(acts)}" for stage, acts in report.by_stage().items())
    line = (
        f"model={governed.model or '-'} tokens {report.tokens_before}→{report.tokens_after} "
        f"budget={report.budget if report.budget is not None else 'none'} "
        f"actions: {stages or 'none'}"
    )
    if report.violations:
        line += f" violations={len(report.violations)}"
    return line


def _unreachable(exc: httpx.HTTPError) -> Response:
    if isinstance(exc, httpx.TimeoutException):
        return error_response(504, f"upstream timed out: {exc!r}", "upstream_error")
    return error_response(502, f"upstream unreachable: {exc!r}", "upstream_error")


def create_app(config: ProxyConfig) -> Starlette:
    """The proxy for ``config``; serve it with any ASGI server (the CLI uses uvicorn)."""
    upstream = Upstream(config)

    async def chat_completions(request: Request) -> Response:
        started = time.perf_counter()
        try:
            governed = await run_in_threadpool(govern_body, await request.body(), config)
        except BadRequest as exc:
            log.info("POST /v1/chat/completions 400 %s", exc.message)
            return error_response(400, exc.message, "invalid_request_error", exc.param)
        headers = upstream.headers(request.headers, content_type="application/json")
        try:
            response = await upstream.send("POST", "chat/completions", "", headers, governed.body)
            extra = report_headers(governed.report)
            relayed = await relay(response, stream=governed.stream, extra=extra)
        except httpx.HTTPError as exc:
            log.warning("POST /v1/chat/completions %s → upstream: %r", summary(governed), exc)
            return _unreachable(exc)
        elapsed = (time.perf_counter() - started) * 1000  # to the first byte when streaming
        log.info(
            "POST /v1/chat/completions %s → %d in %.0f ms",
            summary(governed),
            relayed.status_code,
            elapsed,
        )
        return relayed

    async def passthrough(request: Request) -> Response:
        path = request.path_params["path"]
        headers = upstream.headers(request.headers)
        try:
            response = await upstream.send(
                request.method, path, request.url.query, headers, await request.body()
            )
            relayed = await relay(response, stream=True)
        except httpx.HTTPError as exc:
            log.warning("%s /v1/%s → upstream: %r", request.method, path, exc)
            return _unreachable(exc)
        log.info("%s /v1/%s → %d (passed through)", request.method, path, relayed.status_code)
        return relayed

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        yield {}
        await upstream.aclose()

    return Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/{path:path}", passthrough, methods=_METHODS),
        ],
        lifespan=lifespan,
    )
