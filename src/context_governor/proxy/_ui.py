"""The proxy's own pages: ``GET /metrics`` (Prometheus) and the page at ``/ui``.

/ui shows what governance did to each request, and, with ``--ui-content``, the
messages themselves: sensitive. So it is served to loopback clients only, unless a
token is set (``--ui-token``): then to anyone presenting it (``Authorization: Bearer``,
or ``?token=`` on the first page load, which the page keeps in the tab's session
storage), compared in constant time. /metrics carries no content and no
conversation ids (metrics.py bounds its labels), so it is open like the proxy itself.
"""

from __future__ import annotations

import hmac
from dataclasses import asdict
from ipaddress import ip_address
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..observe import FILES, asset, request_view, served_page
from ._metrics import CONTENT_TYPE
from ._observer import Observer

__all__ = ["GONE", "NO_CONTENT", "allowed", "request_detail", "routes"]

NO_CONTENT = (
    "Message content is not kept: set ui-content = true in the [proxy.page] table of the "
    "proxy's --config file to see what the client sent and what the model received (kept "
    "in memory, bounded)."
)
GONE = "This request's content is no longer kept (the oldest content is dropped first)."
REPORT_GONE = (
    "This request's report is no longer kept (the oldest reports are dropped first: "
    "--ui-reports-mb); its figures are in the conversation's table."
)


def _loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return host in ("localhost", "testclient")


def allowed(request: Request, token: str | None) -> bool:
    """Whether ``request`` may see the page: from loopback when no token is set, else
    with the token (constant-time comparison)."""
    if token is None:
        return _loopback(request)
    given = request.headers.get("authorization", "")
    if given.lower().startswith("bearer "):
        given = given[7:].strip()
    else:
        given = request.query_params.get("token", "")
    return hmac.compare_digest(given.encode(), token.encode())


def _refused(token: str | None) -> Response:
    why = (
        "the page needs its token (--ui-token): Authorization: Bearer TOKEN, or ?token="
        if token is not None
        else "the page is served to loopback clients only; set --ui-token to serve it remotely"
    )
    return JSONResponse({"error": {"message": why, "type": "forbidden"}}, status_code=403)


def request_detail(observer: Observer, seq: int) -> dict[str, Any] | None:
    """A request's record for the page, its two views made now (blocking: off the loop)."""
    record = observer.journal.record(seq)
    if record is None:
        return None
    content, report = record.content, record.report
    view = request_view(record.api, content[0], content[1]) if content is not None else None
    note = None if view is not None else (GONE if observer.keep_content else NO_CONTENT)
    return {
        "seq": record.seq, "conversation": record.conversation, "index": record.index,
        "api": record.api, "model": record.model, "status": record.status,
        "outcome": record.outcome, "row": record.row(),
        "report": None if report is None else report.to_dict(),
        "report_note": None if report is not None else REPORT_GONE,
        "usage": None if record.usage is None else asdict(record.usage),
        "view": view, "content_note": note,
    }  # fmt: skip


def _guarded(handler: Any, token: str | None) -> Any:
    """``handler`` served only to who may see the page (``allowed``), its answers kept
    out of caches and never sniffed as another type."""

    async def guard(request: Request) -> Response:
        if not allowed(request, token):
            return _refused(token)
        response: Response = await handler(request)
        response.headers["cache-control"] = "no-store"
        response.headers["x-content-type-options"] = "nosniff"
        return response

    return guard


def _scrape(observer: Observer) -> Any:
    """The handler of /metrics: the exposition, made off the loop (a 503 without
    prometheus-client)."""

    async def scrape(request: Request) -> Response:
        if observer.metrics is None:
            message = "metrics need prometheus-client: pip install 'context-governor[proxy]'"
            return JSONResponse({"error": {"message": message}}, status_code=503)
        body = await run_in_threadpool(observer.metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE)

    return scrape


async def _page(request: Request) -> Response:
    """The page's files: the page itself and its assets, nothing else."""
    name = request.path_params.get("name") or "index.html"
    if name not in FILES:
        return JSONResponse({"error": {"message": "not found"}}, status_code=404)
    body = served_page() if name == "index.html" else asset(name)
    return Response(body, media_type=FILES[name])


async def _to_page(request: Request) -> Response:
    """/ui without its slash: redirected to the page, with the query (a ?token=)."""
    query = request.url.query  # a ?token= goes along
    return RedirectResponse("/ui/" + (f"?{query}" if query else ""), status_code=307)


def _ui_routes(observer: Observer, token: str | None) -> list[BaseRoute]:
    """/ui's routes: the page and the records it reads, each guarded."""

    async def conversations(request: Request) -> Response:
        return JSONResponse(observer.journal.conversations())

    async def conversation(request: Request) -> Response:
        found = observer.journal.detail(request.path_params["cid"])
        if found is None:
            return JSONResponse({"error": {"message": "no such conversation"}}, status_code=404)
        return JSONResponse(found)

    async def one_request(request: Request) -> Response:
        found = await run_in_threadpool(request_detail, observer, request.path_params["seq"])
        if found is None:
            return JSONResponse({"error": {"message": "no such request"}}, status_code=404)
        return JSONResponse(found)

    async def memory(request: Request) -> Response:
        """What the page keeps now against its bounds (observer.Journal): for an operator
        sizing --ui-* and for bench/observe_cost.py."""
        journal = observer.journal
        return JSONResponse({"kept": journal.sizes(), "bounds": journal.bounds()})

    return [
        Route("/ui", _guarded(_to_page, token), methods=["GET"]),
        Route("/ui/", _guarded(_page, token), methods=["GET"]),
        Route("/ui/api/conversations", _guarded(conversations, token), methods=["GET"]),
        Route("/ui/api/conversations/{cid:path}", _guarded(conversation, token), methods=["GET"]),
        Route("/ui/api/requests/{seq:int}", _guarded(one_request, token), methods=["GET"]),
        Route("/ui/api/memory", _guarded(memory, token), methods=["GET"]),
        Route("/ui/{name}", _guarded(_page, token), methods=["GET"]),
    ]


def routes(
    observer: Observer, token: str | None, *, metrics: bool = True, ui: bool = True
) -> list[BaseRoute]:
    """/metrics and /ui's routes; either left out when switched off (``--no-metrics``,
    ``--no-ui``), so the path is passed nowhere and answers 404."""
    found: list[BaseRoute] = []
    if metrics:
        found.append(Route("/metrics", _scrape(observer), methods=["GET"]))
    if ui:
        found += _ui_routes(observer, token)
    return found
