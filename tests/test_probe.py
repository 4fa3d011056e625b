"""probe.leaves_alone: a yes only where run() changes nothing.

The property: whenever ``leaves_alone`` says yes, running the whole pipeline on the same
list with the same settings and counts returns that list itself, with no action, note
or violation. Checked over every provider profile and the variants the Governor tests
use, on windows shaped like the ones a Governor asks about (a placeholder user message,
a model turn, new messages) and broken the ways inputs get broken.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from levels import examples
from test_governor import _clean_session
from transcripts import random_case

from context_governor import Governor, govern
from context_governor import governor as governor_module
from context_governor.governor import _ANCHOR
from context_governor.inputs import repair_messages
from context_governor.pipeline import Settings, context, resolve_settings, run
from context_governor.policies import CompactionPolicy
from context_governor.probe import leaves_alone
from context_governor.providers import PROVIDERS
from context_governor.tokens import KnownCounts

Message = dict[str, Any]

VARIANTS: list[dict[str, Any]] = [
    *({"profile": name} for name in PROVIDERS),
    {"profile": "openai", "model": "gpt-4o"},
    {"profile": "openai", "model": "o3"},
    {"profile": "anthropic", "model": "claude-sonnet-4-5"},
    {"profile": "anthropic", "model": "claude-3-7-sonnet", "prefill": True},
    {"profile": "bedrock", "model": "anthropic.claude-sonnet-4-5"},
    {"profile": "gemini", "model": "gemini-2.5-pro"},
    {"profile": "gemini", "model": "gemini-3-pro-preview"},
    {"profile": "deepseek", "model": "deepseek-reasoner"},
    {"profile": "mistral", "model": "mistral-large-latest"},
    {"profile": "moonshot", "model": "kimi-k2-thinking"},
    {"profile": "qwen", "model": "qwen3-235b-a22b-thinking-2507"},
    {"profile": "glm", "model": "glm-4.6"},
    {"profile": "groq", "model": "llama-3.3-70b-versatile"},
    {"profile": "ollama", "model": "llama3.1"},
    {"profile": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct"},
    {"profile": "vllm", "model": "mistralai/Mistral-7B-Instruct-v0.3"},
    {"profile": "vllm", "model": "google/gemma-2-9b-it"},
    {"profile": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct"},
    {"profile": "openai", "max_tool_result_chars": 500},
    {"profile": "openai", "compaction": "seed"},
    {"profile": "openai", "compaction": CompactionPolicy(keep_recent=2, min_savings=0)},
]

_SURROGATE = "bad \udc80 text"


def _break(rng: random.Random, window: list[Message]) -> None:
    """One of the ways a window's new messages are wrong or near a rule's edge, in place
    (the window holds copies)."""
    i = rng.randrange(1, len(window))
    m = window[i]
    listed = m.get("tool_calls")
    calls = [c for c in listed if isinstance(c, dict)] if isinstance(listed, list) else None
    if calls and not isinstance(calls[0].get("function"), dict):
        calls = None
    ids = [
        str(c.get("id"))
        for x in window
        if isinstance(x.get("tool_calls"), list)
        for c in x["tool_calls"]
        if isinstance(c, dict)
    ] or ["call_0"]
    roll = rng.randrange(14)
    if roll == 0 and calls:
        calls[0]["id"] = rng.choice(ids)  # an id used again
    elif roll == 1 and calls:
        calls[0]["function"]["name"] = rng.choice(["bad name!", "", "x" * 80, "ok.dot"])
    elif roll == 2:
        m["content"] = rng.choice(["", None, " ", []])
    elif roll == 3:
        m["content"] = "y" * rng.choice([600, 5000, 40_000])  # over a cap
    elif roll == 4:
        m["content"] = _SURROGATE
    elif roll == 5:
        m["cache_control"] = {"type": "ephemeral"}
    elif roll == 6:
        window.insert(i, {"role": m.get("role", "user"), "content": "same role again"})
    elif roll == 7 and m.get("role") == "tool":
        del window[i]  # a call left unanswered
    elif roll == 8 and m.get("role") == "tool":
        m["tool_call_id"] = "call_nowhere"  # an orphan
    elif roll == 9:
        window.append({"role": "assistant", "content": "a trailing reply"})
    elif roll == 10:
        window.insert(i, {"role": "system", "content": "a system message mid-way"})
    elif roll == 11 and calls:
        calls[0]["function"]["arguments"] = rng.choice(["not json", "{}", '{"a": [1, 2]}'])
    elif roll == 12:
        m["content"] = [{"type": "text", "text": "a part"}, {"type": "image_url", "x": 1}]
    elif roll == 13 and calls:
        m["reasoning_content"] = "thinking"
    else:
        m["extra_key"] = 1


def _windows(rng: random.Random) -> list[list[Message]]:
    """Windows as a Governor makes them: the anchor, a model turn and what follows it."""
    source = (
        _clean_session(rng, rng.randint(2, 8))
        if rng.random() < 0.6
        else random_case(rng)["messages"]
    )
    starts = [
        i for i, m in enumerate(source) if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    out: list[list[Message]] = []
    for start in rng.sample(starts, min(3, len(starts))):
        end = rng.randint(start + 1, min(len(source), start + 8))
        window = [_ANCHOR, *copy.deepcopy(source[start:end])]
        if rng.random() < 0.4:
            for _ in range(rng.randint(1, 2)):
                _break(rng, window)
        out.append(window)
    return out


def _clean_prefix(window: list[Message], s: Settings, counter: KnownCounts) -> int:
    """How many leading messages the input repair leaves alone (what a Governor knows of
    its window's old part)."""
    k = 0
    while k < len(window):
        ctx = context(s, counter)
        part = window[: k + 1]
        if repair_messages(part, ctx) is not part or ctx.actions:
            break
        k += 1
    return k


def _no_op(window: list[Message], s: Settings, counter: KnownCounts) -> bool:
    result, _ = run(window, s, counter)
    report = result.report
    return (
        result.messages is window
        and not report.actions
        and not report.notes
        and not report.violations
    )


@settings(
    max_examples=examples(full=600, fast=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    variant=st.sampled_from(VARIANTS),
    window_size=st.sampled_from([None, 3_000, 8_000, 20_000, 128_000]),
)
def test_a_yes_is_a_pipeline_that_changes_nothing(
    seed: int, variant: dict[str, Any], window_size: int | None
) -> None:
    rng = random.Random(seed)
    s = resolve_settings(context_window=window_size, max_output=1000, **variant)
    for window in _windows(rng):
        counter = KnownCounts(s.counter, {})
        clean = rng.randint(0, _clean_prefix(window, s, counter))
        said = leaves_alone(window, s, counter, clean=clean)
        event(f"leaves_alone={said}")
        if said:
            assert _no_op(window, s, KnownCounts(s.counter, {}))


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
def test_plain_agent_steps_get_a_yes_where_the_pipeline_agrees(variant: dict[str, Any]) -> None:
    """Not vacuous: on clean agent steps the answer is mostly yes, and it is the
    pipeline's own answer each time (a no where run() would change nothing is allowed,
    and counted)."""
    rng = random.Random(7)
    s = resolve_settings(context_window=128_000, max_output=1000, **variant)
    yes = agree = 0
    source = _clean_session(rng, 30)
    starts = [i for i, m in enumerate(source) if m["role"] == "assistant"]
    for a, b in itertools.pairwise(starts):
        window = [_ANCHOR, *source[a:b]]
        said = leaves_alone(window, s, KnownCounts(s.counter, {}), clean=1)
        truth = _no_op(window, s, KnownCounts(s.counter, {}))
        assert not said or truth
        yes += said
        agree += said == truth
    assert agree >= (len(starts) - 1) * 0.9 or s.compaction.kind != "cache"


def test_the_governor_differential_tests_take_the_cheap_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Governor asks leaves_alone first, its answers stay govern()'s, and it answers
    yes wherever the pipeline would change nothing (the no's are windows with calls not
    answered yet: parallel results arriving one by one)."""
    said: list[tuple[bool, bool]] = []

    def counting(window: list[Message], s: Settings, counter: Any, clean: int = 0) -> bool:
        answer = leaves_alone(window, s, counter, clean=clean)
        said.append((answer, _no_op(window, s, KnownCounts(s.counter, {}))))
        return answer

    monkeypatch.setattr(governor_module, "leaves_alone", counting)
    rng = random.Random(11)
    full = _clean_session(rng, 40)
    gov = Governor(context_window=60_000, max_output=1000, profile="anthropic")
    for k in range(3, len(full) + 1):
        if full[k - 1]["role"] == "assistant":
            continue
        got, expected = (
            gov.govern(full[:k]),
            govern(full[:k], context_window=60_000, max_output=1000, profile="anthropic"),
        )
        assert got.messages == expected.messages
        assert got.report.to_dict() == expected.report.to_dict()
    assert all(truth for answer, truth in said if answer)
    assert sum(answer for answer, _ in said) > 30
    assert all(answer == truth for answer, truth in said)


def test_a_window_that_raises_in_a_stage_is_a_no() -> None:
    s = resolve_settings(context_window=128_000)
    window: list[Message] = [
        _ANCHOR,
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": json.dumps({"next": 1})},
    ]
    assert leaves_alone(window, s, KnownCounts(s.counter, {}), clean=3)

    class Broken(KnownCounts):
        def message_tokens(self, message: Message) -> int:
            raise ValueError("no count")

    assert not leaves_alone(window, s, Broken(s.counter, {}), clean=3)
