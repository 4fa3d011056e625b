"""Calibrating the offline Claude estimate with the upstream's own count, when it matters.

The estimate (tokens.claude_estimate) errs high on purpose, so a request it puts
well under the point where governance cuts (the compaction trigger) fits; only
near that point can the error decide whether something is cut. There, and only
there, ``govern_with_upstream_count`` asks the
upstream's ``POST /v1/messages/count_tokens`` (given as an async callable: the
proxy's, or a test's) for the exact figure of the governed body and, when the
two differ, governs again with the estimate scaled by exact / estimate:

* the ratio is rounded *up* to a multiple of ``RATIO_STEP`` (0.05), and never
  taken below ``MIN_RATIO`` (0.5), so the scaled count still errs high, and so
  that requests of one session mostly get the same ratio (a ratio that moved on
  every request would move the compaction decisions with it and cost cache reads);
* a failed or unreadable count keeps the first result, with a note: counting is
  advice, never a reason to fail the request;
* the report of the result says what was asked and what it changed.

Costs one count request per governed request near the budget (none elsewhere),
and a second governance pass when the ratio is not 1.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..counting import claude_estimate
from ..policies import CompactionPolicy, get_policy
from ..report import Report
from ._request import RequestResult, govern_request

#: Asked when the estimate is at least (1 - margin) x the budget.
DEFAULT_MARGIN = 0.15
RATIO_STEP = 0.05
#: A count under half the estimate is not believed beyond that (the estimate is at
#: most ~1.4x cl100k; a tokenizer that needs under 0.7x cl100k's tokens is unheard of):
#: one wrong answer from upstream must not let a request grow past the window.
MIN_RATIO = 0.5
#: The fields /v1/messages/count_tokens accepts (a Messages body's others are refused).
COUNT_FIELDS = ("model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers")

CountFn = Callable[[dict[str, Any]], Awaitable[int]]
Runner = Callable[[Callable[[], RequestResult]], Awaitable[RequestResult]]


@dataclass(frozen=True, slots=True)
class Counted:
    """The request to send and how the count went: ``exact`` is the upstream's figure
    (None: not asked, or it failed), ``ratio`` the scale applied (None: none)."""

    result: RequestResult
    estimate: int
    exact: int | None = None
    ratio: float | None = None


def count_body(body: dict[str, Any]) -> dict[str, Any]:
    """The part of a Messages body that count_tokens takes."""
    return {k: body[k] for k in COUNT_FIELDS if k in body}


def near_budget(report: Report, margin: float, compaction: Any = None) -> bool:
    """Could the estimate's error have changed what governance did? Yes when the body as
    it came is within ``margin`` of the point where governance starts cutting: the
    compaction policy's trigger (the budget itself for the seed policy)."""
    budget = report.budget
    if budget is None or budget <= 0:
        return False
    policy = get_policy(compaction)
    limit = policy.thresholds(budget)[0] if isinstance(policy, CompactionPolicy) else budget
    return report.tokens_before >= (1 - margin) * limit


def quantized(exact: int, estimate: int) -> float:
    """exact / estimate, rounded up to a multiple of RATIO_STEP, at least MIN_RATIO."""
    steps = math.ceil(exact / estimate / RATIO_STEP - 1e-9)
    return max(MIN_RATIO, round(steps * RATIO_STEP, 2))


def scaled_estimate(ratio: float) -> Callable[[str], int]:
    """The Claude estimate times ``ratio`` (rounded up), as a count_tokens hook."""

    def count(text: str) -> int:
        return math.ceil(claude_estimate(text) * ratio)

    count.__name__ = f"claude_estimate_x{ratio:g}"
    return count


async def _in_thread(call: Callable[[], RequestResult]) -> RequestResult:
    return await asyncio.to_thread(call)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the upstream's count says about one governed request: ``ratio`` is the scale
    to govern again with (None: keep the first result), ``note`` goes into the report
    of the request that is sent (empty: nothing was asked)."""

    exact: int | None = None
    ratio: float | None = None
    note: str = ""


async def calibrate(
    report: Report,
    body: dict[str, Any],
    count: CountFn,
    *,
    margin: float = DEFAULT_MARGIN,
    compaction: Any = None,
) -> Calibration:
    """Ask ``count`` for the governed ``body`` (whose governing gave ``report``) when the
    estimate was near the budget, and say whether to govern again and with what ratio.
    Shared by :func:`govern_with_upstream_count` and the proxy's Messages route, which
    governs in a worker (thread or process) and so cannot hand over a closure."""
    estimate = report.tokens_after
    if estimate <= 0 or not near_budget(report, margin, compaction):
        return Calibration()
    try:
        exact = await count(count_body(body))
    except Exception as exc:  # advice only: any failure keeps the estimate
        return Calibration(
            note=f"upstream count_tokens failed ({type(exc).__name__}: {exc}); "
            "the estimate was kept"
        )
    if isinstance(exact, bool) or not isinstance(exact, int) or exact < 0:
        return Calibration(
            note=f"upstream count_tokens gave {exact!r}, not a token count; the estimate was kept"
        )
    ratio = quantized(exact, estimate)
    note = f"upstream count_tokens: {exact:,} tokens where the estimate said {estimate:,}"
    if ratio == 1.0:
        return Calibration(exact, None, note + "; the estimate stands")
    return Calibration(exact, ratio, f"{note}; governed again with the estimate × {ratio:g}")


async def govern_with_upstream_count(
    body: dict[str, Any],
    count: CountFn,
    *,
    margin: float = DEFAULT_MARGIN,
    run: Runner = _in_thread,
    **settings: Any,
) -> Counted:
    """govern_request(body, api="anthropic", **settings), calibrated by ``count`` near
    the budget (see the module docstring). ``run`` runs a governance pass (default:
    in a thread, off the event loop). A ``count_tokens`` hook in ``settings`` is the
    user's exact counter: then nothing is asked."""
    first = await run(lambda: govern_request(body, api="anthropic", **settings))
    estimate = first.report.tokens_after
    if settings.get("count_tokens") is not None:
        return Counted(first, estimate)
    found = await calibrate(
        first.report, first.body, count, margin=margin, compaction=settings.get("compaction")
    )
    result = first
    if found.ratio is not None:
        hook = scaled_estimate(found.ratio)
        result = await run(
            lambda: govern_request(body, api="anthropic", **{**settings, "count_tokens": hook})
        )
    if found.note:
        result.report.notes.append(found.note)
    return Counted(result, estimate, found.exact, found.ratio)
