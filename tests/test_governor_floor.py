"""The Governor's fast path under the price-aware trigger and the verbatim floor.

Where cached reads are dear (gpt-4o, gpt-4.1) the cache policy's trigger is low, and a
request whose newest ``keep_recent`` results' turns do not fit under it gets a raised
trigger (``CompactionPolicy.floor``). A step over the price-set trigger that the floor
holds changes nothing of the old request, so the Governor answers it on its appending
path: ``Replay.quiet`` walks the new requests with the floor's inputs kept as prefix
sums, over the replay of the history and over that of the output (what pipeline._fit
asks). These tests hold ``quiet`` to what a fresh replay decides, and the Governor to
``govern()`` on sessions that cross the trigger under the floor, counting the steps the
new path takes.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from levels import examples
from whole_runs import WholeRuns

from context_governor import CompactionPolicy, Governor, govern
from context_governor.providers.prices import OPENAI_4O, OPENAI_41, CachePrice
from context_governor.stages._replay import Replay, replay_history

Message = dict[str, Any]
WINDOW = 32_000
MAX_OUTPUT = 1_000


# ----------------------------------------------------------------------------- Replay.quiet


def _history(rng: random.Random, turns: int) -> tuple[list[Message], list[int]]:
    """A history with counts: agent turns of one to twelve parallel calls whose results
    take 50-2,500 tokens, now and then a reply and a user message, a system message
    now and then after the head."""
    messages: list[Message] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
    ]
    tokens = [rng.randint(20, 400), rng.randint(10, 300)]
    for turn in range(turns):
        if rng.random() < 0.15:
            messages.append({"role": "assistant", "content": f"report {turn}"})
            tokens.append(rng.randint(10, 600))
            messages.append({"role": "user", "content": f"go on {turn}"})
            tokens.append(rng.randint(5, 400))
        if rng.random() < 0.03:
            messages.append({"role": "system", "content": "reminder"})
            tokens.append(rng.randint(5, 50))
        calls = rng.choice((1, 1, 1, 2, 3, 12))
        messages.append({"role": "assistant", "content": None, "tool_calls": [{}] * calls})
        tokens.append(rng.randint(10, 150))
        for _ in range(calls):
            messages.append({"role": "tool", "name": "read", "content": "x" * 600})
            tokens.append(rng.randint(50, 2_500))
    return messages, tokens


def _replay(messages: list[Message], tokens: list[int], policy: CompactionPolicy) -> Replay:
    budget = WINDOW - MAX_OUTPUT - 1024
    return replay_history(
        messages, list(tokens), lambda i: 25, 300, budget, policy, lambda note, m: 40
    )


def _plan(replay: Replay) -> tuple[Any, ...]:
    p = replay.plan
    return (p.cut, dict(p.cleared), list(p.compactions), p.pinned, p.note)


def _expected_quiet(
    messages: list[Message], tokens: list[int], n: int, policy: CompactionPolicy
) -> tuple[bool, bool]:
    """Whether no request after ``n`` compacts, each under the trigger or held by the
    floor, told by fresh replays (the floor's inputs from Replay._recent_span and
    _recent_results); and whether one of them was over the trigger."""
    plan = _plan(_replay(messages[:n], tokens[:n], policy))
    over = False
    ends = [j for j in range(n + 1, len(messages)) if messages[j]["role"] == "assistant"]
    for j in [*ends, len(messages)]:
        fresh = _replay(messages[:j], tokens[:j], policy)
        if _plan(fresh) != plan:
            return False, over  # this request (or the old end's, never made) compacted
        if fresh.total > fresh.trigger:
            over = True
            floor = policy.floor(fresh.budget, fresh._recent_span(), fresh._recent_results())
            if floor is None or fresh.total > floor[0]:
                return False, over
    return True, over


@settings(max_examples=examples(full=400, fast=80), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    price=st.sampled_from([OPENAI_4O, OPENAI_41]),
    keep=st.sampled_from([10, 10, 3, 0]),
)
def test_quiet_is_what_fresh_replays_decide(seed: int, price: CachePrice, keep: int) -> None:
    """``Replay.quiet`` over appended messages is true exactly when fresh replays of the
    longer histories compact nowhere new and every new request over the price-set
    trigger is held by the floor; and ``extend`` then leaves the replay where a fresh
    replay of the whole history stands (its floor's inputs included)."""
    rng = random.Random(seed)
    policy = CompactionPolicy(mask_first=False, cache_price=price, keep_recent=keep)
    messages, tokens = _history(rng, rng.randint(5, 60))
    n = len(messages) - rng.randint(1, min(len(messages) - 3, rng.choice((4, 16, 60))))
    replay = _replay(messages[:n], tokens[:n], policy)
    expected, over = _expected_quiet(messages, tokens, n, policy)
    new, counts = messages[n:], tokens[n:]
    assert replay.quiet(new, counts) == expected
    event(f"quiet {expected}, a new request over the trigger: {over}")
    if not expected:
        return
    assert replay.extend(messages, counts)
    fresh = _replay(messages, tokens, policy)
    assert _plan(replay) == _plan(fresh)
    assert (replay.total, replay.results, replay.last_user, replay.first_user) == (
        fresh.total,
        fresh.results,
        fresh.last_user,
        fresh.first_user,
    )
    assert replay._recent_span() == fresh._recent_span()
    assert replay._recent_results() == fresh._recent_results()


def test_quiet_holds_requests_over_the_trigger() -> None:
    """Not vacuous: on these histories some appended requests are over the price-set
    trigger and held by the floor, and quiet says so (before this change, any request
    over the trigger made the replay refuse the step)."""
    policy = CompactionPolicy(mask_first=False, cache_price=OPENAI_4O)
    held = 0
    for seed in range(60):
        rng = random.Random(seed)
        messages, tokens = _history(rng, 40)
        n = len(messages) - rng.randint(1, 6)
        expected, over = _expected_quiet(messages, tokens, n, policy)
        assert _replay(messages[:n], tokens[:n], policy).quiet(messages[n:], tokens[n:]) == (
            expected
        )
        held += expected and over
    assert held >= 5


# ----------------------------------------------------------------------------- the Governor


def _session(rng: random.Random, steps: int, low: int, high: int) -> list[list[Message]]:
    """An agent session as the steps a runner appends: one to three parallel reads a step
    (a burst of eight to twelve now and then) with results of ``low``-``high``
    characters, a report and a follow-up now and then."""
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests."},
    ]
    out: list[list[Message]] = [list(history)]
    for step in range(steps):
        new: list[Message] = []
        if step and rng.random() < 0.06:
            new.append({"role": "assistant", "content": f"Report {step}."})
            new.append({"role": "user", "content": f"Go on ({step})."})
        calls = rng.choice((1, 1, 2, 3, 1, 1, 2, 10))
        tool_calls = [
            {
                "id": f"call_{step}_{k}",
                "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"n": step, "k": k})},
            }
            for k in range(calls)
        ]
        new.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
        for k in range(calls):
            body = " ".join(f"l{step}_{k}_{i}" for i in range(rng.randint(low, high) // 9))
            new.append(
                {
                    "role": "tool",
                    "tool_call_id": f"call_{step}_{k}",
                    "name": "read_file",
                    "content": body,
                }
            )
        out.append(new)
    return out


class _Counted:
    """A Governor whose full runs are counted (from outside: its step has no counter)."""

    def __init__(self, **kwargs: Any) -> None:
        self.gov = Governor(**kwargs)
        self.whole = WholeRuns(self.gov)

    def govern(self, history: list[Message]) -> tuple[Any, bool]:
        """The result, and whether the step stayed on the appending path."""
        runs = self.whole.count
        result = self.gov.govern(history)
        return result, self.whole.count == runs


def _floor_steps(
    seed: int, model: str, immutable: bool, steps: int, low: int, high: int, edits: float = 0
) -> tuple[int, int]:
    """Governs a session step by step, each answer checked against govern(); returns
    (steps over the price-set trigger answered on the appending path, steps over it
    whose answer only appends to the last one, as does the last one's). With ``edits``,
    that share of the steps also replaces an old tool result by an edited copy (a full
    run, whose output over the trigger then comes with the replay pipeline._fit made)."""
    rng = random.Random(seed)
    kwargs: dict[str, Any] = {
        "context_window": WINDOW,
        "max_output": MAX_OUTPUT,
        "model": model,
        # the verbatim floor is the cutting policy's (masking first keeps turns its own way)
        "compaction": CompactionPolicy(mask_first=False),
    }
    gov = _Counted(immutable_messages=immutable, **kwargs)
    trigger = gov.gov._trigger
    assert trigger is not None
    history: list[Message] = []
    fast_over = held = 0
    previous: list[Message] | None = None
    was_plain = True
    for new in _session(rng, steps, low, high):
        results = [i for i, m in enumerate(history) if m["role"] == "tool"]
        if results and rng.random() < edits:
            i = rng.choice(results)
            history[i] = {**history[i], "content": history[i]["content"] + " (edited)"}
        history.extend(new)
        result, fast = gov.govern(history)
        expected = govern(history, **kwargs)
        assert result.messages == expected.messages
        assert result.report.to_dict() == expected.report.to_dict()
        appended = previous is not None and result.messages[: len(previous)] == previous
        # pipeline._fit's forced compaction: the replay of the output compacts where the
        # history's does not (then the step is not an append: the full run is right)
        forced = any("compacted at this request" in note for note in result.report.notes)
        if result.report.tokens_after > trigger:
            fast_over += fast
            held += appended and not forced and was_plain
        was_plain = not forced
        previous = list(result.messages)
    return fast_over, held


@settings(
    max_examples=examples(full=20, fast=5),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    model=st.sampled_from(["gpt-4o", "gpt-4.1"]),
    immutable=st.booleans(),
    high=st.integers(2_000, 9_000),
)
def test_sessions_over_the_price_set_trigger_match_stateless(
    seed: int, model: str, immutable: bool, high: int
) -> None:
    """Every answer is govern()'s on sessions whose requests cross gpt-4o's or gpt-4.1's
    price-set trigger under the floor (with and without the promise, old results now and
    then replaced by edited copies); and most steps over that trigger whose answer
    appends to the last one stay on the appending path."""
    fast_over, held = _floor_steps(seed, model, immutable, 70, 400, high, edits=0.1)
    event(f"appended over the trigger: {held > 0}")
    if held:
        share = fast_over / held
        event(f"share of those on the fast path: {round(share, 1)}")
        assert fast_over >= 0.5 * held


def test_the_floor_keeps_steps_on_the_appending_path() -> None:
    """Not a timing test: on these sessions at gpt-4o's prices the steps the floor holds
    over the price-set trigger are answered without a full run (before this change,
    every one of them ran the whole pipeline: none was on the appending path)."""
    fast_over = held = 0
    for seed in range(3):
        f, h = _floor_steps(seed, "gpt-4o", True, 80, 400, 6_000)
        fast_over, held = fast_over + f, held + h
    assert held >= 20
    assert fast_over >= 0.8 * held
