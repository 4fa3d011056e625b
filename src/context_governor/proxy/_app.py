"""The proxy's ASGI app: govern ``POST /v1/chat/completions``, ``/v1/messages``,
``/v1/responses`` and Gemini's ``/v1beta/models/{model}:generateContent`` /
``:streamGenerateContent`` (also under ``/v1/``) with one handler (apis.py says what
differs), pass the rest through.

Every request is governed on its own, from its body and the config alone: no
conversation state is kept, so any number of replicas behind a load balancer
forward the same bytes for the same request (see governing.py).

Who may call is checked first, before routing (guard.py: Host, web pages, client
keys, a JSON content type, requests in flight). What a client can send is bounded
before any work is done: the body's size
(body.py, a 413), the path it may reach upstream (paths.py, a 400), and the
JSON it may contain (governing.py, a 400); every refusal is in the API's own
error shape (Anthropic's under /v1/messages, Google's for Gemini, OpenAI's elsewhere)
so SDKs raise their usual exception with our message.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from ..errors import ConfigError
from ..report import Report
from ._apis import (
    CHAT,
    RESPONSES,
    ROUTES,
    VERSIONS,
    ApiRoute,
    has_query_key,
    header_value,
    path_kind,
    route_for_path,
    with_query_key,
)
from ._body import TooLarge, declared_length, read_limited
from ._config import CONFIG_ENV, ProxyConfig, upstream_key
from ._count_tokens import calibrated, upstream_counter
from ._executor import Governance
from ._governing import BadRequest, Governed
from ._guard import Guard
from ._learning import Hints, Learner
from ._metrics import Metrics, available
from ._observer import Journal, Observation, Observer
from ._page_store import open_page_store
from ._paths import BadPath, forward_path, forward_query
from ._protocol import HeaderTimeoutH11
from ._redact import Redactor, mask_logged_query_secrets
from ._refusals import Refusal, refusal_of
from ._side import (
    LACKS_ENDPOINT,
    REFUSES_TRIGGER,
    SIDE_HEADER,
    SIDE_ROUTES,
    SideRoute,
    asks_to_compact,
    expand_minted,
    govern_side,
    has_compaction,
    local_answer,
    minted_compaction,
    response_events,
    sendable,
)
from ._summaries import count_store_for
from ._tracing import Tracer, otlp_provider
from ._ui import routes as observing_routes
from ._upstream import RelayedStream, describe, forward_headers, relay, upstreams_of
from ._usage import Usage, usage_of
from ._watch import StreamWatch

__all__ = [
    "HEADER_PREFIX",
    "NotGovernedLog",
    "app_from_env",
    "betas_of",
    "create_app",
    "error_response",
    "governed_headers",
    "observer_for",
    "read_body",
    "report_headers",
    "summary",
    "too_large",
]

log = logging.getLogger("context_governor.proxy")

HEADER_PREFIX = "x-context-governor-"
_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def error_response(
    status: int,
    message: str,
    kind: str,
    param: str | None = None,
    code: str | None = None,
    route: ApiRoute = CHAT,
) -> Response:
    """An error in the API's own shape, so its SDK raises its usual exception with our message."""
    body = route.error_body(message, kind, param, code, status)
    return JSONResponse(body, status_code=status)


def too_large(exc: TooLarge, route: ApiRoute = CHAT) -> Response:
    return error_response(
        413, exc.message, "invalid_request_error", code="request_too_large", route=route
    )


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


def governed_headers(governed: Governed) -> list[tuple[str, str]]:
    """The report's headers, and what the request left ungoverned server-side, if anything."""
    headers = report_headers(governed.report)
    headers.append((f"{HEADER_PREFIX}window-source", governed.report.window_source))
    headers.append((f"{HEADER_PREFIX}profile", governed.report.profile))
    window = governed.window
    if window is not None and window.window is not None:
        headers.append((f"{HEADER_PREFIX}window", str(window.window)))
        if window.ratio != 1.0:
            headers.append((f"{HEADER_PREFIX}upstream-ratio", f"{window.ratio:g}"))
            headers.append((f"{HEADER_PREFIX}window-governed", str(window.governed)))
    if governed.client_compaction is not None:  # the client's own summary request
        headers.append((f"{HEADER_PREFIX}client-compaction", governed.client_compaction))
    if governed.ungoverned:
        headers.append((f"{HEADER_PREFIX}ungoverned", header_value(governed.ungoverned)))
    return headers


def summary(governed: Governed) -> str:
    """One log line's worth: tokens before→after and actions by stage."""
    report = governed.report
    stages = ", ".join(f"{stage} {len(acts)}" for stage, acts in report.by_stage().items())
    window = governed.window
    shown = "none" if window is None or window.window is None else f"{window.window}"
    if window is not None and window.window is not None:
        shown += f"({window.source})"
        if window.ratio != 1.0:
            shown += f" ratio={window.ratio:g}→{window.governed}"
    line = (
        f"model={governed.model or '-'} rules={report.profile} "
        f"tokens {report.tokens_before}→{report.tokens_after} window={shown} "
        f"budget={report.budget if report.budget is not None else 'none'} "
        f"actions: {stages or 'none'}"
    )
    if report.violations:
        line += f" violations={len(report.violations)}"
    if governed.client_compaction is not None:
        line += f" client-compaction={governed.client_compaction}"
    if governed.ungoverned:
        line += f" not governed (server-side): {header_value(governed.ungoverned)}"
    return line


def betas_of(request: Request) -> tuple[str, ...]:
    """The request's ``anthropic-beta`` values (comma-separated, possibly repeated)."""
    values = request.headers.getlist("anthropic-beta")
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _unreachable(exc: httpx.HTTPError, redact: Redactor, route: ApiRoute = CHAT) -> Response:
    what = describe(exc, redact)
    if isinstance(exc, httpx.TimeoutException):
        return error_response(504, f"upstream timed out: {what}", "upstream_error", route=route)
    return error_response(502, f"upstream unreachable: {what}", "upstream_error", route=route)


class NotGovernedLog:
    """Says once per kind of path (apis.path_kind) that a request was passed through
    ungoverned, at WARNING, so a client pointed at a path we do not govern is not
    left to believe it is governed. Bounded: a client inventing paths cannot grow it
    past MAX_KINDS (later kinds are still logged per request at INFO)."""

    MAX_KINDS = 256

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def __call__(self, method: str, path: str, version: str = "v1") -> None:
        kind = f"{method} /{version}/{path_kind(path)}"
        if kind in self._seen or len(self._seen) >= self.MAX_KINDS:
            return
        self._seen.add(kind)
        log.warning(
            "not governed: %s is passed through unchanged (the proxy governs POST %s; "
            "said once per kind of path)",
            kind,
            ", POST ".join(r.paths[0] for r in ROUTES),
        )


def observer_for(config: ProxyConfig, tracer_provider: Any | None = None) -> Observer:
    """What watches the requests (observer.py): metrics when prometheus-client is there
    (unless ``metrics`` is off), spans when a tracer provider is given or OTLP is
    configured (tracing.py), the page's records unless ``ui`` is off."""
    owned = tracer_provider is None
    provider = otlp_provider(config.telemetry.otlp_endpoint) if owned else tracer_provider
    url = config.page.store or config.counting.store
    journal = Journal(
        max_conversations=config.page.conversations,
        max_requests=config.page.requests,
        content_bytes=config.page.content_bytes,
        report_bytes=config.page.report_bytes,
        keep_records=config.page.enabled,
        store=(
            open_page_store(url, config.page.conversations, config.page.requests)
            if url and config.page.enabled
            else None
        ),
    )
    return Observer(
        Metrics() if config.telemetry.metrics and available() else None,
        Tracer(provider, owned=owned),
        keep_content=config.page.content,
        journal=journal,
    )


async def _refusal_in(response: httpx.Response) -> Refusal | None:
    """The window an error answer states (refusals.py), or None. The body is read
    here (an error is relayed whole anyway; httpx keeps it for the relay)."""
    if response.status_code < 400:
        return None
    await response.aread()
    return refusal_of(response.content)


def _doubled_version(request: Request, version: str, path: str) -> Response:
    """A 404 in the inner API's shape for ``/v1/v1/...``: a client whose base URL ends in
    the version its SDK adds again (an Anthropic client given ``http://HOST:PORT/v1``)
    would otherwise be passed through ungoverned."""
    inner, _, rest = path.partition("/")
    route = route_for_path(rest, inner)
    message = (
        f"/{version}/{path} names the API version twice: the client's base URL ends in "
        f"/{version} and its SDK adds /{inner} again. Give Anthropic and Gemini clients the "
        "proxy's root (http://HOST:PORT), OpenAI clients http://HOST:PORT/v1"
    )
    log.info("%s /%s/%s 404 (not forwarded): the version twice", request.method, version, path)
    return error_response(404, message, "invalid_request_error", route=route)


async def _healthz(request: Request) -> Response:
    """For a load balancer or orchestrator: the process serves, nothing else asked."""
    return JSONResponse({"status": "ok"})


class _Proxy:
    """What one app's handlers share, and the handlers: the upstream, the governance,
    what is learned of the models, and the observer. One per app (create_app), so two
    apps in a process share nothing; each step of a handler is a method of its own."""

    def __init__(self, config: ProxyConfig, tracer_provider: Any | None) -> None:
        self.config = config
        self.upstreams = upstreams_of(config)
        self.governance = Governance(config)
        self.redact = config.redactor()
        self.not_governed = NotGovernedLog()
        self.learner = Learner(count_store_for(config))
        self.observer = observer_for(config, tracer_provider)

    def routes(self) -> list[BaseRoute]:
        """Health, the observing pages, the governed routes of every API and version,
        the side endpoints, then everything else under each version passed through."""
        config = self.config
        return [
            Route("/healthz", _healthz, methods=["GET"]),
            *observing_routes(
                self.observer,
                config.page.token,
                metrics=config.telemetry.metrics,
                ui=config.page.enabled,
            ),
            *(
                Route(f"/{v}/{r.path}", self.governed_route(r, v), methods=["POST"])
                for r in ROUTES
                for v in r.versions
            ),
            *(Route(f"/v1/{s.path}", self.side_route(s), methods=["POST"]) for s in SIDE_ROUTES),
            *(
                Route(f"/{v}/{{path:path}}", self.passthrough_under(v), methods=_METHODS)
                for v in VERSIONS
            ),
        ]

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[dict[str, Any]]:
        """The encodings loaded and the upstream's pools made before the first request;
        at shutdown the governing workers stopped, the pools closed, the spans flushed."""
        await self.governance.start()
        pools = list(dict.fromkeys(self.upstreams.values()))
        for pool in pools:
            await run_in_threadpool(pool.start)
        try:
            yield {}
        finally:
            self.governance.close()
            for pool in pools:
                await pool.aclose()
            if self.observer.journal.store is not None:  # what is queued is written
                await run_in_threadpool(self.observer.journal.store.flush)
            self.observer.tracer.shutdown()

    def _no_upstream(self, request: Request, route: ApiRoute) -> Response:
        """A 404 in the API's shape for an API the proxy was given no upstream for."""
        key = upstream_key(route.api)
        message = (
            f"this proxy has no upstream for the {route.api} API: start it with "
            f"--upstream {key}=URL (or an upstream for every API)"
        )
        log.info("%s %s 404 (no upstream for %s)", request.method, request.url.path, route.api)
        return error_response(404, message, "invalid_request_error", route=route)

    # -- what every governed request goes through

    async def _govern_learned(
        self, raw: bytes, route: ApiRoute, model: str | None, betas: tuple[str, ...]
    ) -> Governed:
        """Govern with what was learned of the model (learning.py): the process's
        knowledge first, then, when the count store is due to be read again for the
        model, governed again if the store knew better."""
        learner = self.learner
        governed = await self.governance.govern(
            raw, route.api, model=model, hints=Hints(learner.snapshot(), betas)
        )
        if learner.due(governed.model) and await run_in_threadpool(
            learner.refresh, governed.model or ""
        ):
            governed = await self.governance.govern(
                raw, route.api, model=model, hints=Hints(learner.snapshot(), betas)
            )
        return governed

    def _observe(self, governed: Governed, api: str, found: Any) -> Usage | None:
        """The upstream's usage of what we sent, against our count of it."""
        usage = usage_of(api, found) if not isinstance(found, StreamWatch) else found.usage
        if usage is not None and governed.model:
            self.learner.observe(governed.model, usage.input_tokens, governed.report.tokens_after)
        return usage

    async def _answered(
        self, seen: Observation, governed: Governed, api: str, relayed: Response
    ) -> None:
        """A JSON answer has been written to the client: read its usage and file it
        (observer.py). Run as the response's background task, after the answer's last
        write, so filing adds nothing before the client has its bytes (bench
        observe_cost: +0.1 ms at p50); a coroutine that never awaits, so it runs before
        the event loop serves anything else, and a scrape of /metrics that the answer
        prompted sees it (unless the client reads a large answer slowly: then the write
        waits, and so does this). It holds the loop while it runs: a slow observer
        would delay other requests, and, where the last write has not reached the
        socket yet, this one."""
        usage = None
        if relayed.status_code < 400:
            usage = self._observe(governed, api, bytes(relayed.body))
        seen.finish(relayed.status_code, usage, governed=governed)

    def _ended(
        self, seen: Observation, governed: Governed, api: str, watch: StreamWatch, status: int
    ) -> None:
        """A relayed stream is over: learn from its usage, and file it (observer.py)."""
        usage = self._observe(governed, api, watch)
        seen.finish(status, usage, complete=watch.finished, governed=governed)

    def _keyed(
        self, route: ApiRoute, request: Request, content_type: str | None = None
    ) -> tuple[list[tuple[str, str]], str]:
        """The headers and query to forward, a fixed --api-key put where the client
        put its own (apis.ApiRoute.key_header): in a header, or Gemini's ``?key=``."""
        # the client's query too: the Anthropic SDK's beta calls add ?beta=true
        query = forward_query(request.scope.get("query_string", b""))
        headers = forward_headers(
            self.config,
            request.headers,
            content_type=content_type,
            key_header=lambda names: route.key_header(names, query),
        )
        if self.config.api_key is not None and has_query_key(query):
            query = with_query_key(query, self.config.api_key)
        return headers, query

    # -- the governed routes

    def governed_route(
        self, route: ApiRoute, version: str = "v1"
    ) -> Callable[[Request], Awaitable[Response]]:
        """The handler of ``POST /<version>/<route.path>``: one code path for every API."""

        async def handle(request: Request) -> Response:
            return await self._governed(request, route, version)

        return handle

    async def _governed(self, request: Request, route: ApiRoute, version: str) -> Response:
        """A governed request: its path checked, its body read and governed (calibrated
        on the upstream's count where asked), then a compaction or the forward."""
        started = time.perf_counter()
        if route.api not in self.upstreams:
            return self._no_upstream(request, route)
        seen = self.observer.begin(route.api, request.headers)
        path, model = route.path, request.path_params.get("model")
        if model is not None:  # Gemini's path names the model: forwarded as spelled, checked
            raw_path = request.scope.get("raw_path") or request.scope["path"].encode()
            try:
                path = forward_path(raw_path, f"/{version}/")
            except BadPath as exc:
                log.info("POST /%s/%s 400 (not forwarded): %s", version, route.path, exc)
                message = f"path not allowed: {exc}"
                return error_response(400, message, "invalid_request_error", route=route)
        where = f"POST /{version}/{path}"
        betas = betas_of(request) if route.wire.reads_betas else ()
        try:
            raw = await read_body(request, self.config.limits.max_body_bytes)
            if route.wire.compacts:  # a compaction the proxy minted: its history
                raw = expand_minted(raw)
            governing = time.perf_counter()
            governed = await self._govern_learned(raw, route, model, betas)
        except TooLarge as exc:
            log.info("%s 413 %s", where, exc.message)
            seen.refused(413)
            return too_large(exc, route)
        except BadRequest as exc:
            log.info("%s 400 %s", where, exc.message)
            seen.refused(400)
            return error_response(400, exc.message, "invalid_request_error", exc.param, route=route)
        if route.wire.stream_by_path:  # streaming is the path's choice, not a body field's
            governed = replace(governed, stream=route.streams)
        headers, query = self._keyed(route, request, "application/json")
        if route.wire.counts_upstream and self.config.counting.calibrate_upstream:
            try:
                governed = await self._calibrated(governed, raw, route, model, betas, headers)
            except BadRequest as exc:  # cannot happen: the same body governed once
                return error_response(
                    400, exc.message, "invalid_request_error", exc.param, route=route
                )
        seen.governed(governed, raw, time.perf_counter() - governing)
        if route.wire.compacts and asks_to_compact(governed.body):
            return await self._compaction(where, governed, query, headers, raw, route, model)
        return await self._forward(
            seen, started, where, path, query, headers, raw, route, model, betas, governed
        )

    async def _calibrated(
        self,
        governed: Governed,
        raw: bytes,
        route: ApiRoute,
        model: str | None,
        betas: tuple[str, ...],
        headers: list[tuple[str, str]],
    ) -> Governed:
        """A Messages request calibrated on the upstream's count (count_tokens.py):
        governed again with the estimate scaled as that count says, when it says so."""
        return await calibrated(
            governed,
            self.config,
            upstream_counter(self.upstreams[route.api], headers),
            lambda ratio: self.governance.govern(
                raw,
                route.api,
                ratio,
                model=model,
                hints=Hints(self.learner.snapshot(), betas),
            ),
        )

    async def _forward(
        self,
        seen: Observation,
        started: float,
        where: str,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        raw: bytes,
        route: ApiRoute,
        model: str | None,
        betas: tuple[str, ...],
        governed: Governed,
    ) -> Response:
        """The governed request sent upstream and its answer relayed; a refusal as too
        long teaches the window and, when governing again changes the body, the request
        is sent once more (said in a header). An unreachable upstream is a 502 or 504."""
        learned: list[tuple[str, str]] = []
        upstream = self.upstreams[route.api]
        try:
            seen.sending()
            response = await upstream.send("POST", path, query, headers, governed.body)
            refusal = await _refusal_in(response) if governed.model else None
            if refusal is not None and governed.model:
                again = await self._relearned(raw, route, model, betas, governed, refusal, where)
                if again is not None:
                    await response.aclose()
                    governed = again
                    learned = [(f"{HEADER_PREFIX}window-learned", str(refusal.limit))]
                    response = await upstream.send("POST", path, query, headers, governed.body)
            final = governed
            relayed = await relay(
                response,
                stream=governed.stream,
                redact=self.redact,
                extra=[*governed_headers(governed), *learned],
                framing=route.framing,
                watch=StreamWatch(route.api),
                on_end=lambda watch: self._ended(
                    seen, final, route.api, watch, response.status_code
                ),
            )
        except httpx.HTTPError as exc:
            what = describe(exc, self.redact)
            log.warning("%s %s → upstream: %s", where, summary(governed), what)
            failed = _unreachable(exc, self.redact, route)
            seen.finish(failed.status_code, outcome="unreachable", governed=governed)
            return failed
        if not isinstance(relayed, RelayedStream):
            relayed.background = BackgroundTask(self._answered, seen, governed, route.api, relayed)
        elapsed = (time.perf_counter() - started) * 1000  # to the first byte when streaming
        log.info("%s %s → %d in %.0f ms", where, summary(governed), relayed.status_code, elapsed)
        return relayed

    async def _relearned(
        self,
        raw: bytes,
        route: ApiRoute,
        model: str | None,
        betas: tuple[str, ...],
        governed: Governed,
        refusal: Refusal,
        where: str,
    ) -> Governed | None:
        """The refused request governed again with what the refusal taught (its window,
        and the ratio of its count to ours), or None when that changes nothing (then
        the refusal is relayed as it came)."""
        assert governed.model is not None
        learner = self.learner
        if learner.learn_window(governed.model, refusal.limit):
            self.observer.window_learned(governed.model)
        if refusal.prompt_tokens is not None:
            learner.observe(governed.model, refusal.prompt_tokens, governed.report.tokens_after)
        try:
            again = await self.governance.govern(
                raw, route.api, model=model, hints=Hints(learner.snapshot(), betas)
            )
        except BadRequest:  # cannot happen: the same body was governed once
            return None
        if route.wire.stream_by_path:
            again = replace(again, stream=route.streams)
        if again.body == governed.body:
            log.warning(
                "%s the upstream refused with a window of %d for %s; governing again "
                "changed nothing, so its answer is relayed",
                where, refusal.limit, governed.model,
            )  # fmt: skip
            return None
        log.warning(
            "%s the upstream refused: window-learned=%d for %s (its count %s, ours %d); "
            "governed again to %d tokens and retried",
            where, refusal.limit, governed.model,
            refusal.prompt_tokens if refusal.prompt_tokens is not None else "not said",
            governed.report.tokens_after, again.report.tokens_after,
        )  # fmt: skip
        return again

    # -- every other path

    def passthrough_under(self, version: str) -> Callable[[Request], Awaitable[Response]]:
        """The handler of every other path under ``/<version>/``."""

        async def passthrough(request: Request) -> Response:
            return await self._passthrough(request, version)

        return passthrough

    async def _passthrough(self, request: Request, version: str) -> Response:
        """A request the proxy does not govern: its path checked, then relayed as it came
        (said once per kind of path, NotGovernedLog)."""
        raw_path: bytes = request.scope.get("raw_path") or request.scope["path"].encode()
        path = ""
        # the error shape of a path refused as unsafe: judged on its text as sent
        route = route_for_path(raw_path.decode("latin-1")[len(version) + 2 :], version)
        try:
            path = forward_path(raw_path, f"/{version}/")
            route = route_for_path(path, version)
            if path.partition("/")[0] in VERSIONS:
                return _doubled_version(request, version, path)
            if route.api not in self.upstreams:
                return self._no_upstream(request, route)
            self.not_governed(request.method, path, version)
            self.observer.passthrough(route.api)
            body = await read_body(request, self.config.limits.max_body_bytes)
            headers, query = self._keyed(route, request)
            upstream = self.upstreams[route.api]
            response = await upstream.send(request.method, path, query, headers, body)
            relayed = await relay(response, stream=True, redact=self.redact, framing=route.framing)
        except BadPath as exc:
            shown = raw_path.decode("latin-1")
            log.info("%s %s 400 (not forwarded): %s", request.method, shown, exc)
            return error_response(
                400, f"path not allowed: {exc}", "invalid_request_error", route=route
            )
        except TooLarge as exc:
            log.info("%s /%s/%s 413 %s", request.method, version, path, exc.message)
            return too_large(exc, route)
        except httpx.HTTPError as exc:
            what = describe(exc, self.redact)
            log.warning("%s /%s/%s → upstream: %s", request.method, version, path, what)
            return _unreachable(exc, self.redact, route)
        status = relayed.status_code
        log.info("%s /%s/%s → %d (passed through)", request.method, version, path, status)
        return relayed

    # -- side endpoints and compactions (side.py)

    async def _compaction(
        self,
        where: str,
        governed: Governed,
        query: str,
        headers: list[tuple[str, str]],
        raw: bytes,
        route: ApiRoute,
        model: str | None,
    ) -> Response:
        """A Responses request ending in a compaction trigger (side.py): the upstream's
        compaction when it gives one, else one minted here from the governed history.
        A refusal as too long teaches the window (as on the main path) and the history
        is governed to it before the compaction is minted."""
        redact = self.redact
        try:
            upstream = self.upstreams[route.api]
            response = await upstream.send("POST", "responses", query, headers, governed.body)
            try:
                answer = await response.aread()
            finally:
                await response.aclose()
        except httpx.HTTPError as exc:
            log.warning("%s %s → upstream: %s", where, summary(governed), describe(exc, redact))
            return _unreachable(exc, redact, RESPONSES)
        status = response.status_code
        if (status == 200 and has_compaction(answer)) or (
            status != 200 and status not in REFUSES_TRIGGER
        ):
            kind = response.headers.get("content-type", "application/json")
            extra = [*governed_headers(governed), (SIDE_HEADER, "upstream")]
            log.info("%s %s → %d compaction (upstream)", where, summary(governed), status)
            return Response(answer, status_code=status, media_type=kind, headers=dict(extra))
        refusal = refusal_of(answer) if status >= 400 and governed.model else None
        if refusal is not None:
            again = await self._relearned(raw, route, model, (), governed, refusal, where)
            if again is not None:
                governed = again
        line = summary(governed)
        log.info("%s %s → compaction answered here (upstream: %d)", where, line, status)
        minted = minted_compaction(governed)
        local = dict([*governed_headers(governed), (SIDE_HEADER, "local")])
        if governed.stream:
            return Response(response_events(minted), media_type="text/event-stream", headers=local)
        return JSONResponse(minted, headers=local)

    def side_route(self, side: SideRoute) -> Callable[[Request], Awaitable[Response]]:
        """The handler of a side endpoint (side.py): the governed body goes to the
        upstream's endpoint; where the upstream has none, the proxy answers itself."""
        route = route_for_path(side.path)

        async def handle(request: Request) -> Response:
            return await self._side(request, side, route)

        return handle

    async def _side(self, request: Request, side: SideRoute, route: ApiRoute) -> Response:
        """A side request governed, then sent to the upstream's endpoint, or answered here
        when the upstream has none (side.LACKS_ENDPOINT)."""
        where = f"POST /v1/{side.path}"
        if route.api not in self.upstreams:
            return self._no_upstream(request, route)
        try:
            raw = await read_body(request, self.config.limits.max_body_bytes)
            governed = await govern_side(side, raw, self.governance.govern)
        except TooLarge as exc:
            return too_large(exc, route)
        except BadRequest as exc:
            log.info("%s 400 %s", where, exc.message)
            return error_response(400, exc.message, "invalid_request_error", exc.param, route=route)
        headers, query = self._keyed(route, request, "application/json")
        extra = [*governed_headers(governed), (SIDE_HEADER, "upstream")]
        body = sendable(side, governed)
        try:
            upstream = self.upstreams[route.api]
            response = await upstream.send("POST", side.path, query, headers, body)
            if response.status_code not in LACKS_ENDPOINT:
                relayed = await relay(response, stream=False, redact=self.redact, extra=extra)
                log.info("%s %s → %d (upstream)", where, summary(governed), relayed.status_code)
                return relayed
            await response.aclose()
        except httpx.HTTPError as exc:
            log.warning("%s → upstream: %s", where, describe(exc, self.redact))
            return _unreachable(exc, self.redact, route)
        status = response.status_code
        log.info("%s %s → answered here (upstream: %d)", where, summary(governed), status)
        local = [*governed_headers(governed), (SIDE_HEADER, "local")]
        return JSONResponse(local_answer(side, governed), headers=dict(local))


def create_app(config: ProxyConfig, *, tracer_provider: Any | None = None) -> Starlette:
    """The proxy for ``config``; serve it with any ASGI server (the CLI uses uvicorn).

    The configured models' encodings are loaded during the ASGI lifespan start-up,
    so a server that runs it (uvicorn does) accepts no request before they are ready.
    ``tracer_provider``: an OpenTelemetry tracer provider to put the request spans in
    (default: OTLP when configured, else none).
    """
    mask_logged_query_secrets()  # a client's ?key= never reaches a log line
    proxy = _Proxy(config, tracer_provider)
    return Starlette(
        routes=proxy.routes(),
        lifespan=proxy.lifespan,
        middleware=[Middleware(Guard, config=config)],  # who may call: before any body is read
    )


def app_from_env() -> Starlette:
    """The app for the config in ``$CONTEXT_GOVERNOR_PROXY_CONFIG`` (ProxyConfig.to_json).

    An import-string factory, so uvicorn can build the app in each of its worker
    processes (``proxy --workers N``): an app object cannot be sent to them.
    """
    text = os.environ.get(CONFIG_ENV)
    if text is None:
        raise ConfigError(f"{CONFIG_ENV} is not set; it must hold the proxy's config as JSON")
    config = ProxyConfig.from_json(text)
    HeaderTimeoutH11.header_timeout = config.limits.header_timeout  # this worker's protocol
    return create_app(config)
