"""The proxy's ASGI app: govern ``POST /v1/chat/completions``, pass the rest through.

Every request is governed on its own, from its body and the config alone: no
conversation state is kept, so any number of replicas behind a load balancer
forward the same bytes for the same request (see governing.py).

What a client can send is bounded before any work is done: the body's size
(body.py, a 413), the path it may reach upstream (paths.py, a 400), and the
JSON it may contain (governing.py, a 400); every refusal is in OpenAI's error
shape so SDKs raise their usual exception with our message.
"""

from __future__ import annotations

import logging
import os
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

from ..errors import ConfigError
from ..report import Report
from .body import TooLarge, declared_length, read_limited
from .config import CONFIG_ENV, ProxyConfig
from .executor import Governance
from .governing import BadRequest, Governed
from .paths import BadPath, forward_path, forward_query
from .redact import Redactor
from .upstream import Upstream, describe, relay

log = logging.getLogger("context_governor.proxy")

HEADER_PREFIX = "x-context-governor-"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def error_response(
    status: int, message: str, kind: str, param: str | None = None, code: str | None = None
) -> Response:
    """An error in OpenAI's shape, so SDKs raise their usual exception with our message."""
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return JSONResponse(body, status_code=status)


def too_large(exc: TooLarge) -> Response:
    return error_response(413, exc.message, "invalid_request_error", code="request_too_large")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (TooLarge) as soon as it is known to exceed ``limit``."""
    declared = declared_length(request.headers.get("content-length"))
    return await read_limited(request.stream(), limit, declared)


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


def _unreachable(exc: httpx.HTTPError, redact: Redactor) -> Response:
    if isinstance(exc, httpx.TimeoutException):
        return error_response(504, f"upstream timed out: {describe(exc, redact)}", "upstream_error")
    return error_response(502, f"upstream unreachable: {describe(exc, redact)}", "upstream_error")


def create_app(config: ProxyConfig) -> Starlette:
    """The proxy for ``config``; serve it with any ASGI server (the CLI uses uvicorn).

    The configured models' encodings are loaded during the ASGI lifespan start-up,
    so a server that runs it (uvicorn does) accepts no request before they are ready.
    """
    upstream = Upstream(config)
    governance = Governance(config)
    redact = upstream.redact

    async def chat_completions(request: Request) -> Response:
        started = time.perf_counter()
        try:
            governed = await governance.govern(await read_body(request, config.max_body_bytes))
        except TooLarge as exc:
            log.info("POST /v1/chat/completions 413 %s", exc.message)
            return too_large(exc)
        except BadRequest as exc:
            log.info("POST /v1/chat/completions 400 %s", exc.message)
            return error_response(400, exc.message, "invalid_request_error", exc.param)
        headers = upstream.headers(request.headers, content_type="application/json")
        try:
            response = await upstream.send("POST", "chat/completions", "", headers, governed.body)
            extra = report_headers(governed.report)
            relayed = await relay(response, stream=governed.stream, redact=redact, extra=extra)
        except httpx.HTTPError as exc:
            what = describe(exc, redact)
            log.warning("POST /v1/chat/completions %s → upstream: %s", summary(governed), what)
            return _unreachable(exc, redact)
        elapsed = (time.perf_counter() - started) * 1000  # to the first byte when streaming
        log.info(
            "POST /v1/chat/completions %s → %d in %.0f ms",
            summary(governed),
            relayed.status_code,
            elapsed,
        )
        return relayed

    async def passthrough(request: Request) -> Response:
        raw_path: bytes = request.scope.get("raw_path") or request.scope["path"].encode()
        try:
            path = forward_path(raw_path)
            query = forward_query(request.scope.get("query_string", b""))
            body = await read_body(request, config.max_body_bytes)
            headers = upstream.headers(request.headers)
            response = await upstream.send(request.method, path, query, headers, body)
            relayed = await relay(response, stream=True, redact=redact)
        except BadPath as exc:
            shown = raw_path.decode("latin-1")
            log.info("%s %s 400 (not forwarded): %s", request.method, shown, exc)
            return error_response(400, f"path not allowed: {exc}", "invalid_request_error")
        except TooLarge as exc:
            log.info("%s /v1/%s 413 %s", request.method, path, exc.message)
            return too_large(exc)
        except httpx.HTTPError as exc:
            log.warning("%s /v1/%s → upstream: %s", request.method, path, describe(exc, redact))
            return _unreachable(exc, redact)
        log.info("%s /v1/%s → %d (passed through)", request.method, path, relayed.status_code)
        return relayed

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        await governance.start()
        await run_in_threadpool(upstream.start)
        try:
            yield {}
        finally:
            governance.close()
            await upstream.aclose()

    return Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/{path:path}", passthrough, methods=_METHODS),
        ],
        lifespan=lifespan,
    )


def app_from_env() -> Starlette:
    """The app for the config in ``$CONTEXT_GOVERNOR_PROXY_CONFIG`` (ProxyConfig.to_json).

    An import-string factory, so uvicorn can build the app in each of its worker
    processes (``proxy --workers N``): an app object cannot be sent to them.
    """
    text = os.environ.get(CONFIG_ENV)
    if text is None:
        raise ConfigError(f"{CONFIG_ENV} is not set; it must hold the proxy's config as JSON")
    return create_app(ProxyConfig.from_json(text))
