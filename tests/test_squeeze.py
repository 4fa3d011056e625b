"""The budget is a hard limit wherever it can be met (stages/_squeeze.py, formats/_reserve.py).

Real clients put a whole tool session in one turn: Claude Code sends one assistant
message holding every thinking + text + tool_use group of the session, then one user
message with all the results. The cache policy keeps the newest turn and the newest
``keep_recent`` results, so at a 40k window such a request went out at 50,000+
tokens. Every result but the newest can be cleared legally and the newest can be
truncated: the request must fit, say what it did, and be a fixed point.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import CompactionPolicy, Governor, govern, govern_request, validate_request
from context_governor.stages._snip import SAFETY_BUFFER
from context_governor.stages._squeeze import MIN_KEPT_CHARS

WORDS = ["def", "class", "return", "import", "self", "value", "result", "data", "config", "path", "error", "test"]


def _text(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def claude_code_body(
    files: int = 16, chars: int = 14_000, *, max_tokens: int = 128_000, seed: int = 1
) -> dict[str, Any]:
    """A Messages body shaped as Claude Code sends a session that read ``files`` files:
    one assistant message with every group, one user message with every result."""
    rng = random.Random(seed)
    groups: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for i in range(files):
        groups += [
            {"type": "thinking", "thinking": f"Next, file {i}. " + _text(rng, 150),
             "signature": "Sig" + "x" * 120},
            {"type": "text", "text": f"Reading src/file{i}.py"},
            {"type": "tool_use", "id": f"toolu_{i:02d}", "name": "Read",
             "input": {"file_path": f"src/file{i}.py"}},
        ]  # fmt: skip
        results.append(
            {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": _text(rng, chars)}
        )
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": max_tokens,
        "thinking": {"type": "enabled", "budget_tokens": 31_999},
        "system": [{"type": "text", "text": "You are a coding agent. " + _text(rng, 2_000)}],
        "tools": [
            {
                "name": "Read",
                "description": "Read a file. " + _text(rng, 800),
                "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
            }
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Read every file in src."}]},
            {"role": "assistant", "content": groups},
            {"role": "user", "content": results},
        ],
    }


def _stages(result: Any) -> list[str]:
    return [a.stage for a in result.report.actions]


def test_a_claude_code_session_fits_a_40k_window() -> None:
    """On main: tokens 77,286 -> 50,292 against a budget of 19,488, OVER BUDGET."""
    body = claude_code_body()
    result = govern_request(body, api="anthropic", context_window=40_000)
    report = result.report
    assert report.within_budget, report.notes
    assert report.tokens_after + result.body["max_tokens"] <= 40_000 - SAFETY_BUFFER
    assert validate_request(result.body, api="anthropic") == []
    # every result still there (pairing), the newest one verbatim or cut in its middle
    blocks = result.body["messages"][-1]["content"]
    assert [b["tool_use_id"] for b in blocks] == [f"toolu_{i:02d}" for i in range(16)]
    newest = body["messages"][-1]["content"][-1]["content"]
    sent = blocks[-1]["content"]
    sent = sent if isinstance(sent, str) else sent[0]["text"]
    assert sent == newest or (sent[:200] == newest[:200] and sent[-100:] == newest[-100:])
    # cleared in order: the cache policy's oldest results, then the newest turn's
    # cleared oldest first: the compaction's (masking down to the newest few), then,
    # where that is not enough, the newest turn's own (squeeze)
    squeezed_at = [a.index for a in report.actions if a.stage == "squeeze"]
    assert squeezed_at == sorted(squeezed_at)
    assert "compact" in _stages(result)
    assert not any("oversized" in n for n in report.notes)
    # the signed thinking of the latest assistant message is sent as it came
    assert result.body["messages"][1]["content"][0]["signature"] == "Sig" + "x" * 120


def test_the_squeezed_request_is_a_fixed_point() -> None:
    first = govern_request(claude_code_body(), api="anthropic", context_window=40_000, cache_breakpoints=False)
    again = govern_request(first.body, api="anthropic", context_window=40_000, cache_breakpoints=False)
    assert again.body["messages"] == first.body["messages"]
    assert [a for a in again.report.actions if a.stage in ("compact", "squeeze", "snip")] == []


def test_the_newest_result_is_truncated_when_clearing_the_rest_is_not_enough() -> None:
    body = claude_code_body(files=3, chars=60_000)
    result = govern_request(body, api="anthropic", context_window=24_000, cache_breakpoints=False)
    assert result.report.within_budget, result.report.notes
    newest = result.body["messages"][-1]["content"][-1]["content"]
    text = newest if isinstance(newest, str) else newest[0]["text"]
    assert "characters of this Read result were removed here to fit the context window" in text
    original = body["messages"][-1]["content"][-1]["content"]
    assert text.startswith(original[:MIN_KEPT_CHARS // 2])
    assert any("truncated" in a.detail for a in result.report.actions if a.stage == "squeeze")
    assert any("cleared although" in a.detail for a in result.report.actions if a.stage == "squeeze")


def test_truncation_names_the_offloaded_file(tmp_path: Any) -> None:
    body = claude_code_body(files=2, chars=60_000)
    policy = CompactionPolicy(offload_dir=tmp_path)
    result = govern_request(body, api="anthropic", context_window=20_000, compaction=policy)
    assert result.report.within_budget
    newest = result.body["messages"][-1]["content"][-1]["content"]
    text = newest if isinstance(newest, str) else newest[0]["text"]
    assert str(tmp_path) in text
    stored = [p.read_text() for p in tmp_path.rglob("*") if p.is_file()]
    assert body["messages"][-1]["content"][-1]["content"] in stored


def test_what_cannot_be_made_smaller_is_named() -> None:
    body = claude_code_body(files=2, chars=2_000)
    body["system"] = [{"type": "text", "text": _text(random.Random(3), 120_000)}]
    result = govern_request(body, api="anthropic", context_window=20_000)
    assert not result.report.within_budget
    note = next(n for n in result.report.notes if "after every legal reduction" in n)
    assert "system messages" in note and "the newest user message" in note
    assert "larger context window" in note


def _chat_session(files: int, chars: int, seed: int = 2) -> list[dict[str, Any]]:
    """The same shape in chat-completions form: one assistant message with every call."""
    rng = random.Random(seed)
    calls = [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": "read", "arguments": f'{{"path": "f{i}.py"}}'}}
        for i in range(files)
    ]  # fmt: skip
    return [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Read them all."},
        {"role": "assistant", "content": "Reading.", "tool_calls": calls},
        *[
            {"role": "tool", "tool_call_id": f"call_{i}", "name": "read",
             "content": _text(rng, chars)}
            for i in range(files)
        ],
    ]  # fmt: skip


def test_the_governor_and_govern_agree_on_a_growing_one_turn_session() -> None:
    settings_: dict[str, Any] = {"model": "gpt-4o", "context_window": 20_000, "max_output": 2_000}
    governor = Governor(**settings_)
    for files in range(1, 14):
        messages = _chat_session(files, 9_000)
        stepped = governor.govern(messages)
        whole = govern(messages, **settings_)
        assert stepped.messages == whole.messages, files
        assert stepped.report.actions == whole.report.actions, files
        assert whole.report.within_budget, (files, whole.report.notes)


@settings(
    max_examples=examples(full=60, fast=15),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    files=st.integers(1, 20),
    chars=st.integers(200, 30_000),
    window=st.sampled_from([16_000, 24_000, 40_000, 64_000]),
    asked=st.sampled_from([4_096, 32_000, 64_000, 128_000]),
    seed=st.integers(0, 50),
)
def test_a_one_turn_session_fits_whenever_its_fixed_part_does(
    files: int, chars: int, window: int, asked: int, seed: int
) -> None:
    """Whatever the number and size of the results: if system, tools, the task and the
    newest assistant message fit the budget, the governed request fits, prompt plus
    reserve stays inside the window, the body is legal and governing it again changes
    nothing."""
    body = claude_code_body(files, chars, max_tokens=asked, seed=seed)
    result = govern_request(body, api="anthropic", context_window=window, cache_breakpoints=False)
    report = result.report
    assert validate_request(result.body, api="anthropic") == []
    bare = {**body, "messages": [*body["messages"][:2],
                                 {"role": "user", "content": [
                                     {**b, "content": "x"} for b in body["messages"][2]["content"]
                                 ]}]}  # fmt: skip
    fixed = govern_request(bare, api="anthropic", context_window=10**7, cache_breakpoints=False).report
    if report.budget is not None and fixed.tokens_after + files * 80 + 400 <= report.budget:
        assert report.within_budget, report.notes
        assert report.tokens_after + result.body["max_tokens"] <= window - SAFETY_BUFFER
    again = govern_request(result.body, api="anthropic", context_window=window, cache_breakpoints=False)
    assert again.body["messages"] == result.body["messages"]
