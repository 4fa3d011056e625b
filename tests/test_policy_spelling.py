"""One way to say each thing about compaction (issue: fewer knobs, same power).

The seed policy is its own type, asked for by name or as SEED; each threshold is one
field (a share of the budget or tokens); the older spellings (``trigger_tokens``,
``target_tokens``, ``kind=``) keep working for one release, each with a
DeprecationWarning, and mean exactly what they meant.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_governor import CompactionPolicy, govern
from context_governor.errors import ConfigError
from context_governor.pipeline import resolve_settings
from context_governor.policies import (
    CACHE,
    DEFAULT_TARGET,
    DEFAULT_TARGET_TOKENS,
    DEFAULT_TRIGGER,
    DEFAULT_TRIGGER_TOKENS,
    SEED,
    SeedPolicy,
    get_policy,
)

budgets = st.integers(min_value=1, max_value=2_000_000)
tokens = st.integers(min_value=2, max_value=1_000_000)
shares = st.floats(min_value=0.01, max_value=1.0)


def _old_thresholds(
    budget: int, trigger: float, trigger_tokens: int | None, target: float, target_tokens: int | None
) -> tuple[int, int]:
    """The two-field rule the one-field thresholds replace (min of share and cap)."""
    hi, lo = int(trigger * budget), int(target * budget)
    if trigger_tokens is not None:
        hi = min(hi, trigger_tokens)
    if target_tokens is not None:
        lo = min(lo, target_tokens)
    return hi, min(lo, hi)


@given(budgets)
def test_the_default_is_the_old_default(budget: int) -> None:
    assert CACHE.fixed_thresholds(budget) == _old_thresholds(
        budget, DEFAULT_TRIGGER, DEFAULT_TRIGGER_TOKENS, DEFAULT_TARGET, DEFAULT_TARGET_TOKENS
    )
    assert CACHE.default_trigger()


@given(budgets, tokens, tokens)
def test_tokens_mean_what_the_tokens_fields_meant(budget: int, hi: int, lo: int) -> None:
    new = CompactionPolicy(trigger=hi, target=lo)
    assert new.fixed_thresholds(budget) == _old_thresholds(
        budget, DEFAULT_TRIGGER, hi, DEFAULT_TARGET, lo
    )
    with pytest.warns(DeprecationWarning, match="trigger_tokens"):
        old = CompactionPolicy(trigger_tokens=hi, target_tokens=lo)
    assert old == new
    assert not new.default_trigger()


@given(budgets, shares, shares)
def test_a_share_is_a_share(budget: int, a: float, b: float) -> None:
    hi, lo = max(a, b), min(a, b)
    new = CompactionPolicy(trigger=hi, target=lo)
    assert new.fixed_thresholds(budget) == _old_thresholds(budget, hi, None, lo, None)
    with pytest.warns(DeprecationWarning):
        old = CompactionPolicy(trigger_tokens=None, target_tokens=None)
    assert old == CompactionPolicy(trigger=DEFAULT_TRIGGER, target=DEFAULT_TARGET)


def test_deprecated_tokens_work_through_replace() -> None:
    with pytest.warns(DeprecationWarning):
        policy = replace(CACHE, trigger_tokens=50_000, target_tokens=10_000)
    assert (policy.trigger, policy.target) == (50_000, 10_000)
    # a replace that does not name them keeps what the policy has
    assert replace(policy, min_savings=1).trigger == 50_000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"trigger": 0.8, "trigger_tokens": 50_000}, "not both"),
        ({"target": 0.2, "target_tokens": 5_000}, "not both"),
        ({"trigger": 1}, "one token"),
        ({"trigger": 1.5}, r"\(0, 1\]"),
        ({"trigger": True}, "share of the budget"),
        ({"target": "16k"}, "share of the budget"),
        ({"trigger": 0.3, "target": 0.5}, "target <= trigger"),
        ({"kind": "lru"}, "'seed' or 'cache'"),
        ({"kind": "seed", "keep_recent": 3}, "no settings"),
    ],
)
def test_bad_spellings_are_clear_errors(kwargs: dict[str, object], message: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ConfigError, match=message):
            CompactionPolicy(**kwargs)  # type: ignore[arg-type]


def test_the_seed_policy_is_its_own_type() -> None:
    assert isinstance(SEED, SeedPolicy) and not isinstance(SEED, CompactionPolicy)
    assert get_policy("seed") is SEED and get_policy(SEED) is SEED
    with pytest.warns(DeprecationWarning, match="SEED"):
        assert CompactionPolicy(kind="seed") is SEED
    with pytest.warns(DeprecationWarning, match="leave kind out"):
        assert CompactionPolicy(kind="cache") == CACHE
    assert (SEED.name, CACHE.name) == ("seed", "cache")


def test_the_three_ways_to_the_seed_give_the_same_request() -> None:
    history = [{"role": "system", "content": "be brief"}]
    for i in range(40):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        history += [
            {"role": "user", "content": f"step {i}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "x" * 2_000},
        ]
    by_name = govern(history, context_window=8_000, compaction="seed")
    by_object = govern(history, context_window=8_000, compaction=SEED)
    with pytest.warns(DeprecationWarning):
        by_kind = govern(history, context_window=8_000, compaction=CompactionPolicy(kind="seed"))
    assert by_name.messages == by_object.messages == by_kind.messages
    assert by_name.messages != govern(history, context_window=8_000).messages
    assert resolve_settings(compaction="seed").compaction is SEED
