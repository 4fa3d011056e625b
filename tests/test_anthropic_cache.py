"""cache_control breakpoints placed where the stable prefix ends (formats/_anthropic_cache.py).

Properties over generated sessions: never more than 4, the output validates, the
body is unchanged but for the marks, the client's marks all stay; and, through the
simulated Claude cache of bench/anthropic_cache.py, each request of a growing
session reads the previous one back.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from anthropic_bodies import sessions
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import govern_request, validate_request
from context_governor.formats import _anthropic_cache as cache
from context_governor.formats._anthropic_rules import MAX_BREAKPOINTS, breakpoints

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.anthropic_cache import PromptCache, to_body, tools_of  # noqa: E402
from bench.sessions import coding_session  # noqa: E402

SETTINGS = settings(
    max_examples=examples(full=75, fast=25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _strip(value: Any) -> Any:
    """The body without cache_control, string content as one text block (the same prompt)."""
    if isinstance(value, dict):
        out = {k: _strip(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(out.get("content"), str) and out.get("role") in ("user", "assistant"):
            out["content"] = [{"type": "text", "text": out["content"]}] if out["content"] else ""
        if isinstance(out.get("system"), str) and out["system"]:
            out["system"] = [{"type": "text", "text": out["system"]}]
        return out
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _client_marks(body: dict[str, Any]) -> list[tuple[tuple[int, int, int], Any]]:
    return list(cache._marks(body))


def _legal(body: dict[str, Any]) -> dict[str, Any]:
    """The session with its message breakpoints beyond the 4th removed."""
    body = copy.deepcopy(body)
    seen = 0
    for m in body["messages"]:
        for b in m["content"] if isinstance(m.get("content"), list) else ():
            if isinstance(b, dict) and "cache_control" in b:
                seen += 1
                if seen > MAX_BREAKPOINTS:
                    del b["cache_control"]
    return body


@SETTINGS
@given(st.booleans().flatmap(lambda on: sessions(thinking=on, big=False, max_turns=6)))
def test_only_breakpoints_change_and_the_clients_stay(body: dict[str, Any]) -> None:
    """A body that needs nothing else comes back the same prompt: only marks added,
    every client mark where it was, at most 4 in all, and it validates."""
    body = _legal(body)
    assume(validate_request(body, api="anthropic") == [])
    snapshot = copy.deepcopy(body)
    result = govern_request(body, api="anthropic", context_window=1_000_000)
    out = result.body
    assert body == snapshot
    assert _strip(out) == _strip(body)
    assert breakpoints(out) <= MAX_BREAKPOINTS
    assert validate_request(out, api="anthropic") == []
    mine = {pos for pos, _ in _client_marks(out)}
    assert {pos for pos, _ in _client_marks(body)} <= mine
    placed = [a for a in result.report.actions if a.stage == "cache"]
    assert len(placed) == breakpoints(out) - breakpoints(body)
    assert all(a.kind == "replace" for a in placed) and placed == result.report.actions


@SETTINGS
@given(
    st.booleans().flatmap(lambda on: sessions(thinking=on, min_turns=4, max_turns=14)),
    st.sampled_from([3000, 6000, 12000]),
)
def test_governed_sessions_never_carry_more_than_four(body: dict[str, Any], window: int) -> None:
    out = govern_request(body, api="anthropic", context_window=window).body
    assert breakpoints(out) <= MAX_BREAKPOINTS
    assert validate_request(out, api="anthropic") == []


@SETTINGS
@given(st.booleans().flatmap(lambda on: sessions(thinking=on, big=False, max_turns=6)))
def test_placement_is_a_pure_function_of_the_body(body: dict[str, Any]) -> None:
    first = govern_request(body, api="anthropic", context_window=1_000_000).body
    again = govern_request(copy.deepcopy(body), api="anthropic", context_window=1_000_000).body
    assert first == again


def test_opting_out_sends_the_body_as_it_came() -> None:
    body = to_body(coding_session(3).messages, tools_of(coding_session(3)))
    result = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    assert result.body is body and result.report.actions == []


def test_the_four_spots_and_the_report() -> None:
    replay = coding_session(6)
    body = to_body(replay.messages, tools_of(replay))
    result = govern_request(body, api="anthropic", context_window=200_000)
    out = result.body
    n = len(out["messages"])
    marked = {pos for pos, _ in _client_marks(out)}
    last = out["messages"][-1]["content"]
    assert (2, n - 1, len(last) - 1) in marked  # the newest turn
    assert (1, -1, 0) in marked  # the system prompt (string -> one text block)
    assert (2, 0, 0) in marked  # the task
    assert (2, n - 3, len(out["messages"][n - 3]["content"]) - 1) in marked  # previous end
    details = [a.detail for a in result.report.actions]
    assert any("newest turn" in d for d in details)
    assert any("previous request's end" in d for d in details)


def test_the_clients_marks_win_and_nothing_exceeds_four() -> None:
    mark = {"type": "ephemeral"}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"q{i}", "cache_control": mark}]}
        if i % 2 == 0
        else {"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}]}
        for i in range(7)
    ]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "s", "messages": messages}
    result = govern_request(body, api="anthropic", context_window=200_000)
    assert breakpoints(result.body) == MAX_BREAKPOINTS  # the 4 client marks, none of ours
    assert not [a for a in result.report.actions if a.stage == "cache" and a.kind == "replace"]


def test_a_long_ttl_after_ours_makes_ours_long_too() -> None:
    """The API wants 1h marks before 5m ones: a mark placed before a client 1h mark is 1h."""
    long_mark = {"type": "ephemeral", "ttl": "1h"}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "you are terse",
        "messages": [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "ok"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "go", "cache_control": long_mark}],
            },
        ],
    }
    out = govern_request(body, api="anthropic", context_window=200_000).body
    assert out["system"][0]["cache_control"] == long_mark
    assert out["messages"][0]["content"][0]["cache_control"] == long_mark


def test_thinking_blocks_and_empty_text_are_never_marked() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "c2ln"},
                    {"type": "text", "text": ""},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": "x"}]},
        ],
    }  # fmt: skip
    spots = cache.wanted(body)
    assert all(s.block != 0 and s.block != 1 for s in spots if s.message == 1)
    out, placed = cache.place(body)
    assert placed
    for message in out["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if "cache_control" in block:
                assert block["type"] in cache.MARKABLE and block.get("text", "x")
    assert validate_request(govern_request(body, api="anthropic", context_window=200_000).body, api="anthropic") == []


def test_each_request_reads_the_previous_one_back() -> None:
    """Cache-stable: in a growing session (no compaction), every request after the first
    reads at least all of the request before it from a Claude-style cache; without
    breakpoints nothing is read."""
    replay = coding_session(25)
    tools = tools_of(replay)
    ours = PromptCache(lambda text: len(text) // 3)
    none = PromptCache(lambda text: len(text) // 3)
    previous = 0
    for number, history in enumerate(replay.histories()):
        if number == 0:
            continue
        body = to_body(history, tools)
        total, read, _ = ours.send(govern_request(body, api="anthropic", context_window=1_000_000).body)
        if previous >= 1024:
            assert read >= previous, (number, read, previous)
        previous = total
        plain = govern_request(body, api="anthropic", context_window=1_000_000, cache_breakpoints=False).body
        assert none.send(plain)[1] == 0


def test_the_bench_section_replaces_its_previous_version(tmp_path: Path) -> None:
    """bench/anthropic_cache.py writes its table into docs/benchmarks.md in place."""
    from bench.anthropic_cache import HEADING, Result, render, write_section

    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Speed\n\nfast\n\n## Method\n\nhow\n")
    one = Result("ours", 64_000, steps=2, tokens=100, read=90, written=5, placed=8)
    write_section(doc, render([one], 2))
    write_section(doc, render([one], 2))
    text = doc.read_text()
    assert text.count(HEADING) == 1
    assert text.index("## Speed") < text.index(HEADING) < text.index("## Method")
    assert "| one call per step | 64,000 | ours | 90.0% | 0.20 | 4.0 | 0 |" in text


def test_a_block_whose_type_is_not_a_string_is_kept_not_a_crash() -> None:
    """Found by the proxy's junk fuzzer: a block with ``"type": [...]`` made the
    breakpoint lookup and the thinking rules raise TypeError (a 500 in the proxy)."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": [{"type": ["text"], "text": "hi"}]}],
    }
    result = govern_request(body, api="anthropic")
    assert result.body["messages"][0]["content"][0]["type"] == ["text"]
