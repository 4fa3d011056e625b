"""A Governor's first call decided on byte bounds, its exact run (and the encoding build)
left to a thread of its own.

Constructing a Governor builds no encoding (the counter builds it on its first count).
A first call whose UTF-8 bounds keep the request under the cache policy's trigger runs
the pipeline on those bounds and returns its messages; the exact run, made meanwhile in
a thread, makes the report when it is first read and the state the next step continues
from. These tests hold it to its promises:

- it answers what govern() answers, messages and report, near the trigger too (where the
  bounds and the exact counts fall on either side of it, and the bounds cannot decide);
- the state it leaves is the one an exact first call leaves;
- constructing builds no encoding, and a first call on bounds builds none on the
  caller's thread;
- a bound stays a bound when the encoding cannot be built (the chars/4 fallback);
- a mismatch between the two runs (impossible by the threshold argument) is never
  silent: reading that report raises, and so does the next call if it was never read.
"""

from __future__ import annotations

import copy
import random
import threading
import time
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import CompactionPolicy, Governor, govern, profiles
from context_governor import counting as tokens
from context_governor.counting import _encodings as encodings
from context_governor.counting import exact_counter, message_bound
from context_governor.governor import _governor as governor_module
from context_governor.governor import _late as late
from context_governor.pipeline import GovernResult

Message = dict[str, Any]
MODELS = ["gpt-4o", None]  # o200k_base and cl100k_base
MAX_OUTPUT = 1000
WINDOW = 1_000_000  # the policies below set the trigger in tokens
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository (UTF-8, ½ MB at most).",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def _session(rng: random.Random, steps: int) -> list[Message]:
    """A coding-agent history whose messages tokenize at 1 to 4 bytes a token (ASCII
    words, CJK, accents), so the bounds sit at varying distances above the exact counts."""
    words = ["def", "return", "self", "x", "+=", "1", "(", ")", "中文", "naïve", "tokenizer"]
    msgs: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the tokenizer, " + rng.choice(words)},
    ]
    for step in range(steps):
        call = {
            "id": f"call_{step}",
            "type": "function",
            "function": {"name": "read_file", "arguments": f'{{"path": "m{step}.py"}}'},
        }
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        size = rng.choice([5, 60, 400])
        text = " ".join(rng.choice(words) for _ in range(size))
        msgs.append(
            {"role": "tool", "tool_call_id": call["id"], "name": "read_file", "content": text}
        )
    if rng.random() < 0.3:  # an orphan result: a repair the run on bounds must make too
        msgs.append({"role": "tool", "tool_call_id": "call_gone", "content": "stale"})
    return msgs


def _policy(trigger: int) -> CompactionPolicy:
    """A cache policy whose trigger is ``trigger`` tokens and which compacts readily."""
    return CompactionPolicy(
        trigger=trigger,
        target=max(2, trigger // 2),
        min_savings=16,
        keep_recent=2,
        min_chars=10,
        price_aware=False,
    )


def _same(a: GovernResult, b: GovernResult) -> None:
    assert a.messages == b.messages
    assert a.report.to_dict() == b.report.to_dict()


def _on_bounds(result: GovernResult) -> bool:
    return isinstance(result, late.ExactLater)


@settings(
    max_examples=examples(full=200, fast=30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    where=st.integers(0, 100),
    near_bound=st.booleans(),
    model=st.sampled_from(MODELS),
    promise=st.booleans(),
    with_tools=st.booleans(),
)
def test_a_first_call_near_the_trigger_is_govern(
    seed: int,
    where: int,
    near_bound: bool,
    model: str | None,
    promise: bool,
    with_tools: bool,
) -> None:
    """The trigger is drawn near the exact total or near the bound total (within 10%):
    the first call (on bounds where they decide, exactly where they do not) gives
    govern()'s messages and report, read after the call, and so does the next step."""
    rng = random.Random(seed)
    full = _session(rng, rng.randint(1, 10))
    tools = TOOLS if with_tools else None
    history = full[: len(full) - 2] if len(full) > 4 else full
    exact = govern(history, model=model, tools=tools).report.tokens_after
    counter = exact_counter(model)
    bound = sum(message_bound(counter, m) or 0 for m in history)
    bound += tokens.tools_bound(counter, tools) or 0
    near = bound if near_bound else exact
    low, high = int(near * 0.9), int(near * 1.1) + 8
    trigger = low + (high - low) * where // 100
    policy = _policy(trigger)
    args: dict[str, Any] = {
        "model": model,
        "context_window": WINDOW,
        "max_output": MAX_OUTPUT,
        "compaction": policy,
        "tools": tools,
    }
    gov = Governor(immutable_messages=promise, **args)
    got = gov.govern(history)
    event(f"first call on bounds: {_on_bounds(got)}")
    _same(got, govern(history, **args))
    grown = [*history, *full[len(history) :]]
    if grown != history:
        _same(gov.govern(grown), govern(grown, **args))


def test_most_first_calls_of_the_differential_sessions_take_the_bounds() -> None:
    """The sessions of tests/test_governor.py's properties start with a short history:
    its first call is decided on bounds whenever the Governor has a budget. Counted over
    a fixed sample (with the settings those tests draw), every call checked against
    govern()."""
    from test_governor import SETTINGS_CHOICES, _clean_session

    taken = total = 0
    for seed in range(24):
        rng = random.Random(seed)
        full = _clean_session(rng, rng.randint(5, 20))
        window = rng.choice([6_000, 12_000, 20_000, 60_000, None])
        choice = SETTINGS_CHOICES[seed % len(SETTINGS_CHOICES)]
        gov = Governor(context_window=window, max_output=1000, **choice)
        for end in range(2, len(full) + 1, 3):
            history = full[:end]
            result = gov.govern(history)
            if end == 2:
                total += 1
                taken += _on_bounds(result)
            _same(result, govern(history, context_window=window, max_output=1000, **choice))
    assert total == 24
    assert taken >= 10, f"{taken} of {total} first calls on bounds"


@pytest.mark.parametrize("model", MODELS)
def test_the_state_a_first_call_on_bounds_leaves_is_the_exact_ones(model: str | None) -> None:
    """Tokens, replay, newest turn and call ids: what the next step continues from."""
    history = _session(random.Random(5), 6)
    args: dict[str, Any] = {"model": model, "context_window": 60_000, "max_output": MAX_OUTPUT}
    on_bounds = Governor(**args)
    exact = Governor(**args)
    exact._first_on_bounds = False
    assert _on_bounds(on_bounds.govern(history))
    assert not _on_bounds(exact.govern(history))
    a, b = on_bounds._state, exact._state
    assert a is not None and b is not None
    on_bounds._settle(a)
    assert a.first is None
    assert a.tokens == b.tokens
    assert a.turn == b.turn
    assert a.call_ids == b.call_ids
    assert a.sent == b.sent
    assert a.frozen == b.frozen
    assert a.replay is not None and b.replay is not None
    assert a.replay.plan == b.replay.plan and a.replay.total == b.replay.total


def test_a_history_over_the_trigger_counts_exactly_as_before() -> None:
    """Bounds that cannot decide (a resumed long session): the first call runs exactly."""
    history = _session(random.Random(2), 12)
    args: dict[str, Any] = {"context_window": WINDOW, "compaction": _policy(200)}
    result = Governor(**args).govern(history)
    assert not _on_bounds(result)
    _same(result, govern(history, **args))


@pytest.fixture
def no_encodings(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A process that has built no encoding yet (the caches emptied for this test)."""
    monkeypatch.setattr(encodings, "_COUNTING", {})
    monkeypatch.setattr(encodings, "_ENCODINGS", {})
    profiles._cached_exact_counter.cache_clear()
    yield
    profiles._cached_exact_counter.cache_clear()  # drop counters built in the empty caches


def test_constructing_builds_no_encoding_and_a_first_call_on_bounds_none_on_the_caller(
    no_encodings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[tuple[str, str]] = []
    monkeypatch.setattr(
        encodings, "build_hooks", [lambda name: built.append((name, threading.current_thread().name))]
    )
    history = _session(random.Random(1), 4)
    gov = Governor(model="gpt-4o", context_window=128_000, tools=TOOLS)
    assert built == []
    result = gov.govern(history)
    assert _on_bounds(result)
    assert built == []  # the thread waits before it starts: the call has returned by then
    deadline = time.monotonic() + 30
    while not built and time.monotonic() < deadline:
        time.sleep(0.01)
    assert built and built[0][1] == "context-governor-first-call"
    assert "o200k_base" in {name for name, _ in built}
    _same(result, govern(history, model="gpt-4o", context_window=128_000, tools=TOOLS))


def test_a_bound_stays_a_bound_when_no_encoding_can_be_built(
    no_encodings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counter falls back to chars/4 (never above the bytes): the first call is still
    decided on bounds, and it is still govern()'s answer, near the trigger too."""
    monkeypatch.setattr(encodings, "_build_fast", lambda name: None)
    monkeypatch.setattr(encodings, "_build_encoding", lambda name: None)
    for seed in range(6):
        history = _session(random.Random(seed), 5)
        exact = govern(history, model="gpt-4o").report.tokens_after
        assert govern(history, model="gpt-4o").report.counter == "estimate:chars/4"
        for trigger in (exact - 1, exact, exact * 2, exact * 5):
            args: dict[str, Any] = {
                "model": "gpt-4o",
                "context_window": WINDOW,
                "compaction": _policy(trigger),
            }
            _same(Governor(**args).govern(history), govern(history, **args))
    result = Governor(model="gpt-4o", context_window=WINDOW).govern(_session(random.Random(0), 3))
    assert _on_bounds(result)
    assert result.report.counter == "estimate:chars/4"  # the exact run, ended in this test


def _break_the_exact_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the exact run (the one with a KnownCounts counter) drop the last message."""
    original = governor_module.run

    def run(messages: list[Message], s: Any, counter: Any = None) -> Any:
        result, ctx = original(messages, s, counter)
        if isinstance(counter, governor_module._KnownCounts):
            result = GovernResult(messages=result.messages[:-1], report=result.report)
        return result, ctx

    monkeypatch.setattr(governor_module, "run", run)


def test_a_mismatch_raises_when_the_report_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    history = _session(random.Random(3), 3)
    gov = Governor(context_window=60_000)
    _break_the_exact_run(monkeypatch)
    result = gov.govern(history)
    assert _on_bounds(result)
    with pytest.raises(RuntimeError, match="differ from the exact run"):
        result.report  # noqa: B018
    monkeypatch.undo()
    # the report was read (the error seen): the next call governs exactly, and so do
    # first calls from then on
    grown = [*history, {"role": "user", "content": "go on"}]
    _same(gov.govern(grown), govern(grown, context_window=60_000))
    gov.reset()
    assert not _on_bounds(gov.govern(history))


def test_an_unread_mismatch_raises_at_the_next_call(monkeypatch: pytest.MonkeyPatch) -> None:
    history = _session(random.Random(4), 3)
    gov = Governor(context_window=60_000)
    _break_the_exact_run(monkeypatch)
    result = gov.govern(history)
    assert _on_bounds(result)
    result.exact()  # the model call: the exact run is made (the report is not read)
    monkeypatch.undo()
    grown = [*history, {"role": "user", "content": "go on"}]
    with pytest.raises(RuntimeError, match="differ from the exact run"):
        gov.govern(grown)
    _same(gov.govern(grown), govern(grown, context_window=60_000))


def test_the_caller_may_edit_its_messages_before_the_exact_run() -> None:
    """Without the promise the exact run governs the Governor's frozen copies: an edit
    right after the call changes neither that result's report nor the next answer."""
    history = _session(random.Random(6), 4)
    before = copy.deepcopy(history)
    expected = govern(before, context_window=60_000)
    gov = Governor(context_window=60_000)
    result = gov.govern(history)
    assert _on_bounds(result)
    history[1]["content"] = "an edit made during the model call " * 20
    assert result.report.to_dict() == expected.report.to_dict()
    _same(gov.govern(history), govern(history, context_window=60_000))


def test_a_result_on_bounds_behaves_as_a_plain_result() -> None:
    import pickle

    history = _session(random.Random(8), 2)
    result = Governor(context_window=60_000).govern(history)
    assert _on_bounds(result)
    plain = govern(history, context_window=60_000)
    assert result == plain
    assert pickle.loads(pickle.dumps(result)) == plain
    assert copy.deepcopy(result) == plain
    assert repr(result) == repr(plain)


def test_an_exact_run_that_fails_is_not_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact run raising where the run on bounds did not (it cannot, short of a bug):
    the report raises its error, or the next call does if the report was never read;
    then the Governor governs exactly again."""
    original = governor_module.run

    def run(messages: list[Message], s: Any, counter: Any = None) -> Any:
        if isinstance(counter, governor_module._KnownCounts) and not counter.known:
            raise ValueError("exact run broken")
        return original(messages, s, counter)

    history = _session(random.Random(9), 3)
    grown = [*history, {"role": "user", "content": "go on"}]
    for read in (True, False):
        gov = Governor(context_window=60_000)
        monkeypatch.setattr(governor_module, "run", run)
        result = gov.govern(history)
        assert _on_bounds(result)
        if read:
            with pytest.raises(ValueError, match="exact run broken"):
                result.report  # noqa: B018
        else:
            with pytest.raises(ValueError, match="exact run broken"):
                result.exact()  # the model call: the exact run is made (and fails)
        monkeypatch.undo()
        if not read:
            with pytest.raises(ValueError, match="exact run broken"):
                gov.govern(grown)
        again = gov.govern(grown)
        assert not _on_bounds(again)
        _same(again, govern(grown, context_window=60_000))


@pytest.mark.parametrize("index", range(12))
def test_first_calls_of_every_setting_near_the_bound_are_govern(index: int) -> None:
    """tests/test_governor.py's settings (providers, models, prefill, a tool-result cap,
    custom policies) on its messy transcripts, with triggers around the bound total: every
    first call is govern()'s answer, and some are decided on bounds."""
    from test_governor import SETTINGS_CHOICES
    from transcripts import random_case

    choice = dict(SETTINGS_CHOICES[index % len(SETTINGS_CHOICES)])
    kind = choice.get("compaction")
    base = kind if isinstance(kind, CompactionPolicy) else CompactionPolicy()
    taken = 0
    for seed in range(3):
        case = random_case(random.Random(1000 * index + seed))
        messages, tools = case["messages"], case["tools"]
        probe = Governor(context_window=WINDOW, tools=tools, **choice)
        counter = probe.settings.counter
        try:
            bounds = [message_bound(counter, m) for m in messages]
        except Exception:  # JSON cannot carry it: no bound, and nothing to test here
            continue
        bound = sum(b or 0 for b in bounds) + (tokens.tools_bound(counter, tools) or 0)
        for share in (0.9, 1.0, 1.05, 1.5):
            trigger = max(2, int(bound * share))  # an int 1 is refused (say 1.0)
            policy = replace(
                base, trigger=trigger, target=max(2, trigger // 2), price_aware=False
            )
            args = {**choice, "compaction": policy, "context_window": WINDOW, "tools": tools}
            if kind == "seed":
                args["compaction"] = "seed"
            try:
                expected = govern(messages, **args)
            except Exception:
                with pytest.raises(Exception):  # noqa: B017 - the same refusal, whatever it is
                    Governor(**args).govern(messages)
                continue
            got = Governor(**args).govern(messages)
            taken += _on_bounds(got)
            _same(got, expected)
    provider = choice.get("profile") != "nanobot" and kind != "seed"
    assert (taken > 0) == provider, taken
