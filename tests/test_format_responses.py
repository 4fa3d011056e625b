"""The OpenAI Responses edge: lossless round trip, governance that stays legal, the RS rules.

Properties over generated bodies (tests/responses_bodies.py): the round trip over
anything the edge can read, legal or not; governance at small windows over long
sessions with parallel calls, custom and hosted tools, encrypted reasoning and
unknown items.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from levels import examples
from responses_bodies import sessions, wild_bodies

from context_governor import (
    CompactionPolicy,
    ConfigError,
    InputError,
    govern_request,
    validate_request,
)
from context_governor.formats import responses as rs
from context_governor.stages._backfill import BACKFILL_CONTENT

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


def _items(body: dict[str, Any]) -> list[Any]:
    items = body.get("input")
    return items if isinstance(items, list) else []


def _canon(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def _validate(body: dict[str, Any]) -> list[str]:
    return [v.rule for v in validate_request(body, api="responses")]


# -- lossless --------------------------------------------------------------------------------


@SETTINGS
@given(wild_bodies())
def test_round_trip_is_identity(body: dict[str, Any]) -> None:
    snapshot = copy.deepcopy(body)
    decoded = rs.decode(body)
    assert rs.encode(decoded.messages, decoded) == body
    assert body == snapshot  # decoding never touches the body


@SETTINGS
@given(wild_bodies())
def test_round_trip_survives_a_copy_of_every_decoded_message(body: dict[str, Any]) -> None:
    """Stages return new dicts for messages they touch; an equal copy still encodes back
    to the native items themselves."""
    decoded = rs.decode(body)
    assert rs.encode([dict(m) for m in decoded.messages], decoded) == body


@GOVERN_SETTINGS
@given(sessions(max_turns=5, big=False))
def test_a_body_that_needs_nothing_comes_back_as_the_same_object(body: dict[str, Any]) -> None:
    assume(_validate(body) == [])
    result = govern_request(body, api="responses", context_window=1_000_000)
    assert result.report.actions == []
    assert result.body is body
    assert result.ungoverned == ()


# -- governance stays legal ------------------------------------------------------------------


def _followers(body: dict[str, Any]) -> dict[str, Any]:
    """Each reasoning item (canonical JSON) -> the type and id of the item right after it
    (its id, not its JSON: a call after it may have had its call_id shortened)."""
    items = _items(body)
    return {
        _canon(it): (rs.item_type(items[i + 1]), items[i + 1].get("id"))
        if i + 1 < len(items)
        else None
        for i, it in enumerate(items)
        if rs.item_type(it) == "reasoning"
    }


def _check_governed(
    body: dict[str, Any], window: int, compaction: str, profile: str = "openai"
) -> Any:
    snapshot = copy.deepcopy(body)
    result = govern_request(
        body, api="responses", context_window=window, compaction=compaction, profile=profile
    )
    out = result.body
    assert body == snapshot, "the input body was modified"
    assert validate_request(out, api="responses") == [], result.report
    assert result.report.violations == [], result.report
    # reasoning: byte-identical where kept, never made up, and still before the same item
    before, after = _followers(body), _followers(out)
    assert set(after) <= set(before)
    for item, follower in after.items():
        assert follower == before[item], "a reasoning item was separated from its item"
    # every item sent is an input item as it was, or a reported change
    changed = [it for it in _items(out) if _canon(it) not in {_canon(x) for x in _items(body)}]
    if changed:
        assert result.report.actions
    # outside input, nothing changes
    assert {k: v for k, v in out.items() if k != "input"} == {
        k: v for k, v in body.items() if k != "input"
    }
    return result


@GOVERN_SETTINGS
@given(
    sessions(min_turns=4, max_turns=16, long_ids=True),
    st.sampled_from([3000, 6000, 12000]),
    st.sampled_from(["cache", "seed"]),
    st.sampled_from(["openai", "openai", "nanobot", "deepseek", "glm"]),
)
def test_governed_sessions_validate_clean_at_small_windows(
    body: dict[str, Any], window: int, compaction: str, profile: str
) -> None:
    """Whichever profile's stages govern, the Responses rules hold for the output."""
    _check_governed(body, window, compaction, profile)


@GOVERN_SETTINGS
@given(sessions(min_turns=3, max_turns=10, big=False), st.data())
def test_broken_sessions_are_repaired(body: dict[str, Any], data: st.DataObject) -> None:
    """Outputs lost, outputs without calls, reasoning left without its item: the
    governed body validates clean and says what it did."""
    items = list(body["input"])
    outputs = [i for i, it in enumerate(items) if rs.item_type(it) in rs.OUTPUTS]
    drop = set(data.draw(st.lists(st.sampled_from(outputs), max_size=3))) if outputs else set()
    items = [it for i, it in enumerate(items) if i not in drop]
    if data.draw(st.booleans()):
        items.insert(data.draw(st.integers(0, len(items))), {
            "type": "function_call_output", "call_id": "call_orphan", "output": "lost"})  # fmt: skip
    if data.draw(st.booleans()):
        items.append({"type": "reasoning", "id": "rs_dangling", "summary": []})
    broken = {**body, "input": items}
    result = _check_governed(broken, 1_000_000, "cache")
    if _validate(broken):
        assert result.report.actions


@GOVERN_SETTINGS
@given(sessions(min_turns=8, max_turns=16))
def test_small_windows_cut_and_stay_inside_the_budget(body: dict[str, Any]) -> None:
    result = govern_request(body, api="responses", context_window=3000)
    report = result.report
    assert report.within_budget or report.messages_after <= 4, report
    if report.tokens_before > (report.budget or 0):
        assert report.actions, "over budget but nothing was done"


@SETTINGS
@given(wild_bodies(), st.sampled_from([2000, 8000, None]))
def test_any_readable_body_is_governed_and_its_report_is_honest(
    body: dict[str, Any], window: int | None
) -> None:
    """Illegal bodies too: no exception, no mutation, and every rule the output still
    breaks is in the report."""
    snapshot = copy.deepcopy(body)
    result = govern_request(body, api="responses", context_window=window)
    assert body == snapshot
    left = {v.rule for v in validate_request(result.body, api="responses")}
    assert left == {v["rule"] for v in result.report.violations}


# -- examples: pairing, reasoning, ids (the RS rules) ---------------------------------------

USER = {"role": "user", "content": "list the files"}
RS_1 = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-secret-1"}
CALL_1 = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec",
          "arguments": '{"cmd": "ls"}', "status": "completed"}  # fmt: skip
CALL_2 = {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "exec",
          "arguments": '{"cmd": "pwd"}', "status": "completed"}  # fmt: skip
OUT_1 = {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}
OUT_2 = {"type": "function_call_output", "call_id": "call_2", "output": "/home"}
PATCH = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_p", "name": "apply_patch",
         "input": "*** Begin Patch"}  # fmt: skip
ANSWER = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
          "content": [{"type": "output_text", "text": "done", "annotations": []}]}  # fmt: skip


def _body(items: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-5", "instructions": "be brief", "input": items, **extra}


def test_the_rules_speak_openais_error_texts() -> None:
    body = _body(
        [USER, RS_1, CALL_1, CALL_2, OUT_1,
         {"type": "function_call_output", "call_id": "call_9", "output": "?"},
         {**CALL_1, "id": "fc_x", "call_id": "c" * 70},
         {"type": "function_call_output", "call_id": "c" * 70, "output": "x"},
         {"type": "reasoning", "id": "rs_end", "summary": []},
         {**USER, "id": "msg_u"}, {**USER, "id": "msg_u"}]
    )  # fmt: skip
    found = validate_request(body, api="responses")
    assert [(v.rule, v.index) for v in found] == [
        ("RS-1", 3), ("RS-2", 5), ("RS-3", 8), ("RS-4", 6), ("RS-4", 7), ("RS-6", 10)
    ]  # fmt: skip
    errors = {v.rule: v.error for v in found if v.index != 7}
    assert errors == {
        "RS-1": "No tool output found for function call call_2.",
        "RS-2": "No tool call found for function call output with call_id call_9.",
        "RS-3": "Item 'rs_end' of type 'reasoning' was provided without its required "
        "following item.",
        "RS-4": "Invalid 'input[6].call_id': string too long. Expected a string with maximum "
        "length 64, but got a string with length 70 instead.",
        "RS-6": "Duplicate item found with id msg_u. Remove duplicate items from your input "
        "and try again.",
    }
    assert _validate(_body([])) == ["RS-5"]
    assert _validate(_body([PATCH])) == ["RS-1c"]


def test_unanswered_and_orphan_calls_are_repaired_in_place() -> None:
    body = _body([USER, RS_1, CALL_1, CALL_2, PATCH, OUT_1,
                  {"type": "function_call_output", "call_id": "call_9", "output": "?"}])  # fmt: skip
    result = govern_request(body, api="responses")
    out = result.body["input"]
    assert out[:6] == [USER, RS_1, CALL_1, CALL_2, PATCH, OUT_1]
    assert out[0] is USER and out[1] is RS_1  # items that needed nothing: the same objects
    assert out[6:] == [
        {"type": "function_call_output", "call_id": "call_2", "output": BACKFILL_CONTENT},
        {"type": "custom_tool_call_output", "call_id": "call_p", "output": BACKFILL_CONTENT},
    ]
    kinds = [(a.stage, a.kind, a.tool_call_id) for a in result.report.actions]
    assert kinds == [
        ("orphans", "drop", "call_9"),
        ("backfill", "insert", "call_2"),
        ("backfill", "insert", "call_p"),
    ]
    assert validate_request(result.body, api="responses") == []
    assert result.report.messages_before == 7 and result.report.messages_after == 8


def test_a_reasoning_item_left_without_its_item_is_dropped_and_reported() -> None:
    body = _body([USER, RS_1, ANSWER, {"role": "user", "content": "and?"},
                  {"type": "reasoning", "id": "rs_2", "summary": []}])  # fmt: skip
    result = govern_request(body, api="responses")
    assert result.body["input"] == body["input"][:4]
    [action] = result.report.actions
    assert (action.stage, action.kind) == ("responses", "drop") and "RS-3" in action.detail


def test_a_cut_takes_reasoning_with_its_item() -> None:
    """Cut at a small window: every reasoning item sent is still right before the item
    it came with, and its encrypted content is byte-identical."""
    items: list[Any] = [USER]
    for n in range(12):
        rid, cid = f"rs_{n}", f"call_{n}"
        items += [
            {"type": "reasoning", "id": rid, "summary": [], "encrypted_content": f"enc-{n}" * 40},
            {**CALL_1, "id": f"fc_{n}", "call_id": cid},
            # lines that differ from the one before (the lossless shrink folds runs)
            {
                "type": "function_call_output",
                "call_id": cid,
                "output": "".join(f"line {k % 7}\n" for k in range(300)),
            },
        ]
    body = _body(items, max_output_tokens=256)
    result = govern_request(body, api="responses", context_window=4000)
    out = result.body["input"]
    assert len(out) < len(items) and result.report.within_budget
    for i, item in enumerate(out):
        if item.get("type") == "reasoning":
            n = int(item["id"].split("_")[1])
            assert item is items[1 + 3 * n]
            assert out[i + 1] is items[2 + 3 * n]
    assert validate_request(result.body, api="responses") == []


def test_old_outputs_are_cleared_by_the_cache_policy() -> None:
    items: list[Any] = [USER]
    for n in range(60):
        cid = f"call_{n}"
        items += [
            {**CALL_1, "id": f"fc_{n}", "name": "read_file", "call_id": cid},
            {"type": "function_call_output", "id": f"fco_{n}", "call_id": cid,
             "output": f"row {n}\n" * 100},
        ]  # fmt: skip
    body = _body(items, max_output_tokens=256)
    # the fixed target: the default's adaptive target keeps only the newest results'
    # turns here (their span is under the target), so it cuts these turns rather than
    # clearing their outputs, and clearing is what this test is about
    fixed = CompactionPolicy(adaptive_target=False)
    result = govern_request(body, api="responses", context_window=24_000, compaction=fixed)
    # a cleared output is a replace with its call id (the note on the cut is one without)
    cleared = [
        a
        for a in result.report.actions
        if (a.stage, a.kind) == ("compact", "replace") and a.tool_call_id
    ]
    assert len(cleared) >= 20
    out = result.body["input"]
    replaced = [it for it in out if it.get("type") == "function_call_output"
                and it not in items]  # fmt: skip
    assert len(replaced) == len(cleared)
    for item in replaced:  # the item keeps its id and call_id; only the output is cleared
        original = next(it for it in items if it.get("id") == item["id"])
        assert item["call_id"] == original["call_id"] and item["output"] != original["output"]
    assert result.report.within_budget
    assert validate_request(result.body, api="responses") == []


def test_call_ids_over_64_characters_are_shortened_on_both_sides() -> None:
    long_id = "call_" + "x" * 80
    body = _body([USER, {**CALL_1, "call_id": long_id}, {**OUT_1, "call_id": long_id}])
    result = govern_request(body, api="responses")
    call, output = result.body["input"][1], result.body["input"][2]
    assert call["call_id"] == output["call_id"] and len(call["call_id"]) <= 64
    assert call["id"] == "fc_1" and call["arguments"] == CALL_1["arguments"]
    assert validate_request(result.body, api="responses") == []
    assert govern_request(body, api="responses").body == result.body  # deterministic


def test_unknown_items_and_fields_are_counted_with_their_step() -> None:
    small = _body([USER, ANSWER])
    future = {"type": "future_item", "id": "fut_1", "payload": "data " * 2000}
    big = _body([USER, future, ANSWER])
    extra = _body([USER, {**ANSWER, "x_future": "data " * 2000}])
    base = govern_request(small, api="responses").report.tokens_before
    assert govern_request(big, api="responses").report.tokens_before > base + 1000
    assert govern_request(extra, api="responses").report.tokens_before > base + 1000
    top = {**small, "x_new_setting": "data " * 2000}
    assert govern_request(top, api="responses").report.tokens_before > base + 1000


def test_string_input_and_unknown_items_travel_untouched() -> None:
    body = _body("hello", x_new_setting={"a": 1})
    assert govern_request(body, api="responses").body is body
    future = {"type": "future_item", "id": "fut_1", "payload": [1, 2]}
    body = _body([USER, future, ANSWER, {"role": "user", "content": "next"}])
    result = govern_request(body, api="responses")
    assert result.body is body and result.report.actions == []


# -- state the library cannot see -----------------------------------------------------------


def test_previous_response_id_is_reported_as_not_governed() -> None:
    """The outputs answer calls of the stored previous response: kept, not orphans."""
    body = _body([OUT_1, OUT_2], previous_response_id="resp_abc", store=True)
    result = govern_request(body, api="responses", context_window=100_000)
    assert result.body is body
    assert result.ungoverned == ("previous_response_id=resp_abc",)
    assert any("not governed" in n and "resp_abc" in n for n in result.report.notes)
    assert validate_request(body, api="responses") == []
    # without the server-side state the same outputs are orphans
    alone = {k: v for k, v in body.items() if k != "previous_response_id"}
    assert _validate(alone) == ["RS-2", "RS-2"]
    assert govern_request(alone, api="responses").ungoverned == ()


def test_conversation_and_item_references_are_reported_too() -> None:
    body = _body([{"type": "item_reference", "id": "fc_1"}, OUT_1], conversation="conv_1")
    result = govern_request(body, api="responses")
    assert result.body is body
    assert result.ungoverned == ("conversation=conv_1", "1 item_reference item(s)")


# -- bad input and settings -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ([], "body"),
        ({"input": 3}, "input"),
        ({"input": [3]}, "input[0]"),
        ({"input": [{"role": "user", "content": 3}]}, "input[0].content"),
        ({"input": [{"role": "user", "content": ["x"]}]}, "input[0].content[0]"),
        ({"input": [{"type": "function_call_output", "call_id": "c", "output": 1}]},
         "input[0].output"),
        ({"input": [{"type": "function_call", "call_id": 7, "name": "x"}]}, "input[0].call_id"),
        ({"input": [], "max_output_tokens": "9"}, "max_output_tokens"),
    ],
)  # fmt: skip
def test_unreadable_bodies_name_the_place(body: Any, where: str) -> None:
    with pytest.raises(InputError) as err:
        govern_request(body, api="responses")
    assert err.value.path == where
    with pytest.raises(InputError):
        validate_request(body, api="responses")


def test_a_responses_body_is_checked_against_the_responses_rules() -> None:
    with pytest.raises(ConfigError):
        validate_request(_body([USER]), api="responses", provider="anthropic")
    assert validate_request(_body([USER]), api="responses", provider="openai") == []


def test_a_user_message_between_calls_and_outputs_moves_after_the_outputs() -> None:
    body = _body([USER, CALL_1, {"role": "user", "content": "stop"}, OUT_1])
    result = govern_request(body, api="responses")
    assert result.body["input"] == [USER, CALL_1, OUT_1, {"role": "user", "content": "stop"}]
    assert [(a.stage, a.kind) for a in result.report.actions] == [("regroup", "move")]


def test_hosted_tool_items_stay_in_their_step() -> None:
    """A computer call and the output the client sent for it are one step's items:
    never split, never paired like function outputs."""
    computer = {"type": "computer_call", "id": "cu_1", "call_id": "call_c",
                "action": {"type": "screenshot"}, "pending_safety_checks": []}  # fmt: skip
    shot = {"type": "computer_call_output", "call_id": "call_c",
            "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"}}  # fmt: skip
    body = _body([USER, RS_1, computer, shot, ANSWER])
    decoded = rs.decode(body)
    assert [m["role"] for m in decoded.messages] == ["system", "user", "assistant"]
    assert decoded.messages[2]["content"] == ANSWER["content"]
    assert "tool_calls" not in decoded.messages[2]
    assert govern_request(body, api="responses").body is body


def test_a_long_custom_call_id_gets_a_custom_output_under_its_short_id() -> None:
    long_id = "call_" + "p" * 90
    body = _body([USER, {**PATCH, "call_id": long_id}])
    result = govern_request(body, api="responses")
    call, output = result.body["input"][1], result.body["input"][2]
    assert output == {"type": "custom_tool_call_output", "call_id": call["call_id"],
                      "output": BACKFILL_CONTENT}  # fmt: skip
    assert len(call["call_id"]) <= 64 and call["input"] == PATCH["input"]
    assert validate_request(result.body, api="responses") == []


def test_a_string_input_with_invalid_unicode_is_repaired_as_a_message() -> None:
    body = _body("bad \ud800 text")
    result = govern_request(body, api="responses")
    assert result.body["input"] == [{"role": "user", "content": "bad \ufffd text"}]
    assert [(a.stage, a.kind) for a in result.report.actions] == [("input", "repair")]
