"""The price-aware default (providers/prices.py, policies.price_scale): the cache policy's trigger
comes from the target's cache prices where they are known, stays today's otherwise, and
the policy keeps its properties (a pure function of the request and settings, requests
only append between compactions, inside the budget)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, Governor, govern
from context_governor.errors import ConfigError
from context_governor.pipeline import resolve_settings
from context_governor.policies import DEFAULT_TRIGGER_TOKENS, SEED, price_scale
from context_governor.providers import validate
from context_governor.providers.prices import (
    ANTHROPIC,
    ANTHROPIC_1H,
    DEEPSEEK,
    GEMINI_25,
    GEMINI_25_FLASH,
    OPENAI_4O,
    OPENAI_5,
    OPENAI_41,
    PRICES,
    CachePrice,
    cache_price,
)

Message = dict[str, Any]


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("openai", "gpt-4o", OPENAI_4O),
        ("openai", "gpt-4o-mini", OPENAI_4O),
        ("openai", "gpt-4o-2024-08-06", OPENAI_4O),
        ("openai", "openai/GPT-4o", OPENAI_4O),
        ("openai", "gpt-4.1", OPENAI_41),
        ("openai", "gpt-4.1-nano-2025-04-14", OPENAI_41),
        ("openai", "gpt-5", OPENAI_5),
        ("openai", "gpt-5-mini", OPENAI_5),
        ("anthropic", "claude-sonnet-4-5", ANTHROPIC),
        ("anthropic", "claude-haiku-4-5-20251001", ANTHROPIC),
        ("gemini", "gemini-2.5-pro", GEMINI_25),
        ("gemini", "gemini-2.5-flash", GEMINI_25_FLASH),
        ("deepseek", "deepseek-chat", DEEPSEEK),
        ("deepseek", "deepseek-reasoner", DEEPSEEK),
    ],
)
def test_known_families_get_their_prices(provider: str, model: str, expected: CachePrice) -> None:
    assert cache_price(provider, model) is expected


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", None),
        (None, "gpt-4o"),
        ("openai", "gpt-4"),  # no cached-read price in the table
        ("openai", "gpt-4o-audio-preview"),  # not the family: another price list
        ("openai", "gpt-4.10"),
        ("vllm", "gpt-4o"),  # the name served elsewhere is not OpenAI's price
        ("anthropic", "claude-3-opus"),
        ("openai", "claude-sonnet-4-5"),
        ("ollama", "llama3.1"),
        ("deepseek", "deepseek-coder"),
    ],
)
def test_unknown_model_or_provider_has_no_price(provider: str | None, model: str | None) -> None:
    assert cache_price(provider, model) is None


def test_price_table_is_in_multiples_of_the_input_price() -> None:
    for price in PRICES.values():
        assert 0 < price.read < 1 <= price.miss
        assert price.min_cached >= 1024
    assert ANTHROPIC.miss == 1.25 and ANTHROPIC_1H.miss == 2.0 and OPENAI_4O.miss == 1.0


def test_price_scale_at_the_table_prices() -> None:
    assert price_scale(OPENAI_5) == 1.0  # the read the defaults were tuned for
    assert price_scale(ANTHROPIC) == 1.0  # a dear write: never later than the default
    assert price_scale(OPENAI_41) == pytest.approx(3**0.5 / 3)
    assert price_scale(OPENAI_4O) == pytest.approx(1 / 3)


@given(a=st.floats(0.01, 0.99), b=st.floats(0.01, 0.99), write=st.floats(1.0, 3.0))
def test_a_dearer_read_never_moves_the_trigger_later(a: float, b: float, write: float) -> None:
    low, high = sorted((a, b))
    for caching in ("automatic", "breakpoint"):
        cheap = CachePrice("x", "x", caching, low, write)  # type: ignore[arg-type]
        dear = CachePrice("x", "x", caching, high, write)  # type: ignore[arg-type]
        assert 0 <= price_scale(dear) <= price_scale(cheap) <= 1


@given(
    budget=st.integers(1, 2_000_000),
    read=st.floats(0.01, 0.99),
    write=st.floats(1.0, 3.0),
    breakpoint=st.booleans(),
)
def test_priced_thresholds_stay_between_target_and_default_trigger(
    budget: int, read: float, write: float, breakpoint: bool
) -> None:
    price = CachePrice("x", "x", "breakpoint" if breakpoint else "automatic", read, write)
    plain = CompactionPolicy().thresholds(budget)
    trigger, target = CompactionPolicy(cache_price=price).thresholds(budget)
    assert target == plain[1]
    assert target <= trigger <= plain[0]


def test_explicit_settings_win_and_the_rule_can_be_turned_off() -> None:
    budget = 122_880
    default = CompactionPolicy().thresholds(budget)
    assert default == (DEFAULT_TRIGGER_TOKENS, 16_000)
    scaled = 16_000 + int((DEFAULT_TRIGGER_TOKENS - 16_000) * price_scale(OPENAI_4O))
    assert CompactionPolicy(cache_price=OPENAI_4O).thresholds(budget) == (scaled, 16_000)
    off = CompactionPolicy(cache_price=OPENAI_4O, price_aware=False)
    assert off.thresholds(budget) == default
    assert CompactionPolicy(cache_price=OPENAI_4O, trigger=90_000).thresholds(budget)[0] == (
        90_000
    )
    assert CompactionPolicy(cache_price=OPENAI_4O, trigger=0.5).thresholds(budget)[0] == 61_440
    # priced() fills in the target's prices only when none were given and the rule is on
    assert CompactionPolicy().priced("openai", "gpt-4o").cache_price is OPENAI_4O
    assert CompactionPolicy().priced("openai", "mystery-model").cache_price is None
    assert off.priced("openai", "gpt-4.1").cache_price is OPENAI_4O
    assert CompactionPolicy(price_aware=False).priced("openai", "gpt-4o").cache_price is None
    # the seed policy has no prices to tune: govern() keeps it as it is
    assert resolve_settings(model="gpt-4o", compaction="seed").compaction is SEED


def test_a_bad_cache_price_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cache_price"):
        CompactionPolicy(cache_price=0.5)  # type: ignore[arg-type]


def _coding(steps: int, seed: int, size: int) -> list[list[Message]]:
    """A coding agent's growing history: one or two calls per step, results of up to
    ``size`` characters."""
    rng = random.Random(seed)
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests in the parser."},
    ]
    out = []
    for step in range(steps):
        calls, results = [], []
        for k in range(rng.randint(1, 2)):
            call_id = f"call_{step}_{k}"
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": json.dumps({"n": step})},
                }
            )
            words = rng.randint(size // 4, size) // 6
            body = " ".join(f"l{step}_{k}_{i}" for i in range(words))
            results.append(
                {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": body}
            )
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
        history.extend(results)
        out.append(list(history))
    return out


def _is_prefix(short: list[Message], long: list[Message]) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


def test_dear_reads_compact_earlier_than_an_unknown_model() -> None:
    """gpt-4o (reads at half the input price) compacts a 128k-window history of ~50k
    tokens; the same history for an unknown model (today's 100k trigger) is sent whole.
    On main the model did not matter: neither compacted."""
    history = _coding(20, seed=1, size=3000)[-1]
    dear = govern(history, model="gpt-4o", context_window=128_000, max_output=4096)
    unknown = govern(history, model="mystery-model", context_window=128_000, max_output=4096)
    assert 44_000 < unknown.report.tokens_before < 100_000
    assert unknown.messages == history
    assert any(a.stage == "compact" for a in dear.report.actions)
    assert dear.report.tokens_after < 44_000
    off = CompactionPolicy(price_aware=False)
    kept = govern(history, model="gpt-4o", context_window=128_000, max_output=4096, compaction=off)
    assert kept.messages == history


@settings(max_examples=5, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    model=st.sampled_from(["gpt-4o", "gpt-4.1", "gpt-5", "mystery-model"]),
    size=st.integers(800, 6000),
)
def test_priced_policy_only_appends_between_compactions_inside_the_budget(
    seed: int, model: str, size: int
) -> None:
    gov = Governor(model=model, context_window=32_000, max_output=1000)
    previous: list[Message] | None = None
    compactions = 0
    for history in _coding(50, seed, size):
        result = gov.govern(history)
        assert result.report.within_budget, result.report.notes
        assert validate(result.messages, provider="openai") == []
        compacted = any(a.stage == "compact" for a in result.report.actions)
        compactions += compacted
        if previous is not None and not _is_prefix(previous, result.messages):
            assert compacted, "the prefix changed without a compaction"
        previous = result.messages
    assert compactions >= 1  # the histories outgrow the window: the rule is exercised


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), model=st.sampled_from(["gpt-4o", "gpt-4.1"]))
def test_priced_policy_is_a_pure_function_of_the_request(seed: int, model: str) -> None:
    steps = _coding(45, seed, 5000)
    gov = Governor(model=model, context_window=32_000, max_output=1000)
    for history in steps:
        long_lived = gov.govern(history)
    fresh = govern(steps[-1], model=model, context_window=32_000, max_output=1000)
    assert fresh.messages == long_lived.messages
    assert fresh.report.to_dict() == long_lived.report.to_dict()
