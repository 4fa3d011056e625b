"""Governor(immutable_messages=True): the caller's promise never to edit a message in place.

Kept, the promise changes nothing the caller sees (the output is still govern()'s);
broken, an in-place edit may go unseen, and the default Governor sees the same edit.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from test_governor import SETTINGS_CHOICES, _clean_session, _governed, _same
from transcripts import random_case
from whole_runs import WholeRuns

from context_governor import ConfigError, Governor, govern

Message = dict[str, Any]


def _replace(rng: random.Random, history: list[Message]) -> None:
    """An edit the promise allows: messages replaced, inserted or dropped (new objects,
    sometimes equal to the old ones), never a dict edited in place."""
    if len(history) < 3:
        return
    i = rng.randrange(1, len(history) - 1)
    roll = rng.random()
    if roll < 0.25:
        history[i] = {**history[i], "content": f"replaced {rng.random()}"}
    elif roll < 0.5:
        history[i] = copy.deepcopy(history[i])  # equal, not the same object
    elif roll < 0.7:
        history.insert(i, {"role": "user", "content": f"inserted {rng.random()}"})
    elif roll < 0.85:
        del history[i]
    else:
        del history[i:]


@settings(
    max_examples=examples(full=60, fast=12),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), choice=st.sampled_from(SETTINGS_CHOICES))
def test_a_kept_promise_matches_stateless(seed: int, choice: dict[str, Any]) -> None:
    rng = random.Random(seed)
    full = _clean_session(rng, rng.randint(5, 60))
    window = rng.choice([6_000, 12_000, 20_000, 60_000, None])
    gov = Governor(context_window=window, max_output=1000, immutable_messages=True, **choice)
    history: list[Message] = full[:2]
    position = 2
    while position < len(full):
        step = rng.randint(1, 4)
        history.extend(full[position : position + step])
        position += step
        if rng.random() < 0.1:
            _replace(rng, history)
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
def test_a_kept_promise_matches_stateless_on_messy_sessions(
    seed: int, choice: dict[str, Any]
) -> None:
    rng = random.Random(seed)
    case = random_case(rng)
    window = case["context_window"]
    gov = Governor(context_window=window, tools=case["tools"], immutable_messages=True, **choice)
    history: list[Message] = []
    for message in case["messages"]:
        history.append(message)
        if rng.random() < 0.5:
            continue
        if rng.random() < 0.1:
            _replace(rng, history)
        _same(
            _governed(gov, history),
            govern(history, context_window=window, tools=case["tools"], **choice),
        )


def _two_steps() -> tuple[list[Message], list[Message]]:
    """A history and its next step (an assistant turn and its result)."""
    first: list[Message] = [
        {"role": "user", "content": "Read the file."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "print('a')"},
    ]
    step: list[Message] = [
        {"role": "assistant", "content": "It prints a."},
        {"role": "user", "content": "Thanks."},
    ]
    return first, step


@pytest.mark.parametrize("promise", [False, True])
def test_an_in_place_edit_is_seen_by_default_and_may_not_be_under_the_promise(
    promise: bool,
) -> None:
    """What breaking the promise does, shown: the same in-place edit of an old message
    (the opening user message made a tool result answering no call: an orphan, which
    govern() drops) is seen by the default
    Governor, and goes unseen by one that was promised it would not happen."""
    history, step = _two_steps()
    gov = Governor(context_window=60_000, immutable_messages=promise)
    gov.govern(history).report  # noqa: B018 - the model call: the first call's exact run is done
    history[0].update(role="tool", tool_call_id="call_gone")  # in place: promise broken
    history.extend(step)
    expected = govern(history, context_window=60_000)
    assert expected.report.actions  # govern() repairs the edited result
    got = gov.govern(history)
    if promise:
        assert got.messages is not expected.messages
        assert not got.report.actions  # the edit went unseen: output differs from govern()
        assert got.messages[0]["tool_call_id"] == "call_gone"
    else:
        _same(got, expected)


def test_the_promise_keeps_no_copies_and_the_worker_counts_the_callers_messages() -> None:
    history, step = _two_steps()
    kept = Governor(context_window=60_000, immutable_messages=True)
    default = Governor(context_window=60_000)
    for gov in (kept, default):
        gov.govern(history)
        gov.govern([*history, *step])
    assert kept._state is not None and default._state is not None
    assert all(a is b for a, b in zip(kept._state.frozen, [*history, *step], strict=True))
    assert not any(a is b for a, b in zip(default._state.frozen, [*history, *step], strict=True))


def test_the_promise_takes_the_appending_path_with_equal_replacements() -> None:
    """A message replaced by an equal new object (a reloaded history) keeps the fast path:
    only that message is compared deeply."""
    history, step = _two_steps()
    gov = Governor(context_window=60_000, immutable_messages=True)
    gov.govern(history)
    whole = WholeRuns(gov)
    reloaded = [copy.deepcopy(m) for m in history] + step
    _same(gov.govern(reloaded), govern(reloaded, context_window=60_000))
    assert whole.count == 0


@pytest.mark.parametrize("value", [1, "yes", None])
def test_the_promise_is_a_bool(value: Any) -> None:
    with pytest.raises(ConfigError, match="immutable_messages"):
        Governor(immutable_messages=value)


@settings(
    max_examples=examples(full=40, fast=10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_result_edited_in_place_after_it_was_cleared_is_weighed_anew(seed: int) -> None:
    """A Governor keeps the replay's placeholder counts from one whole run to the next,
    by the message each stands for. A result edited in place keeps its identity and not
    its placeholder (the characters it names, here one digit fewer: a token fewer): the
    default Governor sees the edit and weighs it anew, as govern() does, at every step
    after."""
    rng = random.Random(seed)
    full = _clean_session(rng, 100)
    gov = Governor(context_window=30_000, max_output=1000)
    history: list[Message] = full[:2]
    position, edited = 2, False
    while position < len(full):
        step = rng.randint(1, 4)
        history.extend(full[position : position + step])
        position += step
        got = gov.govern(history)
        _same(got, govern(history, context_window=30_000, max_output=1000))
        cleared = [a.index for a in got.report.actions if a.kind == "replace"]
        long = [i for i in cleared if len(str(history[i]["content"])) >= 1000]
        if not edited and long:
            old = history[long[-1]]  # sent as a placeholder, weighed again later
            # three digits where there were four: the placeholder names the length, and
            # its count falls by a token
            old["content"] = str(old["content"])[: rng.randint(100, 999)]
            edited = True
    assert edited
