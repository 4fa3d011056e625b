"""The ``developer`` role (OpenAI's name for system instructions) at the edge (roles.py).

A history whose system messages are written as developer messages is governed exactly
as the same history with system messages: same output (roles aside), same report plus
the edge's entries. Where the provider takes the role (openai) each developer message
the stages left alone goes out as the caller's own dict; elsewhere it goes out as a
system message, reported. A Governor gives govern()'s answer at every step, and keeps
its appending steps incremental (the pipeline does not run on them).
"""

from __future__ import annotations

import random
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from test_governor_step import _step
from transcripts import cases

from context_governor import Governor, govern, govern_request
from context_governor.errors import InputError
from context_governor.governor import _governor as governor_module
from context_governor.profiles import PROFILES

Message = dict[str, Any]

PROFILE_NAMES = sorted(PROFILES)


def _as_developers(messages: list[Message], rng: random.Random) -> tuple[list[Message], set[int]]:
    """``messages`` with some system messages written as developer messages (new dicts;
    the rest are the same objects), and the indices changed."""
    out: list[Message] = []
    changed: set[int] = set()
    for i, m in enumerate(messages):
        if isinstance(m, dict) and m.get("role") == "system" and rng.random() < 0.7:
            out.append({**m, "role": "developer"})
            changed.add(i)
        else:
            out.append(m)
    return out, changed


def _systems(messages: list[Message]) -> list[Message]:
    return [{**m, "role": "system"} if m.get("role") == "developer" else m for m in messages]


def _kwargs(case: dict[str, Any], profile: str) -> dict[str, Any]:
    return {
        "tools": case["tools"],
        "profile": profile,
        "model": "gpt-4o",
        "context_window": case["context_window"],
    }


@settings(
    max_examples=examples(full=400, fast=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=cases(quirks=True), profile=st.sampled_from(PROFILE_NAMES), seed=st.integers(0, 99))
def test_developer_messages_are_governed_as_system_messages(
    case: dict[str, Any], profile: str, seed: int
) -> None:
    systems = case["messages"]
    developers, changed = _as_developers(systems, random.Random(seed))
    kwargs = _kwargs(case, profile)
    plain = govern(systems, **kwargs)
    got = govern(developers, **kwargs)

    # The same output, roles aside.
    assert _systems(got.messages) == plain.messages
    # The same report, after the edge's own entries (which describe the input).
    edge = [a for a in got.report.actions if "'developer' sent as 'system'" in a.detail]
    assert got.report.actions[len(edge) :] == plain.report.actions
    assert {a.index for a in edge} <= changed
    accepted = PROFILES[profile].provider in (None, "openai")
    if not accepted:
        assert not any(m.get("role") == "developer" for m in got.messages)
        assert {a.index for a in edge} == changed
        return
    # Where the role is taken: each developer message the stages left alone goes out as
    # the caller's own dict, at the place its system twin has in the plain output.
    for j, sent in enumerate(plain.messages):
        for i in changed:
            if sent is systems[i]:
                assert got.messages[j] is developers[i]
    # ... and one the stages changed is sent as a system message, reported.
    kept = {id(m) for m in got.messages}
    assert {a.index for a in edge} == {i for i in changed if id(developers[i]) not in kept}
    if got.messages == developers:
        assert got.messages is developers  # an unchanged history is the input list itself


@settings(
    max_examples=examples(full=200, fast=40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=cases(quirks=True), profile=st.sampled_from(PROFILE_NAMES), seed=st.integers(0, 99))
def test_a_chat_completions_body_gets_governs_answer(
    case: dict[str, Any], profile: str, seed: int
) -> None:
    """govern_request's Chat Completions edge went around the developer edge: DeepSeek
    got role developer (a 400 there) behind an inserted user message."""
    developers, _ = _as_developers(case["messages"], random.Random(seed))
    kwargs = _kwargs(case, profile)
    body = {"model": kwargs["model"], "messages": developers, "tools": kwargs["tools"]}
    if kwargs["tools"] is None:
        del body["tools"]
    # the body edge takes a trailing assistant message for a prefill
    prefill = bool(developers) and developers[-1].get("role") == "assistant"
    plain = govern(developers, prefill=prefill, **kwargs)
    got = govern_request(
        body, api="openai", profile=profile, context_window=kwargs["context_window"]
    )
    assert got.body["messages"] == plain.messages
    assert got.report.actions == plain.report.actions


def test_openai_keeps_the_role_and_others_report_the_system_message() -> None:
    history = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    openai = govern(history, profile="openai", model="gpt-4o")
    assert openai.messages is history and not openai.report.actions
    for profile in ("deepseek", "qwen", "anthropic", "mistral"):
        other = govern(history, profile=profile, model="gpt-4o")
        assert other.messages[0] == {"role": "system", "content": "Be brief."}
        (action,) = other.report.actions
        assert (action.stage, action.kind, action.index) == ("input", "repair", 0)
        assert f"{profile} has no developer role" in action.detail
        assert other.report.ok


def test_a_developer_message_a_repair_changes_goes_out_as_a_reported_system_message() -> None:
    history = [
        {"role": "developer", "content": "Be brief \ud800."},  # a lone surrogate: repaired
        {"role": "user", "content": "hi"},
    ]
    result = govern(history, profile="openai", model="gpt-4o")
    assert result.messages[0] == {"role": "system", "content": "Be brief \ufffd."}
    details = [a.detail for a in result.report.actions]
    assert "changed by a repair" in details[0] and details[0].startswith("messages[0].role")
    assert history[0]["content"] == "Be brief \ud800."  # the input is never modified


@pytest.mark.parametrize("role", ["Developer", "dev"])
def test_other_unknown_roles_are_still_refused(role: str) -> None:
    with pytest.raises(InputError, match="unknown role"):
        govern([{"role": role, "content": "x"}], profile="openai")


def test_the_function_role_is_named_where_it_cannot_be_governed() -> None:
    """validate_request of a body of another API, say: check_messages alone refuses it,
    naming OpenAI's deprecated form and what to send instead (govern() takes it for
    OpenAI: tests/test_legacy_functions.py)."""
    from context_governor.messages.inputs import check_messages

    with pytest.raises(InputError, match="unknown role") as refused:
        check_messages([{"role": "function", "content": "x"}])
    assert "tool_calls" in str(refused.value)


@settings(
    max_examples=examples(full=200, fast=30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    profile=st.sampled_from(["openai", "anthropic", "deepseek", "gemini", "nanobot"]),
    immutable=st.booleans(),
    late=st.integers(0, 6),
)
def test_a_governor_with_developer_messages_is_govern(
    seed: int, profile: str, immutable: bool, late: int
) -> None:
    """At every step, including the one where a developer message first appears (at
    step ``late``: appended, or put in place of the first message)."""
    rng = random.Random(seed)
    kwargs: dict[str, Any] = {"profile": profile, "context_window": 8_000, "max_output": 500}
    gov = Governor(immutable_messages=immutable, **kwargs)
    history: list[Message] = [{"role": "user", "content": "Fix the bug."}]
    for k in range(7):
        if k == late:
            developer = {"role": "developer", "content": f"Rule {k}: be brief."}
            if rng.random() < 0.5:
                history.append(developer)
            else:
                history = [developer, *history[1:]]
        history.extend(_step(rng, k, history[-1]["role"]))
        got, expected = gov.govern(history), govern(history, **kwargs)
        assert got.messages == expected.messages
        ids = {id(m) for m in history}  # the caller's own dicts go out as they came
        assert [id(m) in ids for m in got.messages] == [id(m) in ids for m in expected.messages]
        assert got.report.to_dict() == expected.report.to_dict()


def _pipeline_runs(history_steps: list[list[Message]], first: Message) -> int:
    """How many times a Governor (with the promise) runs the pipeline over a session
    that opens with ``first`` and appends ``history_steps``."""
    gov = Governor(profile="openai", context_window=128_000, immutable_messages=True)
    history: list[Message] = [first, {"role": "user", "content": "Fix the bug."}]
    with mock.patch.object(governor_module, "run", wraps=governor_module.run) as run:
        for step in history_steps:
            history = [*history, *step]
            result = gov.govern(history)
            assert result.messages[0] is first
        return run.call_count


def test_a_developer_message_keeps_the_governor_incremental() -> None:
    rng = random.Random(7)
    steps: list[list[Message]] = []
    last = "user"
    for k in range(30):
        steps.append(_step(rng, k, last, bad=0))
        last = steps[-1][-1]["role"]
    with_system = _pipeline_runs(steps, {"role": "system", "content": "Be brief."})
    with_developer = _pipeline_runs(steps, {"role": "developer", "content": "Be brief."})
    assert with_developer == with_system
    assert with_system < 10  # not vacuous: most steps never run the pipeline
