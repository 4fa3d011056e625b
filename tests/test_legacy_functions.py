"""OpenAI's deprecated function calling (``function_call``, role ``function``) at the edge.

A legacy history is governed exactly as the same history in tool-call form with the
ids the edge makes: the output is that output written back in the old form, and the
report is the same. An unchanged history comes out as the caller's own list; a
Governor gives govern()'s answer at every step; providers that do not take the form
refuse it, naming it. The proxy forwards a legacy body governed, not refused
(tests/test_proxy.py).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import Governor, govern, govern_request, validate_request
from context_governor.errors import InputError
from context_governor.messages.legacy import PREFIX, Legacy, first_legacy
from context_governor.profiles import PROFILES
from context_governor.providers import validate

Message = dict[str, Any]
MODEL = "gpt-4o"
FUNCTIONS = [
    {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {}}}},
    {"name": "search", "parameters": {"type": "object", "properties": {"q": {}}}},
]


def legacy_session(rng: random.Random, steps: int) -> list[Message]:
    """A legacy history: a task, then steps of one function call and its result, with a
    reply and a new prompt now and then; now and then a call left unanswered or a
    result with no call (the old form pairs by order only)."""
    out: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    for step in range(steps):
        name = rng.choice(["read_file", "search"])
        args = json.dumps({"path": f"src/m{step}.py"} if name == "read_file" else {"q": "bug"})
        call: Message = {
            "role": "assistant",
            "content": rng.choice([None, "", "Let me look."]),
            "function_call": {"name": name, "arguments": args},
        }
        out.append(call)
        if rng.random() > 0.05:
            size = rng.choice([40, 400, 4000])
            out.append({"role": "function", "name": name, "content": f"line {step}\n" * size})
        if rng.random() < 0.03:
            out.append({"role": "function", "name": "search", "content": "stray result"})
        if rng.random() < 0.15:
            out.append({"role": "assistant", "content": f"Step {step} done."})
            out.append({"role": "user", "content": rng.choice(["go on", "and the tests?"])})
    return out


def tool_form(messages: list[Message]) -> tuple[list[Message], dict[str, str]]:
    """The same history in tool-call form, written here (not by the edge) with the ids
    the edge makes: a call's id is its message's place, a result answers the call right
    before it, a result with none gets ``-result``. Also each result id's function name."""
    out: list[Message] = []
    names: dict[str, str] = {}
    waiting: str | None = None
    for i, m in enumerate(messages):
        if m["role"] == "assistant" and "function_call" in m:
            call_id = f"{PREFIX}{i:08d}"
            names[call_id] = m["function_call"]["name"]
            rest = {k: v for k, v in m.items() if k != "function_call"}
            out.append({**rest, "tool_calls": [
                {"id": call_id, "type": "function", "function": m["function_call"]}
            ]})
            waiting = call_id
        elif m["role"] == "function":
            call_id = waiting if waiting is not None else f"{PREFIX}{i:08d}-result"
            names[call_id] = m["name"]
            waiting = None
            out.append({"role": "tool", "tool_call_id": call_id, "content": m["content"]})
        else:
            waiting = None
            out.append(m)
    return out, names


def old_form(messages: list[Message], names: dict[str, str]) -> list[Message]:
    """Tool-call form output written back in the old form (the expected answer)."""
    out: list[Message] = []
    for m in messages:
        calls = m.get("tool_calls")
        if m.get("role") == "tool" and str(m.get("tool_call_id")).startswith(PREFIX):
            rest = {k: v for k, v in m.items() if k not in ("role", "tool_call_id")}
            out.append({"role": "function", "name": names[m["tool_call_id"]], **rest})
        elif m.get("role") == "assistant" and calls and str(calls[0]["id"]).startswith(PREFIX):
            rest = {k: v for k, v in m.items() if k != "tool_calls"}
            out.append({**rest, "function_call": calls[0]["function"]})
        else:
            out.append(m)
    return out


def no_tool_form_left(messages: list[Message]) -> bool:
    return not any(
        m.get("role") == "tool" or "tool_calls" in m or "tool_call_id" in m for m in messages
    )


@settings(
    max_examples=examples(full=150, fast=30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 10_000),
    steps=st.integers(1, 60),
    window=st.sampled_from([None, 6_000, 16_000, 40_000]),
    compaction=st.sampled_from(["cache", "seed"]),
)
def test_a_legacy_history_is_governed_as_its_tool_call_form(
    seed: int, steps: int, window: int | None, compaction: str
) -> None:
    legacy = legacy_session(random.Random(seed), steps)
    modern, names = tool_form(legacy)
    kwargs: dict[str, Any] = {
        "profile": "openai",
        "model": MODEL,
        "context_window": window,
        "compaction": compaction,
        "max_output": 1000,
    }
    got = govern(legacy, **kwargs)
    want = govern(modern, **kwargs)
    assert got.messages == old_form(want.messages, names)
    assert got.report.actions == want.report.actions
    assert got.report.tokens_after == want.report.tokens_after
    assert no_tool_form_left(got.messages)
    assert validate_request({"model": MODEL, "messages": got.messages}, api="openai") == []
    if want.messages == modern:
        assert got.messages is legacy  # unchanged: the caller's own list


def test_an_unanswered_call_gets_a_result_in_the_old_form() -> None:
    history = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "function_call": {"name": "get", "arguments": "{}"}},
        {"role": "user", "content": "Well?"},
    ]
    result = govern(history, profile="openai", model=MODEL)
    made = result.messages[2]
    assert made["role"] == "function" and made["name"] == "get"
    assert result.messages[1] is history[1]
    assert any("unanswered call to get" in a.detail for a in result.report.actions)


def test_results_a_stage_changes_stay_in_the_old_form() -> None:
    history = legacy_session(random.Random(3), 30)
    result = govern(history, profile="openai", model=MODEL, max_tool_result_chars=300)
    assert no_tool_form_left(result.messages)
    long = [m for m in history if m["role"] == "function" and len(m["content"]) > 300]
    changed = [m for m in result.messages if m["role"] == "function" and m not in history]
    assert long and len(changed) >= len(long) - 1  # a stray result may be gone
    assert all(m["name"] in ("read_file", "search") and len(m["content"]) < 600 for m in changed)
    assert validate_request({"model": MODEL, "messages": result.messages}, api="openai") == []


#: the profiles that send to OpenAI's API (nanobot's seed pipeline targets it too)
TAKES_IT = {"openai", "nanobot"}


def test_the_profiles_that_take_the_form_govern_it() -> None:
    history = legacy_session(random.Random(1), 3)
    for profile in TAKES_IT:
        result = govern(history, profile=profile, model=MODEL)
        assert no_tool_form_left(result.messages), profile


@pytest.mark.parametrize("profile", sorted(set(PROFILES) - TAKES_IT))
def test_providers_without_the_form_refuse_it_by_name(profile: str) -> None:
    history = legacy_session(random.Random(1), 3)
    with pytest.raises(InputError) as caught:
        govern(history, profile=profile, model=MODEL)
    text = str(caught.value)
    assert "deprecated function calling" in text and "tool_calls" in text
    assert caught.value.path == f"messages[{first_legacy(history)}]"
    provider = PROFILES[profile].provider
    assert provider is not None
    with pytest.raises(InputError, match="does not take"):
        validate(history, provider=provider, model=MODEL)


def test_a_governor_is_govern_on_a_growing_legacy_history() -> None:
    rng = random.Random(11)
    full = legacy_session(rng, 80)
    kwargs: dict[str, Any] = {"profile": "openai", "model": MODEL, "context_window": 16_000}
    governor = Governor(**kwargs)
    history: list[Message] = []
    for message in full:
        history.append(message)
        if message["role"] == "assistant" and "function_call" in message:
            continue  # a request is made after the result (or the reply) arrives
        got = governor.govern(history)
        assert got.messages == govern(history, **kwargs).messages
        assert no_tool_form_left(got.messages)


def test_the_edge_keeps_a_copy_per_message_and_place() -> None:
    history = legacy_session(random.Random(5), 10)
    edge = Legacy()
    first, second = edge.decode(history), edge.decode(list(history))
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert edge.encode(first) == history
    assert all(a is b for a, b in zip(edge.encode(first), history, strict=True))


def test_a_body_counts_its_functions_as_tools() -> None:
    history = legacy_session(random.Random(2), 4)
    bare = govern_request({"model": MODEL, "messages": history}, api="openai")
    declared = govern_request(
        {"model": MODEL, "messages": history, "functions": FUNCTIONS}, api="openai"
    )
    assert declared.report.tokens_before > bare.report.tokens_before


@settings(
    max_examples=examples(full=100, fast=20),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 10_000),
    steps=st.integers(1, 60),
    window=st.sampled_from([6_000, 16_000, 40_000]),
)
def test_governing_a_legacy_output_again_changes_nothing(
    seed: int, steps: int, window: int
) -> None:
    legacy = legacy_session(random.Random(seed), steps)
    kwargs: dict[str, Any] = {"profile": "openai", "model": MODEL, "context_window": window}
    once = govern(legacy, **kwargs).messages
    assert govern(once, **kwargs).messages == once
