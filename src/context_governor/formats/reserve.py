"""The output reserve of a request body, clamped to what the target's window can give.

Clients ask for more output than a smaller target has room for (one coding agent
sends ``max_tokens: 128000`` on every request). The target rejects a request whose
prompt plus ``max_tokens`` exceeds its window, and a reserve at least as large as
the window leaves governance a negative budget. So, when the window is known:

* the reserve may take at most half of what the window leaves after the safety
  buffer, ``(window - SAFETY_BUFFER) // 2``; the prompt keeps the other half. A
  request that asks for more gets exactly that, in the body it sends, and the
  report says so. The figure depends on the window alone, so it is the same on
  every request of a session (cache-stable: nothing else in the body moves);
* Anthropic's ``thinking.budget_tokens`` must stay below ``max_tokens`` (and at
  least 1,024): a budget the clamp would pass is scaled by the same ratio as
  ``max_tokens``, and raised to 1,024 if that falls below; if not even that fits,
  thinking is disabled for the request (reported).

A request within the limit is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..report import Action, Report
from ..stages.snip import SAFETY_BUFFER

#: Anthropic's smallest thinking budget.
MIN_THINKING_BUDGET = 1024
#: The body field holding the output reserve, by API (Chat Completions: the first present).
RESERVE_FIELDS: dict[str, tuple[str, ...]] = {
    "anthropic": ("max_tokens",),
    "openai": ("max_completion_tokens", "max_tokens"),
    "responses": ("max_output_tokens",),
}


@dataclass(frozen=True, slots=True)
class Clamp:
    """The fields to change in the body, and what to tell the report."""

    updates: dict[str, Any]
    details: tuple[str, ...]


def max_reserve(window: int) -> int:
    """The largest output reserve a ``window`` gives: half of it after the safety buffer."""
    return (window - SAFETY_BUFFER) // 2


def _field(body: dict[str, Any], api: str) -> str | None:
    return next((f for f in RESERVE_FIELDS.get(api, ()) if body.get(f) is not None), None)


def _thinking(body: dict[str, Any], asked: int, given: int) -> tuple[dict[str, Any] | None, str]:
    """The thinking setting to send with ``max_tokens=given`` (None: unchanged)."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None, ""
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < given:
        return None, ""
    if given <= MIN_THINKING_BUDGET:
        return {"type": "disabled"}, (
            f"thinking disabled: max_tokens {given:,} leaves no room for the smallest "
            f"thinking budget ({MIN_THINKING_BUDGET:,})"
        )
    scaled = max(MIN_THINKING_BUDGET, min(given - 1, budget * given // asked))
    return {**thinking, "budget_tokens": scaled}, (
        f"thinking.budget_tokens {budget:,} -> {scaled:,} (it must stay below max_tokens)"
    )


def clamp(body: Any, api: str, window: int | None) -> Clamp | None:
    """What to change in ``body`` so that its output reserve fits ``window``; None if
    nothing (no window, no reserve in the body, or a reserve that fits)."""
    if window is None or not isinstance(body, dict):
        return None
    names = [f for f in RESERVE_FIELDS.get(api, ()) if body.get(f) is not None]
    if not names:
        return None
    limit = max_reserve(window)
    updates: dict[str, Any] = {}
    details: list[str] = []
    for name in names:  # every reserve field present: a client may send both spellings
        asked = body[name]
        if isinstance(asked, bool) or not isinstance(asked, int) or asked <= limit or limit < 1:
            continue  # unreadable values are the edge's to report
        updates[name] = limit
        details.append(
            f"{name} {asked:,} -> {limit:,}: the target's window ({window:,}) cannot give "
            f"more than half of itself after the {SAFETY_BUFFER:,}-token safety buffer and "
            "keep room for the prompt"
        )
        if api == "anthropic":
            thinking, detail = _thinking(body, asked, limit)
            if thinking is not None:
                updates["thinking"] = thinking
                details.append(detail)
    return Clamp(updates, tuple(details)) if updates else None


def record(report: Report, found: Clamp) -> None:
    """Say in ``report`` what the clamp changed (request-level actions, first)."""
    report.actions[0:0] = [Action("reserve", "repair", -1, d) for d in found.details]
    report.notes.append("output reserve clamped: " + "; ".join(found.details))
