"""regroup_tool_results: each tool result right after the call it answers, every message
kept, each move reported (OpenAI OA-2, Anthropic AN-3 and Mistral reject a message
between a call and its results)."""

from __future__ import annotations

from typing import Any

from context_governor.counting import exact_counter
from context_governor.providers._openai import POLICY
from context_governor.stages._base import Context
from context_governor.stages._provider_fixes import regroup_tool_results


def _call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def _ctx() -> Context:
    return Context(counter=exact_counter("gpt-4o"), policy=POLICY)


def test_an_interjected_message_moves_after_the_results() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "user", "content": "also this"},
        {"role": "tool", "tool_call_id": "b", "content": "B"},
    ]
    ctx = _ctx()
    out = regroup_tool_results(messages, ctx)
    assert out == [messages[0], messages[1], messages[2], messages[4], messages[3]]
    assert [(a.stage, a.kind, a.index, a.tool_call_id) for a in ctx.actions] == [
        ("regroup", "move", 4, "b")
    ]


def test_results_in_place_are_left_alone() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "user", "content": "next"},
    ]
    ctx = _ctx()
    assert regroup_tool_results(messages, ctx) is messages
    assert not ctx.actions
