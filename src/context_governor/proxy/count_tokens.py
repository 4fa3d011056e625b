"""Opt-in (``--count-tokens-upstream``): the upstream's count_tokens near the budget.

The hook for the proxy's ``/v1/messages`` route is :func:`govern_messages`: it
governs a Messages body as ``govern_request(api="anthropic")`` does, and, when the
config asks for it, calibrates the offline estimate with the upstream's
``POST messages/count_tokens`` (formats/anthropic_count.py decides when and how).
The count request carries the client's own headers (its ``x-api-key``,
``anthropic-version`` and ``anthropic-beta``), as prepared by
``Upstream.headers``; nothing of it is logged. A count that fails leaves the
estimate in place and a note in the report, never a failed request.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import ContextGovernorError
from ..formats.anthropic_count import Counted, CountFn, Runner, govern_with_upstream_count
from ..formats.request import govern_request
from .config import ProxyConfig
from .upstream import Upstream

#: Below the upstream's base URL, as the proxy's /v1/X goes to upstream/X.
COUNT_PATH = "messages/count_tokens"


class CountError(ContextGovernorError):
    """The upstream did not give a token count (status and a short reason)."""


def upstream_counter(upstream: Upstream, headers: list[tuple[str, str]]) -> CountFn:
    """An async ``count(body) -> input_tokens`` posting to the upstream's count_tokens."""

    async def count(body: dict[str, Any]) -> int:
        content = json.dumps(body, ensure_ascii=False).encode()
        response = await upstream.send("POST", COUNT_PATH, "", headers, content)
        try:
            raw = await response.aread()
        finally:
            await response.aclose()
        if response.status_code != 200:
            raise CountError(f"count_tokens answered {response.status_code}")
        try:
            tokens = json.loads(raw).get("input_tokens")
        except (ValueError, AttributeError) as exc:
            raise CountError("count_tokens answered something other than a JSON object") from exc
        if isinstance(tokens, bool) or not isinstance(tokens, int):
            raise CountError(f"count_tokens gave input_tokens={tokens!r}")
        return tokens

    return count


async def govern_messages(
    body: dict[str, Any],
    config: ProxyConfig,
    count: CountFn | None,
    *,
    run: Runner | None = None,
    **settings: Any,
) -> Counted:
    """Govern a Messages body for the proxy; with ``config.count_tokens_upstream`` and a
    ``count`` (``upstream_counter(...)``), calibrated near the budget. ``settings`` are
    govern_request's (profile, context_window, compaction...)."""
    if config.count_tokens_upstream and count is not None:
        if run is None:
            return await govern_with_upstream_count(body, count, **settings)
        return await govern_with_upstream_count(body, count, run=run, **settings)
    if run is None:
        result = govern_request(body, api="anthropic", **settings)
    else:
        result = await run(lambda: govern_request(body, api="anthropic", **settings))
    return Counted(result, result.report.tokens_after)
