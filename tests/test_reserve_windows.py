"""The output reserve, model windows as overridable data, and the Claude estimate.

govern_request on a body whose max_tokens the target's window cannot give beside the
prompt: the prompt's budget keeps a floor for the answer (the smaller of what was
asked and an eighth of the window), the body sent asks for what the window leaves
after the governed prompt (and a thinking budget below the floor), and the report says
what it did, for every API.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from anthropic_bodies import sessions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import ConfigError, govern_request, validate_request
from context_governor.counting import claude_estimate, load_encoding
from context_governor.formats._reserve import floor, max_reserve
from context_governor.providers.windows import known_window, load_windows, window_table
from context_governor.stages._snip import SAFETY_BUFFER

SETTINGS = settings(
    max_examples=examples(full=40, fast=15),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _messages_body(max_tokens: int, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": max_tokens,
        "system": "you are terse",
        "messages": [{"role": "user", "content": "hello " * 200}],
        **extra,
    }


def test_a_reserve_the_window_cannot_give_is_fitted_and_reported() -> None:
    """Once the body went out with max_tokens 128000 for a 64k window and a negative
    budget (nothing governed); then it was clamped to half the window, which starved
    the prompt. Now the prompt's budget keeps an eighth of the window for the answer,
    and the answer gets what the governed prompt leaves."""
    body = _messages_body(128_000)
    result = govern_request(body, api="anthropic", context_window=64_000)
    report = result.report
    assert report.max_output == floor(64_000, 128_000) == 8_000
    assert report.budget == 64_000 - SAFETY_BUFFER - 8_000
    assert result.body["max_tokens"] == 64_000 - SAFETY_BUFFER - report.tokens_after
    assert body["max_tokens"] == 128_000  # the input is not modified
    assert report.within_budget
    assert [a.stage for a in report.actions[:1]] == ["reserve"]
    given = result.body["max_tokens"]
    assert any(f"max_tokens 128,000 -> {given:,}" in n for n in report.notes)


def test_a_reserve_that_fits_is_left_alone() -> None:
    body = _messages_body(8_192)
    result = govern_request(body, api="anthropic", context_window=64_000, cache_breakpoints=False)
    assert result.body is body
    assert not [a for a in result.report.actions if a.stage == "reserve"]


def test_the_thinking_budget_stays_below_max_tokens() -> None:
    body = _messages_body(128_000, thinking={"type": "enabled", "budget_tokens": 100_000})
    out = govern_request(body, api="anthropic", context_window=64_000).body
    budget = out["thinking"]["budget_tokens"]
    assert 1024 <= budget < out["max_tokens"]
    # the same on every request of the session: the floor holds a quarter of the window
    assert budget == floor(64_000, 128_000, True, 100_000) - 1 == 15_999
    assert validate_request(out, api="anthropic") == []


def test_a_window_too_small_for_thinking_disables_it() -> None:
    body = _messages_body(8_000, thinking={"type": "enabled", "budget_tokens": 4_000})
    result = govern_request(body, api="anthropic", context_window=3_000)
    assert result.body["thinking"] == {"type": "disabled"}
    assert floor(3_000, 8_000) == max_reserve(3_000) == 988
    assert result.body["max_tokens"] == 3_000 - SAFETY_BUFFER - result.report.tokens_after
    assert any("thinking disabled" in a.detail for a in result.report.actions)


@SETTINGS
@given(
    sessions(thinking=True, min_turns=2, max_turns=8),
    st.sampled_from([3000, 8000, 20000]),
    st.integers(1_025, 200_000),
)
def test_governed_output_always_leaves_room_for_the_prompt(
    body: dict[str, Any], window: int, asked: int
) -> None:
    """Whatever the client asks, the body sent asks for at most that, and no more than
    the window leaves after the prompt when the prompt met its budget; it keeps a legal
    thinking budget, validates, and governance had a positive budget."""
    thinking = {"type": "enabled", "budget_tokens": min(asked - 1, max(1024, asked // 2))}
    body = {**body, "max_tokens": asked, "thinking": thinking}
    result = govern_request(body, api="anthropic", context_window=window)
    out = result.body
    assert out["max_tokens"] <= asked
    if result.report.within_budget:
        assert result.report.tokens_after + out["max_tokens"] <= window - SAFETY_BUFFER or (
            out["max_tokens"] == asked <= floor(window, asked, True, thinking["budget_tokens"])
        )
    assert result.report.budget is not None and result.report.budget > 0
    if out["thinking"].get("type") == "enabled":
        assert 1024 <= out["thinking"]["budget_tokens"] < out["max_tokens"]
    assert validate_request(out, api="anthropic") == []


@pytest.mark.parametrize(
    ("field", "api", "body"),
    [
        ("max_completion_tokens", "openai", {"model": "gpt-4o", "max_completion_tokens": 100_000,
                                             "messages": [{"role": "user", "content": "hi"}]}),
        ("max_tokens", "openai", {"model": "gpt-4o", "max_tokens": 100_000,
                                  "messages": [{"role": "user", "content": "hi"}]}),
        ("max_output_tokens", "responses", {"model": "gpt-4o", "max_output_tokens": 100_000,
                                            "input": "hi"}),
    ],
)  # fmt: skip
def test_openai_side_reserves_are_clamped_too(field: str, api: str, body: dict[str, Any]) -> None:
    """gpt-4o's window is 128,000: an output reserve of 100,000 left a 26,976-token prompt
    budget once, sent as asked; now the prompt keeps its budget and the answer what the
    window leaves after it."""
    result = govern_request(body, api=api, context_window=32_000)  # type: ignore[arg-type]
    assert result.report.budget == 32_000 - SAFETY_BUFFER - 4_000
    assert result.body[field] == 32_000 - SAFETY_BUFFER - result.report.tokens_after
    assert result.report.budget is not None and result.report.budget > 0
    assert any(a.stage == "reserve" for a in result.report.actions)


# -- windows as data -------------------------------------------------------------------------


def test_compatible_model_families_have_windows() -> None:
    assert known_window("glm-4.6") == 200_000
    assert known_window("glm-4.5-air") == 128_000
    assert known_window("kimi-k2-0711-preview") == 131_072
    assert known_window("kimi-k2-0905-preview") == 262_144
    assert known_window("deepseek-chat") == 128_000
    assert known_window("claude-sonnet-4-5-20250929") == 200_000


def test_the_user_overrides_the_table(tmp_path: Path) -> None:
    table = window_table({"glm-4.6": 128_000, "my-local-model": 32_768})
    assert known_window("glm-4.6", table) == 128_000
    assert known_window("my-local-model-q4", table) == 32_768
    assert known_window("glm-4.6") == 200_000  # the built-in table is unchanged
    path = tmp_path / "windows.json"
    path.write_text(json.dumps({"claude-sonnet-4": 1_000_000}))
    assert known_window("claude-sonnet-4-5", load_windows(path)) == 1_000_000
    body = _messages_body(8_192, model="my-local-model")
    result = govern_request(body, api="anthropic", windows=table)
    assert result.report.context_window == 32_768
    assert result.report.window_source == "model"


@pytest.mark.parametrize("bad", [{"x": 0}, {"x": -1}, {"x": True}, {"x": "128k"}, {"": 5}])
def test_a_bad_override_is_a_clear_error(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="windows"):
        window_table(bad)


def test_a_bad_windows_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        load_windows(path)


# -- the Claude estimate -----------------------------------------------------------------------


@given(st.text(max_size=400))
@settings(max_examples=examples(full=120, fast=50), deadline=None)
def test_the_claude_estimate_errs_high_over_both_offline_encodings(text: str) -> None:
    """At least 1.3x cl100k and o200k... for cl100k exactly; and one token per 3 bytes."""
    cl = load_encoding("cl100k_base")
    assert cl is not None
    estimate = claude_estimate(text)
    assert estimate >= math.ceil(1.3 * len(cl.encode(text, disallowed_special=())))
    assert estimate >= math.ceil(len(text.encode("utf-8", "surrogatepass")) / 3)


def test_messages_bodies_are_counted_with_the_estimate_unless_a_hook_is_given() -> None:
    body = _messages_body(1_000)
    estimated = govern_request(body, api="anthropic", context_window=100_000).report
    assert estimated.counter == "estimate:claude"
    calls: list[str] = []

    def words(text: str) -> int:
        calls.append(text)
        return len(text.split())

    hooked = govern_request(body, api="anthropic", context_window=100_000, count_tokens=words).report
    assert hooked.counter == "custom:words" and calls
    assert hooked.tokens_before < estimated.tokens_before


def test_a_raw_windows_mapping_is_checked_and_merged() -> None:
    body = _messages_body(8_192, model="glm-4.6")
    assert govern_request(body, api="anthropic", windows={"other": 1_000}).report.context_window == 200_000
    with pytest.raises(ConfigError, match="windows"):
        govern_request(body, api="anthropic", windows={"glm-4.6": 0})
