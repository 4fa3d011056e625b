"""Opt-in (``--count-tokens-upstream``): the upstream's count_tokens near the budget.

The ``/v1/messages`` route governs a body as usual (in a thread or a worker
process), then, when the config asks for it, :func:`calibrated` asks the
upstream's ``POST messages/count_tokens`` about the governed body and has it
governed again with the scaled estimate when the two differ
(formats/_anthropic_count.py decides when and how). Only a float crosses to the
worker, so this works with ``--govern-in process`` too.
The count request carries the client's own headers (its ``x-api-key``,
``anthropic-version`` and ``anthropic-beta``), as prepared by
``Upstream.headers``; nothing of it is logged. A count that fails leaves the
estimate in place and a note in the report, never a failed request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ContextGovernorError
from ..formats import CountFn, calibrate
from ._config import ProxyConfig
from ._governing import Governed
from ._summaries import compaction_for
from ._upstream import Upstream

__all__ = ["COUNT_PATH", "CountError", "calibrated", "upstream_counter"]

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


async def calibrated(
    governed: Governed,
    config: ProxyConfig,
    count: CountFn,
    regovern: Callable[[float], Awaitable[Governed]],
) -> Governed:
    """``governed`` (a Messages body), or the same request governed again with the
    estimate scaled as the upstream's count says; the note on what was asked goes
    into the report of the body that is sent."""
    if not config.counting.calibrate_upstream:
        return governed
    found = await calibrate(
        governed.report, json.loads(governed.body), count, compaction=compaction_for(config)
    )
    result = governed if found.ratio is None else await regovern(found.ratio)
    if found.note:
        result.report.notes.append(found.note)
    return result
