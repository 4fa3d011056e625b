"""The cache-stable compaction policy (stages/_compact.py, policies.py)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from checks import newest_user_kept
from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, ConfigError, Governor, govern
from context_governor.providers import validate

Message = dict[str, Any]
WINDOW = 16_000  # small: mostly cuts
ROOMY = 64_000  # clears old results before it cuts


def _session(steps: int, seed: int = 7, names: tuple[str, ...] = ("read_file", "exec", "grep")):
    """A growing coding-agent history: one list per step (what the model is called with)."""
    rng = random.Random(seed)
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing tests in the parser."},
    ]
    snapshots = []
    for step in range(steps):
        if step and step % 12 == 0:
            history.append({"role": "assistant", "content": f"Progress report {step}."})
            history.append({"role": "user", "content": f"Keep going, step {step}."})
        call_id = f"call_{step:04d}"
        name = rng.choice(names)
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"n": step})},
                    }
                ],
            }
        )
        size = rng.randint(300, 4000)
        body = " ".join(f"line{step}_{i}" for i in range(size // 8))
        history.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": body})
        snapshots.append(list(history))
    return snapshots


def _is_prefix(short: list[Message], long: list[Message]) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_requests_only_append_between_compactions(seed: int) -> None:
    gov = Governor(context_window=WINDOW, max_output=1000)
    previous: list[Message] | None = None
    breaks = compactions_seen = 0
    seen = 0  # length of the history at the previous call
    for history in _session(120, seed=seed):
        result = gov.govern(history)
        report = result.report
        assert report.within_budget, report.notes
        assert validate(result.messages, provider="openai") == []
        # A compaction belongs to this call when it happened at one of the requests the
        # new messages mark (each assistant message is one; the session generator does
        # not call between a progress report and the next tool call).
        compacted_now = any(
            a.stage == "compact"
            and "at message " in a.detail
            and int(a.detail.rsplit("at message ", 1)[1][:-1]) > seen
            for a in report.actions
        )
        seen = len(history)
        compactions_seen += compacted_now
        if previous is not None and not _is_prefix(previous, result.messages):
            breaks += 1
            assert compacted_now, "the prefix changed without a compaction at this request"
        previous = result.messages
    assert compactions_seen >= 3  # the window is small: it does compact
    assert breaks == compactions_seen


def test_seed_policy_rewrites_the_prefix_far_more_often() -> None:
    def breaks(policy: str) -> int:
        prev: list[Message] | None = None
        count = 0
        for history in _session(120):
            out = govern(history, context_window=WINDOW, max_output=1000, compaction=policy)
            count += prev is not None and not _is_prefix(prev, out.messages)
            prev = out.messages
        return count

    assert breaks("seed") > 3 * breaks("cache")


def test_decision_is_a_function_of_the_history() -> None:
    """A fresh process (a fresh Governor, or plain govern) gives the same request as a
    Governor that saw every step: no hidden state."""
    steps = _session(80)
    gov = Governor(context_window=WINDOW, max_output=1000)
    for history in steps:
        long_lived = gov.govern(history)
    fresh = govern(steps[-1], context_window=WINDOW, max_output=1000)
    assert fresh.messages == long_lived.messages
    assert fresh.report.to_dict() == long_lived.report.to_dict()


def test_nothing_happens_under_the_trigger() -> None:
    history = _session(10)[-1]
    result = govern(history, context_window=200_000)
    assert result.messages is history
    assert result.report.actions == []


def test_head_and_newest_turn_are_kept() -> None:
    history = _session(150)[-1]
    result = govern(history, context_window=WINDOW, max_output=1000)
    assert result.messages[0] == history[0]  # the system prompt
    # the task, maybe joined by the note on the cut and the prompt of the kept turn
    assert result.messages[1]["content"].startswith(history[1]["content"])
    assert result.messages[-2:] == history[-2:]  # the newest call and its result
    assert newest_user_kept(history, result.messages)


def test_keep_recent_results_stay_verbatim() -> None:
    history = _session(150)[-1]
    policy = CompactionPolicy(keep_recent=4)
    result = govern(history, context_window=ROOMY, max_output=1000, compaction=policy)
    results = [m for m in history if m["role"] == "tool"]
    for message in results[-4:]:
        assert message in result.messages


def test_min_savings_skips_edits_that_do_not_pay_for_a_cache_rewrite() -> None:
    history = _session(30)[-1]
    tokens = govern(history).report.tokens_after
    budget = int(tokens / 0.97)  # just over a 0.95 trigger, but it fits
    window = budget + 1000 + 1024
    cheap = CompactionPolicy(min_savings=0)
    strict = CompactionPolicy(min_savings=10 * tokens)
    assert govern(history, context_window=window, max_output=1000, compaction=cheap).report.actions
    kept = govern(history, context_window=window, max_output=1000, compaction=strict)
    assert kept.messages is history
    assert kept.report.within_budget


def test_excluded_tools_are_never_cleared() -> None:
    history = _session(150)[-1]
    policy = CompactionPolicy(exclude_tools=frozenset({"grep"}))
    result = govern(history, context_window=ROOMY, max_output=1000, compaction=policy)
    cleared = [a for a in result.report.actions if a.kind == "replace"]
    assert cleared
    assert all("grep" not in a.detail for a in cleared)
    for message in result.messages:
        if message.get("name") == "grep":
            assert message in history


def _cleared_results(result: Any) -> list[Message]:
    return [m for m in result.messages if m.get("role") == "tool" and "was " in m["content"][:80]]


def test_placeholder_does_not_read_as_a_failure() -> None:
    history = _session(150)[-1]
    result = govern(history, context_window=ROOMY, max_output=1000)
    cleared = _cleared_results(result)
    assert cleared
    for message in cleared:
        text = message["content"]
        assert "succeeded" in text and "again" in text
        assert "error" not in text.lower() and "fail" not in text.lower()


def test_clear_arguments_empties_the_calls_of_cleared_results() -> None:
    history = _session(150)[-1]
    policy = CompactionPolicy(clear_arguments=True)
    result = govern(history, context_window=ROOMY, max_output=1000, compaction=policy)
    cleared_ids = {m["tool_call_id"] for m in _cleared_results(result)}
    assert cleared_ids
    for message in result.messages:
        for call in message.get("tool_calls") or []:
            expected = "{}" if call["id"] in cleared_ids else json.dumps({"n": int(call["id"][5:])})
            assert call["function"]["arguments"] == expected


def test_emptied_arguments_are_reported_at_the_callers_indices() -> None:
    """The arguments are emptied on the compaction's output, after the cut removed the
    oldest turns; the report named positions of that output (here tool results of the
    caller's list, ~200 messages before the calls meant) instead of the caller's."""
    history = _session(150)[-1]
    policy = CompactionPolicy(clear_arguments=True, mask_first=False)  # so that it cuts
    result = govern(history, context_window=ROOMY, max_output=1000, compaction=policy)
    actions = result.report.actions
    assert any(a.kind == "drop" for a in actions)  # the output is shifted against the input
    cleared_ids = {m["tool_call_id"] for m in _cleared_results(result)}
    emptied = [a for a in actions if "arguments" in a.detail]
    assert len(emptied) == len(cleared_ids)  # one call per message in this session
    for action in emptied:
        message = history[action.index]
        assert message["role"] == "assistant"
        assert {c["id"] for c in message["tool_calls"]} <= cleared_ids
        assert all(c["function"]["arguments"] != "{}" for c in message["tool_calls"])


def test_arguments_already_empty_are_not_reported_as_emptied() -> None:
    """A call whose arguments were "{}" already is not changed: no action says it was."""
    history = _session(150)[-1]
    for message in history:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = "{}"
    policy = CompactionPolicy(clear_arguments=True)
    result = govern(history, context_window=ROOMY, max_output=1000, compaction=policy)
    assert _cleared_results(result)
    assert not [a for a in result.report.actions if "arguments" in a.detail]


@pytest.mark.parametrize(
    "call_id", ["call_1", "../../etc/passwd", "a/b\\c:d", "ünï cödé ✓", "x" * 40, ".hidden"]
)
def test_offload_writes_each_output_safely_and_says_where(tmp_path: Path, call_id: str) -> None:
    history = _session(150)[-1]
    plain = govern(history, context_window=ROOMY, max_output=1000)
    first_cleared = next(
        a.tool_call_id for a in plain.report.actions if a.kind == "replace" and a.tool_call_id
    )
    target = next(m for m in history if m.get("tool_call_id") == first_cleared)
    renamed = [
        {**m, "tool_call_id": call_id} if m is target else
        {**m, "tool_calls": [{**m["tool_calls"][0], "id": call_id}]}
        if m.get("tool_calls") and m["tool_calls"][0]["id"] == target["tool_call_id"] else m
        for m in history
    ]  # fmt: skip
    store = tmp_path / "store"
    policy = CompactionPolicy(offload_dir=store)
    result = govern(renamed, context_window=ROOMY, max_output=1000, compaction=policy)
    files = sorted(store.iterdir())
    assert files and all(f.parent == store and not f.name.startswith(".") for f in files)
    placeholder = next(m for m in result.messages if m.get("tool_call_id") == call_id)
    path = Path(placeholder["content"].split("in the file ")[1].split(";")[0])
    assert path.parent == store
    assert path.read_text(encoding="utf-8") == target["content"]
    # Governing again (a retry, another replica) finds the file and writes nothing new.
    again = govern(renamed, context_window=ROOMY, max_output=1000, compaction=policy)
    assert again.messages == result.messages
    assert sorted(store.iterdir()) == files


def test_offload_failure_is_reported_and_still_clears(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    policy = CompactionPolicy(offload_dir=blocker / "store")
    history = _session(150)[-1]
    result = govern(history, context_window=ROOMY, max_output=1000, compaction=policy)
    assert any(n.startswith("offload to") for n in result.report.notes)
    assert _cleared_results(result)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"trigger": 0.5, "target": 0.6},
        {"target": 0},
        {"trigger": 1.5},
        {"min_savings": -1},
        {"keep_recent": 1.5},
        {"trigger": 0},
        {"trigger": 1},
        {"kind": "lru"},
    ],
)
def test_bad_policy_settings_are_clear_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        CompactionPolicy(**kwargs)


def test_unknown_policy_name_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="compaction must be"):
        govern([{"role": "user", "content": "hi"}], compaction="fastest")
