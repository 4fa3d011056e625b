"""CompactionPolicy(adaptive_target=True): the target of each compaction derived from the
history (policies.py ``adaptive_goal``, stages/_compact.py ``_recent_span``/``_growth``).

It must keep the cache policy's properties: a pure function of the request (a fresh
process gives the same request as a long-lived Governor), requests only append between
compactions, every request inside the budget and valid.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, Governor, govern
from context_governor.policies import ADAPTIVE_BAND_CALLS, VERBATIM_ROOM
from context_governor.providers import validate
from context_governor.providers.prices import ANTHROPIC, OPENAI_4O, OPENAI_5, OPENAI_41, CachePrice

Message = dict[str, Any]
ADAPTIVE = CompactionPolicy(adaptive_target=True)
WINDOW = 32_000


def _research(steps: int, seed: int = 3, low: int = 300, high: int = 1500) -> list[list[Message]]:
    """A research agent's growing history: 1-6 parallel calls per step, small results."""
    rng = random.Random(seed)
    history: list[Message] = [
        {"role": "system", "content": "You are a research agent."},
        {"role": "user", "content": "Brief me on grid storage, with sources."},
    ]
    out = []
    for step in range(steps):
        if step and step % 25 == 0:
            history.append({"role": "assistant", "content": f"Briefing {step}: " + "x " * 400})
            history.append({"role": "user", "content": f"Now topic {step}."})
        calls, results = [], []
        for k in range(rng.randint(1, 6)):
            call_id = f"call_{step}_{k}"
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "web_search", "arguments": json.dumps({"q": step})},
                }
            )
            words = rng.randint(low, high) // 6
            body = " ".join(f"w{step}_{k}_{i}" for i in range(words))
            results.append(
                {"role": "tool", "tool_call_id": call_id, "name": "web_search", "content": body}
            )
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
        history.extend(results)
        out.append(list(history))
    return out


def _is_prefix(short: list[Message], long: list[Message]) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), high=st.integers(600, 6000))
def test_requests_only_append_between_compactions(seed: int, high: int) -> None:
    gov = Governor(context_window=WINDOW, max_output=1000, compaction=ADAPTIVE)
    previous: list[Message] | None = None
    breaks = 0
    for history in _research(90, seed=seed, high=high):
        result = gov.govern(history)
        assert result.report.within_budget, result.report.notes
        assert validate(result.messages, provider="openai") == []
        compacted = any(a.stage == "compact" for a in result.report.actions)
        if previous is not None and not _is_prefix(previous, result.messages):
            breaks += 1
            assert compacted, "the prefix changed without a compaction"
        previous = result.messages
    assert breaks >= 1  # the window is small: it does compact


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_fresh_process_gives_the_same_request(seed: int) -> None:
    steps = _research(70, seed=seed)
    gov = Governor(context_window=WINDOW, max_output=1000, compaction=ADAPTIVE)
    for history in steps:
        long_lived = gov.govern(history)
    fresh = govern(steps[-1], context_window=WINDOW, max_output=1000, compaction=ADAPTIVE)
    assert fresh.messages == long_lived.messages
    assert fresh.report.to_dict() == long_lived.report.to_dict()


@given(
    trigger=st.integers(1_000, 200_000),
    share=st.floats(0.01, 1.0),
    span=st.integers(0, 300_000),
    growth=st.floats(0, 20_000),
)
def test_adaptive_goal_stays_between_its_floor_and_the_trigger(
    trigger: int, share: float, span: int, growth: float
) -> None:
    target = max(1, int(trigger * share))
    goal = ADAPTIVE.adaptive_goal(trigger, target, span, growth)
    assert min(target // 2, trigger) <= goal <= trigger
    # never deeper than the fixed target when the recent results need more
    assert goal >= min(span, target)
    # it keeps the recent span when that is under the target or fits the room left
    room = trigger - ADAPTIVE_BAND_CALLS * growth
    if target // 2 <= span <= max(target, room):
        assert goal == span
    # more growth never raises the goal
    assert ADAPTIVE.adaptive_goal(trigger, target, span, growth * 2 + 1) <= goal


def test_small_results_compact_less_deep_and_keep_the_recent_ones() -> None:
    """On many small results the fixed target keeps far more than the newest results'
    turns and so compacts often; the adaptive goal keeps those turns and less besides,
    which leaves more room before the next compaction (fewer compactions, on main's
    fixed target this session compacts more often)."""

    def compactions(policy: CompactionPolicy) -> tuple[int, int]:
        """(compactions, steps at which one of the newest keep_recent results is gone)."""
        gov = Governor(context_window=WINDOW, max_output=1000, compaction=policy)
        count = short = 0
        previous: list[Message] = []
        for history in _research(150, high=900):
            result = gov.govern(history)
            count += not _is_prefix(previous, result.messages)  # a compaction
            previous = result.messages
            sent = {json.dumps(m, sort_keys=True) for m in result.messages}
            newest = [m for m in history if m["role"] == "tool"][-ADAPTIVE.keep_recent :]
            short += any(json.dumps(m, sort_keys=True) not in sent for m in newest)
        return count, short

    # the targets alone (masking first raises both goals to the masked trail)
    fixed, fixed_short = compactions(CompactionPolicy(adaptive_target=False, mask_first=False))
    adaptive, adaptive_short = compactions(replace(ADAPTIVE, mask_first=False))
    assert adaptive < fixed
    # a cut starts at a turn: right after a user message the previous turn's results go
    # (whatever the target, the fixed one too); otherwise the newest results stay
    assert adaptive_short <= fixed_short + 1 <= 3


@given(
    budget=st.integers(5_000, 300_000),
    span=st.integers(0, 300_000),
    growth=st.floats(0, 20_000),
    price=st.sampled_from([OPENAI_4O, OPENAI_41]),
)
def test_dear_reads_keep_the_newest_results_in_half_the_room(
    budget: int, span: int, growth: float, price: CachePrice
) -> None:
    """Where cached reads are dear the trigger is set for the cost, so the room above the
    target holds few calls of growth and the goal fell to the fixed target, cutting the
    newest results away (coding at 32k under gpt-4o's prices kept 11.5 of them, the seed
    policy 12.2). Now the goal keeps their span up to VERBATIM_ROOM of the room: never
    past it, never over the trigger, never deeper than before."""
    policy = CompactionPolicy(mask_first=False, cache_price=price)
    assert policy.dear_reads()
    trigger, target = policy.thresholds(budget)
    goal = policy.adaptive_goal(trigger, target, span, growth)
    before = ADAPTIVE.adaptive_goal(trigger, target, span, growth)  # the rule without prices
    half = min(target + int((trigger - target) * VERBATIM_ROOM), trigger - policy.min_savings)
    assert before <= goal <= max(before, min(span, half)) <= trigger
    if target < span and growth * ADAPTIVE_BAND_CALLS >= trigger:
        # no room by growth: the span, up to half the room (and min_savings under the
        # trigger, so that the compaction is not skipped as not worth it)
        assert goal == max(before, min(span, half))


@given(
    budget=st.integers(5_000, 300_000),
    span=st.integers(0, 300_000),
    growth=st.floats(0, 20_000),
    price=st.sampled_from([None, OPENAI_5, ANTHROPIC]),
)
def test_cheap_or_unknown_reads_keep_the_goal_as_it_was(
    budget: int, span: int, growth: float, price: CachePrice | None
) -> None:
    """At reads of 0.1x (or an unknown model) the trigger is not moved and the share is
    judged: the verbatim room does not apply there, nor with an explicit trigger."""
    for policy in (
        CompactionPolicy(mask_first=False, cache_price=price),
        CompactionPolicy(mask_first=False, cache_price=OPENAI_4O, trigger=90_000),
    ):
        assert not policy.dear_reads()
        trigger, target = policy.thresholds(budget)
        assert policy.adaptive_goal(trigger, target, span, growth) == ADAPTIVE.adaptive_goal(
            trigger, target, span, growth
        )


def test_gpt4o_at_32k_keeps_the_newest_results_the_fixed_target_cut() -> None:
    """The example behind the rule: at a 32k window under gpt-4o's prices the trigger is
    15,680 and the target 10,752; with 12,000 tokens of recent span and 1,200 tokens of
    growth per call the goal was the target (cutting into the newest results) and is now
    the span."""
    policy = CompactionPolicy(mask_first=False, cache_price=OPENAI_4O)
    trigger, target = policy.thresholds(26_880)
    assert (trigger, target) == (15_680, 10_752)
    assert policy.adaptive_goal(trigger, target, 12_000, 1_200.0) == 12_000
    assert policy.adaptive_goal(trigger, target, 20_000, 1_200.0) == 13_216
