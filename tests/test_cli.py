"""The CLI as a user runs it: real console script, files and stdin, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from context_governor import govern
from context_governor.cli import main

CALL = {"id": "call_1", "type": "function", "function": {"name": "exec", "arguments": "{}"}}
BODY: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "max_tokens": 1000,
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "run the tests"},
        {"role": "user", "content": "and tell me what failed"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_zzz", "name": "exec", "content": "stale output"},
    ],
}


def _run(args: list[str], stdin: str | bytes | None = None) -> Any:
    return CliRunner().invoke(main, args, input=stdin)


def test_human_summary_lists_each_change() -> None:
    result = _run(["govern", "-"], json.dumps(BODY))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "profile openai" in out and "tokens" in out
    for stage in ("orphans", "backfill", "alternation"):
        assert stage in out
    assert "call_zzz" in out and "call_1" in out


def test_json_output_is_the_governed_body() -> None:
    result = _run(["govern", "-", "--json"], json.dumps(BODY))
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    expected = govern(BODY["messages"], model="gpt-4o-mini", max_output=1000).messages
    assert printed["messages"] == expected
    assert printed["model"] == "gpt-4o-mini" and printed["max_tokens"] == 1000


def test_bare_list_in_bare_list_out() -> None:
    result = _run(["govern", "--json"], json.dumps(BODY["messages"]))
    assert result.exit_code == 0
    assert isinstance(json.loads(result.stdout), list)


def test_jsonl_in_jsonl_out_and_report_file(tmp_path: Path) -> None:
    lines = "\n".join(json.dumps(BODY) for _ in range(3))
    report = tmp_path / "r.json"
    result = _run(["govern", "-", "--json", "--report", str(report)], lines)
    assert result.exit_code == 0, result.output
    outputs = [json.loads(line) for line in result.output.splitlines()]
    assert len(outputs) == 3
    reports = json.loads(report.read_text())
    assert len(reports) == 3 and all(r["actions"] for r in reports)
    assert {a["stage"] for a in reports[0]["actions"]} >= {"orphans", "backfill", "alternation"}


def test_context_window_snips_and_reports_budget() -> None:
    big = {"role": "user", "content": "word " * 3000}
    body = {
        "messages": [
            big,
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "next"},
        ]
    }
    result = _run(
        ["govern", "-", "--context-window", "3000", "--max-output", "500"], json.dumps(body)
    )
    assert result.exit_code == 0
    assert "snip" in result.output and "budget 1,476" in result.output
    assert "within budget" in result.output


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        (b"", "input: empty"),
        (b"not json", "input: not JSON"),
        (b"\xff\xfe{]", "not valid UTF-8"),
        (b"42", "expected a request body object"),
        (b'{"model": "x"}', "needs a 'messages' list"),
        (
            b'[{"role": "user", "content": "a"}, 3]',
            "messages[1]: expected a message object, got int",
        ),
        (b'[{"content": "a"}]', "messages[0].role: missing"),
        (b'[{"role": "robot", "content": "a"}]', "messages[0].role: unknown role 'robot'"),
        (b'[{"role": "user", "content": 5}]', "messages[0].content: expected a string"),
        (b'[{"role": "assistant", "tool_calls": {}}]', "messages[0].tool_calls: expected a list"),
        (b'{"messages": [], "tools": "x"}', "tools: expected a list"),
        (b'{"messages": [], "max_tokens": "512"}', "max_tokens must be a non-negative integer"),
        (b'{"messages": []}\n{"messages": 3}\n', "line 2: messages: expected a list"),
        (b'{"messages": []}\n{oops\n', "line 2: not JSON"),
    ],
)
def test_bad_input_exits_2_with_one_line(stdin: bytes, expected: str) -> None:
    result = CliRunner().invoke(main, ["govern", "-"], input=stdin)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert "Traceback" not in result.output
    assert result.output.strip().count("\n") == 0


def test_usage_errors_exit_2() -> None:
    assert _run(["govern", "-", "--profile", "nope"], "[]").exit_code == 2
    assert _run(["govern", "-", "--context-window", "0"], "[]").exit_code == 2
    assert _run(["govern", "-", "--max-tool-result-chars", "5"], "[]").exit_code == 2
    missing = _run(["govern", "/no/such/file.json"])
    assert missing.exit_code == 2 and "No such file" in missing.output


def test_help_explains_inputs_and_options() -> None:
    result = _run(["govern", "--help"])
    assert result.exit_code == 0
    for word in ("JSON Lines", "--context-window", "--profile", "--json", "--report"):
        assert word in result.output


def test_real_console_script_on_a_file(tmp_path: Path) -> None:
    """The installed entry point, a real file, a real process."""
    path = tmp_path / "body.json"
    path.write_text(json.dumps(BODY))
    exe = Path(sys.executable).with_name("context-governor")
    proc = subprocess.run(
        [str(exe), "govern", str(path), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["messages"][-1]["role"] == "tool"
    bad = subprocess.run(
        [str(exe), "govern", "-"], input="[1]", capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: messages[0]: expected a message object, got int"


@pytest.mark.parametrize(("compaction", "stages"), [("cache", {"compact"}), ("seed", {"microcompact", "snip"})])
def test_compaction_option_picks_the_policy(tmp_path: Path, compaction: str, stages: set[str]) -> None:
    example = Path(__file__).parent.parent / "examples" / "coding-session.json"
    report = tmp_path / "r.json"
    result = _run(["govern", str(example), "--context-window", "32000",
                   "--compaction", compaction, "--report", str(report)])  # fmt: skip
    assert result.exit_code == 0, result.output
    acted = {a["stage"] for a in json.loads(report.read_text())["actions"]}
    assert stages <= acted
    assert not ({"compact", "microcompact", "snip"} - stages) & acted
    assert json.loads(report.read_text())["within_budget"]
