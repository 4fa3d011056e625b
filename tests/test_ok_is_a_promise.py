"""``report.ok`` is a promise about the body that leaves, on every path.

Every path that hands a caller something to send (``govern``, a ``Governor``,
``govern_request`` for each wire format) is run on random sessions; whenever the report
says ok, the final output must pass our own validator for its target, and the
thinking/reserve settings must be what the API accepts (``max_tokens`` above
``thinking.budget_tokens``: checked here, not by the validator, which cannot see the
interleaved-thinking header that lifts the rule).

The regression this guards: a stage turned thinking off to make the history legal
(AN-9a), and the output reserve, applied after it, wrote the lowered thinking budget
back: ``ok`` was reported for a body the validator refuses.
"""

from __future__ import annotations

import copy
from typing import Any

import anthropic_bodies
import gemini_bodies
import responses_bodies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from transcripts import cases

from context_governor import Governor, govern
from context_governor.formats import _reserve as reserve
from context_governor.formats import govern_request, validate_request
from context_governor.providers import validate

SETTINGS = settings(
    max_examples=examples(full=120, fast=30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WINDOWS = st.sampled_from([6_000, 20_000, 64_000, 200_000])
#: (max_tokens, thinking) pairs clients send: Claude Code's for Opus, a small budget, none
THINKING = st.sampled_from(
    [
        (32_000, {"type": "enabled", "budget_tokens": 31_999}),
        (8_000, {"type": "enabled", "budget_tokens": 4_000}),
        (4_096, {"type": "enabled", "budget_tokens": 1_024}),
        (16_000, {"type": "adaptive"}),
        (4_096, None),
    ]
)


def _strip_final_thinking(body: dict[str, Any]) -> dict[str, Any]:
    """The body with the newest assistant turn's thinking blocks removed: with thinking
    enabled its final turn then starts with ``tool_use`` (the AN-9a case)."""
    out = copy.deepcopy(body)
    for message in reversed(out["messages"]):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, list):
                kept = [
                    b for b in content if b.get("type") not in ("thinking", "redacted_thinking")
                ]
                message["content"] = kept or [{"type": "text", "text": "ok"}]
            break
    return out


@st.composite
def messages_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body = draw(anthropic_bodies.sessions(thinking=True, min_turns=1, max_turns=10))
    if draw(st.booleans()):
        body = _strip_final_thinking(body)
    max_tokens, thinking = draw(THINKING)
    body["max_tokens"] = max_tokens
    if thinking is None:
        body.pop("thinking", None)
    else:
        body["thinking"] = thinking
    return body


def _check_thinking_settings(body: dict[str, Any], sent: dict[str, Any], window: int) -> None:
    """``max_tokens`` above an enabled budget; the client's budget sent as asked, or
    lowered to the one figure the window gives (it must not move with the prompt)."""
    thinking = sent.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return
    budget = thinking["budget_tokens"]
    asked = body["thinking"]["budget_tokens"]
    assert budget < sent["max_tokens"], (thinking, sent["max_tokens"])
    if budget != asked:
        assert budget == reserve.floor(window, body["max_tokens"], True, asked) - 1


@settings(SETTINGS, max_examples=examples(full=250, fast=80))
@given(body=messages_bodies(), window=WINDOWS)
def test_messages_ok_means_the_body_sent_is_valid(body: dict[str, Any], window: int) -> None:
    result = govern_request(body, api="anthropic", context_window=window)
    found = validate_request(result.body, api="anthropic")
    assert [v.rule for v in found] == [v["rule"] for v in result.report.violations]
    if result.report.ok:
        assert found == [], found
    _check_thinking_settings(body, result.body, window)


@SETTINGS
@given(body=responses_bodies.sessions(), window=WINDOWS)
def test_responses_ok_means_the_body_sent_is_valid(body: dict[str, Any], window: int) -> None:
    result = govern_request(body, api="responses", context_window=window)
    found = validate_request(result.body, api="responses")
    assert [v.rule for v in found] == [v["rule"] for v in result.report.violations]
    if result.report.ok:
        assert found == [], found


@SETTINGS
@given(body=gemini_bodies.sessions(), window=WINDOWS)
def test_gemini_ok_means_the_body_sent_is_valid(body: dict[str, Any], window: int) -> None:
    result = govern_request(body, api="gemini", context_window=window)
    found = validate_request(result.body, api="gemini")
    assert [v.rule for v in found] == [v["rule"] for v in result.report.violations]
    if result.report.ok:
        assert found == [], found


@SETTINGS
@given(case=cases(), profile=st.sampled_from(["openai", "anthropic", "mistral", "gemini"]))
def test_chat_paths_ok_means_the_messages_sent_are_valid(
    case: dict[str, Any], profile: str
) -> None:
    """govern(), a Governor and govern_request(api="openai") on the same history."""
    window = case["context_window"]
    if not isinstance(window, int) or isinstance(window, bool) or window < 2_000:
        window = 8_000
    tools = case["tools"]
    direct = govern(case["messages"], tools=tools, profile=profile, context_window=window)
    stepped = Governor(profile=profile, context_window=window).govern(case["messages"], tools=tools)
    for result in (direct, stepped):
        if result.report.ok:
            assert validate(result.messages, provider=profile) == []
    body: dict[str, Any] = {"model": "gpt-4o", "messages": case["messages"]}
    if tools:
        body["tools"] = tools
    sent = govern_request(body, api="openai", profile=profile, context_window=window)
    if sent.report.ok:
        assert validate(sent.body["messages"], provider=profile) == []


def test_claude_codes_thinking_settings_are_sent_as_asked_at_200k_whatever_the_prompt() -> None:
    """Opus under Claude Code asks max_tokens 32,000 with a 31,999 budget: at 200k the
    floor holds it (a quarter of the window is 50,000), so neither is lowered, for a
    short prompt or a long one (it was 24,999 on every request)."""
    for words in (1, 60_000):
        body = {
            "model": "claude-opus-4-1",
            "max_tokens": 32_000,
            "thinking": {"type": "enabled", "budget_tokens": 31_999},
            "messages": [{"role": "user", "content": "hello " * words}],
        }
        result = govern_request(body, api="anthropic", context_window=200_000)
        assert result.body["thinking"] == body["thinking"] and result.body["max_tokens"] == 32_000
        assert not any("thinking" in note for note in result.report.notes)


def test_thinking_turned_off_for_a_legal_history_is_not_written_back() -> None:
    """The issue's case: the final assistant turn starts with tool_use while thinking is on."""
    body = {
        "model": "claude-opus-4-1",
        "max_tokens": 32_000,
        "thinking": {"type": "enabled", "budget_tokens": 31_999},
        "messages": [
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        ],
    }  # fmt: skip
    for window in (200_000, 64_000, 16_000):
        result = govern_request(body, api="anthropic", context_window=window)
        assert result.body["thinking"] == {"type": "disabled"}, window
        assert validate_request(result.body, api="anthropic") == [] and result.report.ok


def test_a_budget_the_window_cannot_hold_is_lowered_to_one_figure() -> None:
    """At 64k a 31,999 budget is more than a quarter of the window: it goes to 15,999 on
    every request, short prompt or long (a budget that moved with the prompt would break
    the provider's message cache at each change)."""
    seen = set()
    for words in (1, 20_000, 40_000):
        body = {
            "model": "claude-opus-4-1",
            "max_tokens": 32_000,
            "thinking": {"type": "enabled", "budget_tokens": 31_999},
            "messages": [{"role": "user", "content": "word " * words}],
        }
        result = govern_request(body, api="anthropic", context_window=64_000)
        seen.add(result.body["thinking"]["budget_tokens"])
        assert result.body["thinking"]["budget_tokens"] < result.body["max_tokens"]
    assert seen == {64_000 // 4 - 1}
