"""``context-governor run --api anthropic|responses``: real tools, the fake native upstream.

The upstream validates every request with the API's own rules and its window;
the ``native`` fixture fails a test on any rejection it did not expect.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_native import FakeNative, NativeReply, fake_signature

from context_governor.cli import main
from context_governor.cli._run import read_history
from context_governor.llm._responses_client import ITEMS

TODO = "There is one TODO, in app.py: read config."


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return 42  # TODO: read config\n")
    return root


def _cli(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_run_api_anthropic_with_thinking(native: FakeNative, workspace: Path) -> None:
    history = workspace.parent / "chat.json"
    native.context_window = 16_000
    native.push(
        NativeReply.tool_calls(("read_file", {"path": "app.py"}), thinking="Look at app.py."),
        NativeReply.answer(TODO, thinking="Found it."),
    )
    result = _cli(
        ["run", "Find the TODOs", "--api", "anthropic", "--model", "claude-sonnet-4-5",
         "--base-url", native.root_url, "--workspace", str(workspace), "--thinking", "1024",
         "--max-output", "2000", "--context-window", "16000", "--history", str(history)],
        env={"ANTHROPIC_API_KEY": "sk-ant-cli"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == TODO + "\n"
    assert "step 1: " in result.stderr and "step 2: " in result.stderr
    assert "completed after 2 model call(s); tools: read_file" in result.stderr
    first = native.requests[0]
    assert native.apis == ["anthropic", "anthropic"]
    assert native.request_headers[0]["x-api-key"] == "sk-ant-cli"
    assert first["stream"] is True and first["max_tokens"] == 2000
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    # the system prompt, as blocks: the governed body marks its end as a cache breakpoint
    (system,) = first["system"]
    assert system["text"].startswith("You are a coding agent.")
    assert system["cache_control"] == {"type": "ephemeral"}
    results = native.requests[1]["messages"][-1]["content"]
    assert results[0]["type"] == "tool_result" and "return 42" in results[0]["content"]

    saved = read_history(history)
    assert [m["role"] for m in saved] == ["system", "user", "assistant", "tool", "assistant"]
    thinking = saved[2]["content"][0]
    assert thinking == {"type": "thinking", "thinking": "Look at app.py.",
                        "signature": fake_signature("Look at app.py.")}  # fmt: skip

    # The next run continues the saved conversation; the saved thinking goes back as it was.
    native.push(NativeReply.answer("You're welcome.", thinking="Polite."))
    again = _cli(
        ["run", "thanks", "--api", "anthropic", "--model", "claude-sonnet-4-5",
         "--base-url", native.root_url, "--workspace", str(workspace), "--thinking", "1024",
         "--max-output", "2000", "--history", str(history), "--no-stream"],
        env={"ANTHROPIC_API_KEY": "sk-ant-cli"},
    )  # fmt: skip
    assert again.exit_code == 0, again.stderr
    assert again.stdout == "You're welcome.\n"
    sent = native.requests[-1]
    assert "stream" not in sent
    assert json.dumps(thinking) in json.dumps(sent["messages"])
    assert len(read_history(history)) == 7


def test_run_api_responses_with_reasoning(native: FakeNative, workspace: Path) -> None:
    history = workspace.parent / "chat.json"
    native.push(
        NativeReply.tool_calls(("read_file", {"path": "app.py"}), thinking="Look at app.py."),
        NativeReply.answer(TODO, thinking="Found it."),
    )
    result = _cli(
        ["run", "Find the TODOs", "--api", "responses", "--model", "o4-mini",
         "--base-url", native.base_url, "--workspace", str(workspace),
         "--reasoning-effort", "low", "--history", str(history)],
        env={"OPENAI_API_KEY": "sk-oai-cli"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == TODO + "\n"
    assert native.apis == ["responses", "responses"]
    assert native.request_headers[0]["authorization"] == "Bearer sk-oai-cli"
    first = native.requests[0]
    assert first["reasoning"] == {"effort": "low"} and first["store"] is False
    assert first["include"] == ["reasoning.encrypted_content"]
    saved = read_history(history)
    reasoning = saved[2][ITEMS][0]
    assert reasoning["encrypted_content"] == "gAAAA" + fake_signature("Look at app.py.")
    # The second request sent the reasoning item back exactly, before its call.
    sent = native.requests[1]["input"]
    at = sent.index(reasoning)
    assert sent[at + 1]["type"] == "function_call"

    # For a model that refuses the include: left out on request.
    native.push(NativeReply.answer("Bye."))
    bye = _cli(
        ["run", "bye", "--api", "responses", "--model", "gpt-4.1", "--base-url", native.base_url,
         "--workspace", str(workspace), "--no-encrypted-reasoning"],
        env={"OPENAI_API_KEY": "sk-oai-cli"},
    )  # fmt: skip
    assert bye.exit_code == 0, bye.stderr
    assert "include" not in native.requests[-1] and native.requests[-1]["store"] is False


def test_run_api_anthropic_defaults_to_the_anthropic_profile(
    native: FakeNative, workspace: Path
) -> None:
    native.push(NativeReply.answer("Hi."))
    result = _cli(
        ["run", "hi", "--api", "anthropic", "--model", "claude-sonnet-4-5", "-v",
         "--base-url", native.root_url, "--workspace", str(workspace), "--max-output", "2000"],
        env={"ANTHROPIC_API_KEY": "k"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[0] == "api anthropic, profile anthropic, compaction cache"
    # An explicit --profile wins (GLM's rules for an Anthropic-style endpoint of GLM).
    native.push(NativeReply.answer("Hi."))
    glm = _cli(
        ["run", "hi", "--api", "anthropic", "--model", "glm-4.6", "-v", "--profile", "glm",
         "--base-url", native.root_url, "--workspace", str(workspace), "--max-output", "2000"],
        env={"ANTHROPIC_API_KEY": "k"},
    )  # fmt: skip
    assert glm.exit_code == 0, glm.stderr
    assert glm.stderr.splitlines()[0] == "api anthropic, profile glm, compaction cache"


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--thinking", "2048"], {}, "error: --thinking is a setting of --api anthropic"),
        (["--api", "anthropic", "--reasoning-effort", "low"], {},
         "error: --reasoning-effort is a setting of --api responses"),
        (["--api", "anthropic", "--thinking", "4096"], {},
         "error: --thinking 4096: the budget must be at least 1024 and below the output "
         "reserve (--max-output, 4096)"),
        (["--api", "anthropic", "--thinking", "512", "--max-output", "8000"], {},
         "must be at least 1024"),
        (["--api", "anthropic", "--thinking", "lots"], {},
         "error: --thinking 'lots': expected a token budget, 'adaptive' or 'off'"),
        (["--api", "nope"], {}, "Invalid value for '--api'"),
        (["--no-encrypted-reasoning"], {},
         "error: --no-encrypted-reasoning is a setting of --api responses"),
    ],
    ids=["thinking-with-chat", "effort-with-anthropic", "budget-not-below-reserve",
         "budget-too-small", "budget-not-a-number", "unknown-api", "no-encrypted-with-chat"],
)  # fmt: skip
def test_run_native_usage_errors_exit_2(
    args: list[str], env: dict[str, str], message: str, workspace: Path
) -> None:
    base = ["run", "hi", "--model", "m", "--base-url", "http://127.0.0.1:9", "--workspace",
            str(workspace)]  # fmt: skip
    result = _cli(base + args, env=env)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_run_api_anthropic_needs_a_key_or_a_server(workspace: Path) -> None:
    result = _cli(
        ["run", "hi", "--api", "anthropic", "--model", "m", "--workspace", str(workspace)],
        env={"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": "", "OPENAI_API_KEY": "sk"},
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no server given: set ANTHROPIC_API_KEY for Anthropic, or --base-url for "
        "another server\n"
    )


@pytest.mark.parametrize(
    ("api", "reply", "message"),
    [
        ("anthropic", NativeReply.raw(200, b"<html>gateway</html>", "application/json"),
         "/v1/messages is not JSON: '<html>gateway</html>'"),
        ("anthropic", NativeReply.error(529, "Overloaded"), None),
        ("responses", NativeReply.raw(200, b'{"object": "response"}', "application/json"),
         "error: response has no output items"),
        ("responses", NativeReply.error(400, "No tool output found for function call call_1."),
         "/v1/responses: No tool output found for function call call_1."),
    ],
    ids=["anthropic-not-json", "anthropic-overloaded", "responses-no-output", "responses-400"],
)  # fmt: skip
def test_a_bad_server_answer_is_a_clear_error_and_exit_1(
    native: FakeNative, workspace: Path, api: str, reply: NativeReply, message: str | None
) -> None:
    # A 529 is retried (twice by default): script it for every attempt.
    native.push(*([reply] * (3 if reply.status == 529 else 1)))
    base_url = native.root_url if api == "anthropic" else native.base_url
    result = _cli(
        ["run", "hi", "--api", api, "--model", "m", "--base-url", base_url, "--no-stream",
         "--workspace", str(workspace), "--max-output", "2000"],
        env={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"},
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ")
    assert (message or "HTTP 529 from ") in last
    if message is None:
        assert last.endswith("/v1/messages: Overloaded")
    assert "Traceback" not in result.output


def test_run_api_anthropic_without_a_reachable_server_says_so(workspace: Path) -> None:
    port = _closed_port()
    result = _cli(
        ["run", "hi", "--api", "anthropic", "--model", "m", "--workspace", str(workspace),
         "--base-url", f"http://127.0.0.1:{port}", "--max-output", "2000"],
        env={"ANTHROPIC_API_KEY": "k"},
    )  # fmt: skip
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot reach the model server at http://127.0.0.1:{port}")
    assert last.endswith(
        "is the server running? Point --base-url (or ANTHROPIC_BASE_URL) at an "
        "Anthropic-compatible server"
    )
