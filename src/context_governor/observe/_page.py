"""The page's files (shipped in the package, ui/), and the page as one offline file.

The proxy serves ``ui/index.html``, ``ui.js`` and ``ui.css`` at /ui; ui.js reads the
proxy's /ui/api/. ``offline_page`` inlines the same files and the data into one HTML
file that needs nothing else (``govern FILE --html OUT.html``): ui.js then reads
``window.CG_DATA``, a mapping of the API's paths to what the proxy would answer.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any
from urllib.parse import quote

from ..report import Report
from ._figures import figures
from ._views import request_view

__all__ = ["FILES", "asset", "offline_data", "offline_page", "served_page"]

FILES = {"index.html": "text/html; charset=utf-8",
         "ui.js": "text/javascript; charset=utf-8",
         "ui.css": "text/css; charset=utf-8"}  # fmt: skip


def asset(name: str) -> bytes:
    """One of the page's files (``FILES``)."""
    if name not in FILES:
        raise KeyError(name)
    return resources.files(__package__).joinpath("ui", name).read_bytes()


def _script_json(data: Any) -> str:
    """JSON safe inside a <script> element (no ``</script>``, no ``<!--``)."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _inlined(before_script: str = "") -> str:
    """index.html with ui.css and ui.js inlined (``before_script``: a script element
    to run first)."""
    html = asset("index.html").decode()
    css = asset("ui.css").decode()
    js = asset("ui.js").decode().replace("</", "<\\/")
    html = html.replace('<link rel="stylesheet" href="ui.css">', f"<style>\n{css}</style>")
    return html.replace('<script src="ui.js"></script>', f"{before_script}<script>\n{js}</script>")


def offline_page(data: dict[str, Any]) -> str:
    """The page with its script, style and ``data`` inlined: one self-contained file."""
    return _inlined(f"<script>window.CG_DATA = {_script_json(data)};</script>\n")


@functools.cache
def served_page() -> bytes:
    """The page as the proxy serves it at /ui/: style and script inlined, so the one
    load that carries the token (``/ui/?token=``) brings all of it. A browser sends no
    token with a stylesheet's or a script's own load, so with ``--ui-token`` a page that
    linked them stayed at "loading…" for anyone not on loopback."""
    return _inlined().encode()


def offline_data(
    requests: list[tuple[Any, Any, Report]], api: str = "openai", name: str = "file"
) -> dict[str, Any]:
    """The page's data for governed requests read from a file: (client body, governed
    body, report) each, in order, as one conversation ``name``. No upstream answered,
    so the provider's columns are empty."""
    rows: list[dict[str, Any]] = []
    data: dict[str, Any] = {}
    client_total = forwarded_total = compactions = removed_total = rewritten_total = 0
    before = None
    for i, (client, governed, report) in enumerate(requests):
        found = figures(report)
        compacted = bool(found.compacting_stages) and (
            "compact" not in found.compacting_stages
            or before is None
            or found.compactions > before.compactions
        )
        before = found
        compactions += compacted
        client_total += report.tokens_before
        forwarded_total += report.tokens_after
        cost = report.compaction_cost
        removed_total += cost.removed if cost is not None else 0
        rewritten_total += cost.rewritten if cost is not None else 0
        rows.append({
            "seq": i + 1, "index": i, "status": 0, "outcome": "offline", "model": report.model,
            "tokens_before": report.tokens_before, "tokens_after": report.tokens_after,
            "budget": report.budget, "input": None, "output": None, "cache_read": None,
            "cache_write": None, "cost": None, "compacted": compacted,
            "compacting": list(found.compacting_stages), "bust_tokens": None,
            "governance_ms": None, "added_ms": None, "total_ms": None, "started": None,
            "removed": None if cost is None else cost.removed,
            "rewritten": None if cost is None else cost.rewritten,
        })  # fmt: skip
        data[f"requests/{i + 1}"] = {
            "seq": i + 1, "conversation": name, "index": i, "api": api, "model": report.model,
            "status": 0, "outcome": "offline", "report": report.to_dict(), "usage": None,
            "view": request_view(api, client, governed), "content_note": None,
        }  # fmt: skip
    summary = {
        "id": name, "api": api, "model": requests[0][2].model if requests else None,
        "requests": len(requests), "shown": len(requests),
        "client_tokens": client_total, "forwarded_tokens": forwarded_total,
        "input": 0, "cache_read": 0, "cache_write": 0, "output": 0, "cached_share": None,
        "cost": None, "uncached_cost": None, "compactions": compactions, "busts": 0,
        "bust_tokens": 0, "compaction_removed": removed_total,
        "compaction_rewritten": rewritten_total, "last": None,
    }  # fmt: skip
    data["conversations"] = [summary]
    data[f"conversations/{quote(name, safe='')}"] = {**summary, "rows": rows}
    return data
