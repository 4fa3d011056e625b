"""The scripted upstream of the agent-CLI tests checks what it claims to check.

tests/test_agent_clis.py trusts tests/cli_upstream.py to refuse what the provider
would: these run at every level (fast) with httpx, so a harness that stopped
checking would be caught without the CLIs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cli_upstream import FILES, FINAL_TEXT, CliUpstream, independent_tokens, make_workspace

READ_TOOL = {"name": "Read", "description": "Read a file.",
             "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}  # fmt: skip


@pytest.fixture
def server(tmp_path: Path) -> Iterator[CliUpstream]:
    make_workspace(tmp_path)
    upstream = CliUpstream(8_000, tmp_path).start()
    yield upstream
    upstream.stop()


def _claude(server: CliUpstream, body: dict[str, object]) -> httpx.Response:
    return httpx.post(f"{server.root_url}/v1/messages", json=body, timeout=10)


def _first(server: CliUpstream) -> tuple[dict[str, object], dict[str, object]]:
    body = {"model": "claude-x", "max_tokens": 2000, "tools": [READ_TOOL],
            "thinking": {"type": "enabled", "budget_tokens": 500},
            "messages": [{"role": "user", "content": "Read the files."}]}  # fmt: skip
    answer = _claude(server, body)
    assert answer.status_code == 200, answer.text
    return body, answer.json()


def test_the_workspace_is_sixteen_marked_files_of_about_14_kb(tmp_path: Path) -> None:
    paths = make_workspace(tmp_path)
    assert len(paths) == FILES
    for n, path in enumerate(paths, 1):
        text = path.read_text()
        assert 13_900 < len(text) < 14_100
        assert text.startswith(f"FILE f{n:02d} BEGIN") and text.rstrip().endswith(f"FILE f{n:02d} END")


def test_it_asks_for_the_next_file_then_answers(server: CliUpstream) -> None:
    body, answer = _first(server)
    kinds = [block["type"] for block in answer["content"]]
    assert kinds == ["thinking", "text", "tool_use"]
    call = answer["content"][2]
    assert call["input"]["file_path"].endswith("f01.txt")
    last = (server.workspace / f"f{FILES:02d}.txt").read_text()
    follow = {**body, "messages": [*body["messages"], {"role": "assistant", "content": answer["content"]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": last}]}]}  # fmt: skip
    done = _claude(server, follow)
    assert done.status_code == 400  # over the 8,000-token window with the 16th file
    server.window = None
    done = _claude(server, follow)
    assert done.status_code == 200 and done.json()["content"][-1]["text"] == FINAL_TEXT


def test_an_altered_thinking_block_is_refused(server: CliUpstream) -> None:
    body, answer = _first(server)
    content = json.loads(json.dumps(answer["content"]))
    content[0]["thinking"] += " (edited)"
    call = content[2]
    follow = {**body, "messages": [*body["messages"], {"role": "assistant", "content": content},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "x"}]}]}  # fmt: skip
    refused = _claude(server, follow)
    assert refused.status_code == 400
    assert "altered" in refused.json()["error"]["message"]
    assert len(server.invalid) == 1


def test_an_unanswered_tool_call_is_refused(server: CliUpstream) -> None:
    body, answer = _first(server)
    follow = {**body, "messages": [*body["messages"], {"role": "assistant", "content": answer["content"]},
              {"role": "user", "content": "go on"}]}  # fmt: skip
    assert _claude(server, follow).status_code == 400
    assert server.invalid


def test_over_the_window_is_refused_in_the_providers_words(server: CliUpstream) -> None:
    big = "word " * 9_000
    body = {"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": big}]}
    refused = _claude(server, body)
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert message.startswith("prompt is too long: ") and message.endswith(" tokens > 8000 maximum")
    assert server.over_window and not server.invalid
    reserve = {"model": "claude-x", "max_tokens": 7_900, "messages": [{"role": "user", "content": "hi " * 200}]}
    refused = _claude(server, reserve)
    assert "input length and `max_tokens` exceed context limit" in refused.json()["error"]["message"]
    chat = httpx.post(f"{server.root_url}/v1/chat/completions", timeout=10,
                      json={"model": "gpt-x", "messages": [{"role": "user", "content": big}]})  # fmt: skip
    assert chat.status_code == 400 and chat.json()["error"]["code"] == "context_length_exceeded"
    gemini = httpx.post(f"{server.root_url}/v1beta/models/gemini-x:generateContent", timeout=10,
                        json={"contents": [{"role": "user", "parts": [{"text": big}]}]})  # fmt: skip
    assert gemini.status_code == 400
    assert "exceeds the maximum number of tokens allowed (8000)" in gemini.json()["error"]["message"]


def test_an_altered_encrypted_reasoning_item_is_refused(server: CliUpstream) -> None:
    tool = {"type": "function", "name": "exec_command", "description": "Run.",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}  # fmt: skip
    body = {"model": "gpt-x", "tools": [tool], "reasoning": {"effort": "low"}, "store": False,
            "include": ["reasoning.encrypted_content"],
            "input": [{"type": "message", "role": "user", "content": "Read the files."}]}  # fmt: skip
    answer = httpx.post(f"{server.root_url}/v1/responses", json=body, timeout=10).json()
    reasoning, call = answer["output"]
    assert call["arguments"] == json.dumps({"cmd": f"cat {server.workspace / 'f01.txt'}"})
    result = {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}
    good = {**body, "input": [*body["input"], reasoning, call, result]}
    assert httpx.post(f"{server.root_url}/v1/responses", json=good, timeout=10).status_code == 200
    bad = {**body, "input": [*body["input"], {**reasoning, "encrypted_content": "gAAAAforged"}, call, result]}
    refused = httpx.post(f"{server.root_url}/v1/responses", json=bad, timeout=10)
    assert refused.status_code == 400 and "encrypted_content altered" in refused.json()["error"]["message"]


def test_the_independent_count_is_not_the_librarys(server: CliUpstream) -> None:
    """cl100k x 1.2 for Claude over the text leaves only: ids and signatures are not text."""
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hello world"}]},
                         {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm",
                                                            "signature": "sig_" + "x" * 500}]}]}  # fmt: skip
    assert independent_tokens("anthropic", body) == 4  # ceil((2 + 1) * 1.2)
    assert independent_tokens("openai", {"messages": [{"role": "user", "content": "hello world"}]}) == 2
