"""CompactionPolicy(verbatim_floor=True), the default: where cached reads are dear, a
request whose newest ``keep_recent`` results' turns do not fit under the price-set
trigger gets a trigger raised to keep them (policies.py ``floor``, stages/_compact.py
``Replay.request``).

It must keep the cache policy's properties: a pure function of the request (a fresh
process gives the long-lived Governor's request), requests only append between
compactions, every request inside the budget and valid.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, ConfigError, Governor, govern
from context_governor.policies import FLOOR_RESULTS
from context_governor.providers import validate
from context_governor.providers.prices import ANTHROPIC, OPENAI_4O, OPENAI_5, OPENAI_41, CachePrice

Message = dict[str, Any]
WINDOW = 32_000
MAX_OUTPUT = 1_000
BUDGET = WINDOW - MAX_OUTPUT - 1024  # the safety buffer


def _agent(steps: int, seed: int = 11, low: int = 500, high: int = 3_000) -> list[list[Message]]:
    """A coding agent's growing history, one list per model call: one to three parallel
    calls a step with results of ``low``-``high`` characters, and a short report and
    follow-up every 20 calls."""
    rng = random.Random(seed)
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests."},
    ]
    out = []
    for step in range(steps):
        if step and step % 20 == 0:
            history.append({"role": "assistant", "content": f"Report {step}."})
            history.append({"role": "user", "content": f"Go on ({step})."})
        calls, results = [], []
        for k in range(rng.choice((1, 1, 2, 3))):
            call_id = f"call_{step}_{k}"
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"n": step})},
                }
            )
            body = " ".join(f"l{step}_{k}_{i}" for i in range(rng.randint(low, high) // 9))
            results.append(
                {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": body}
            )
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
        history.extend(results)
        out.append(list(history))
    return out


def _key(message: Message) -> str:
    return json.dumps(message, sort_keys=True)


def _newest_verbatim(history: list[Message], sent: list[Message]) -> int:
    """Newest tool results of ``history`` in ``sent`` unchanged, from the newest back up
    to the first that is not (bench/cache.py counts them the same way)."""
    kept = {_key(m) for m in sent}
    count = 0
    for message in reversed(history):
        if message["role"] != "tool":
            continue
        if _key(message) not in kept:
            break
        count += 1
    return count


def _is_prefix(short: list[Message], long: list[Message]) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


def test_the_floor_is_on_by_default_and_checked() -> None:
    assert CompactionPolicy().verbatim_floor is True
    off = CompactionPolicy(mask_first=False, cache_price=OPENAI_4O, verbatim_floor=False)
    assert off.floor(BUDGET, 15_000, 15_000) is None
    assert CompactionPolicy(mask_first=False, cache_price=OPENAI_4O).floor(BUDGET, 15_000, 15_000) is not None
    with pytest.raises(ConfigError, match="verbatim_floor"):
        CompactionPolicy(verbatim_floor="yes")  # type: ignore[arg-type]


@given(
    budget=st.integers(5_000, 300_000),
    span=st.integers(0, 300_000),
    share=st.floats(0, 1),
    price=st.sampled_from([OPENAI_4O, OPENAI_41]),
)
def test_the_floor_keeps_the_span_between_the_price_set_and_the_fixed_trigger(
    budget: int, span: int, share: float, price: CachePrice
) -> None:
    """Where it applies, the raised trigger lies above the price-set one and never above
    the fixed one, and the goal is the span, at least min_savings under it. It applies
    exactly where the span is over the target, fits under the fixed trigger less
    min_savings, is at least FLOOR_RESULTS results (not a chat's prose), and the
    raised trigger leaves that much room."""
    policy = CompactionPolicy(mask_first=False, cache_price=price)
    results = int(span * share)
    trigger, target = policy.thresholds(budget)
    fixed = policy.fixed_thresholds(budget)[0]
    raised = min(fixed, span + (trigger - target))
    applies = (
        target < span <= fixed - policy.min_savings
        and results >= span * FLOOR_RESULTS
        and raised > trigger
        and raised - span >= policy.min_savings
    )
    floor = policy.floor(budget, span, results)
    assert (floor is not None) == applies
    if floor is not None:
        assert floor == (raised, span)
        assert trigger < floor[0] <= fixed
        assert target < floor[1] <= floor[0] - policy.min_savings


@given(budget=st.integers(5_000, 300_000), span=st.integers(0, 300_000))
def test_the_floor_leaves_cheap_or_unknown_reads_and_explicit_triggers_alone(
    budget: int, span: int
) -> None:
    for policy in (
        CompactionPolicy(verbatim_floor=True),
        CompactionPolicy(mask_first=False, cache_price=OPENAI_5, verbatim_floor=True),
        CompactionPolicy(mask_first=False, cache_price=ANTHROPIC, verbatim_floor=True),
        CompactionPolicy(mask_first=False, cache_price=OPENAI_4O, trigger=90_000, verbatim_floor=True),
        CompactionPolicy(mask_first=False, cache_price=OPENAI_4O, adaptive_target=False, verbatim_floor=True),
    ):
        assert policy.floor(budget, span, span) is None


def test_dear_reads_keep_the_newest_results_the_price_set_trigger_cut() -> None:
    """The defect the floor is for: under gpt-4o's prices at 32k the trigger is 17,485
    tokens, the newest ten results' turns here take more, and every compaction cut
    into them; with the floor each request keeps them (as the seed policy does), and
    costs stay bounded: the request never passes the fixed trigger."""
    steps = _agent(160)
    plain = CompactionPolicy(mask_first=False, cache_price=OPENAI_4O, verbatim_floor=False)  # main's default
    floored = CompactionPolicy(mask_first=False, cache_price=OPENAI_4O)
    assert plain.thresholds(BUDGET) == (17_485, 11_990)

    def newest(policy: CompactionPolicy) -> tuple[list[int], int]:
        gov = Governor(context_window=WINDOW, max_output=MAX_OUTPUT, compaction=policy)
        counts, largest = [], 0
        for request in steps:
            result = gov.govern(request)
            assert result.report.within_budget
            counts.append(_newest_verbatim(request, result.messages))
            largest = max(largest, result.report.tokens_after)
        return counts, largest

    before, before_largest = newest(plain)
    after, after_largest = newest(floored)
    keep = floored.keep_recent
    late = slice(len(steps) // 2, None)
    assert min(before[late]) < keep  # the price-set trigger cuts into the newest ten
    assert min(after[late]) >= keep  # the floor keeps them at every step
    assert sum(after) > sum(before)
    # a request is sent as it is only under its trigger: the price-set one, or the
    # raised one, which never passes the fixed trigger (the one at 0.1x reads)
    assert before_largest <= 17_485 < after_largest <= floored.fixed_thresholds(BUDGET)[0]


@settings(max_examples=4, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    high=st.integers(2_500, 3_500),
    price=st.sampled_from([OPENAI_4O, OPENAI_41]),
)
def test_floored_requests_only_append_between_compactions_and_match_a_fresh_process(
    seed: int, high: int, price: CachePrice
) -> None:
    policy = CompactionPolicy(mask_first=False, cache_price=price)
    steps = _agent(90, seed=seed, high=high)
    gov = Governor(context_window=WINDOW, max_output=MAX_OUTPUT, compaction=policy)
    previous: list[Message] | None = None
    breaks = largest = 0
    for request in steps:
        result = gov.govern(request)
        assert result.report.within_budget, result.report.notes
        largest = max(largest, result.report.tokens_after)
        assert validate(result.messages, provider="openai") == []
        compacted = any(a.stage == "compact" for a in result.report.actions)
        if previous is not None and not _is_prefix(previous, result.messages):
            breaks += 1
            assert compacted, "the prefix changed without a compaction"
        previous = result.messages
    assert breaks >= 1  # the window is small: it does compact
    assert largest > policy.thresholds(BUDGET)[0]  # and the floor raised a trigger
    fresh = govern(steps[-1], context_window=WINDOW, max_output=MAX_OUTPUT, compaction=policy)
    assert fresh.messages == result.messages
    assert fresh.report.to_dict() == result.report.to_dict()
