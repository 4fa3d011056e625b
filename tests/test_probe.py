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
from context_governor.counting import KnownCounts
from context_governor.governor import _governor as governor_module
from context_governor.governor._governor import _ANCHOR
from context_governor.governor._probe import (
    leaves_alone,
    plain_facts,
    plain_window,
    stages_leave_alone,
)
from context_governor.pipeline import Settings, context, resolve_settings, run
from context_governor.policies import CompactionPolicy
from context_governor.providers import PROVIDERS
from context_governor.providers._rules import find_violations
from context_governor.stages._repair import repair_messages

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
    roll = rng.randrange(17)
    if not (_break_fields(rng, m, calls, ids, roll) or _break_order(rng, window, i, m, roll)):
        m["extra_key"] = 1


def _break_fields(
    rng: random.Random,
    m: Message,
    calls: list[dict[str, Any]] | None,
    ids: list[str],
    roll: int,
) -> bool:
    """_break's rolls that change one message's fields; False when ``roll`` is not one
    of them here (each roll is one way, so at most one of the two halves matches)."""
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
    elif roll == 11 and calls:
        calls[0]["function"]["arguments"] = rng.choice(["not json", "{}", '{"a": [1, 2]}'])
    elif roll == 12:
        m["content"] = [{"type": "text", "text": "a part"}, {"type": "image_url", "x": 1}]
    elif roll == 13 and calls:
        m["reasoning_content"] = "thinking"
    else:
        return False
    return True


def _break_order(rng: random.Random, window: list[Message], i: int, m: Message, roll: int) -> bool:
    """_break's rolls that add, drop or move messages around ``window[i]`` (``m``); False
    when ``roll`` is not one of them here."""
    if roll == 6:
        window.insert(i, {"role": m.get("role", "user"), "content": "same role again"})
    elif roll == 7 and m.get("role") == "tool":
        del window[i]  # a call left unanswered
    elif roll == 8 and m.get("role") == "tool":
        m["tool_call_id"] = "call_nowhere"  # an orphan
    elif roll == 9:
        window.append({"role": "assistant", "content": "a trailing reply"})
    elif roll == 10:
        window.insert(i, {"role": "system", "content": "a system message mid-way"})
    elif roll == 14 and m.get("role") == "tool":
        window.insert(i + 1, {"role": "user", "content": "a user right after a tool result"})
    elif roll in (15, 16):
        _repeat_turn(rng, window)
    else:
        return False
    return True


def _repeat_turn(rng: random.Random, window: list[Message]) -> None:
    """A whole turn again, later: its calls' ids used twice, each answered in its block."""
    starts = [k for k, x in enumerate(window) if x.get("role") == "assistant"]
    if starts:
        k = rng.choice(starts)
        end = k + 1
        while end < len(window) and window[end].get("role") == "tool":
            end += 1
        tail = window[-1].get("role")
        bridge = [{"role": "user", "content": "again"}] if tail == "assistant" else []
        window.extend([*bridge, *copy.deepcopy(window[k:end])])


def _nearly_plain(rng: random.Random, window: list[Message]) -> None:
    """Push a window towards the shapes plain_window accepts (texts where a provider
    wants them) and then one step off them, where a provider's policy draws its line."""
    for m in window[1:]:
        if m.get("role") == "assistant" and rng.random() < 0.7:
            m["content"] = rng.choice(["Reading it.", "On it.", " "])
    m = rng.choice(window[1:])
    roll = rng.randrange(6)
    if roll == 0:
        m["name"] = rng.choice(["bad name!", "read_file", "x" * 70, "ok-name"])
    elif roll == 1 and m.get("role") == "tool":
        at = window.index(m) + 1
        window.insert(at, {"role": "user", "content": "a user right after a tool result"})
    elif roll == 2 and m.get("role") == "tool":
        m["content"] = rng.choice(["", "   ", "z" * 900])
    elif roll == 3 and m.get("role") == "assistant":
        m["content"] = rng.choice([None, "", "  "])
    elif roll == 4:
        calls = m.get("tool_calls")
        if isinstance(calls, list) and calls and isinstance(calls[0], dict):
            calls[0]["id"] = rng.choice(["abc123XYZ", "call-1.x:y", "c" * 50, "call_0_0"])
    elif window[-1].get("role") == "tool":
        window.append({"role": "user", "content": rng.choice(["next", "", " "])})


def _plain_ish(rng: random.Random) -> list[Message]:
    """A window built from the shapes plain_window looks for, each field drawn from
    values on both sides of some provider's line (ids in every provider's format and in
    none, names, null/blank/long contents, parallel calls, a user right after a result)."""
    window: list[Message] = [_ANCHOR]
    used: list[str] = []
    for turn in range(rng.randint(1, 3)):
        calls = []
        for k in range(rng.choice([1, 1, 1, 2, 3])):
            call_id = rng.choice(
                [f"call_{turn}_{k}", f"a{turn}{k}bcdefg", f"{turn}{k}-x.y:z", "c" * 45]
                + ([rng.choice(used)] if used and rng.random() < 0.1 else [])
            )
            used.append(call_id)
            name = rng.choice(["read_file", "exec", "bad name!"]) if rng.random() < 0.2 else "grep"
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": '{"path": "a.py"}'},
                }
            )
        content = rng.choice([None, None, "Reading.", "", " "])
        window.append({"role": "assistant", "content": content, "tool_calls": calls})
        for call in calls:
            result: Message = {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": rng.choice(["ok", "", "  ", "w " * 400]),
            }
            if rng.random() < 0.5:
                result["name"] = call["function"]["name"]
            window.append(result)
        roll = rng.random()
        if roll < 0.3:
            window.append({"role": "user", "content": rng.choice(["next", "", " "])})
        elif roll < 0.5:
            window.append({"role": "assistant", "content": rng.choice(["Done.", None, ""])})
            window.append({"role": "user", "content": "go on", "name": rng.choice(["bob", "b b"])})
    return window


def _windows(rng: random.Random) -> list[list[Message]]:
    """Windows as a Governor makes them: the anchor, a model turn and what follows it."""
    if rng.random() < 0.4:
        return [_plain_ish(rng) for _ in range(3)]
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
        roll = rng.random()
        if roll < 0.35:
            for _ in range(rng.randint(1, 2)):
                _break(rng, window)
        elif roll < 0.75:
            _nearly_plain(rng, window)
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


@settings(
    max_examples=examples(full=600, fast=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(VARIANTS))
def test_a_plain_window_is_one_every_stage_leaves_alone(seed: int, variant: dict[str, Any]) -> None:
    """plain_window's one pass against the stages themselves, without a budget (so that
    it is not the trigger check that hides a mistake), then against run()."""
    rng = random.Random(seed)
    s = resolve_settings(max_output=1000, **variant)
    for window in _windows(rng):
        plain = plain_window(window, s)
        event(f"plain_window={plain}")
        if plain:
            counter = KnownCounts(s.counter, {})
            assert stages_leave_alone(window, s, context(s, counter), 0)
            assert _no_op(window, s, KnownCounts(s.counter, {})) or any(
                True for _ in find_violations(s.provider.rules, window, s.target)
            )


def _edge_windows() -> list[list[Message]]:
    """Windows one field away from plain for some provider (ids every provider accepts,
    non-blank texts, then one thing each provider's policy may refuse)."""

    def turn(*ids: str, content: str | None = "Reading.") -> list[Message]:
        calls = [
            {"id": i, "type": "function", "function": {"name": "grep", "arguments": "{}"}}
            for i in ids
        ]
        results = [{"role": "tool", "tool_call_id": i, "content": "found"} for i in ids]
        return [{"role": "assistant", "content": content, "tool_calls": calls}, *results]

    plain = [_ANCHOR, *turn("abcdefgh1")]
    return [
        plain,
        [_ANCHOR, *turn("abcdefgh1", content=None)],
        [_ANCHOR, *turn("abcdefgh1", "abcdefgh2")],  # parallel calls
        [*plain, {"role": "user", "content": "next"}],  # a user right after a result
        [*plain, {"role": "assistant", "content": "Done."}, {"role": "user", "content": "go"}],
        [
            *plain,
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "go", "name": "bob"},
        ],
        [
            *plain,
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "go", "name": "b b"},
        ],
        [_ANCHOR, *turn("abcdefgh1")[:1], {**turn("abcdefgh1")[1], "name": "grep"}],
        [_ANCHOR, *turn("abcdefgh1")[:1], {**turn("abcdefgh1")[1], "content": " "}],
        [_ANCHOR, *turn("call_1")],  # an id some providers rewrite
        [_ANCHOR, *turn("x" * 50)],
        # fields the input repair fixes: a call without its type, calls on a tool result
        [
            _ANCHOR,
            {
                "role": "assistant",
                "content": "Reading.",
                "tool_calls": [{"id": "abcdefgh1", "function": {"name": "f", "arguments": "{}"}}],
            },
            turn("abcdefgh1")[1],
        ],
        [_ANCHOR, turn("abcdefgh1")[0], {**turn("abcdefgh1")[1], "tool_calls": []}],
        [*plain, {"role": "user", "content": "next", "tool_call_id": "abcdefgh1"}],
        [
            *plain,
            {"role": "assistant", "content": "Done.", "tool_calls": []},
            {"role": "user", "content": "go"},
        ],
    ]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
def test_edge_windows_are_plain_only_where_every_stage_agrees(variant: dict[str, Any]) -> None:
    s = resolve_settings(max_output=1000, **variant)
    for window in _edge_windows():
        if plain_window(window, s):
            assert stages_leave_alone(window, s, context(s, KnownCounts(s.counter, {})), 0)


def test_some_edge_windows_are_plain_for_every_provider_that_can_take_them() -> None:
    """Not vacuous: the plain shape is accepted for most providers (this fails when a new
    stage or Policy field turns the one-pass check off: see probe._KNOWN_*)."""
    accepted = {
        name
        for name in PROVIDERS
        for window in _edge_windows()
        if plain_window(window, resolve_settings(profile=name))
    }
    assert len(accepted) >= 8


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

    def counting(
        window: list[Message],
        s: Settings,
        counter: Any,
        clean: int = 0,
        plain: bool = False,
        total: int | None = None,
        checked: range = range(0),
    ) -> bool:
        answer = leaves_alone(
            window, s, counter, clean=clean, plain=plain, total=total, checked=checked
        )
        # the same answer with the window counted and every rule run on every message
        assert answer == leaves_alone(window, s, KnownCounts(s.counter, {}), clean=clean)
        said.append((answer, _no_op(window, s, KnownCounts(s.counter, {}))))
        return answer

    monkeypatch.setattr(governor_module, "leaves_alone", counting)
    plain: list[bool] = []

    def plain_counting(window: list[Message], s: Settings, start: int, resume: Any) -> Any:
        answer = plain_facts(window, s, start, resume)
        assert answer == plain_facts(window, s, start)  # resumed: the whole walk's answer
        plain.append(answer is not None)
        return answer

    monkeypatch.setattr(governor_module, "plain_facts", plain_counting)
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
    assert sum(plain) > 30  # most steps are answered by the one-pass check


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
