"""The Google Gen AI (generateContent) edge: lossless round trip, governance that stays
legal, the GE rules on native contents.

Properties over generated bodies (tests/gemini_bodies.py): the round trip over anything
the edge can read, legal or not; governance at small windows over long sessions with
parallel function calls (with and without ids), thought signatures, code execution and
unknown parts.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from gemini_bodies import sessions, wild_bodies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import ConfigError, InputError, govern_request, validate_request
from context_governor.formats import _gemini as ge

SETTINGS = settings(
    max_examples=examples(full=150, fast=60),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
GOVERN_SETTINGS = settings(
    max_examples=examples(full=75, fast=25),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _rules(body: dict[str, Any], model: str | None = None) -> list[str]:
    return [v.rule for v in validate_request(body, api="gemini", model=model)]


def _parts(body: dict[str, Any]) -> list[str]:
    return [_canon(p) for c in body["contents"] for p in ge.parts_of(c)]


# -- lossless --------------------------------------------------------------------------------


@SETTINGS
@given(wild_bodies())
def test_round_trip_is_identity(body: dict[str, Any]) -> None:
    snapshot = copy.deepcopy(body)
    decoded = ge.decode(body)
    assert ge.encode(decoded.messages, decoded) == body
    assert body == snapshot  # decoding never touches the body


@SETTINGS
@given(wild_bodies())
def test_round_trip_survives_a_copy_of_every_decoded_message(body: dict[str, Any]) -> None:
    """Stages return new dicts for messages they touch; an equal copy still encodes back
    to the native contents themselves."""
    decoded = ge.decode(body)
    assert ge.encode([dict(m) for m in decoded.messages], decoded) == body


@GOVERN_SETTINGS
@given(sessions(max_turns=5, big=False))
def test_a_body_that_needs_nothing_comes_back_as_the_same_object(body: dict[str, Any]) -> None:
    assert _rules(body) == []
    result = govern_request(body, api="gemini", context_window=1_000_000)
    assert result.report.actions == []
    assert result.body is body
    assert result.ungoverned == ()


# -- governance stays legal ------------------------------------------------------------------


def _signed(body: dict[str, Any]) -> dict[str, str]:
    """Each signed part (without its signature) -> its signature."""
    out = {}
    for content in body["contents"]:
        for part in ge.parts_of(content):
            key = ge.spelled(part, "thoughtSignature")
            if key is not None and part[key] != ge.SKIP_SIGNATURE:
                out[_canon({k: v for k, v in part.items() if k != key})] = part[key]
    return out


def _check_governed(
    body: dict[str, Any], window: int, compaction: str, profile: str = "gemini"
) -> Any:
    snapshot = copy.deepcopy(body)
    result = govern_request(
        body, api="gemini", context_window=window, compaction=compaction, profile=profile
    )
    out = result.body
    assert body == snapshot, "the input body was modified"
    assert validate_request(out, api="gemini") == [], result.report
    assert result.report.violations == [], result.report
    # a signature is never moved to another part nor made up (only the skip value is)
    before, after = _signed(body), _signed(out)
    for part, signature in after.items():
        assert before.get(part) == signature, "a thought signature left its part"
    # every part sent is an input part as it was, or a reported change
    if set(_parts(out)) - set(_parts(body)):
        assert result.report.actions
    # outside the contents, nothing changes
    assert {k: v for k, v in out.items() if k != "contents"} == {
        k: v for k, v in body.items() if k != "contents"
    }
    return result


@GOVERN_SETTINGS
@given(
    sessions(min_turns=4, max_turns=16),
    st.sampled_from([3000, 6000, 12000]),
    st.sampled_from(["cache", "seed"]),
    st.sampled_from(["gemini", "gemini", "nanobot", "openai"]),
)
def test_governed_sessions_validate_clean_at_small_windows(
    body: dict[str, Any], window: int, compaction: str, profile: str
) -> None:
    """Whichever profile's stages govern, Gemini's rules hold for the output."""
    _check_governed(body, window, compaction, profile)


@GOVERN_SETTINGS
@given(sessions(min_turns=3, max_turns=10, big=False), st.data())
def test_broken_sessions_are_repaired(body: dict[str, Any], data: st.DataObject) -> None:
    """Responses lost, responses without calls, a signature lost on Gemini 3, a leading
    call turn, two user turns in a row: the governed body validates clean and says
    what it did."""
    contents = [dict(c) for c in body["contents"]]
    for n, content in enumerate(contents):
        parts = content["parts"]
        responses = [p for p in parts if ge.is_response(p)]
        if responses and data.draw(st.booleans(), label=f"drop a response of {n}"):
            contents[n] = {**content, "parts": [p for p in parts if p is not responses[-1]]}
        calls = [p for p in parts if ge.is_call(p)]
        if calls and data.draw(st.booleans(), label=f"lose the signature of {n}"):
            unsigned = {k: v for k, v in calls[0].items() if ge.spelled(calls[0],
                        "thoughtSignature") != k}  # fmt: skip
            contents[n] = {**content, "parts": [unsigned if p is calls[0] else p for p in parts]}
    if data.draw(st.booleans()):
        contents.insert(1, {"role": "user", "parts": [{"functionResponse": {
            "name": "exec", "response": {"output": "lost"}}}]})  # fmt: skip
    if data.draw(st.booleans()):
        contents = contents[1:]  # may start with a call turn now
    if data.draw(st.booleans()):
        contents.append({"role": "user", "parts": [{"text": "and then?"}]})
    broken = {**body, "contents": contents, "model": "gemini-3-pro-preview"}
    result = _check_governed(broken, 1_000_000, "cache")
    if _rules(broken):
        assert result.report.actions or result.report.notes


@GOVERN_SETTINGS
@given(sessions(min_turns=8, max_turns=16))
def test_small_windows_cut_and_stay_inside_the_budget(body: dict[str, Any]) -> None:
    result = govern_request(body, api="gemini", context_window=3000)
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
    result = govern_request(body, api="gemini", context_window=window)
    assert body == snapshot
    left = {v.rule for v in validate_request(result.body, api="gemini")}
    assert left == {v["rule"] for v in result.report.violations}


# -- examples --------------------------------------------------------------------------------

USER = {"role": "user", "parts": [{"text": "weather in Paris and Rome?"}]}
CALLS = {"role": "model", "parts": [
    {"functionCall": {"name": "weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2ln"},
    {"functionCall": {"name": "weather", "args": {"city": "Rome"}}},
]}  # fmt: skip
PARIS = {"functionResponse": {"name": "weather", "response": {"output": "sunny"}}}
ROME = {"functionResponse": {"name": "weather", "response": {"output": "rain"}}}
ANSWERS = {"role": "user", "parts": [PARIS, ROME]}


def _body(contents: list[Any], **extra: Any) -> dict[str, Any]:
    return {"model": "gemini-2.5-flash", "contents": contents, **extra}


def test_the_rules_speak_geminis_error_texts() -> None:
    found = validate_request(_body([CALLS, {"role": "user", "parts": [PARIS]}]), api="gemini")
    texts = {v.rule: v.error for v in found}
    assert texts["GE-1"] == (
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn."
    )
    assert texts["GE-3"].startswith("Please ensure that the number of function response parts")
    found = validate_request(_body([USER, USER, {"role": "user", "parts": []}]), api="gemini")
    assert {v.rule for v in found} == {"GE-4", "GE-5b"}
    assert "contents[2].parts: contents.parts must not be empty" in found[-1].error
    assert _rules(_body([])) == ["GE-5"]
    assert _rules(_body([USER, {"role": "assistant", "parts": [{"text": "x"}]}])) == ["GE-8"]
    assert _rules(_body([USER, ANSWERS])) == ["GE-2", "GE-4"]
    unsigned = {"role": "model", "parts": CALLS["parts"][1:]}
    assert _rules(_body([USER, unsigned, {"role": "user", "parts": [ROME]}]),
                  model="gemini-3-pro-preview") == ["GE-6"]  # fmt: skip
    assert _rules(_body([USER, CALLS]), model="gemini-2.5-flash") == []  # a prefill
    assert _rules(_body([USER, CALLS]), model="gemini-pro") == ["GE-7b"]


def test_responses_pair_by_name_and_order_when_there_are_no_ids() -> None:
    decoded = ge.decode(_body([USER, CALLS, ANSWERS]))
    _, assistant, paris, rome = decoded.messages
    call_ids = [c["id"] for c in assistant["tool_calls"]]
    assert [paris["tool_call_id"], rome["tool_call_id"]] == call_ids
    assert paris["content"] == "sunny"
    # ids never reach the output, even for a rebuilt content
    result = govern_request(_body([USER, CALLS, {"role": "user", "parts": [PARIS]}]), api="gemini")
    assert ge.SYNTHETIC not in json.dumps(result.body)
    assert _rules(result.body) == []


def test_ids_pair_across_names_and_are_kept() -> None:
    calls = {"role": "model", "parts": [
        {"functionCall": {"id": "a", "name": "weather", "args": {}}},
        {"functionCall": {"id": "b", "name": "weather", "args": {}}},
    ]}  # fmt: skip
    answers = {"role": "user", "parts": [
        {"functionResponse": {"id": "b", "name": "weather", "response": {"output": "2"}}},
    ]}  # fmt: skip
    result = govern_request(_body([USER, calls, answers]), api="gemini")
    parts = result.body["contents"][2]["parts"]
    assert sorted(p["functionResponse"]["id"] for p in parts) == ["a", "b"]  # "a" backfilled
    assert parts[0] is answers["parts"][0]  # the kept response, as it was
    assert result.report.actions


def test_a_missing_response_is_backfilled_into_the_same_turn() -> None:
    later = {"role": "user", "parts": [{"text": "and then?"}]}
    body = _body([USER, CALLS, {"role": "user", "parts": [PARIS]}, later])
    result = govern_request(body, api="gemini")
    contents = result.body["contents"]
    assert len(contents) == 3  # the user text joined the responses' turn (GE-4)
    assert contents[2]["parts"][0] is PARIS
    assert contents[2]["parts"][1]["functionResponse"]["name"] == "weather"
    assert contents[2]["parts"][2:] == later["parts"]
    assert "contents[3] (user) joined the turn before it (GE-4)" in result.report.notes
    assert _rules(result.body) == []


def test_a_lost_signature_gets_the_skip_value_on_its_call_part() -> None:
    unsigned = {"role": "model", "parts": [
        {"thought": True, "text": "thinking", "thoughtSignature": "dGhvdWdodA=="},
        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
    ]}  # fmt: skip
    body = _body([USER, unsigned, {"role": "user", "parts": [PARIS]}], model="gemini-3-pro")
    result = govern_request(body, api="gemini")
    parts = result.body["contents"][1]["parts"]
    assert parts[0] is unsigned["parts"][0]  # the thought keeps its own signature
    assert parts[1]["thoughtSignature"] == ge.SKIP_SIGNATURE
    assert _rules(result.body, model="gemini-3-pro") == []
    assert any("thought_signature" in a["detail"] for a in result.report.to_dict()["actions"])


def test_a_leading_call_turn_gets_a_user_turn_before_it() -> None:
    result = govern_request(_body([CALLS, ANSWERS]), api="gemini")
    assert [c["role"] for c in result.body["contents"]] == ["user", "model", "user"]
    assert result.body["contents"][1] is CALLS
    assert _rules(result.body) == []


def test_snake_case_bodies_keep_their_spelling() -> None:
    calls = {"role": "model", "parts": [
        {"function_call": {"name": "weather", "args": {}}, "thought_signature": "c2ln"},
    ]}  # fmt: skip
    body = {
        "contents": [USER, calls, USER],
        "system_instruction": {"parts": [{"text": "be brief"}]},
        "generation_config": {"max_output_tokens": 100},
    }
    decoded = ge.decode(body)
    assert decoded.max_output == 100
    assert decoded.messages[0] == {
        "role": "system",
        "content": [{"type": "text", "text": "be brief"}],
    }
    result = govern_request(body, api="gemini")
    response = result.body["contents"][2]["parts"][0]
    assert set(response) == {"functionResponse"}  # a new part: the API reads both spellings
    assert result.body["contents"][1] is calls
    assert _rules(result.body) == []


def test_capped_responses_keep_their_key() -> None:
    big = "word " * 1500
    turns: list[Any] = [USER]
    for n in range(6):
        turns.append(
            {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"n": n}}}]}
        )
        turns.append(
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "read", "response": {"result": big}}}],
            }
        )
    turns[-1] = {"role": "user", "parts": [*turns[-1]["parts"], {"text": "go"}]}  # fmt: skip
    body = _body(turns)
    result = govern_request(body, api="gemini", context_window=8000, max_tool_result_chars=800)
    out = result.body["contents"]
    responses = [get_response(p) for c in out for p in ge.parts_of(c) if ge.is_response(p)]
    assert responses and all(set(r) == {"result"} and len(r["result"]) < 1000 for r in responses)
    assert result.report.within_budget
    assert _rules(result.body) == []


def get_response(part: dict[str, Any]) -> Any:
    return ge.get(part, "functionResponse")["response"]


def test_unknown_parts_and_fields_are_counted_and_travel_untouched() -> None:
    odd = {"role": "model", "parts": [{"futurePart": {"blob": "z" * 4000}}], "x_meta": 1}
    plain = {"role": "model", "parts": [{"text": "ok"}]}
    with_odd = govern_request(_body([USER, odd, USER]), api="gemini", context_window=1_000_000)
    without = govern_request(_body([USER, plain, USER]), api="gemini", context_window=1_000_000)
    assert with_odd.report.tokens_before > without.report.tokens_before + 500
    assert with_odd.body["contents"][1] is odd


def test_cached_content_is_reported_as_not_governed() -> None:
    body = _body([USER], cachedContent="cachedContents/abc")
    result = govern_request(body, api="gemini")
    assert result.ungoverned == ("cachedContent=cachedContents/abc",)
    assert any("not governed" in n for n in result.report.notes)
    assert result.body is body


def test_the_output_reserve_is_max_output_tokens() -> None:
    body = _body([USER], generationConfig={"maxOutputTokens": 3000})
    small = govern_request(body, api="gemini", context_window=10_000).report.budget
    big = govern_request(body | {"generationConfig": {"maxOutputTokens": 5000}}, api="gemini",
                         context_window=10_000).report.budget  # fmt: skip
    assert small is not None and big is not None and small - big == 2000


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ([], "body"),
        ({"contents": "hi"}, "contents"),
        ({"contents": [3]}, "contents[0]"),
        ({"contents": [{"role": 1, "parts": []}]}, "contents[0].role"),
        ({"contents": [{"role": "user", "parts": {}}]}, "contents[0].parts"),
        ({"contents": [{"role": "user", "parts": ["x"]}]}, "contents[0].parts[0]"),
        ({"contents": [{"role": "user", "parts": [{"text": 3}]}]}, "contents[0].parts[0].text"),
        ({"contents": [{"role": "model", "parts": [{"functionCall": {"args": {}}}]}]},
         "contents[0].parts[0].functionCall.name"),
        ({"contents": [], "generationConfig": {"maxOutputTokens": -1}},
         "generationConfig.maxOutputTokens"),
        ({"contents": [], "tools": {}}, "tools"),
        ({"contents": [], "model": 3}, "model"),
    ],
)  # fmt: skip
def test_unreadable_bodies_name_the_place(body: Any, where: str) -> None:
    with pytest.raises(InputError) as caught:
        govern_request(body, api="gemini")
    assert caught.value.path == where


def test_a_gemini_body_is_checked_against_geminis_rules() -> None:
    with pytest.raises(ConfigError):
        validate_request(_body([USER]), api="gemini", provider="openai")
    assert validate_request(_body([USER]), api="gemini", provider="gemini") == []
