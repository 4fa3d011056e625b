"""The Anthropic Messages edge: lossless round trip, governance that stays legal, the AN rules.

Properties over generated bodies (tests/anthropic_bodies.py): the round trip over
anything the edge can read, legal or not; governance at small windows over long
sessions with tool use, thinking, images and unknown blocks, thinking on and off.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from anthropic_bodies import sessions, wild_bodies
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import ConfigError, InputError, govern, govern_request, validate_request
from context_governor.counting import claude_estimate
from context_governor.formats import anthropic as an
from context_governor.formats._anthropic_rules import breakpoints

SETTINGS = settings(
    max_examples=examples(full=400, fast=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
GOVERN_SETTINGS = settings(
    max_examples=examples(full=200, fast=25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
THINKING = ("thinking", "redacted_thinking")


def _thinking_blocks(body: dict[str, Any]) -> list[str]:
    """Every thinking block of the body, as canonical JSON (byte-for-byte comparison)."""
    return [
        json.dumps(b, sort_keys=True)
        for m in body["messages"]
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") in THINKING
    ]


def _latest_assistant(body: dict[str, Any]) -> dict[str, Any] | None:
    return next((m for m in reversed(body["messages"]) if m.get("role") == "assistant"), None)


# -- lossless --------------------------------------------------------------------------------


@SETTINGS
@given(wild_bodies())
def test_round_trip_is_identity(body: dict[str, Any]) -> None:
    snapshot = copy.deepcopy(body)
    decoded = an.decode(body)
    assert an.encode(decoded.messages, decoded) == body
    assert body == snapshot  # decoding never touches the body


@SETTINGS
@given(wild_bodies())
def test_round_trip_survives_a_copy_of_every_decoded_message(body: dict[str, Any]) -> None:
    """Stages return new dicts for messages they touch; a copy that equals the original
    must still encode back to the native message itself."""
    decoded = an.decode(body)
    assert an.encode([dict(m) for m in decoded.messages], decoded) == body


@GOVERN_SETTINGS
@given(st.booleans().flatmap(lambda on: sessions(thinking=on, big=False, max_turns=4)))
def test_a_body_that_needs_nothing_comes_back_equal(body: dict[str, Any]) -> None:
    """A legal body (the generator's sessions, minus the odd prefill ending in whitespace)
    inside the window is sent as it came: the same object, no action."""
    body = _within_breakpoints(body)
    assume(validate_request(body, api="anthropic") == [])
    result = govern_request(body, api="anthropic", context_window=1_000_000, cache_breakpoints=False)
    assert result.report.actions == []
    assert result.body is body


def _within_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """The same session with its breakpoints beyond the 4th removed (a legal body)."""
    body = copy.deepcopy(body)
    seen = 0
    for m in body["messages"]:
        for b in m["content"] if isinstance(m.get("content"), list) else ():
            if isinstance(b, dict) and "cache_control" in b:
                seen += 1
                if seen > 4:
                    del b["cache_control"]
    return body


# -- governance stays legal ------------------------------------------------------------------


PROFILES = st.sampled_from(["anthropic", "anthropic", "glm", "moonshot", "deepseek", "qwen"])


def _check_governed(body: dict[str, Any], window: int, profile: str = "anthropic") -> None:
    snapshot = copy.deepcopy(body)
    result = govern_request(body, api="anthropic", context_window=window, profile=profile)
    out = result.body
    assert body == snapshot, "the input body was modified"
    assert validate_request(out, api="anthropic") == [], result.report
    assert result.report.violations == [], result.report
    # signed thinking blocks: byte-identical where kept, never made up
    assert set(_thinking_blocks(out)) <= set(_thinking_blocks(body))
    # never half of a message's thinking: an assistant message goes out with all the
    # thinking blocks it came with, in their order, or none
    thought = [
        [b for b in m["content"] if isinstance(b, dict) and b.get("type") in THINKING]
        for m in body["messages"]
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
    ]
    for m in out["messages"]:
        if m.get("role") == "assistant" and isinstance(m.get("content"), list):
            kept = [b for b in m["content"] if b.get("type") in THINKING]
            assert not kept or kept in thought
    # the latest assistant message's thinking blocks are never modified
    latest_in, latest_out = _latest_assistant(body), _latest_assistant(out)
    if (
        latest_in is not None
        and latest_out is not None
        and out.get("thinking") == body.get("thinking")
    ):
        kept_in = [b for b in latest_in["content"] if b.get("type") in THINKING]
        kept_out = [b for b in latest_out["content"] if b.get("type") in THINKING]
        if any(b in kept_in for b in kept_out):
            assert kept_out == kept_in
    # everything outside messages and system is the input's, unless reported
    changed = {k for k in set(body) | set(out) if body.get(k) != out.get(k)}
    assert changed <= {"messages", "system", "thinking", "tools", "max_tokens"}
    if "tools" in changed:  # only a breakpoint placed on the last tool (no system)
        assert [{k: v for k, v in t.items() if k != "cache_control"} for t in out["tools"]] == [
            {k: v for k, v in t.items() if k != "cache_control"} for t in body["tools"]
        ]
    if "max_tokens" in changed:
        assert any(a.stage == "reserve" for a in result.report.actions)
    if "thinking" in changed:
        assert any(a.stage == "thinking" for a in result.report.actions)


@GOVERN_SETTINGS
@given(
    sessions(thinking=True, min_turns=4, max_turns=14),
    st.sampled_from([3000, 6000, 12000]),
    PROFILES,
)
def test_governed_thinking_sessions_validate_clean(
    body: dict[str, Any], window: int, profile: str
) -> None:
    """Also in front of Anthropic-compatible targets (their repairs, the Messages rules)."""
    _check_governed(body, window, profile)


@GOVERN_SETTINGS
@given(
    sessions(thinking=False, min_turns=4, max_turns=14),
    st.sampled_from([3000, 6000, 12000]),
    PROFILES,
)
def test_governed_sessions_without_thinking_validate_clean(
    body: dict[str, Any], window: int, profile: str
) -> None:
    _check_governed(body, window, profile)


@GOVERN_SETTINGS
@given(sessions(thinking=True, min_turns=6, max_turns=14))
def test_small_windows_cut_and_stay_inside_the_budget(body: dict[str, Any]) -> None:
    result = govern_request(body, api="anthropic", context_window=3000)
    report = result.report
    assert report.within_budget or report.messages_after <= 3, report
    if report.tokens_before > (report.budget or 0):
        assert report.actions, "over budget but nothing was done"


@SETTINGS
@given(wild_bodies(), st.sampled_from([2000, 8000, None]))
def test_any_readable_body_is_governed_and_its_report_is_honest(
    body: dict[str, Any], window: int | None
) -> None:
    """Illegal bodies too: no exception, no mutation, and every rule the output still
    breaks is in the report (nothing is sent broken without saying so)."""
    snapshot = copy.deepcopy(body)
    result = govern_request(body, api="anthropic", context_window=window)
    assert body == snapshot
    left = {v.rule for v in validate_request(result.body, api="anthropic")}
    assert left == {v["rule"] for v in result.report.violations}


# -- examples: the thinking rules (AN-9) -----------------------------------------------------

SIG_A = {"type": "thinking", "thinking": "plan the read", "signature": "c2lnLWE="}
SIG_B = {"type": "thinking", "thinking": "now grep", "signature": "c2lnLWI="}
USE_1 = {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {"path": "a.txt"}}
USE_2 = {"type": "tool_use", "id": "toolu_02", "name": "grep", "input": {"q": "x"}}
RESULT_1 = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "a", "is_error": True}
RESULT_2 = {
    "type": "tool_result",
    "tool_use_id": "toolu_02",
    "content": [{"type": "text", "text": "b"}],
}


def _plain(body: Any, **kw: Any) -> Any:
    """govern_request without cache breakpoints: for examples about the messages alone
    (breakpoint placement has its own tests, tests/test_anthropic_cache.py)."""
    return govern_request(body, api="anthropic", cache_breakpoints=False, **kw)


def _body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 512, "messages": messages, **extra}


ENABLED = {"type": "enabled", "budget_tokens": 256}


def _rules(body: dict[str, Any]) -> list[str]:
    return [v.rule for v in validate_request(body, api="anthropic")]


def test_earlier_turn_with_thinking_out_of_place_loses_its_thinking_whole() -> None:
    body = _body(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "first"}, SIG_A, USE_1]},
            {"role": "user", "content": [RESULT_1]},
            {"role": "assistant", "content": [SIG_B, USE_2]},
            {"role": "user", "content": [RESULT_2]},
        ],
        thinking=ENABLED,
    )
    assert _rules(body) == ["AN-9b"]
    result = _plain(body)
    out = result.body["messages"]
    assert out[1]["content"] == [{"type": "text", "text": "first"}, USE_1]
    assert out[3] is body["messages"][3]  # the latest turn: untouched, the same object
    assert out[2] is body["messages"][2] and out[4] is body["messages"][4]
    assert [(a.stage, a.kind) for a in result.report.actions] == [("thinking", "repair")]
    assert validate_request(result.body, api="anthropic") == []


def test_final_turn_without_thinking_disables_thinking_as_the_error_recommends() -> None:
    body = _body(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [USE_1]},
            {"role": "user", "content": [RESULT_1]},
        ],
        thinking=ENABLED,
    )
    [violation] = validate_request(body, api="anthropic")
    assert violation.rule == "AN-9a" and violation.index == 1
    assert violation.error.startswith(
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start"
    )
    result = govern_request(body, api="anthropic")
    assert result.body["thinking"] == {"type": "disabled"}
    assert result.body["messages"] is not body["messages"] or True
    assert any("thinking disabled" in a.detail for a in result.report.actions)
    assert validate_request(result.body, api="anthropic") == []
    assert body["thinking"] == ENABLED


def test_adaptive_thinking_does_not_require_a_thinking_block() -> None:
    body = _body(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [USE_1]},
            {"role": "user", "content": [RESULT_1]},
        ],
        thinking={"type": "adaptive"},
    )
    assert validate_request(body, api="anthropic") == []
    assert _plain(body).body is body


def test_thinking_off_final_assistant_with_thinking_is_repaired() -> None:
    body = _body(
        [
            {"role": "user", "content": "write a poem"},
            {"role": "assistant", "content": [SIG_A, {"type": "text", "text": "Roses"}]},
        ]
    )
    assert _rules(body) == ["AN-9c"]
    result = _plain(body)
    assert result.body["messages"][-1]["content"] == [{"type": "text", "text": "Roses"}]
    assert validate_request(result.body, api="anthropic") == []


def test_thinking_last_in_an_earlier_turn_is_dropped_and_reported() -> None:
    body = _body(
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [SIG_A]},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": [SIG_B, {"type": "text", "text": "done"}]},
            {"role": "user", "content": "c"},
        ],
        thinking=ENABLED,
    )
    assert _rules(body) == ["AN-9d"]
    result = govern_request(body, api="anthropic")
    assert SIG_A not in [b for m in result.body["messages"] for b in m["content"]]
    assert any(a.stage == "thinking" and a.kind == "drop" for a in result.report.actions)
    assert validate_request(result.body, api="anthropic") == []


def test_compaction_keeps_signed_thinking_and_result_fields() -> None:
    """A long tool session at a small window: old turns go whole (thinking with them),
    cleared results keep is_error and their other fields, kept thinking is byte-identical."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "start"}]
    for n in range(12):
        sig = {"type": "thinking", "thinking": f"step {n}", "signature": f"c2ln{n:04d}"}
        use = {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "read", "input": {"n": n}}
        messages.append({"role": "assistant", "content": [sig, use]})
        result_block = {
            "type": "tool_result",
            "tool_use_id": f"toolu_{n:02d}",
            "content": "line of output\n" * 120,
            "is_error": n % 2 == 0,
            "x_future": {"n": n},
        }
        messages.append({"role": "user", "content": [result_block]})
    body = _body(messages, thinking=ENABLED)
    snapshot = copy.deepcopy(body)
    result = _plain(body, context_window=5000)
    assert body == snapshot
    out = result.body["messages"]
    assert len(out) < len(messages) and result.report.within_budget
    assert validate_request(result.body, api="anthropic") == []
    assert out[-2] is messages[-2] and out[-1] is messages[-1]
    kept = set(_thinking_blocks(result.body))
    assert kept and kept <= set(_thinking_blocks(body))
    for m in out:
        for b in m["content"] if isinstance(m["content"], list) else ():
            if b["type"] == "tool_result":
                n = int(b["tool_use_id"][-2:])
                assert b["is_error"] == (n % 2 == 0) and b["x_future"] == {"n": n}


# -- examples: breakpoints, tool_result order, carried things --------------------------------


def test_breakpoints_are_counted_over_tools_system_and_messages() -> None:
    cache = {"type": "ephemeral"}
    tools = [
        {"name": f"t{n}", "input_schema": {"type": "object"}, "cache_control": cache}
        for n in range(2)
    ]
    body = _body(
        [
            {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": cache}]},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": [{"type": "text", "text": "c", "cache_control": cache}]},
        ],
        tools=tools,
        system=[{"type": "text", "text": "sys", "cache_control": cache}],
    )
    assert breakpoints(body) == 5
    [violation] = validate_request(body, api="anthropic")
    assert violation.error == "A maximum of 4 blocks with cache_control may be provided. Found 5."
    result = govern_request(body, api="anthropic")
    assert breakpoints(result.body) == 4
    assert result.body["tools"] is tools  # the tools' breakpoints stay where they are
    assert "cache_control" in result.body["messages"][2]["content"][0]  # the newest stays
    assert validate_request(result.body, api="anthropic") == []


def test_tool_breakpoints_beyond_the_limit_are_dropped_oldest_first() -> None:
    cache = {"type": "ephemeral"}
    tools = [{"name": f"t{n}", "input_schema": {}, "cache_control": cache} for n in range(6)]
    body = _body([{"role": "user", "content": "hi"}], tools=tools)
    result = govern_request(body, api="anthropic")
    assert ["cache_control" in t for t in result.body["tools"]] == [False] * 2 + [True] * 4
    assert validate_request(result.body, api="anthropic") == [] and tools[0]["cache_control"] == cache


def test_text_before_tool_results_is_moved_after_them() -> None:
    body = _body(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [USE_1]},
            {"role": "user", "content": [{"type": "text", "text": "also this"}, RESULT_1]},
        ]
    )
    assert "AN-3" in _rules(body)
    result = _plain(body)
    assert result.body["messages"][2]["content"] == [
        RESULT_1,
        {"type": "text", "text": "also this"},
    ]
    assert validate_request(result.body, api="anthropic") == []


def test_unknown_roles_and_fields_are_carried_and_counted() -> None:
    plain = _body([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
                   {"role": "user", "content": "ok"}])  # fmt: skip
    extra = copy.deepcopy(plain)
    extra["messages"].insert(2, {"role": "critic", "content": {"notes": "x " * 400}})
    extra["messages"][0]["x_future"] = "y " * 300
    extra["x_new_setting"] = {"z": "w " * 200}
    result = _plain(extra)
    assert result.body is extra and result.report.actions == []
    base = _plain(plain).report.tokens_before
    assert result.report.tokens_before > base + 400


def test_unknown_role_goes_with_the_message_it_follows() -> None:
    messages: list[dict[str, Any]] = []
    for n in range(10):
        messages += [
            {"role": "user", "content": f"question {n} " + "words " * 200},
            {"role": "assistant", "content": f"answer {n}"},
            {"role": "critic", "content": f"note {n}"},
        ]
    messages.append({"role": "user", "content": "last"})
    result = govern_request(_body(messages), api="anthropic", context_window=3000)
    out = result.body["messages"]
    assert len(out) < len(messages)
    for i, m in enumerate(out):
        if m["role"] == "critic":
            assert out[i - 1]["role"] == "assistant"
            assert out[i - 1]["content"].split()[-1] == m["content"].split()[-1]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ([], "body"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": ["x"]}]}, "messages[0].content[0]"),
        ({"messages": [], "max_tokens": "many"}, "max_tokens"),
        ({"messages": [], "system": 5}, "system"),
    ],
)
def test_unreadable_bodies_get_an_input_error_that_says_where(body: Any, path: str) -> None:
    with pytest.raises(InputError) as info:
        govern_request(body, api="anthropic")
    assert info.value.path == path


def test_validate_request_counts_native_message_positions() -> None:
    body = _body(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [USE_1, USE_2]},
            {"role": "user", "content": [RESULT_1]},
        ],
        system="be brief",
    )
    [violation] = validate_request(body, api="anthropic")
    assert (violation.rule, violation.index) == ("AN-1", 1)
    result = govern_request(body, api="anthropic")
    answered = result.body["messages"][2]["content"]
    assert [b["tool_use_id"] for b in answered] == ["toolu_01", "toolu_02"]
    assert answered[0] is RESULT_1
    assert validate_request(result.body, api="anthropic") == []


# -- the chat completions edge ---------------------------------------------------------------


def test_openai_bodies_go_through_the_same_entry_point() -> None:
    body = {
        "model": "gpt-4o",
        "max_completion_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0.2,
    }
    assert govern_request(body, api="openai").body is body
    broken = {
        **body,
        "messages": [{"role": "tool", "tool_call_id": "x", "content": "r"}, *body["messages"]],
    }
    assert [v.rule for v in validate_request(broken, api="openai")]
    result = govern_request(broken, api="openai")
    assert result.body["messages"] == body["messages"] and result.body["temperature"] == 0.2
    assert validate_request(result.body, api="openai") == []


# -- differential: the native path decides what govern() decides -----------------------------


@GOVERN_SETTINGS
@given(
    sessions(thinking=False, min_turns=3, max_turns=12, opaque=False),
    st.sampled_from([3000, 8000]),
)
def test_native_bodies_are_governed_like_the_same_chat_messages(
    body: dict[str, Any], window: int
) -> None:
    """One pipeline: govern_request on a Messages body makes the decisions govern() makes
    on its chat view (when nothing opaque adds to the count). On a model that keeps
    earlier turns' thinking (Opus 4.5): one that strips it counts less on the native
    side, where the turns are known (test_media_in_requests.py)."""
    body = {**body, "model": "claude-opus-4-5"}
    decoded = an.decode(body)
    assert not decoded.extra and not any(m[an.CARRY].extra for m in decoded.messages[1:])
    chat = [{k: v for k, v in m.items() if k != an.CARRY} for m in decoded.messages]
    native = govern_request(
        body, api="anthropic", context_window=window, cache_breakpoints=False, count_tokens=claude_estimate
    )
    plain = govern(
        chat,
        count_tokens=claude_estimate,
        tools=body["tools"],
        profile="anthropic",
        model=body["model"],
        context_window=window,
        max_output=body["max_tokens"],
        prefill=body["messages"][-1]["role"] == "assistant",
    )
    assert [(a.stage, a.kind, a.index) for a in native.report.actions] == [
        (a.stage, a.kind, a.index) for a in plain.report.actions
    ]
    assert native.report.tokens_after == plain.report.tokens_after
    assert [
        {k: v for k, v in m.items() if k != an.CARRY} for m in native.messages
    ] == plain.messages


def test_a_prefill_of_text_blocks_loses_its_trailing_whitespace() -> None:
    """AN-6b holds for block content too (found by the round-trip property: the fix only
    stripped string content, so a Messages prefill went out broken)."""
    prefill = [{"type": "text", "text": "Once upon a time "}]
    messages = [{"role": "user", "content": "a story"}, {"role": "assistant", "content": prefill}]
    chat = govern(messages, profile="anthropic", model="claude-sonnet-4-5", prefill=True)
    assert chat.messages[-1]["content"] == [{"type": "text", "text": "Once upon a time"}]
    assert chat.report.violations == []
    result = _plain(_body(messages))
    assert result.body["messages"][-1]["content"] == [{"type": "text", "text": "Once upon a time"}]
    assert validate_request(result.body, api="anthropic") == [] and prefill[0]["text"].endswith(" ")


def test_consecutive_user_messages_of_results_round_trip_apart() -> None:
    """Found by the explore profile: two user messages of results (the API combines them)
    must come back as two, while an added result joins the turn it belongs to."""
    body = _body(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [USE_1, USE_2]},
            {"role": "user", "content": [RESULT_1]},
            {"role": "user", "content": [RESULT_2]},
        ]
    )
    decoded = an.decode(body)
    assert an.encode(decoded.messages, decoded) == body
    assert _plain(body).body is body


def test_a_changed_message_keeps_its_opaque_companions() -> None:
    """An id the API rejects is rewritten (AN-8b): the assistant message is rebuilt, with
    its signed thinking block (the same object), its tool_use block's other fields and
    its own unknown fields; the result follows the new id and keeps is_error."""
    use = {"type": "tool_use", "id": "functions.Bash:0", "name": "bash", "input": {"c": 1},
           "x_future": 7}  # fmt: skip
    assistant = {"role": "assistant", "content": [SIG_A, use], "x_client": "kept"}
    result_block = {"type": "tool_result", "tool_use_id": "functions.Bash:0", "content": "ok",
                    "is_error": False}  # fmt: skip
    body = _body(
        [
            {"role": "user", "content": "go"},
            assistant,
            {"role": "user", "content": [result_block, {"type": "text", "text": "next"}]},
        ],
        thinking=ENABLED,
    )
    assert "AN-8b" in _rules(body)
    out = _plain(body).body["messages"]
    thinking, tool_use = out[1]["content"]
    assert thinking is SIG_A and out[1]["x_client"] == "kept"
    assert tool_use == {**use, "id": "functions_Bash_0"}
    assert out[2]["content"] == [
        {**result_block, "tool_use_id": "functions_Bash_0"},
        {"type": "text", "text": "next"},
    ]
    assert validate_request({**body, "messages": out}, api="anthropic") == []


def test_a_stricter_compatible_target_keeps_what_messages_carry() -> None:
    """profile="glm" (an Anthropic-compatible endpoint): its Chat Completions key filter
    must not strip what the decoded messages carry (found while writing docs/formats.md)."""
    body = _body(
        [
            {"role": "user", "content": "go", "x_client": 1},
            {"role": "assistant", "content": [USE_1]},
            {"role": "user", "content": [RESULT_1]},
            {"role": "critic", "content": "noted"},
        ],
        model="glm-4.6",
    )
    result = _plain(body, profile="glm")
    assert result.body is body and result.report.actions == []


def test_a_messages_body_is_checked_against_the_messages_rules() -> None:
    body = _body([{"role": "user", "content": "hi", "x_client": 1}], model="glm-4.6")
    assert validate_request(body, api="anthropic") == validate_request(body, api="anthropic", provider="anthropic") == []
    with pytest.raises(ConfigError, match="Messages API's rules"):
        validate_request(body, api="anthropic", provider="glm")
    with pytest.raises(ConfigError, match="unknown api"):
        govern_request(body, api="bedrock")  # type: ignore[arg-type]


def test_ids_of_any_json_type_are_read_not_crashed_on() -> None:
    body = _body(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{**USE_1, "id": {"odd": 1}}]},
            {"role": "user", "content": [{**RESULT_1, "tool_use_id": ["odd"]}]},
        ]
    )
    decoded = an.decode(body)
    assert an.encode(decoded.messages, decoded) == body
    result = _plain(body)  # a call without a usable id is removed, and reported
    assert result.body["messages"] == [{"role": "user", "content": "go"}]
    assert {a.stage for a in result.report.actions} == {"input", "orphans"}


def test_govern_points_a_whole_body_at_govern_request() -> None:
    with pytest.raises(InputError, match=r"govern_request\(body, api=\.\.\.\)"):
        govern(_body([{"role": "user", "content": "hi"}]))  # type: ignore[arg-type]


@pytest.mark.parametrize("profile", ["anthropic", "glm", "moonshot", "deepseek", "qwen"])
@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": "line\n"}],
        [{"type": "text", "text": "a"}, {"type": "text", "text": "line \n"}],
    ],
)
def test_a_prefill_with_trailing_whitespace_is_stripped_whoever_serves_messages(
    profile: str, content: Any
) -> None:
    """AN-6b is the Messages API's rule, not Anthropic's alone: a compatible provider's
    profile (glm, deepseek) kept the whitespace and the body was refused (CI, full level)."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "alpha"}, {"role": "assistant", "content": content}],
    }
    _check_governed(body, 3000, profile)
