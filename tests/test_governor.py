"""Governor: its output equals the stateless govern() for the same input, always.

Differential property test over random growing sessions, with edits (in place and
by replacement) and truncations of earlier messages between calls.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from levels import examples
from long_sessions import MODELS, long_session
from transcripts import random_case
from whole_runs import WholeRuns

from context_governor import PROFILES, CompactionPolicy, ConfigError, Governor, govern
from context_governor.policies import CACHE

Message = dict[str, Any]


def _clean_session(rng: random.Random, steps: int) -> list[Message]:
    """A legal coding-agent history, the shape a runner persists."""
    msgs: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the bug in the tokenizer."},
    ]
    for step in range(steps):
        if rng.random() < 0.1:
            msgs.append({"role": "assistant", "content": f"Done with part {step}."})
            msgs.append({"role": "user", "content": f"Next, part {step + 1}."})
        calls = [
            {
                "id": f"call_{step}_{k}",
                "type": "function",
                "function": {
                    "name": rng.choice(["read_file", "exec", "grep", "write_file"]),
                    "arguments": json.dumps({"path": f"src/m{step}.py"}),
                },
            }
            for k in range(1 if rng.random() < 0.8 else rng.randint(2, 3))
        ]
        content = None if rng.random() < 0.7 else f"Looking at step {step}."
        msgs.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call in calls:
            size = rng.choice([40, 300, 1500, 6000])
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "name": call["function"]["name"],
                    "content": " ".join(f"w{step}_{i}" for i in range(size // 6)),
                }
            )
    return msgs


def _mutate(rng: random.Random, history: list[Message]) -> None:
    """An edit of an earlier message: in place, by replacement, or a truncation."""
    if len(history) < 3:
        return
    i = rng.randrange(1, len(history) - 1)
    roll = rng.random()
    if roll < 0.3:
        history[i]["content"] = f"edited in place {rng.random()}"
    elif roll < 0.5 and isinstance(history[i].get("tool_calls"), list):
        history[i]["tool_calls"][0]["function"]["arguments"] = '{"edited": true}'
    elif roll < 0.75:
        history[i] = {**history[i], "content": f"replaced {rng.random()}"}
    else:
        del history[i:]


SETTINGS_CHOICES = [
    {"profile": "openai"},
    {"profile": "openai", "compaction": "seed"},
    {"profile": "anthropic", "model": "claude-sonnet-4-5"},
    {"profile": "mistral"},
    {"profile": "gemini", "model": "gemini-2.5-pro"},
    {"profile": "deepseek", "model": "deepseek-reasoner"},
    {"profile": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct"},
    {"profile": "nanobot"},
    {"profile": "openai", "max_tool_result_chars": 2000},
    {"profile": "anthropic", "model": "claude-3-7-sonnet", "prefill": True},
    {"profile": "vllm", "model": "mistralai/Mistral-7B-Instruct-v0.3"},
    {"profile": "openai", "compaction": CompactionPolicy(keep_recent=2, min_savings=0)},
]


def _governed(gov: Governor, history: list[Message]) -> Any:
    """``gov.govern(history)``, noting (a hypothesis event) whether a first call was
    decided on byte bounds (tests/test_governor_first.py)."""
    first = gov._state is None
    result = gov.govern(history)
    if first:
        event(f"first call on bounds: {type(result).__name__ == 'ExactLater'}")
    return result


def _same(a: Any, b: Any) -> None:
    assert a.messages == b.messages
    assert a.report.to_dict() == b.report.to_dict()


@settings(
    max_examples=examples(full=60, fast=12),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), choice=st.sampled_from(SETTINGS_CHOICES))
def test_growing_clean_sessions_match_stateless(seed: int, choice: dict[str, Any]) -> None:
    rng = random.Random(seed)
    full = _clean_session(rng, rng.randint(5, 60))
    window = rng.choice([6_000, 12_000, 20_000, 60_000, None])
    gov = Governor(context_window=window, max_output=1000, **choice)
    history: list[Message] = full[:2]
    position = 2
    while position < len(full):
        step = rng.randint(1, 4)
        history.extend(full[position : position + step])  # in place, as a runner does
        position += step
        if rng.random() < 0.08:
            _mutate(rng, history)
        before = copy.deepcopy(history)
        _same(
            _governed(gov, history),
            govern(history, context_window=window, max_output=1000, **choice),
        )
        assert history == before


@settings(
    max_examples=examples(full=60, fast=12),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), choice=st.sampled_from(SETTINGS_CHOICES))
def test_growing_messy_sessions_match_stateless(seed: int, choice: dict[str, Any]) -> None:
    """The generator of the core tests: orphans, lost results, same-role runs, list
    content, trailing assistants, histories cut mid-way."""
    rng = random.Random(seed)
    case = random_case(rng)
    full = case["messages"]
    window = case["context_window"]
    gov = Governor(context_window=window, tools=case["tools"], **choice)
    history: list[Message] = []
    for message in full:
        history.append(message)
        if rng.random() < 0.5:
            continue
        if rng.random() < 0.1:
            _mutate(rng, history)
        _same(
            _governed(gov, history),
            govern(history, context_window=window, tools=case["tools"], **choice),
        )


def test_an_append_only_session_takes_the_fast_path() -> None:
    """Not a timing test: the fast path is taken (no full run) on plain growth."""
    rng = random.Random(3)
    full = _clean_session(rng, 80)
    gov = Governor(context_window=60_000, max_output=1000)
    whole = WholeRuns(gov)
    history: list[Message] = full[:2]
    steps = 0
    for position in range(2, len(full)):
        history.append(full[position])
        if full[position]["role"] == "tool" and (
            position + 1 == len(full) or full[position + 1]["role"] != "tool"
        ):
            steps += 1
            _same(gov.govern(history), govern(history, context_window=60_000, max_output=1000))
    assert steps > 60
    assert whole.count < steps / 4


def test_tools_override_is_stateless_and_right() -> None:
    history = _clean_session(random.Random(1), 10)
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
    gov = Governor(context_window=8_000, max_output=1000)
    _same(
        gov.govern(history, tools=tools),
        govern(history, tools=tools, context_window=8_000, max_output=1000),
    )


def test_bad_settings_fail_at_construction() -> None:
    with pytest.raises(ConfigError):
        Governor(context_window=-1)
    with pytest.raises(ConfigError):
        Governor(profile="nope")


def test_changing_a_returned_list_does_not_change_the_next_answer() -> None:
    full = _clean_session(random.Random(5), 30)
    gov = Governor(context_window=60_000, max_output=1000)
    history = full[:10]
    gov.govern(history).messages.append({"role": "user", "content": "sneaked in"})
    history = full[:12]
    result = gov.govern(history)
    result.messages.append({"role": "user", "content": "sneaked in again"})
    history = full[:14]
    _same(gov.govern(history), govern(history, context_window=60_000, max_output=1000))


@pytest.mark.parametrize(
    ("profile", "seed"), [("gemini", 10), ("gemini", 13), ("qwen", 4), ("deepseek", 7)]
)
def test_growing_sessions_near_the_trigger_match_stateless(profile: str, seed: int) -> None:
    """Windows whose compaction trigger falls between a step's input and its repaired
    output (where govern compacts for the repairs' sake), and cut notes: the fast
    path must still give govern()'s answer at every step."""
    rng = random.Random(seed)
    full = long_session(rng, rng.randint(30, 80))
    model = MODELS.get(profile)
    steps = [k for k in range(3, len(full) + 1) if full[k - 1]["role"] != "assistant"]
    probe = full[: steps[len(steps) * 2 // 3]]
    plain = govern(probe, profile=profile, model=model).report
    low, high = plain.tokens_before, max(plain.tokens_after, plain.tokens_before + 1)
    budget = next(b for b in range(int(low / 0.95), high * 2) if CACHE.thresholds(b)[0] >= low)
    window = budget + 1000 + 1024
    gov = Governor(profile=profile, model=model, context_window=window, max_output=1000)
    crossings = 0
    for k in steps:
        history = full[:k]
        expected = govern(
            history, profile=profile, model=model, context_window=window, max_output=1000
        )
        crossings += any("provider repairs" in n for n in expected.report.notes)
        _same(gov.govern(history), expected)
    assert crossings  # the case this test is about happened


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("first", ["system", "assistant"])
def test_a_session_that_opens_without_a_user_matches_once_a_user_arrives(
    profile: str, first: str
) -> None:
    """The opening stage adds a user where the provider needs one and none was sent; a
    later user message takes that reason away, so the step after it cannot be an
    append to the previous output (found by the developer-role property in CI)."""
    opening: Message = (
        {"role": "system", "content": "Be brief."}
        if first == "system"
        else {"role": "assistant", "content": "Hello, how can I help?"}
    )
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    steps: list[list[Message]] = [
        [opening, {"role": "assistant", "content": None, "tool_calls": [call]}],
        [{"role": "tool", "tool_call_id": "c1", "content": "ok"}],
        [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "go on"}],
        [{"role": "assistant", "content": "Going on."}, {"role": "user", "content": "more"}],
    ]
    kwargs: dict[str, Any] = {"profile": profile, "context_window": 8_000, "max_output": 500}
    gov = Governor(**kwargs)
    history: list[Message] = []
    for step in steps:
        history = [*history, *step]
        _same(gov.govern(history), govern(history, **kwargs))
