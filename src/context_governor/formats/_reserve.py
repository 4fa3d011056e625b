"""The output reserve of a request body: a floor for the prompt's budget, then what the
window leaves after the governed prompt.

Clients ask for more output than a smaller target has room for (Claude Code sends
``max_tokens: 128000``, opencode 32,000, on every request). The target refuses a
request whose prompt plus ``max_tokens`` exceeds its window, and a reserve as large
as the window leaves governance no budget. Halving the window for the answer (what
this module did before) starved the prompt: at 40k a Claude Code session got 19,488
tokens of prompt for answers that rarely pass a few thousand. So, when the window is
known and the body asks for more than the floor:

* the prompt's budget keeps a **floor** for the answer: the smaller of what the client
  asked and an eighth of the window (at least 1,024 tokens, or 1,025 with thinking on
  so that the smallest thinking budget fits; at most half the window after the safety
  buffer); the budget is ``window - SAFETY_BUFFER - floor``. It
  depends on the window and the request's own reserve alone, so it is the same on
  every request of a session (cache-stable);
* the body sent asks for what the window leaves after the **governed** prompt and the
  safety buffer, up to what the client asked (never below the floor): a short prompt
  keeps the client's full reserve, a long one gets what is left, and
  prompt + reserve stays inside the window whenever the prompt met its budget;
* Anthropic's ``thinking.budget_tokens`` must stay below ``max_tokens`` (and at
  least 1,024), and a changed thinking budget invalidates the provider's cached
  messages, so it must not move between requests. With thinking on, the floor makes
  room for the client's budget up to a quarter of the window: Claude Code's 31,999
  (with ``max_tokens`` 32,000) goes out as asked on every request at 200k, whatever the
  prompt. Only a budget above that is lowered, to ``floor - 1``, the same figure on
  every request of the session (at 64k: 15,999). If the floor leaves no room for 1,024,
  thinking is turned off for the request. Each change is reported.
* The request's ``thinking`` has one owner at a time: the pipeline may turn thinking
  off to make the history legal (AN-9a); its decision stands, and the reserve then
  leaves the field alone (it never writes back a setting the pipeline replaced).

A request that asks for no more than the floor is left as it is (its reserve is the
budget's, as before).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..report import Action, Report
from ..stages import SAFETY_BUFFER

#: Anthropic's smallest thinking budget.
MIN_THINKING_BUDGET = 1024


#: The answer's floor is at most this fraction of the window (one eighth): answers
#: of agents are short next to their prompts; the client's own reserve is used above
#: it whenever the prompt leaves room.
FLOOR_DIVISOR = 8
#: ... and at least this many tokens (or what the client asked, if less).
MIN_FLOOR = 1024
#: With thinking on, the floor makes room for the client's thinking budget up to this
#: fraction of the window (a quarter): the budget then never has to move with the prompt.
THINKING_DIVISOR = 4


@dataclass(frozen=True, slots=True)
class Reserve:
    """The output reserve of one request body, as planned before governance."""

    #: the reserve fields present in the body (a Chat Completions client may send both)
    names: tuple[str, ...]
    #: what the client asked for (the first field's value)
    asked: int
    #: the reserve the prompt's budget keeps (see floor())
    floor: int
    window: int
    #: the thinking setting to send (None: unchanged), and what to report of it
    thinking: dict[str, Any] | None = None
    thinking_detail: str = ""

    def before(self) -> dict[str, Any]:
        """What to change in the body before governance: the floor as its reserve (the
        pipeline's budget is the window less it), and the thinking setting."""
        updates: dict[str, Any] = {name: self.floor for name in self.names}
        if self.thinking is not None:
            updates["thinking"] = self.thinking
        return updates

    def given(self, prompt_tokens: int) -> int:
        """The reserve to send after a governed prompt of ``prompt_tokens``: what the
        window leaves after it and the safety buffer, up to what was asked, never below
        the floor (a prompt over its budget is reported as such; the floor is what its
        budget promised)."""
        room = self.window - SAFETY_BUFFER - prompt_tokens
        return min(self.asked, max(room, self.floor))

    def after(self, prompt_tokens: int, governed: Any = None) -> Clamp:
        """The fields to send and the report's words, for a governed prompt of
        ``prompt_tokens``; ``governed`` is the ``thinking`` of the governed body.

        The thinking setting planned for the run (``before``) went out with the governed
        body; it is reported here unless the pipeline replaced it (thinking turned off
        for a legal history: the pipeline's decision stands, and it reports it)."""
        given = self.given(prompt_tokens)
        updates: dict[str, Any] = {name: given for name in self.names}
        details: list[str] = []
        if given != self.asked:
            details.extend(
                f"{name} {self.asked:,} -> {given:,}: what the {self.window:,}-token window "
                f"leaves after the governed prompt ({prompt_tokens:,} tokens) and the "
                f"{SAFETY_BUFFER:,}-token safety buffer (the prompt's budget kept "
                f"{self.floor:,} for the answer: the smaller of what was asked and an "
                f"eighth of the window)"
                for name in self.names
            )
        if self.thinking is not None and governed == self.thinking:
            details.append(self.thinking_detail)
        return Clamp(updates, tuple(details))


def floor(window: int, asked: int, thinking: bool = False, budget: int | None = None) -> int:
    """The answer's floor for a ``window`` when the client asks for ``asked``: the
    smaller of ``asked`` and an eighth of the window (at least ``MIN_FLOOR``, and room
    for the smallest thinking budget when ``thinking`` is on, and for the client's
    thinking ``budget`` up to a quarter of the window; at most half the window after the
    safety buffer)."""
    share = max(MIN_FLOOR, window // FLOOR_DIVISOR)
    if thinking:
        share = max(share, MIN_THINKING_BUDGET + 1)
        if budget is not None:
            share = max(share, min(budget + 1, window // THINKING_DIVISOR))
    return max(1, min(asked, share, max_reserve(window)))


def _thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") == "enabled"


def plan(body: Any, fields: tuple[str, ...], thinking: bool, window: int | None) -> Reserve | None:
    """The reserve of ``body`` for ``window``; None if governance leaves it alone: no
    window, no readable reserve field, or one within the floor. ``fields`` are the body's
    reserve fields (its wire format's ``reserve_fields``: the first one set is the
    reserve); ``thinking``: the body's ``thinking`` budget must stay below the reserve
    (Messages, the format's ``reserve_thinking``)."""
    if window is None or not isinstance(body, dict) or max_reserve(window) < 1:
        return None
    names = tuple(f for f in fields if body.get(f) is not None)
    values = [body[f] for f in names]
    if not names or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        return None  # unreadable values are the edge's to report
    asked = values[0]
    thinking_on = thinking and _thinking_on(body)
    kept = floor(window, asked, thinking_on, _budget(body) if thinking_on else None)
    if asked <= kept:
        return None
    setting, detail = _thinking(body, kept) if thinking else (None, "")
    return Reserve(names, asked, kept, window, setting, detail)


def _budget(body: dict[str, Any]) -> int | None:
    """The client's thinking budget, when it is a readable number."""
    thinking = body.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    return budget if isinstance(budget, int) and not isinstance(budget, bool) else None


@dataclass(frozen=True, slots=True)
class Clamp:
    """The fields to change in the body, and what to tell the report."""

    updates: dict[str, Any]
    details: tuple[str, ...]


def max_reserve(window: int) -> int:
    """The largest output reserve a ``window`` gives: half of it after the safety buffer."""
    return (window - SAFETY_BUFFER) // 2


def _thinking(body: dict[str, Any], floor_: int) -> tuple[dict[str, Any] | None, str]:
    """The thinking setting to send when ``max_tokens`` is at least ``floor_`` (None:
    unchanged): a budget at or above the floor lowered to ``floor_ - 1``, or thinking off
    where that is under Anthropic's smallest budget."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None, ""
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < floor_:
        return None, ""
    if floor_ - 1 < MIN_THINKING_BUDGET:
        return {"type": "disabled"}, (
            f"thinking disabled: the answer's floor ({floor_:,} tokens) leaves no room for "
            f"the smallest thinking budget ({MIN_THINKING_BUDGET:,})"
        )
    lowered = floor_ - 1
    return {**thinking, "budget_tokens": lowered}, (
        f"thinking.budget_tokens {budget:,} -> {lowered:,} (it must stay below max_tokens, "
        f"which is at least the answer's floor of {floor_:,}; the same on every request)"
    )


def record(report: Report, found: Clamp) -> None:
    """Say in ``report`` what the reserve changed (request-level actions, first)."""
    if not found.details:
        return
    report.actions[0:0] = [Action("reserve", "repair", -1, d) for d in found.details]
    report.notes.append("output reserve: " + "; ".join(found.details))
