"""A Governor's appending step, shortcut by shortcut, against govern().

The step walks only its new messages when the last window was plain (probe.Resume),
runs the per-message rule checks on the anchor and the new messages only, and adds up
the window's total from counts it has. Each of these rests on a claim the Governor
makes about its old turn; here every step of agent-like sessions (plain turns, a user
right after tool results where some providers want a bridge, replies, names, tricky
texts, a function name a provider refuses) is checked twice: the Governor's answer is
govern()'s, and each resumed walk is the whole walk.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from levels import examples
from test_probe import VARIANTS

from context_governor import CompactionPolicy, Governor, govern
from context_governor.governor import _governor as governor_module
from context_governor.governor._probe import Resume, plain_facts
from context_governor.pipeline import Settings

Message = dict[str, Any]

_TEXTS = ["ok", "", 'a "quoted" \\ text', "naïve 日本 😀", "tab\there\nnewline"]


def _step(rng: random.Random, k: int, last: str, bad: float = 0.05) -> list[Message]:
    """One step an agent loop appends after a ``last`` message (the step ends on a user
    or tool message); ``bad``: how often a call's name is one OpenAI refuses, and how
    often a call reuses the id of a call before it."""
    roll = rng.random()
    if roll < 0.6 or (roll < 0.8 and last == "user"):
        calls = [
            {
                # now and then the id of the turn before (a duplicate the walk must see)
                "id": f"call_{k - 1}_0" if j == 0 and rng.random() < bad else f"call_{k}_{j}",
                "type": "function",
                "function": {
                    "name": "bad name!" if rng.random() < bad else rng.choice(["grep", "read"]),
                    "arguments": json.dumps({"path": rng.choice(_TEXTS)}),
                },
            }
            for j in range(rng.choice([1, 1, 1, 2]))
        ]
        content = rng.choice([None, None, "Reading.", rng.choice(_TEXTS)])
        out: list[Message] = [{"role": "assistant", "content": content, "tool_calls": calls}]
        for call in calls:
            result: Message = {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": rng.choice(_TEXTS) + " " + "w " * rng.choice([5, 200]),
            }
            if rng.random() < 0.5:
                result["name"] = call["function"]["name"]
            out.append(result)
        return out
    if roll < 0.8:
        return [{"role": "user", "content": rng.choice(["next", *_TEXTS])}]
    return [
        {"role": "assistant", "content": rng.choice(["Done.", *_TEXTS])},
        {"role": "user", "content": "go on", **({"name": "bob"} if rng.random() < 0.3 else {})},
    ]


def _checked_walks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Make every resumed walk of the Governor also walk the whole window and compare."""
    resumed: list[bool] = []

    def walk(window: list[Message], s: Settings, start: int, resume: Resume | None) -> Any:
        answer = plain_facts(window, s, start, resume)
        if resume is not None:
            resumed.append(True)
            assert answer == plain_facts(window, s, start), (resume, window)
        return answer

    monkeypatch.setattr(governor_module, "plain_facts", walk)
    return resumed


@settings(
    max_examples=examples(full=300, fast=40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    variant=st.sampled_from(VARIANTS),
    immutable=st.booleans(),
)
def test_each_appending_step_is_govern_and_each_resumed_walk_the_whole_walk(
    monkeypatch: pytest.MonkeyPatch, seed: int, variant: dict[str, Any], immutable: bool
) -> None:
    resumed = _checked_walks(monkeypatch)
    rng = random.Random(seed)
    kwargs: dict[str, Any] = {"context_window": 128_000, "max_output": 1000, **variant}
    gov = Governor(immutable_messages=immutable, **kwargs)
    history: list[Message] = [{"role": "user", "content": "Fix the bug."}]
    for k in range(8):
        history.extend(_step(rng, k, history[-1]["role"]))
        got, expected = gov.govern(history), govern(history, **kwargs)
        assert got.messages == expected.messages
        assert got.report.to_dict() == expected.report.to_dict()
    event(f"resumed walks: {min(len(resumed), 4)}")


def test_resumed_walks_happen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: a plain session resumes its walk at most steps. (Its results end in a
    blank, which the lossless shrink removes: a step with a result to shrink is not plain,
    so the shrink is off here.)"""
    resumed = _checked_walks(monkeypatch)
    rng = random.Random(5)
    gov = Governor(
        profile="openai",
        context_window=128_000,
        immutable_messages=True,
        compaction=CompactionPolicy(shrink=False),
    )
    history: list[Message] = [{"role": "user", "content": "Fix the bug."}]
    for k in range(30):
        history.extend(_step(rng, k, history[-1]["role"], bad=0))
        gov.govern(history)
    assert len(resumed) >= 20


@pytest.mark.parametrize("immutable", [False, True])
def test_a_bad_function_name_in_a_new_step_is_reported(immutable: bool) -> None:
    """The per-message rules run on every new message: OpenAI refuses this call's name
    (a violation govern() reports); the step after it must not vouch for it."""
    gov = Governor(profile="openai", context_window=128_000, immutable_messages=immutable)
    history: list[Message] = [{"role": "user", "content": "Fix the bug."}]
    for k in range(3):
        history.extend(_step(random.Random(k), k, history[-1]["role"], bad=0))
        gov.govern(history)
    call = {"id": "c9", "type": "function", "function": {"name": "bad name!", "arguments": "{}"}}
    history.append({"role": "assistant", "content": None, "tool_calls": [call]})
    history.append({"role": "tool", "tool_call_id": "c9", "content": "x"})
    got = gov.govern(history)
    expected = govern(history, profile="openai", context_window=128_000)
    assert [v["rule"] for v in expected.report.violations] == ["OA-7b"]
    assert got.report.to_dict() == expected.report.to_dict()


@pytest.mark.parametrize("immutable", [False, True])
def test_a_result_is_not_changed_by_later_steps_nor_they_by_it(immutable: bool) -> None:
    """The caller's list grows in place and the Governor grows its own state in place:
    a returned list is the caller's own (later steps do not grow it, and what the caller
    does to it does not reach later answers)."""
    rng = random.Random(2)
    gov = Governor(profile="openai", context_window=128_000, immutable_messages=immutable)
    history: list[Message] = [{"role": "user", "content": "Fix the bug."}]
    results = []
    for k in range(12):
        history.extend(_step(rng, k, history[-1]["role"], bad=0))
        result = gov.govern(history)
        if result.messages is history:
            continue  # the pipeline changed nothing and handed back the caller's own list
        if k % 3 == 0:
            result.messages.append({"role": "user", "content": "the caller's own"})
        results.append((result, list(result.messages)))
    assert len(results) >= 8  # the appending path answered most steps
    for result, snapshot in results:
        assert result.messages == snapshot
    assert (
        gov.govern(history).messages
        == govern(history, profile="openai", context_window=128_000).messages
    )
