"""Digests of cleared logs and JSON (``CompactionPolicy(digest=True)``, stages/_digest.py).

What they keep is the output's own (lines with their numbers, items that parse to the
original's), they are a function of the output alone (cache-stable), exact text is
never digested, and the governed request they are in still fits and counts right."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, govern
from context_governor.counting import exact_counter
from context_governor.policies import policy_from_settings
from context_governor.stages._digest import FAILURE_LINES, TAIL_LINES, digest_text
from context_governor.stages._replay import placeholder_for

BACK = "Call it again if you need all of it."


def _log(lines: int, failures: list[int]) -> str:
    out = [f"tests/test_mod.py::test_case_{i} PASSED  [{i % 100:3d}%]" for i in range(lines)]
    for at in failures:
        out[at] = f"tests/test_mod.py::test_case_{at} FAILED - AssertionError: {at} != {at + 1}"
    return "\n".join(out)


def _numbered(text: str) -> dict[int, str]:
    kept: dict[int, str] = {}
    for line in text.split("\n")[1:]:
        match = re.match(r"\s*(\d+)\| (.*)$", line)
        if match:
            kept[int(match.group(1))] = match.group(2)
    return kept


@given(
    lines=st.integers(150, 400),
    failures=st.lists(st.integers(0, 399), max_size=40, unique=True),
)
@settings(max_examples=60, deadline=None)
def test_a_log_digest_keeps_its_own_failure_lines_and_tail(lines: int, failures: list[int]) -> None:
    failures = [f for f in failures if f < lines]
    text = _log(lines, failures)
    made = digest_text(text, "bash", BACK)
    assert made is not None and made == digest_text(text, "bash", BACK)  # deterministic
    original = text.split("\n")
    kept = _numbered(made)
    assert all(original[n - 1] == line for n, line in kept.items())  # each line is the output's
    assert all(n in kept for n in range(lines - TAIL_LINES + 1, lines + 1))  # the tail
    early = sorted(f + 1 for f in failures if f < lines - TAIL_LINES)
    shown = (
        early
        if len(early) <= FAILURE_LINES
        else early[: FAILURE_LINES // 2] + early[-FAILURE_LINES // 2 :]
    )
    assert all(n in kept for n in shown)  # the failures, the first and last when many
    assert made.startswith(f"[Output of bash ({len(text)} characters, {lines} lines) was shortened")
    assert BACK in made.split("\n", 1)[0]
    assert len(made) <= 0.4 * len(text)


@given(
    count=st.integers(4, 300),
    wrap=st.sampled_from(["top", "data", "nested"]),
)
@settings(max_examples=40, deadline=None)
def test_a_json_digest_keeps_the_arrays_ends_length_and_keys(count: int, wrap: str) -> None:
    items = [
        {"id": i, "name": f"item {i}", "score": i / 3, "tags": ["x"] * (i % 3)}
        for i in range(count)
    ]
    items[-1]["extra"] = None
    doc: Any = items if wrap == "top" else {"total": count, "data": items}
    if wrap == "nested":
        doc = {"meta": {"page": 1}, "result": doc}
    text = json.dumps(doc, indent=2)
    made = digest_text(text, "http_get", BACK)
    if len(text) < 2_000:
        assert made is None  # too small to be worth a digest
        return
    assert made is not None
    path = {"top": "$", "data": "$.data", "nested": "$.result.data"}[wrap]
    assert f"the array at {path} ({count} items)" in made
    first = made.split(f"first ({path}[0]): ", 1)[1].split("\n", 1)[0]
    last = made.split(f"last ({path}[{count - 1}]): ", 1)[1].split("\n", 1)[0]
    assert json.loads(first) == items[0] and json.loads(last) == items[-1]
    assert (
        "items: objects {id: int, name: str, score: number, tags: list, extra: null in 1}" in made
    )


def test_small_or_short_outputs_and_plain_prose_keep_the_placeholder() -> None:
    assert digest_text("x" * 1_999, "bash", BACK) is None
    assert digest_text("word " * 2_000, "bash", BACK) is None  # one line: not a log
    assert digest_text(json.dumps({"a": [1, 2]}) + " " * 3_000, "api", BACK) is None  # 2 items


_EXACT = st.sampled_from(["Read", "read_file", "cat", "view", "str_replace_based_edit_tool"])


@given(name=_EXACT, lines=st.integers(60, 200))
@settings(max_examples=30, deadline=None)
def test_exact_text_is_never_digested(name: str, lines: int) -> None:
    """A file read by an exact tool, or any result whose lines are numbered (Claude
    Code's Read), is cleared to the plain placeholder: a digest might be quoted."""
    text = _log(lines, [lines // 2])
    policy = CompactionPolicy(digest=True)
    by_name = placeholder_for(
        {"role": "tool", "tool_call_id": "c", "name": name, "content": text}, policy
    )
    numbered = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(text.split("\n"), 1))
    by_content = placeholder_for(
        {"role": "tool", "tool_call_id": "c", "name": "bash", "content": numbered}, policy
    )
    for cleared in (by_name, by_content):
        assert (
            cleared["content"].startswith("[Output of")
            and "was removed from the context" in cleared["content"]
        )
    other = placeholder_for(
        {"role": "tool", "tool_call_id": "c", "name": "bash", "content": text}, policy
    )
    assert "was shortened to save space" in other["content"]


def test_a_read_is_known_by_its_call_when_the_result_has_no_name() -> None:
    """Chat Completions tool messages carry no name: the call they answer tells that a
    result is a file read (exact text, never digested) or a command's log."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix it."}]
    for n, (tool, args) in enumerate(
        [("read_file", {"path": "a.log"}), ("bash", {"command": "pytest"})] * 20
    ):
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps(args)},
        }
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": f"c{n}", "content": _log(300, [5 + n])})
    result = govern(history, model="gpt-4o", context_window=24_000, max_output=1_000,
                    compaction=CompactionPolicy(digest=True))  # fmt: skip
    cleared = {m["tool_call_id"]: m["content"] for m in result.messages if m.get("role") == "tool"
               and m["content"] != next(h for h in history if h.get("tool_call_id") == m["tool_call_id"])["content"]}  # fmt: skip
    reads = [c for c in cleared if int(c[1:]) % 2 == 0]
    runs = [c for c in cleared if int(c[1:]) % 2 == 1]
    assert reads and runs
    assert all("was removed from the context" in cleared[c] for c in reads)
    assert all("was shortened to save space" in cleared[c] for c in runs)
    assert result.report.within_budget


def test_the_offload_file_is_named_where_there_is_one() -> None:
    message = {"role": "tool", "tool_call_id": "c", "name": "bash", "content": _log(100, [3])}
    cleared = placeholder_for(message, CompactionPolicy(digest=True), "/tmp/out/c-1.txt")
    assert "The full output is in the file /tmp/out/c-1.txt" in cleared["content"]
    plain = placeholder_for(message, CompactionPolicy(), "/tmp/out/c-1.txt")
    assert "was moved out of the context" in plain["content"]  # digest off: as before


def _ci_session(steps: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a CI agent."},
        {"role": "user", "content": "Make the build green."},
    ]
    for n in range(steps):
        call = {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"make test-{n}"})},
        }
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append(
            {"role": "tool", "tool_call_id": f"c{n}", "name": "bash", "content": _log(300, [7 + n])}
        )
    return history


def test_a_governed_request_with_digests_fits_and_counts_what_it_sends(tmp_path: Path) -> None:
    history = _ci_session(40)
    policy = CompactionPolicy(digest=True, offload_dir=tmp_path)
    result = govern(
        history, model="gpt-4o", context_window=32_000, max_output=1_000, compaction=policy
    )
    report = result.report
    assert report.ok and report.within_budget
    digests = [m for m in result.messages if "was shortened to save space" in str(m.get("content"))]
    assert digests
    for message in digests:  # each names its file, which holds the whole output
        path = message["content"].split("The full output is in the file ", 1)[1].split(";", 1)[0]
        original = next(m for m in history if m.get("tool_call_id") == message["tool_call_id"])
        assert Path(path).read_text() == original["content"]
        failing = int(message["tool_call_id"][1:]) + 7
        assert f"test_case_{failing} FAILED" in message["content"]  # its failure kept
    counter = exact_counter("gpt-4o")
    assert report.tokens_after == counter.prompt_tokens(result.messages, [])
    again = govern(
        history, model="gpt-4o", context_window=32_000, max_output=1_000, compaction=policy
    )
    assert again.messages == result.messages  # the same bytes: the cache's prefix holds


def test_digests_cost_some_room_and_keep_what_the_placeholder_loses() -> None:
    history = _ci_session(40)
    plain = govern(history, model="gpt-4o", context_window=32_000, max_output=1_000)
    digested = govern(history, model="gpt-4o", context_window=32_000, max_output=1_000,
                      compaction=CompactionPolicy(digest=True))  # fmt: skip
    seen = " ".join(str(m.get("content")) for m in digested.messages)
    assert sum(f"test_case_{n + 7} FAILED" in seen for n in range(40)) > sum(
        f"test_case_{n + 7} FAILED" in " ".join(str(m.get("content")) for m in plain.messages)
        for n in range(40)
    )
    assert digested.report.within_budget and plain.report.within_budget


def test_the_config_file_turns_digests_on() -> None:
    policy = policy_from_settings("cache", {"digest": True, "supersede": False})
    assert isinstance(policy, CompactionPolicy) and policy.digest and not policy.supersede


def test_a_governor_step_by_step_sends_what_govern_sends() -> None:
    """Digests are made where the placeholder would go, from the output and its call: a
    Governor appending one step at a time (its replay extended, not made again) sends
    the same request as govern() on the whole history at every step."""
    from context_governor import Governor

    history = _ci_session(30)
    policy = CompactionPolicy(digest=True)
    gov = Governor(model="gpt-4o", context_window=24_000, max_output=1_000, compaction=policy)
    digested = 0
    for end in range(4, len(history) + 1, 2):
        step = gov.govern(history[:end])
        whole = govern(history[:end], model="gpt-4o", context_window=24_000, max_output=1_000,
                       compaction=policy)  # fmt: skip
        assert step.messages == whole.messages, end
        digested = max(
            digested, sum("was shortened" in str(m.get("content")) for m in step.messages)
        )
    assert digested > 0
