"""``context-governor run`` and ``demo``: real tools, the fake upstream over HTTP, exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_upstream import FakeUpstream, Reply

from context_governor.cli import main
from context_governor.cli._run import _run_agent, read_history
from context_governor.demo import (
    CACHE_STAGES,
    SEED_STAGES,
    run_demo,
    trim_like_a_store,
    write_project,
)
from context_governor.llm import ScriptedModel, tool_call
from context_governor.report import Action, Report
from context_governor.runner import AgentRunner, RunHooks, ToolEvent
from context_governor.runner._progress import ProgressPrinter, actions_summary, step_line, tool_line
from context_governor.tools import builtin_tools


def _cli(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --------------------------------------------------------------------------- demo


@pytest.mark.parametrize(
    ("args", "stages"),
    [
        ([], CACHE_STAGES),
        (["--compaction", "seed"], SEED_STAGES),
        (["--profile", "nanobot"], SEED_STAGES),
    ],
    ids=["cache-by-default", "seed", "nanobot-is-the-seed"],
)
def test_demo_makes_every_stage_of_its_policy_act_with_legal_requests(
    args: list[str], stages: tuple[str, ...]
) -> None:
    result = _cli(["demo", *args])
    assert result.exit_code == 0, result.output
    out = result.output
    policy = "seed" if args else "cache"  # the cache policy is the default, as everywhere
    profile = args[1] if args[0:1] == ["--profile"] else "openai"
    assert f"profile {profile}, compaction {policy}, context window 11,000" in out
    assert out.count("── turn ") == 6
    assert "step 1: " in out and "step 15: " in out
    assert "read_file(path='src/shortlink/timeutil.py') -> " in out  # the real tool ran
    footer = out.splitlines()[-2:]
    assert footer[0].startswith("stages that acted: orphans (")
    for stage in stages:
        assert f"{stage} (" in footer[0]
    assert footer[1].endswith("every request passed the openai rules")
    assert "did not act" not in out


def test_demo_session_in_detail(tmp_path: Path) -> None:
    write_project(tmp_path)
    lines: list[str] = []
    printer = ProgressPrinter(lines.append, lambda text: None)
    summary = asyncio.run(run_demo(tmp_path, printer, context_window=11_000))
    assert summary.missing_stages == [] and summary.violations == 0
    assert len(summary.reports) == summary.requests == 15
    # The cancelled exec call is the one backfilled, and never gets a persisted result.
    backfilled = {a.tool_call_id for r in summary.reports for a in r.actions if a.stage == "backfill"}
    exec_calls = [
        c["id"]
        for m in summary.history
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "exec" and "sleep" in c["function"]["arguments"]
    ]
    assert backfilled == set(exec_calls) and len(exec_calls) == 1
    # The orphan appears only once the app reloads its trimmed history (turn 6).
    orphan_steps = [i for i, r in enumerate(summary.reports, 1) if r.counts()[("orphans", "drop")]]
    assert orphan_steps == [13, 14, 15]
    # Snipping starts when the history outgrows the budget, and then every step fits.
    assert all(r.within_budget for r in summary.reports)
    assert not summary.reports[0].actions


def test_trim_like_a_store_cuts_inside_a_tool_block() -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [tool_call("grep", id="c1")]}
    result = {"role": "tool", "tool_call_id": "c1", "content": "x"}
    history = [{"role": "system", "content": "s"}] + [
        {"role": "user", "content": "u"}, call, result, {"role": "assistant", "content": "a"}
    ] * 5
    trimmed = trim_like_a_store(history, keep=6)
    assert trimmed[0]["role"] == "system"
    assert trimmed[1] == result  # a result whose call was cut


# --------------------------------------------------------------------------- run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("def main():\n    return 42  # TODO: read config\n")
    return tmp_path


def test_run_end_to_end_with_real_tools(upstream: FakeUpstream, workspace: Path) -> None:
    history = workspace.parent / "chat.json"
    upstream.push(
        Reply.calls(("read_file", {"path": "app.py"}), ("grep", {"pattern": "TODO"})),
        Reply.text("There is one TODO, in app.py: read config."),
    )
    result = _cli(
        ["run", "Find the TODOs", "--model", "gpt-4o-mini", "--base-url", upstream.base_url,
         "--workspace", str(workspace), "--context-window", "16000", "--history", str(history)],
        env={"OPENAI_API_KEY": "sk-cli"},
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "There is one TODO, in app.py: read config.\n"
    err = result.stderr
    assert "step 1: " in err and "step 2: " in err
    assert "read_file(path='app.py') -> " in err and "grep(pattern='TODO') -> " in err
    assert "completed after 2 model call(s); tools: read_file, grep" in err
    # The real tools' output went to the model.
    tool_results = [m["content"] for m in upstream.requests[1]["messages"] if m["role"] == "tool"]
    assert any("return 42" in c for c in tool_results)
    assert any("app.py:2:" in c for c in tool_results)
    assert upstream.requests[0]["stream"] is True
    assert upstream.request_headers[0]["authorization"] == "Bearer sk-cli"

    saved = read_history(history)
    assert [m["role"] for m in saved] == ["system", "user", "assistant", "tool", "tool", "assistant"]

    # The next run continues the saved conversation.
    upstream.push(Reply.text("You're welcome."))
    again = _cli(
        ["run", "thanks", "--model", "gpt-4o-mini", "--base-url", upstream.base_url,
         "--workspace", str(workspace), "--history", str(history), "--no-stream"],
    )
    assert again.exit_code == 0, again.stderr
    assert again.stdout == "You're welcome.\n"
    assert len(upstream.requests[-1]["messages"]) == 7
    assert len(read_history(history)) == 8


def test_run_without_a_reachable_server_says_so(workspace: Path) -> None:
    port = _closed_port()
    env = {**os.environ, "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "context_governor", "run", "hi", "--model", "m",
         "--base-url", f"http://127.0.0.1:{port}/v1", "--workspace", str(workspace)],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot reach the model server at http://127.0.0.1:{port}/v1")
    assert "is the server running?" in last
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["run", "hi"], {}, "Missing option '--model'"),
        (["run", "hi", "--model", "m"], {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}, "error: no server given"),
        (["run", "hi", "--model", "m", "--workspace", "/nonexistent/dir"], {}, "does not exist"),
        (["run", "hi", "--model", "m", "--base-url", "http://x", "--history", "/nonexistent/dir/chat.json"], {}, "error: --history /nonexistent/dir/chat.json: the directory /nonexistent/dir does not exist"),
        (["run", "hi", "--model", "m", "--base-url", "http://x", "--profile", "nope"], {}, "Invalid value for '--profile'"),
        (["run", "hi", "--model", "m", "--base-url", "http://x", "--context-window", "5000"], {}, "--context-window 5000 leaves no room for the prompt"),
    ],
)
def test_run_usage_errors_exit_2(args: list[str], env: dict[str, str], message: str, tmp_path: Path) -> None:
    result = _cli(args, env=env)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_run_bad_history_file_exits_2(tmp_path: Path) -> None:
    history = tmp_path / "chat.json"
    history.write_text("{not json")
    result = _cli(["run", "hi", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--history", str(history)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {history}: not JSON")


def test_run_stops_at_max_iterations_with_exit_1(upstream: FakeUpstream, workspace: Path) -> None:
    upstream.push(Reply.calls(("list_dir", {})), Reply.calls(("list_dir", {})))
    result = _cli(
        ["run", "loop", "--model", "m", "--base-url", upstream.base_url, "--workspace", str(workspace),
         "--max-iterations", "2"]
    )
    assert result.exit_code == 1
    assert result.stderr.strip().endswith(
        "error: stopped after 2 model calls (--max-iterations) without an answer"
    )


@pytest.mark.asyncio
async def test_an_interrupted_run_saves_what_happened(workspace: Path) -> None:
    save = workspace / "chat.json"
    model = ScriptedModel([{"tool_calls": [tool_call("list_dir", {}), tool_call("exec", {"command": "sleep 30"})]}])
    started = asyncio.Event()
    runner = AgentRunner(
        model, builtin_tools(workspace), hooks=RunHooks(after_tool=lambda e: started.set())
    )
    history = [{"role": "user", "content": "go"}]
    task = asyncio.create_task(_run_agent(runner, history, save))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    saved = json.loads(save.read_text())
    assert [m["role"] for m in saved] == ["user", "assistant", "tool"]
    assert saved[2]["name"] == "list_dir"


# --------------------------------------------------------------------------- rendering


def test_progress_lines() -> None:
    report = Report(
        profile="openai", counter="o200k_base", context_window=8000, max_output=1000,
        budget=5976, tokens_before=9000, tokens_after=5000, messages_before=30, messages_after=12,
        actions=[
            Action("orphans", "drop", 3, "x", "c1", 40),
            Action("snip", "drop", 1, "x", None, 3000),
            Action("snip", "drop", 2, "x", None, 1000),
            Action("backfill", "insert", 5, "x", "c2", -20),
        ],
    )
    assert actions_summary(report) == (
        "orphans drop 1 (-40 tokens) · snip drop 2 (-4,000 tokens) · backfill insert 1 (+20 tokens)"
    )
    assert step_line(3, report).startswith(
        "step 3: 9,000 -> 5,000 tokens / budget 5,976, 30 -> 12 messages | orphans drop 1"
    )
    event = ToolEvent(1, "c", "exec", '{"command": "pytest -q"}', "Error: exit code 1\nmore", True, 1.5)
    assert tool_line(event) == "  exec(command='pytest -q') -> Error: exit code 1 (1.50s)"
    ok = ToolEvent(1, "c", "grep", '{"pattern": "' + "x" * 100 + '"}', "a" * 1234, False, 0.01)
    assert tool_line(ok).startswith("  grep(pattern='xxx") and tool_line(ok).endswith("…) -> 1,234 chars (0.01s)")


def test_the_runner_loads_lazily() -> None:
    """`import context_governor` and the govern CLI must not pay for httpx."""
    code = (
        "import sys, context_governor, context_governor.cli\n"
        "assert 'httpx' not in sys.modules, 'httpx imported eagerly'\n"
        "from context_governor import AgentRunner, OpenAICompatClient, RunResult, ScriptedModel\n"
        "assert 'httpx' in sys.modules\n"
        "print(AgentRunner.__name__, OpenAICompatClient.__name__, RunResult.__name__, ScriptedModel.__name__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["AgentRunner", "OpenAICompatClient", "RunResult", "ScriptedModel"]
