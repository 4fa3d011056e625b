"""The one pass of a Governor's appending step: probe.plain_facts and the compiled plan.

plain_facts is plain_window's walk, which on a yes also gives the new messages' byte
bounds and call ids; the plan skips the provider checks a plain window already rules
out. Both are shortcuts of something slower that stays the reference:

* the bounds are ``counting.message_bound`` exactly (UTF-8 bytes of the counted text, the
  tool calls' JSON included, plus the overhead), on texts with quotes, backslashes,
  control characters, non-ASCII and astral characters;
* the ids are the new messages' call ids;
* every check in ``IMPLIED_BY_PLAIN`` finds nothing on any plain window, for every
  provider variant, so skipping it never hides a violation; the cheap answer with the
  plan's checks is the answer with all the provider's rules.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from levels import examples
from test_probe import VARIANTS, _windows

from context_governor.counting import ExactCounter, KnownCounts, message_bound
from context_governor.governor._probe import (
    IMPLIED_BY_PLAIN,
    Resume,
    leaves_alone,
    per_message,
    plain_facts,
    plain_window,
    plan,
    unwrapped,
)
from context_governor.pipeline import resolve_settings
from context_governor.providers import PROVIDERS, checks
from context_governor.providers._rules import find_violations

Message = dict[str, Any]

#: Texts whose JSON or UTF-8 size differs from their length in every way that can.
_TRICKY = [
    "plain",
    "",
    'say "hi"',
    "back\\slash",
    "tab\tnew\nline\r",
    "bell\x07 nul\x00 esc\x1b del\x7f",
    "naïve café",
    "日本語のテキスト",
    "emoji 😀 and 𝕏",
    "\u2028 line separator \u2029",
    '{"path": "a.py", "q": "\\"x\\""}',
]


def _spice(rng: random.Random, window: list[Message]) -> list[Message]:
    """A copy of ``window`` with some of its texts (contents, names, call arguments and
    names) replaced by tricky ones; ids are left alone (a provider's id format decides
    whether the window is plain, which the other tests cover)."""
    out = copy.deepcopy(window)
    for message in out[1:]:
        if isinstance(message.get("content"), str) and rng.random() < 0.5:
            message["content"] = rng.choice(_TRICKY)
        if isinstance(message.get("name"), str) and rng.random() < 0.3:
            message["name"] = rng.choice(_TRICKY)
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                if rng.random() < 0.6:
                    function["arguments"] = rng.choice(_TRICKY)
                if rng.random() < 0.2:
                    function["name"] = rng.choice(_TRICKY)
    return out


def _all_windows(rng: random.Random) -> list[list[Message]]:
    windows = _windows(rng)
    return windows + [_spice(rng, w) for w in windows]


def _ids(messages: list[Message]) -> list[str]:
    return [
        str(call["id"])
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("tool_calls"), list)
        for call in m["tool_calls"]
    ]


_COUNTER = resolve_settings(profile="openai").counter


def test_the_reference_counter_has_byte_bounds() -> None:
    """Not vacuous: message_bound gives numbers for the counter the tests compare with."""
    assert isinstance(_COUNTER, ExactCounter) and _COUNTER.bpe_exact
    assert message_bound(_COUNTER, {"role": "user", "content": "x"}) == 5


@settings(
    max_examples=examples(full=600, fast=80),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(VARIANTS))
def test_plain_facts_are_plain_window_and_message_bound(seed: int, variant: dict[str, Any]) -> None:
    rng = random.Random(seed)
    s = resolve_settings(max_output=1000, **variant)
    for window in _all_windows(rng):
        start = rng.randint(0, len(window))
        facts = plain_facts(window, s, start)
        event(f"plain={facts is not None}")
        assert (facts is not None) == plain_window(window, s)
        if facts is None:
            continue
        bounds, ids = facts
        assert bounds == [message_bound(_COUNTER, m) for m in window[start:]]
        assert ids == _ids(window[start:])


@settings(
    max_examples=examples(full=600, fast=80),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(VARIANTS))
def test_the_checks_a_plain_window_skips_find_nothing_on_it(
    seed: int, variant: dict[str, Any]
) -> None:
    """Every implied check, whether or not this provider uses it, on every plain window;
    and the cheap answer with the plan's checks is the one with every rule."""
    rng = random.Random(seed)
    s = resolve_settings(context_window=128_000, max_output=1000, **variant)
    for window in _all_windows(rng):
        if not plain_window(window, s):
            continue
        p = plan(s)
        skipped = [c for c in p.checks if c not in p.plain_checks]  # e.g. hoisted ones
        for check in [*IMPLIED_BY_PLAIN, *skipped]:
            assert next(iter(check(window)), None) is None, check.__name__
        violations = list(find_violations(s.provider.rules, window, s.target))
        said = leaves_alone(window, s, KnownCounts(s.counter, {}), clean=len(window))
        event(f"violations={bool(violations)} yes={said}")
        assert not (said and violations)


def test_spiced_plain_windows_occur() -> None:
    """Not vacuous: tricky texts still give plain windows (and bounds above their length)."""
    rng = random.Random(3)
    s = resolve_settings(profile="openai")
    plain = grown = 0
    for _ in range(200):
        for window in _all_windows(rng):
            facts = plain_facts(window, s, 1)
            if facts is not None:
                plain += 1
                grown += any(
                    b > len(str(m.get("content") or "")) + 4
                    for b, m in zip(facts[0], window[1:], strict=True)
                )
    assert plain > 50 and grown > 20


def test_the_plan_is_made_once_per_settings_and_skips_only_implied_checks() -> None:
    s = resolve_settings(profile="openai", context_window=128_000)
    p = plan(s)
    assert plan(s) is p
    assert set(p.checks) - set(p.plain_checks) <= IMPLIED_BY_PLAIN
    assert len(p.plain_checks) < len(p.checks)  # the pairing rules are among the skipped
    rules = [r.check for r in s.provider.rules if r.applies(s.target) and r.when(s.target)]
    assert list(p.checks) == rules
    other = resolve_settings(profile="openai", context_window=128_000)
    assert plan(other) is not p and plan(other) == p


@pytest.mark.parametrize("window_size", [None, 2_000])
def test_a_known_total_decides_as_the_counted_one(window_size: int | None) -> None:
    """leaves_alone with the total a Governor adds up answers as with its own count."""
    s = resolve_settings(profile="openai", context_window=window_size, max_output=200)
    window: list[Message] = [
        {"role": "user", "content": "(continued)"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        # no trailing blank: the cache policy's lossless shrink would change the result
        {"role": "tool", "tool_call_id": "c1", "content": "x " * 899 + "x"},
    ]
    counter = KnownCounts(s.counter, {})
    total = counter.prompt_tokens(window, s.tools)
    assert plain_window(window, s)
    counted = leaves_alone(window, s, counter, plain=True)
    assert leaves_alone(window, s, None, plain=True, total=total) == counted
    assert counted == (window_size is None)  # over the trigger at 2k: not shown cheaply
    assert not leaves_alone(window, s, None, plain=True)  # no total, no counter: a no


def _walk_state(window: list[Message]) -> Resume:
    """Where the walk stands at the end of a plain window: its last role, its call ids."""
    return Resume(window[-1]["role"], frozenset(_ids(window)))


@settings(
    max_examples=examples(full=600, fast=80),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(VARIANTS))
def test_a_resumed_walk_is_the_whole_walk(seed: int, variant: dict[str, Any]) -> None:
    """A plain window's first part, then anything (another window's messages, plain or
    broken): walking only the rest from where the first part left the walk gives the
    answer, bounds and ids of the walk over everything."""
    rng = random.Random(seed)
    s = resolve_settings(max_output=1000, **variant)
    windows = _all_windows(rng)
    for window in windows:
        for k in range(1, len(window) + 1):
            head = window[:k]
            if not plain_window(head, s):
                continue
            tail = rng.choice(windows)[1:]
            joined = [*head, *tail]
            resumed = plain_facts(joined, s, k, _walk_state(head))
            event(f"resumed plain={resumed is not None}")
            assert resumed == plain_facts(joined, s, k)


#: Instances of the check factories with other arguments than the providers use (a
#: closure is classed by its factory's code, so every instance must be per-message).
_OTHER_INSTANCES = [
    checks.name_pattern("[a-z]{1,3}", roles=("user",)),
    checks.call_name_pattern("[a-z]+"),
    checks.call_id_format("call_[0-9_]+"),
    checks.unknown_keys(frozenset({"role", "content"})),
    checks.key_present("name", roles=("user", "tool")),
    checks.reasoning_missing(tool_call_turns_only=True),
    checks.blank_content(except_tool_call_assistants=False, except_last_assistant=True),
    checks.blank_content(),
    checks.first_is_not_user(tool_call_assistant_ok=True),
    checks.last_role_not_in(("assistant",)),
]


@settings(
    max_examples=examples(full=400, fast=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(VARIANTS))
def test_per_message_checks_look_at_each_message_alone(seed: int, variant: dict[str, Any]) -> None:
    """Every check classed as per-message finds on a list exactly what it finds on each
    message alone (the providers' own instances, on plain, near-plain and broken windows),
    so a message that passed it once passes it in any later window."""
    rng = random.Random(seed)
    s = resolve_settings(max_output=1000, **variant)
    local = [*plan(s).local, *(c for c in _OTHER_INSTANCES if per_message(c))]
    for window in _all_windows(rng):
        for check in local:
            # which messages are found (a hoisted check adds each one's turn, a position)
            whole = [(i, _unturned(fields)) for i, fields in check(window)]
            alone = [
                (i, _unturned(fields)) for i, m in enumerate(window) for _, fields in check([m])
            ]
            assert whole == alone


def _unturned(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if k not in ("turn", "next_turn")}


def test_hoisted_checks_are_classed_as_the_checks_they_wrap() -> None:
    """Anthropic and Bedrock wrap their rules in checks.hoisted: their plain windows skip
    the pairing checks a plain window implies, and their per-message checks (the call id
    format, Anthropic's) run on the new messages only, as OpenAI's do."""
    for name in ("anthropic", "bedrock"):
        p = plan(resolve_settings(profile=name, context_window=200_000))
        hoisted = [c for c in p.checks if unwrapped(c) is not c]
        assert hoisted
        skipped = [c for c in p.checks if c not in p.plain_checks]
        assert any(unwrapped(c) is checks.duplicate_call_ids for c in skipped)
        assert all(unwrapped(c) in IMPLIED_BY_PLAIN for c in skipped)
    anthropic = plan(resolve_settings(profile="anthropic", context_window=200_000))
    assert any(unwrapped(c) is not c for c in anthropic.local)


def test_most_providers_have_per_message_checks() -> None:
    """Not vacuous: the classification applies to the providers' rules."""
    with_local = [name for name in PROVIDERS if plan(resolve_settings(profile=name)).local]
    assert len(with_local) >= 6
    assert all(per_message(c) for c in plan(resolve_settings(profile="openai")).plain_checks)


def test_the_old_turn_is_not_checked_again_but_the_anchor_and_new_messages_are() -> None:
    s = resolve_settings(profile="openai", context_window=128_000)
    call = {"id": "c1", "type": "function", "function": {"name": "bad name!", "arguments": "{}"}}
    bad_turn: list[Message] = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
    ]
    window = [{"role": "user", "content": "(continued)"}, *bad_turn]
    assert not leaves_alone(window, s, None, total=10)  # OA-7b: the call's name
    # a window whose old turn (1:3) is vouched for, here wrongly: its finding is not seen
    assert leaves_alone(window, s, None, total=10, checked=range(1, 3))
    # but the same message as a new one is
    assert not leaves_alone(window, s, None, total=10, checked=range(2, 3))
