"""The agent CLIs' own compaction requests: recognised from their real shapes, governed
for a summary inside the window, and reported (proxy/_client_compaction.py).

The shapes in tests/data/client_compaction/ were captured from the pinned CLIs
(tests/test_agent_cli_compaction.py runs them) and trimmed; Gemini CLI's compression
sends two (the snapshot, then its verification).
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from context_governor.proxy import ProxyConfig
from context_governor.proxy._app import governed_headers, summary
from context_governor.proxy._client_compaction import client_compaction
from context_governor.proxy._governing import govern_body

DATA = Path(__file__).parent / "data" / "client_compaction"
CAPTURED = {path.stem: json.loads(path.read_text()) for path in sorted(DATA.glob("*.json"))}


def _shapes() -> list[tuple[str, str, dict[str, Any]]]:
    return [(data["client"], data["api"], data["body"]) for data in CAPTURED.values()]


def test_every_pinned_cli_has_a_captured_shape() -> None:
    clients = {data["client"] for data in CAPTURED.values()}
    assert clients == {"claude-code", "codex", "gemini-cli", "opencode"}


@pytest.mark.parametrize(
    ("client", "api", "body"), _shapes(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_each_clis_compaction_request_is_recognised(
    client: str, api: str, body: dict[str, Any]
) -> None:
    found = client_compaction(body)
    assert found is not None and found.client == client


ORDINARY = [
    ("anthropic", {"messages": [{"role": "user", "content": "Summarize this file for me: CRITICAL: Respond with TEXT ONLY"}]}),
    ("anthropic", {"messages": [{"role": "user", "content": [{"type": "text", "text": "please write a summary"}]}]}),
    ("responses", {"input": [{"role": "user", "content": "You are performing a code review"}],
                   "client_metadata": {"x-codex-turn-metadata": '{"request_kind": "turn"}'}}),
    ("responses", {"input": "hello", "client_metadata": {"x-codex-turn-metadata": "not json"}}),
    ("gemini", {"contents": [{"role": "user", "parts": [{"text": "make a <state_snapshot>"}]}]}),
    ("openai", {"messages": [{"role": "system", "content": "You are opencode"},
                             {"role": "user", "content": "Here is the conversation so far: hi"}]}),
    ("openai", {"messages": "not a list"}),
]  # fmt: skip


@pytest.mark.parametrize(("api", "body"), ORDINARY)
def test_ordinary_requests_are_not_taken_for_a_compaction(api: str, body: dict[str, Any]) -> None:
    assert client_compaction(body) is None


def _claude_over_the_window() -> dict[str, Any]:
    """Claude Code's captured compaction request, its history grown: 16 read results
    of ~3,000 tokens each before the summary prompt."""
    body = copy.deepcopy(CAPTURED["claude-code"]["body"])
    messages = body["messages"]
    prompt = messages[-1]["content"][-1]
    task = messages[0]
    grown: list[dict[str, Any]] = [task]
    for n in range(1, 17):
        call = f"toolu_{n:02d}"
        grown.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"I have read f{n - 1:02d}; it defines its steps. Reading f{n:02d}.",
                    },
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Read",
                        "input": {"file_path": f"/workspace/f{n:02d}.txt"},
                    },
                ],
            }
        )
        output = f"FILE f{n:02d} BEGIN\n" + "".join(
            f"def step_{n}_{i}(v): return v * {i}\n" for i in range(170)
        )
        grown.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": output}],
            }
        )
    grown[-1]["content"].append(prompt)
    body["messages"] = grown
    body["max_tokens"] = 20_000
    return body  # fmt: skip


def test_a_compaction_request_over_the_window_is_governed_for_the_summary() -> None:
    config = ProxyConfig("http://upstream.invalid", context_window=40_000, profile="anthropic")
    body = _claude_over_the_window()
    governed = govern_body(json.dumps(body).encode(), config, "anthropic")
    report = governed.report
    assert governed.client_compaction == "claude-code"
    assert report.tokens_before > 40_000 >= report.tokens_after
    assert report.within_budget, report
    sent = json.loads(governed.body)
    text = json.dumps(sent)

    # the user's task, the summary prompt, and every one of the agent's own messages stay
    def texts(message: dict[str, Any]) -> list[str]:  # cache_control breakpoints aside
        return [block.get("text") for block in message["content"] if block.get("type") == "text"]

    assert texts(sent["messages"][0]) == texts(body["messages"][0])
    assert texts(sent["messages"][-1]) == texts(body["messages"][-1])
    assert len(sent["messages"]) == len(body["messages"])
    for n in range(1, 17):
        assert f"Reading f{n:02d}." in text
    # old tool output is what went, the newest work is whole
    assert "FILE f01 BEGIN" not in text and "FILE f16 BEGIN" in text
    assert any("client compaction request (claude-code" in note for note in report.notes)
    assert ("x-context-governor-client-compaction", "claude-code") in governed_headers(governed)
    assert "client-compaction=claude-code" in summary(governed)


def test_an_ordinary_request_says_nothing_of_compaction() -> None:
    config = ProxyConfig("http://upstream.invalid", context_window=40_000, profile="anthropic")
    body = _claude_over_the_window()
    body["messages"][-1]["content"].pop()  # no summary prompt: an ordinary request
    governed = govern_body(json.dumps(body).encode(), config, "anthropic")
    assert governed.client_compaction is None
    assert not any("client compaction" in note for note in governed.report.notes)
    assert all(
        name != "x-context-governor-client-compaction" for name, _ in governed_headers(governed)
    )
    assert "client-compaction" not in summary(governed)


def test_gemini_clis_verification_request_is_repaired() -> None:
    """Gemini CLI's verification request ends its history with two model contents (the
    history's last answer, then the snapshot), which the Gemini API refuses (GE-4); the
    proxy merges them and says it governed a compaction request."""
    body = CAPTURED["gemini-cli-verify"]["body"]
    roles = [content["role"] for content in body["contents"]]
    assert roles[-3:] == ["model", "model", "user"]
    config = ProxyConfig("http://upstream.invalid", context_window=40_000)
    raw = json.dumps(body).encode()
    governed = govern_body(raw, config, "gemini", model="gemini-3-flash-preview")
    assert governed.client_compaction == "gemini-cli"
    sent = [content["role"] for content in json.loads(governed.body)["contents"]]
    assert all(a != b for a, b in itertools.pairwise(sent)), sent
    assert sent[-1] == "user"
