"""Turns are cut at the budget, not at the cost-set trigger (CompactionPolicy.cut_ceiling).

The default trigger is set for the cost (at most 100k tokens, lower where cached reads
are dear). When clearing old results cannot bring a request under it, the seed policy
still keeps the agent's trail up to the budget (a sliding window); ours used to cut it
ten calls below the trigger. These tests pin the new rule on the two kinds of history it
was made for: a chat (prose turns, nothing to clear) keeps about what a sliding window
at the budget less the room a cut leaves for the cache keeps, and a coding history clears its results before any turn goes. An
explicit trigger is a size the user chose: turns are cut there, as before.
"""

from __future__ import annotations

import random
from typing import Any

from context_governor import CompactionPolicy, Governor, govern
from context_governor.policies import (
    CEILING_ROOM_CALLS,
    CUT_ROOM_PROSE_SHARE,
    DEFAULT_TRIGGER,
    DEFAULT_TRIGGER_TOKENS,
)

Message = dict[str, Any]
WINDOW = 32_000
MAX_OUTPUT = 4096


def _prose(rng: random.Random, words: int) -> str:
    vocab = ["parser", "token", "budget", "window", "cache", "turn", "agent", "model"]
    return " ".join(rng.choice(vocab) for _ in range(words)) + "."


def _chat(steps: int, seed: int = 3) -> list[list[Message]]:
    """A growing chat: long prose turns, no tools (what each model call is made with)."""
    rng = random.Random(seed)
    history: list[Message] = [{"role": "system", "content": "You are a helpful writer."}]
    out = []
    for _ in range(steps):
        history.append({"role": "user", "content": _prose(rng, rng.randint(40, 160))})
        out.append(list(history))
        history.append({"role": "assistant", "content": _prose(rng, rng.randint(150, 450))})
    return out


def _turns_a_window_keeps(history: list[Message], budget: int, count: Any) -> int:
    """How many of the newest whole turns (user + answer) fit in ``budget`` with the
    system message and the newest user message: what a sliding window keeps."""
    fixed = count(history[:1]) + count(history[-1:])
    kept, total = 0, fixed
    i = len(history) - 2
    while i >= 2:
        turn = count(history[i - 1 : i + 1])
        if total + turn > budget:
            break
        total, kept, i = total + turn, kept + 1, i - 2
    return kept


def test_a_chat_keeps_about_what_a_sliding_window_at_the_budget_keeps() -> None:
    governor = Governor(context_window=WINDOW, max_output=MAX_OUTPUT)
    steps = _chat(260)
    budget = governor.govern(steps[0]).report.budget
    trigger = int(DEFAULT_TRIGGER * budget)
    over_trigger = 0
    for history in steps:
        result = governor.govern(history)
        sent = result.report.tokens_after
        assert sent <= budget
        over_trigger += sent > trigger
        counter = result.report.counter
        assert counter == "cl100k_base"

        def count(messages: list[Message]) -> int:
            return govern(messages, context_window=10**7).report.tokens_before

        # a cut at the budget leaves the cache's room (CompactionPolicy.cut_room: at
        # most CUT_ROOM_PROSE_SHARE of the budget for a chat) or a few calls, whichever is more
        window_keeps = _turns_a_window_keeps(
            history, int((1 - CUT_ROOM_PROSE_SHARE) * budget), count
        )
        answers = [m for m in history[1:] if m["role"] == "assistant"]
        kept = sum(1 for m in answers if m in result.messages)
        # that room, plus the turn a window cuts whole
        assert kept >= window_keeps - (CEILING_ROOM_CALLS + 2)
    # the request grows past the cost-set trigger: turns are cut at the budget only
    assert over_trigger > 20


def test_an_explicit_trigger_is_where_turns_are_cut() -> None:
    policy = CompactionPolicy(trigger=0.6)
    budget = govern(_chat(1)[0], context_window=WINDOW, max_output=MAX_OUTPUT).report.budget
    assert policy.cut_ceiling(budget) == policy.thresholds(budget)[0] == int(0.6 * budget)
    governor = Governor(context_window=WINDOW, max_output=MAX_OUTPUT, compaction=policy)
    for history in _chat(200):
        assert governor.govern(history).report.tokens_after <= int(0.6 * budget)


def test_the_ceiling_is_the_budget_only_under_mask_first_at_the_default_trigger() -> None:
    budget = 122_880
    assert CompactionPolicy().cut_ceiling(budget) == budget
    assert CompactionPolicy().thresholds(budget)[0] == DEFAULT_TRIGGER_TOKENS
    assert CompactionPolicy(mask_first=False).cut_ceiling(budget) == DEFAULT_TRIGGER_TOKENS
    assert CompactionPolicy(trigger=50_000).cut_ceiling(budget) == 50_000


def _coding(steps: int, seed: int = 5) -> list[list[Message]]:
    rng = random.Random(seed)
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests."},
    ]
    out = []
    for k in range(steps):
        call = f"call_{k}"
        history.append(
            {
                "role": "assistant",
                "content": _prose(rng, 30),
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"path": "f{k}.py"}}'},
                    }
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": call, "content": _prose(rng, 600)})
        out.append(list(history))
    return out


def test_a_coding_history_clears_results_and_keeps_every_turn() -> None:
    """120 reads of ~600 words: the raw history is far over the budget, its masked form
    (the agent's calls and notes, placeholders for old results) far under it."""
    governor = Governor(context_window=WINDOW, max_output=MAX_OUTPUT)
    steps = _coding(120)
    for history in steps:
        result = governor.govern(history)
        answers = [m for m in history if m["role"] == "assistant"]
        assert all(m in result.messages for m in answers)
    assert result.report.tokens_before > 2 * result.report.budget
    cleared = [m for m in result.messages if m["role"] == "tool" and m not in history]
    assert len(cleared) > 100
