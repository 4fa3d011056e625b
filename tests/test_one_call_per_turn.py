"""Models that take one tool call per turn (vLLM serving Llama 3.x): the cache policy
decides its cuts on the history as that model gets it, each parallel call split into
single-call turns, and reports them at the caller's own indices.

Found by a targeted fuzz of oversized tool results (9 in 5,000 inputs, all vLLM + Llama
3.x): the newest model turn was too long to keep whole and held a parallel call. The
first pass could not cut inside it (the calls were one message); its output, split one
call per turn, could be cut between those turns, and a second pass did.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from checks import pairing_problems
from hypothesis import HealthCheck, example, find, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import CompactionPolicy, Governor, govern
from context_governor.counting import exact_counter
from context_governor.stages._single_call import (
    keep_from,
    parallel_blocks,
    sent_view,
    split_message,
)

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz import one_call  # noqa: E402
from fuzz.one_call import call as _call  # noqa: E402
from fuzz.one_call import result as _result  # noqa: E402

Message = dict[str, Any]


def _reproducer() -> list[Message]:
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "step 0"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "step 5"},
        {"role": "assistant", "content": "", "tool_calls": [_call(16), _call(17), _call(18)]},
        _result(16, 3000),
        _result(17, 50),
        _result(18, 50),
    ]


SETTINGS: dict[str, Any] = {"profile": "vllm", "model": "llama-3.3-70b",
                            "context_window": 5200, "max_output": 1000}  # fmt: skip


def test_an_oversized_parallel_turn_is_cut_between_its_calls_once() -> None:
    """The reproducer from docs/hardening.md: a second pass used to cut the first call and
    its result (compact/replace, compact/drop x2); now the first pass does, and the
    output is a fixed point."""
    history = _reproducer()
    first = govern(history, **SETTINGS)
    again = govern(first.messages, **SETTINGS)
    assert again.report.actions == []
    assert again.messages is first.messages
    assert first.report.within_budget
    # the oversized result went with its call; the two other calls stay, one per turn
    sent = [c["id"] for m in first.messages for c in m.get("tool_calls") or ()]
    assert sent == ["call_17", "call_18"]
    assert "out call_16" not in str(first.messages)


def test_the_cut_is_reported_at_the_callers_indices() -> None:
    history = _reproducer()
    report = govern(history, **SETTINGS).report
    compact = [(a.kind, a.index, a.tool_call_id) for a in report.actions if a.stage == "compact"]
    assert compact == [
        ("drop", 2, None),  # "done"
        ("replace", 3, None),  # the note, before "step 5"
        ("replace", 4, None),  # the parallel call, its first call cut
        ("drop", 5, "call_16"),  # that call's result
    ]
    trimmed = next(a for a in report.actions if a.stage == "compact" and a.index == 4)
    assert "first 1 of 3 calls" in trimmed.detail
    assert sum(a.tokens_saved for a in report.actions) == (
        report.tokens_before - report.tokens_after
    )


def test_a_governor_continues_a_replay_made_on_split_turns() -> None:
    """The Governor extends the cache policy's replay with appended messages; the replay
    now stands on the split view (longer than the history), and extending it must still
    give what a stateless govern() gives."""
    history: list[Message] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": [_call(1), _call(2)]},
        _result(1, 40),
        _result(2, 40),
        {"role": "assistant", "content": "read both"},
    ]
    settings = {"profile": "vllm", "model": "llama-3.3-70b", "context_window": 20_000}
    governor = Governor(**settings)
    for step in range(12):
        history = [*history, {"role": "user", "content": f"step {step}"},
                   {"role": "assistant", "content": None, "tool_calls": [_call(10 + step)]},
                   _result(10 + step, 150), {"role": "assistant", "content": f"ok {step}"}]  # fmt: skip
        ours = governor.govern(history)
        stateless = govern(history, **settings)
        assert ours.messages == stateless.messages
        assert ours.report.actions == stateless.report.actions


def _old_parallel_call_history() -> list[Message]:
    """An old three-call turn, then five long single-call turns: a cut removes the
    parallel call whole (two split turns more in the view than in the history)."""
    history: list[Message] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": [_call(1), _call(2), _call(3)]},
        _result(1, 40), _result(2, 40), _result(3, 40),
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    for k in range(4, 9):
        history += [{"role": "user", "content": f"step {k}"},
                    {"role": "assistant", "content": None, "tool_calls": [_call(k)]},
                    _result(k, 600), {"role": "assistant", "content": "done"}]  # fmt: skip
    history.append({"role": "user", "content": "newest"})
    return history


def test_a_summary_fallback_names_the_callers_message_at_the_cut() -> None:
    """The summary stage reads the split turns the plan was made on; what it reports is
    named by the caller's indices too (here, behind an old parallel call, the view's
    positions run two ahead of the history's)."""
    from context_governor.summary import Summaries

    def no_summary(messages: list[Message]) -> str:
        raise RuntimeError("no model")

    history = _old_parallel_call_history()
    policy = CompactionPolicy(summary=Summaries(no_summary), mask_first=False)  # it cuts
    report = govern(history, profile="vllm", model="llama-3.3-70b", context_window=9000,
                    max_output=1000, compaction=policy).report  # fmt: skip
    (fallback,) = [a for a in report.actions if a.stage == "summary"]
    dropped = [a.index for a in report.actions if a.stage == "compact" and a.kind == "drop"]
    # the cut resumes inside the turn of "step 8", at its call
    assert history[fallback.index]["tool_calls"][0]["id"] == "call_8"
    assert fallback.index == max(dropped) + 2  # the dropped ones, then the kept "step 8"


def test_the_summary_counts_the_callers_messages_it_stands_for() -> None:
    """The summary is made from the split turns the plan was made on; the notes said
    "summarized N cut messages" with N counting those turns (two more here, for the
    old three-call turn), where the note in the request and the report count the
    caller's messages."""
    from context_governor.summary import Summaries

    history = _old_parallel_call_history()
    policy = CompactionPolicy(summary=Summaries(lambda messages: "they read files"), mask_first=False)
    result = govern(history, profile="vllm", model="llama-3.3-70b", context_window=9000,
                    max_output=1000, compaction=policy)  # fmt: skip
    drops = [a.index for a in result.report.actions if a.stage == "compact" and a.kind == "drop"]
    assert 2 in drops  # the parallel call was cut, with its three results
    assert f"summarized {len(drops)} cut messages" in " ".join(result.report.notes)
    assert f"[Summary of {len(drops)} earlier messages" in str(result.messages)
    # the stored summary is read back on the next request, and counted the same way
    again = govern([*history, {"role": "assistant", "content": "ok"}], profile="vllm",
                   model="llama-3.3-70b", context_window=9000, max_output=1000,
                   compaction=policy)  # fmt: skip
    stored = [n for n in again.report.notes if "is the stored one" in n]
    assert stored == [f"cache policy: the summary of {len(drops)} cut messages is the stored one"]


# -- the one rule for what splits ---------------------------------------------------------------


def test_the_split_view_is_what_the_repair_sends() -> None:
    """The view the cache policy plans on is, message for message, what
    split_parallel_calls sends; keep_from(message, k) splits into the view's turns from
    k on (so a cut between two calls leaves nothing for a second pass to cut)."""
    history = _reproducer()
    view = sent_view(history)
    assert view is not None
    result = govern(history, profile="vllm", model="llama-3.3-70b")  # no window: no cut
    assert view.messages == result.messages
    assert view.origin == [0, 1, 2, 3, 4, 5, 4, 6, 4, 7]
    assert view.turn == [0, 0, 0, 0, 0, 0, 1, 0, 2, 0]
    assert view.where[4] == [4, 6, 8]
    assert view.at(len(view.messages)) == len(history)
    parallel = history[4]
    for k in range(3):
        assert split_message(keep_from(parallel, k))[0] == view.messages[4 + 2 * k]


def test_only_a_call_answered_exactly_right_after_it_splits() -> None:
    calls: Message = {"role": "assistant", "content": "x", "tool_calls": [_call(1), _call(2)]}
    assert parallel_blocks([calls, _result(2, 1), _result(1, 1)]) == {0: [2, 1]}
    assert parallel_blocks([calls, _result(1, 1)]) == {}  # a result missing
    assert parallel_blocks([calls, _result(1, 1), _result(2, 1), _result(2, 1)]) == {}
    assert parallel_blocks([calls, _result(1, 1), {"role": "user"}, _result(2, 1)]) == {}
    assert parallel_blocks([{**calls, "tool_calls": [_call(1)]}, _result(1, 1)]) == {}
    assert sent_view([calls, _result(1, 1)]) is None


# -- the property ---------------------------------------------------------------------------------

def parallel_turn_cases() -> st.SearchStrategy[tuple[list[Message], dict[str, Any]]]:
    """fuzz.one_call's inputs: the newest model turn holds a parallel call, the model
    takes one call per turn, the window is 0.15 to 1.6 times that turn's size."""
    return st.randoms(use_true_random=False).map(one_call.case)


def _clearing(
    case: tuple[list[Message], dict[str, Any]], keep_recent: int | None
) -> tuple[list[Message], dict[str, Any]]:
    """``case`` as drawn (``keep_recent`` None), or with every call given arguments and,
    under the cache policy, ``clear_arguments=True`` keeping only ``keep_recent`` results
    (the default 10 keeps every result of these short histories): then old results are
    cleared and their calls' arguments emptied, often behind a cut that shifts the
    output against the caller's list."""
    history, settings = case
    if keep_recent is None or settings["compaction"] != "cache":
        return case
    argued = [
        {**m, "tool_calls": [
            {**c, "function": {**c["function"], "arguments": json.dumps({"path": c["id"]})}}
            for c in m["tool_calls"]
        ]} if m.get("tool_calls") else m
        for m in history
    ]  # fmt: skip
    policy = CompactionPolicy(clear_arguments=True, keep_recent=keep_recent)
    return argued, {**settings, "compaction": policy}


def _cleared_behind_a_cut() -> tuple[list[Message], dict[str, Any]]:
    """Found by the property (with keep_recent=1): "done 0" is cut and the note folded
    into "the newest step"; call_0's result is cleared and its arguments emptied. The
    report named the emptied call by its index in the output (3: "the newest step" in
    the caller's list) instead of 4."""
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "the task"},
        {"role": "assistant", "content": "done 0"},
        {"role": "user", "content": "the newest step"},
        {"role": "assistant", "content": None, "tool_calls": [_call(0), _call(1)]},
        _result(0, 300), _result(1, 3),
        {"role": "assistant", "content": "all read"},
    ]  # fmt: skip
    settings = {"profile": "vllm", "model": "llama-3.3-70b", "context_window": 1673,
                "max_output": 0, "compaction": "cache"}  # fmt: skip
    return history, settings


#: a long hunt: ONE_CALL_EXAMPLES=5000 HYPOTHESIS_PROFILE=explore pytest -k fixed_point
EXAMPLES = int(os.environ.get("ONE_CALL_EXAMPLES") or examples(full=300, fast=60))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(parallel_turn_cases(), st.sampled_from([None, 0, 1, 2]))
@example((_reproducer(), {**SETTINGS, "compaction": "cache"}), None)
@example((_reproducer(), {**SETTINGS, "compaction": "cache"}), 0)
@example(_cleared_behind_a_cut(), 1)
def test_one_call_per_turn_output_is_a_fixed_point_and_named_by_the_callers_indices(
    case: tuple[list[Message], dict[str, Any]], keep_recent: int | None
) -> None:
    history, settings = _clearing(case, keep_recent)
    first = govern(history, **settings)
    again = govern(first.messages, **settings)
    assert again.report.actions == []
    assert again.messages == first.messages
    assert pairing_problems(first.messages) == []
    assert all(len(m.get("tool_calls") or ()) <= 1 for m in first.messages)
    report = first.report
    assert sum(a.tokens_saved for a in report.actions) == report.tokens_before - report.tokens_after
    kinds = [a.kind for a in report.actions]
    delta = kinds.count("insert") - kinds.count("drop") - kinds.count("merge")
    assert report.messages_after - report.messages_before == delta
    counter = exact_counter(settings["model"])
    kept = {id(m) for m in first.messages}
    cleared = {
        a.tool_call_id for a in report.actions
        if a.stage == "compact" and a.detail.startswith("old ") and "cleared" in a.detail
    }  # fmt: skip
    for action in first.report.actions:
        if action.stage != "compact":
            continue
        # nothing shifts the list before compaction here, so its indices are the caller's
        message = history[action.index]
        if action.tool_call_id is not None:
            assert message.get("tool_call_id") == action.tool_call_id
        if action.kind == "drop":
            assert id(message) not in kept
            assert action.tokens_saved == counter.message_tokens(message)
        elif "parallel call" in action.detail:
            calls = [c["id"] for c in message["tool_calls"]]
            sent = [c["id"] for m in first.messages for c in m.get("tool_calls") or ()]
            assert len(calls) >= 2 and calls[-1] in sent and calls[0] not in sent
        elif action.kind == "replace" and "note on the cut" in action.detail:
            assert message.get("role") == "user"
        elif "arguments" in action.detail:  # CompactionPolicy(clear_arguments=True)
            assert message.get("role") == "assistant"
            assert {c["id"] for c in message["tool_calls"]} & cleared
    emptied = {
        c["id"] for m in first.messages for c in m.get("tool_calls") or ()
        if c["function"]["arguments"] == "{}"
    }  # fmt: skip
    if keep_recent is not None and settings["compaction"] != "seed":
        assert emptied == cleared
    # the note counts the caller's messages the cut removed, as the report does
    noted = [re.search(r"(\d+) (?:older )?messages removed", a.detail) for a in report.actions]
    counts = [int(m.group(1)) for m in noted if m]
    drops = sum(a.stage == "compact" and a.kind == "drop" for a in report.actions)
    assert counts in ([], [drops])


def test_the_property_empties_arguments_behind_a_cut() -> None:
    """With clear_arguments, the generator reaches outputs shifted against the caller's
    list (a message cut or a note inserted before a message whose arguments were
    emptied), where an index into the output names another message."""

    def shifted(case: tuple[list[Message], dict[str, Any]]) -> bool:
        history, options = _clearing(case, 0)
        report = govern(history, **options).report
        actions = [a for a in report.actions if a.stage == "compact"]
        emptied = [a.index for a in actions if "arguments" in a.detail]
        return any(a.kind in ("drop", "insert") and a.index < max(emptied, default=-1)
                   for a in actions)  # fmt: skip

    _, options = find(
        parallel_turn_cases(),
        shifted,
        settings=settings(database=None, derandomize=True, max_examples=200, deadline=None),
    )
    assert options["compaction"] == "cache"


def test_the_property_draws_cuts_inside_parallel_turns() -> None:
    """The generator reaches the case it is for: a first pass that cuts between the
    calls of a parallel turn."""

    def cuts_inside(case: tuple[list[Message], dict[str, Any]]) -> bool:
        history, settings = case
        return any("parallel call" in a.detail for a in govern(history, **settings).report.actions)

    history, _ = find(
        parallel_turn_cases(),
        cuts_inside,
        settings=settings(database=None, derandomize=True, max_examples=200, deadline=None),
    )
    assert any(len(m.get("tool_calls") or ()) >= 2 for m in history)
