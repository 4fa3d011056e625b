"""A stage that declares when it leaves a message alone (stages.base.leaves_alone_if)
joins a provider profile without a rule of its own in the Governor's fast path: the
one-pass check runs its declaration, the Governor's answers stay govern()'s, and the
fast path is still taken wherever the stage has nothing to do."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from levels import examples
from test_governor import _clean_session
from test_probe import VARIANTS, _windows

from context_governor import Governor, govern
from context_governor.counting import KnownCounts
from context_governor.governor import _governor as governor_module
from context_governor.governor import _probe as probe
from context_governor.governor._probe import WALKED, plain_facts, plan
from context_governor.messages import Message
from context_governor.pipeline import Settings, context, resolve_settings
from context_governor.profiles import STRICT_STAGES, get_profile
from context_governor.providers import PROVIDERS
from context_governor.stages._base import Context, check_for, leaves_alone_if, message_check

MARK = "  "  # trailing whitespace the stage removes


def _plain_text(message: Message) -> bool:
    content = message.get("content")
    return not isinstance(content, str) or content == content.rstrip()


@leaves_alone_if(_plain_text)
def trim_trailing(messages: list[Message], ctx: Context) -> list[Message]:
    """Trailing whitespace of string content removed (one action per message)."""
    out = list(messages)
    for i, message in enumerate(messages):
        if not _plain_text(message):
            out[i] = {**message, "content": message["content"].rstrip()}
            ctx.record("trim_trailing", "replace", i, "trailing whitespace removed")
    return out if out != messages else messages


PROFILE = replace(
    get_profile("anthropic"), name="anthropic+trim", stages=(trim_trailing, *STRICT_STAGES)
)


def test_the_declaration_is_read_and_planned() -> None:
    assert message_check(trim_trailing) is _plain_text
    s = resolve_settings(profile=PROFILE, context_window=60_000, max_output=1000)
    p = plan(s)
    assert p.plain  # the fast path stays open for a profile with a declared stage
    base = plan(resolve_settings(profile="anthropic", context_window=60_000, max_output=1000))
    assert p.message_checks == (_plain_text, *base.message_checks)

    def undeclared(messages: list[Message], ctx: Context) -> list[Message]:
        return messages

    closed = resolve_settings(
        profile=replace(PROFILE, stages=(undeclared, *STRICT_STAGES)), context_window=60_000
    )
    assert not plan(closed).plain  # a stage the probe cannot read: the slow, sure path


@pytest.mark.parametrize("marked_every", [0, 3])
def test_the_governor_agrees_with_govern_and_takes_the_fast_path(
    monkeypatch: pytest.MonkeyPatch, marked_every: int
) -> None:
    """Step by step over a session (some tool results with trailing whitespace, or
    none), the Governor's result equals govern()'s; the one-pass check answers for most
    steps, and never for a window holding a message the stage would change."""
    answers: list[tuple[bool, bool]] = []

    def watched(window: list[Message], s: Settings, start: int, resume: Any = None) -> Any:
        answer = plain_facts(window, s, start, resume)
        answers.append((answer is not None, all(_plain_text(m) for m in window)))
        return answer

    monkeypatch.setattr(governor_module, "plain_facts", watched)
    rng = random.Random(5)
    full = _clean_session(rng, 40)
    if marked_every:
        for i, message in enumerate(full):
            if message["role"] == "tool" and i % marked_every == 0:
                full[i] = {**message, "content": message["content"] + MARK}
    gov = Governor(context_window=60_000, max_output=1000, profile=PROFILE)
    trimmed = 0
    for k in range(3, len(full) + 1):
        if full[k - 1]["role"] == "assistant":
            continue
        got = gov.govern(full[:k])
        expected = govern(full[:k], context_window=60_000, max_output=1000, profile=PROFILE)
        assert got.messages == expected.messages
        assert got.report.to_dict() == expected.report.to_dict()
        trimmed += any(a.stage == "trim_trailing" for a in expected.report.actions)
    assert all(clean for fast, clean in answers if fast)  # never over a message it trims
    assert sum(fast for fast, _ in answers) > 10
    assert (trimmed > 0) == bool(marked_every)


# -- the provider profiles' own declarations ---------------------------------------------------


def _declared_stages(s: Settings) -> list[Any]:
    return [stage for stage in (*s.profile.stages, *s.profile.finish) if check_for(stage)]


def test_every_provider_stage_is_walked_or_declared() -> None:
    """No stage of a provider profile is known to the fast path by heart except the ones
    whose rule is the walk's shape (probe.WALKED); the repairs bring their own checks."""
    for name in PROVIDERS:
        s = resolve_settings(profile=name, context_window=60_000)
        for stage in (*s.profile.stages, *s.profile.finish):
            assert stage in WALKED or check_for(stage) is not None, (name, stage)
        assert plan(s).plain


@settings(
    max_examples=examples(full=400, fast=40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(VARIANTS))
def test_each_declared_check_is_a_promise_its_stage_keeps(
    seed: int, variant: dict[str, Any]
) -> None:
    """Each stage on its own, not the combination: on windows of the walk's shape (its
    structure, with no stage's check applied), a stage whose check passes every message
    returns the window itself and records nothing. A check too lax for its stage fails
    here even when another stage's check would hide it in the fast path."""
    rng = random.Random(seed)
    s = resolve_settings(max_output=1000, **variant)
    p = plan(s)
    if not p.plain:
        return
    shape_only = replace(p, settings_checks=(), message_checks=())
    for window in _windows(rng):
        if not probe._plain(window, shape_only, len(window), None, None, None):
            continue
        for stage in _declared_stages(s):
            make = check_for(stage)
            assert make is not None
            ctx = context(s, KnownCounts(s.counter, {}))
            check = make(ctx)
            if check is not None and not all(check(m) for m in window):
                continue
            event(f"kept by {stage.__name__}")
            assert stage(window, ctx) is window, stage.__name__
            assert not ctx.actions and not ctx.notes, stage.__name__
