"""The receipt on a cut (stages/_receipt.py): what the extractors read from realistic tool
calls and results, that the receipt stays inside its bound, that it is written once per
cut (the same text on every later request of that cut, from a Governor or from govern()),
that a user instruction in the cut span appears, and that ``receipt=False`` leaves the
note alone."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, Governor, govern
from context_governor.stages._receipt import (
    RECEIPT_CHARS,
    RECEIPT_HEAD,
    RECEIPT_TAIL,
    Entry,
    call_entries,
    entries,
    error_lines,
    render,
    user_entries,
)

Message = dict[str, Any]
RECEIPT = re.compile(re.escape(RECEIPT_HEAD) + ".*?" + re.escape(RECEIPT_TAIL), re.S)
NOTE = re.compile(r"\[(\d+) earlier messages of this conversation")


def _call(name: str, args: dict[str, Any], call_id: str = "c1") -> Message:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


# ----------------------------------------------------------------------------- extractors


def test_claude_code_file_tools_name_their_files() -> None:
    assert call_entries("Read", {"file_path": "/repo/src/app.py", "offset": 10}) == [
        Entry("read", "/repo/src/app.py")
    ]
    edit = {"file_path": "/repo/src/app.py", "old_string": "a = 1", "new_string": "a = 2"}
    assert call_entries("Edit", edit) == [Entry("changed", "/repo/src/app.py")]
    assert call_entries("MultiEdit", {"file_path": "src/x.py", "edits": []}) == [
        Entry("changed", "src/x.py")
    ]
    assert call_entries("Write", {"file_path": "notes.md", "content": "# Notes\n"}) == [
        Entry("changed", "notes.md")
    ]
    assert call_entries("NotebookEdit", {"notebook_path": "a.ipynb", "new_source": ""}) == [
        Entry("changed", "a.ipynb")
    ]


def test_claude_code_bash_is_a_command_and_search_tools_are_nothing() -> None:
    bash = {"command": "pytest tests/test_api.py -x", "description": "Run the API tests"}
    assert call_entries("Bash", bash) == [Entry("command", "pytest tests/test_api.py -x")]
    assert call_entries("Grep", {"pattern": "def main", "path": "src"}) == []
    assert call_entries("Glob", {"pattern": "**/*.py"}) == []
    assert call_entries("WebFetch", {"url": "https://example.com", "prompt": "x"}) == []


def test_codex_shell_and_apply_patch() -> None:
    assert call_entries("shell", {"command": ["bash", "-lc", "cargo test -p core"]}) == [
        Entry("command", "cargo test -p core")
    ]
    assert call_entries("shell", {"command": ["ls", "-la", "src"], "workdir": "/w"}) == [
        Entry("command", "ls -la src")
    ]
    patch = (
        "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n"
        "*** Add File: src/new.rs\n+fn x() {}\n*** Delete File: old.rs\n*** End Patch"
    )
    changed = [Entry("changed", p) for p in ("src/lib.rs", "src/new.rs", "old.rs")]
    assert call_entries("apply_patch", {"input": patch}) == changed
    # a patch given to the shell, as Codex does too
    assert call_entries("shell", {"command": ["apply_patch", patch]}) == changed


def test_generic_tools() -> None:
    assert call_entries("read_file", {"path": "src/m.py"}) == [Entry("read", "src/m.py")]
    assert call_entries("write_file", {"path": "out.txt", "content": "x"}) == [
        Entry("changed", "out.txt")
    ]
    assert call_entries("edit_file", {"path": "a.py", "old_string": "", "new_string": ""}) == [
        Entry("changed", "a.py")
    ]
    assert call_entries("exec", {"cmd": "make   test"}) == [Entry("command", "make test")]
    editor = "str_replace_based_edit_tool"
    assert call_entries(editor, {"command": "view", "path": "a.py"}) == [Entry("read", "a.py")]
    assert call_entries(editor, {"command": "str_replace", "path": "a.py"}) == [
        Entry("changed", "a.py")
    ]
    assert call_entries("get_weather", {"city": "Paris"}) == []
    assert call_entries("mcp__fs__read_file", {"path": "b.py"}) == [Entry("read", "b.py")]


def test_a_message_with_bad_arguments_gives_nothing_and_never_fails() -> None:
    bad = {"id": "c", "type": "function", "function": {"name": "Read", "arguments": "{oops"}}
    assert entries({"role": "assistant", "content": None, "tool_calls": [bad, "junk"]}) == ()
    message = {
        "role": "assistant",
        "content": "x",
        "tool_calls": [_call("Read", {"file_path": "a"})],
    }
    assert entries(message) == (Entry("read", "a"),)


PYTEST_FAIL = """\
============================= test session starts ==============================
collected 12 items

tests/test_api.py ....F
=================================== FAILURES ===================================
_______________________________ test_missing_job _______________________________
>       assert resp.status_code == 404
E       assert 500 == 404
tests/test_api.py:41: AssertionError
=========================== short test summary info ============================
FAILED tests/test_api.py::test_missing_job - assert 500 == 404
1 failed, 11 passed in 0.52s
"""

TRACEBACK = """\
Traceback (most recent call last):
  File "/app/main.py", line 3, in <module>
    load()
  File "/app/main.py", line 2, in load
    raise ValueError("bad config: port")
ValueError: bad config: port
"""


def test_error_lines_from_results() -> None:
    assert error_lines(PYTEST_FAIL) == [
        "FAILED tests/test_api.py::test_missing_job - assert 500 == 404",
        "E assert 500 == 404",
    ]
    assert error_lines(TRACEBACK) == ["ValueError: bad config: port"]
    assert error_lines("fatal: not a git repository (or any parent)") == [
        "fatal: not a git repository (or any parent)"
    ]
    assert error_lines("bash: line 1: pnpm: command not found\nexit code: 127") == [
        "bash: line 1: pnpm: command not found",
        "exit code: 127",
    ]
    assert error_lines("src/a.c:3:5: error: expected ';' before '}' token") == [
        "src/a.c:3:5: error: expected ';' before '}' token"
    ]
    # a file read that holds error handling is not an error seen
    source = '     1\tdef f():\n     2\t    raise ValueError("x")\n     3\texcept KeyError:'
    assert error_lines(source) == []
    assert error_lines("12 passed in 0.3s\nexit code: 0") == []


def test_error_lines_read_the_tail_of_a_huge_output() -> None:
    huge = "ok\n" * 50_000 + "RuntimeError: out of memory\n"
    assert error_lines(huge) == ["RuntimeError: out of memory"]


def test_user_messages() -> None:
    (order,) = user_entries("From now on, always run the linter before you commit.")
    assert order.kind == "instruction"
    (request,) = user_entries("Fix the flaky login test.")
    assert request.kind == "request"
    assert user_entries("   ") == []
    (long,) = user_entries("never " + "x" * 1000)
    assert len(long.text) <= 200 and long.text.endswith("…")


def test_render_is_bounded_and_counts_the_rest() -> None:
    lists: dict[Any, list[str]] = {
        "instruction": [f"always do thing {i} " + "y" * 150 for i in range(20)],
        "error": [f"E{i}: " + "z" * 150 for i in range(20)],
        "changed": [f"src/file_{i}.py" for i in range(50)],
        "command": [f"make target{i}" for i in range(30)],
        "read": [f"docs/page_{i}.md" for i in range(50)],
        "request": ["q" * 120 for _ in range(5)],
    }
    text = render(lists)
    assert len(text) <= RECEIPT_CHARS
    assert text.startswith(RECEIPT_HEAD) and text.endswith(RECEIPT_TAIL)
    assert "always do thing 0" in text  # newest first: the first of each list
    assert "more" in text
    assert render({"read": []}) == ""


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["instruction", "error", "changed", "command", "read", "request"]),
        st.lists(st.text(min_size=1, max_size=300), max_size=40),
    )
)
def test_render_never_exceeds_its_bound(lists: dict[Any, list[str]]) -> None:
    assert len(render(lists)) <= RECEIPT_CHARS


# ----------------------------------------------------------------------------- in a request

INSTRUCTION = "From now on, never touch the migrations folder; write new migrations instead."


def _session(rng: random.Random, steps: int, instruction_at: int = 3) -> list[Message]:
    """A Claude Code-like session: reads, edits, shell runs (some failing), a user prompt
    now and then, and a standing instruction early on (after the task)."""
    msgs: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Make the API return 404 for missing jobs."},
    ]
    for step in range(steps):
        if step == instruction_at:
            msgs += [
                {"role": "assistant", "content": "Starting."},
                {"role": "user", "content": INSTRUCTION},
            ]
        elif step and rng.random() < 0.1:
            msgs += [
                {"role": "assistant", "content": f"Done with part {step}."},
                {"role": "user", "content": f"Now part {step + 1}, please."},
            ]
        kind = rng.choice(["Read", "Edit", "Bash", "Bash"])
        path = f"src/pkg/mod_{rng.randrange(40)}.py"
        if kind == "Bash":
            args: dict[str, Any] = {"command": f"pytest tests/test_{step}.py -q"}
            out = PYTEST_FAIL if rng.random() < 0.4 else "12 passed in 0.3s"
        elif kind == "Edit":
            args = {"file_path": path, "old_string": "a", "new_string": "b"}
            out = f"The file {path} has been updated."
        else:
            args = {"file_path": path}
            out = "\n".join(f"{i:6d}\tline {step} {i}" for i in range(rng.choice([40, 200, 600])))
        call_id = f"toolu_{step}"
        msgs.append(
            {"role": "assistant", "content": None, "tool_calls": [_call(kind, args, call_id)]}
        )
        msgs.append({"role": "tool", "tool_call_id": call_id, "name": kind, "content": out})
    return msgs


def _receipts(messages: list[Message]) -> list[str]:
    text = "\n".join(str(m.get("content")) for m in messages)
    return RECEIPT.findall(text)


def test_a_user_instruction_in_the_cut_span_appears() -> None:
    history = _session(random.Random(5), 160)
    on = govern(history, context_window=16_000, max_output=1000)
    (receipt,) = _receipts(on.messages)
    assert INSTRUCTION in receipt
    # it was cut: the instruction's own message is not in the request
    assert not any(m.get("content") == INSTRUCTION for m in on.messages)
    assert "FAILED tests/test_api.py::test_missing_job" in receipt
    assert "src/pkg/mod_" in receipt and "pytest tests/test_" in receipt
    notes = [n for n in on.report.notes if "receipt" in n]
    assert len(notes) == 1 and f"{len(receipt)} characters" in notes[0]
    assert on.report.within_budget
    off = govern(
        history,
        context_window=16_000,
        max_output=1000,
        compaction=CompactionPolicy(receipt=False),
    )
    assert _receipts(off.messages) == []
    assert NOTE.search("\n".join(str(m.get("content")) for m in off.messages))
    assert not [n for n in off.report.notes if "receipt" in n]


def test_no_note_no_receipt() -> None:
    history = _session(random.Random(6), 160)
    out = govern(
        history, context_window=16_000, max_output=1000, compaction=CompactionPolicy(cut_note=None)
    )
    assert _receipts(out.messages) == []


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), window=st.sampled_from([7_000, 9_000]))
def test_the_receipt_is_bounded_and_written_once_per_cut(seed: int, window: int) -> None:
    """A Governor over a growing history: each request's receipt is within its bound, a
    cut's receipt is the same text on every request until the next cut, and govern() of
    the same history (a process that saw no earlier call) writes the same text."""
    rng = random.Random(seed)
    history = _session(rng, rng.randint(100, 130), instruction_at=rng.randint(1, 20))
    gov = Governor(context_window=window, max_output=1000)
    by_cut: dict[str, str] = {}
    seen = 0
    for end in range(3, len(history) + 1):
        if (
            history[end - 1]["role"] == "tool"
            and end < len(history)
            and history[end]["role"] == "tool"
        ):
            continue  # a call's results come together
        step = history[:end]
        result = gov.govern(step)
        receipts = _receipts(result.messages)
        assert len(receipts) <= 1
        text = "\n".join(str(m.get("content")) for m in result.messages)
        for receipt in receipts:
            assert len(receipt) <= RECEIPT_CHARS
            header = NOTE.search(text)
            assert header is not None
            key = header.group(0)  # one cut: one count of removed messages
            assert by_cut.setdefault(key, receipt) == receipt
            seen += 1
        if receipts and end % 9 == 0:
            again = govern(list(step), context_window=window, max_output=1000)
            assert _receipts(again.messages) == receipts
    assert seen  # the sessions are long enough to be cut
