"""Merging two messages of one role keeps what either carried.

Profiles that need alternation merge consecutive user (or assistant) messages. Real
clients send fields we do not know, on messages and on blocks: the rule is to keep
them, count them, and never lose one silently. The property here, through every edge
(Chat Completions, Anthropic Messages, Gemini, Responses): each unknown field of the
input (message level: key and value; block level: the block itself) and each message
of an unknown role is in the output body, or the report names the field that gave way
(one field holds one value: where both merged messages hold a key with different values,
the later value is kept and the earlier one's place is named).
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor import govern, govern_request
from context_governor.profiles import get_profile
from context_governor.stages import enforce_alternation

SETTINGS = settings(
    max_examples=examples(full=120, fast=40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: Field names no edge or provider knows (a few, so that merged messages share some).
KEYS = ("x_tag", "x_meta", "x_seq")
#: Values that are not empty (None and "" never replace a value, and are not reported).
VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from(["a", "b", "ü"]),
    st.lists(st.integers(0, 2), min_size=1, max_size=2),
    st.booleans(),
)
UNKNOWN = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3)
WORDS = st.text("abcdefgh ", min_size=1, max_size=12).filter(str.strip)
WINDOW = 1_000_000


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _details(report: Any) -> str:
    return "\n".join(a.detail for a in report.actions)


@st.composite
def _turns(draw: st.DrawFn, min_runs: int = 2) -> list[tuple[str, dict[str, Any], Any]]:
    """(role, unknown fields, text or blocks) per message: runs of one role, user first
    and last (so that nothing but a merge can take a message away)."""
    runs = draw(st.integers(min_runs, 4))
    doubled = draw(st.integers(0, 2 * runs - 2))  # one run at least merges
    out: list[tuple[str, dict[str, Any], Any]] = []
    for n in range(2 * runs - 1):
        role = "user" if n % 2 == 0 else "assistant"
        for _ in range(draw(st.integers(2 if n == doubled else 1, 3))):
            out.append((role, draw(UNKNOWN), draw(_content())))
    return out


@st.composite
def _content(draw: st.DrawFn) -> Any:
    """A string, or text blocks some of which carry unknown fields (marked by "<k>" so
    the check can find them as given)."""
    if draw(st.booleans()):
        return draw(WORDS)
    return [
        {"text": draw(WORDS), **{f"<{k}>": v for k, v in draw(UNKNOWN).items()}}
        for _ in range(draw(st.integers(1, 2)))
    ]


def _blocks(content: Any, text_type: str, text_key: str = "text") -> Any:
    """Generated content in a wire format's own shape ("type" omitted when empty)."""
    if isinstance(content, str):
        return content
    out = []
    for block in content:
        native = {"type": text_type} if text_type else {}
        native[text_key] = block["text"]
        native.update({k[1:-1]: v for k, v in block.items() if k.startswith("<")})
        out.append(native)
    return out


def _check(
    given_messages: list[Any],
    sent_messages: list[Any],
    report: Any,
    *,
    content_key: str = "content",
    where: str = "messages",
    known: frozenset[str] = frozenset({"role", "content"}),
) -> None:
    """Every unknown field of ``given_messages`` is in ``sent_messages`` (the same key
    with the same value on some message; a block as it was given) or named in the report;
    every message of a role we do not know is sent as it was."""
    sent_fields = {(k, _canon(v)) for m in sent_messages for k, v in m.items() if k not in known}
    sent_blocks = {
        _canon(b)
        for m in sent_messages
        if isinstance(m.get(content_key), list)
        for b in m[content_key]
    }
    sent_whole = {_canon(m) for m in sent_messages}
    details = _details(report)
    for i, message in enumerate(given_messages):
        if message.get("role") not in ("user", "assistant", "model"):
            assert _canon(message) in sent_whole, f"{where}[{i}] (unknown role) lost"
            continue
        for key, value in message.items():
            if key in known or (key, _canon(value)) in sent_fields:
                continue
            # the edges name the place; the chat merge the key, among those replaced
            replaced = re.search(rf"earlier value of [^(]*\b{key}\b", details)
            assert f"{where}[{i}].{key}" in details or replaced, (
                f"{where}[{i}].{key}={value!r} lost without a report entry: {details}"
            )
        for block in message.get(content_key) if isinstance(message.get(content_key), list) else ():
            if len(block) > 2:  # it carries unknown fields
                assert _canon(block) in sent_blocks, f"{where}[{i}]: block {block} lost"


@st.composite
def _with_strangers(draw: st.DrawFn, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with messages of an unknown role put after some of them."""
    out: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        out.append(message)
        if draw(st.integers(0, 3)) == 0:
            out.append({"role": "x_note", "content": f"note {n}"})
    return out


# -- the property, per edge --------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_chat_merges_keep_unknown_fields(data: st.DataObject) -> None:
    turns = data.draw(_turns())
    messages = [
        {"role": role, **unknown, "content": _blocks(content, "text")}
        for role, unknown, content in turns
    ]
    result = govern(messages, profile="anthropic", context_window=WINDOW)
    assert any(a.kind == "merge" for a in result.report.actions)
    _check(messages, result.messages, result.report, known=frozenset({"role", "content"}))


@SETTINGS
@given(st.data())
def test_anthropic_merges_keep_unknown_fields(data: st.DataObject) -> None:
    turns = data.draw(_turns())
    messages = [
        {"role": role, **unknown, "content": _blocks(content, "text")}
        for role, unknown, content in turns
    ]
    messages = data.draw(_with_strangers(messages))
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": messages}
    result = govern_request(body, api="anthropic", context_window=WINDOW, cache_breakpoints=False)
    assert any(a.kind == "merge" for a in result.report.actions)
    _check(messages, result.body["messages"], result.report)


@SETTINGS
@given(st.data())
def test_gemini_merges_keep_unknown_fields(data: st.DataObject) -> None:
    turns = data.draw(_turns())
    contents = [
        {
            "role": "user" if role == "user" else "model",
            **unknown,
            "parts": [{"text": content}] if isinstance(content, str) else _blocks(content, ""),
        }
        for role, unknown, content in turns
    ]
    contents = data.draw(_with_strangers(contents))
    body = {"model": "gemini-2.5-pro", "contents": contents}
    result = govern_request(body, api="gemini", context_window=WINDOW)
    assert any(a.kind == "merge" for a in result.report.actions)
    _check(
        contents,
        result.body["contents"],
        result.report,
        content_key="parts",
        where="contents",
        known=frozenset({"role", "parts"}),
    )


@SETTINGS
@given(st.data())
def test_responses_merges_keep_unknown_fields(data: st.DataObject) -> None:
    # The Responses API takes consecutive user items, so no profile merges them there;
    # a profile whose own stages enforce alternation does.
    turns = data.draw(_turns())
    items = [
        {
            "type": "message",
            "role": role,
            **unknown,
            "content": _blocks(content, "input_text" if role == "user" else "output_text"),
        }
        for role, unknown, content in turns
    ]
    base = get_profile("openai")
    profile = replace(base, stages=(*base.stages, enforce_alternation))
    body = {"model": "gpt-5", "input": items}
    result = govern_request(body, api="responses", profile=profile, context_window=WINDOW)
    # the edge reads consecutive assistant items as one turn (one response's output), so
    # only a run of user items is left for the stage to merge
    user_run = any(a[0] == b[0] == "user" for a, b in itertools.pairwise(turns))
    assert any(a.kind == "merge" for a in result.report.actions) == user_run
    _check(items, result.body["input"], result.report, known=frozenset({"type", "role", "content"}))


# -- examples: what happens on a conflict, and where ---------------------------------------------


def test_chat_conflict_keeps_the_later_value_and_reports_the_earlier() -> None:
    messages = [
        {"role": "user", "content": "a", "x_tag": 1, "x_meta": "m"},
        {"role": "user", "content": "b", "x_tag": 2, "x_seq": [0]},
    ]
    result = govern(messages, profile="anthropic")
    assert result.messages == [
        {"role": "user", "content": "a\n\nb", "x_tag": 2, "x_meta": "m", "x_seq": [0]}
    ]
    [action] = result.report.actions
    assert action.kind == "merge" and "earlier value of x_tag was replaced" in action.detail


def test_chat_empty_value_never_replaces_one() -> None:
    messages = [
        {"role": "user", "content": "a", "name": "ann"},
        {"role": "user", "content": "b", "name": None},
    ]
    result = govern(messages, profile="anthropic")
    assert result.messages[0]["name"] == "ann"
    assert "replaced" not in result.report.actions[0].detail


def test_seed_merge_names_what_nanobot_leaves_out() -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "x_tag": 1}]
    result = govern(messages, profile="nanobot")
    assert result.messages == [{"role": "user", "content": "a\n\nb"}]  # as Nanobot does
    assert "the later message's x_tag left out" in result.report.actions[0].detail


def test_anthropic_merge_keeps_both_messages_fields_and_the_strangers_between() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "a", "x_tag": 1, "x_meta": "first"},
            {"role": "x_note", "content": "between"},
            {"role": "user", "content": [{"type": "text", "text": "b", "x_seq": 5}], "x_tag": 2},
        ],
    }
    result = govern_request(body, api="anthropic", cache_breakpoints=False)
    assert result.body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b", "x_seq": 5}],
            "x_tag": 2,
            "x_meta": "first",
        },
        {"role": "x_note", "content": "between"},
    ]
    assert "messages[0].x_tag" in _details(result.report)


def test_anthropic_merged_assistant_turns_keep_their_blocks() -> None:
    text = {"type": "text", "text": "let me look", "x_seq": 1}
    use = {"type": "tool_use", "id": "b", "name": "g", "input": {"k": 1}, "x_seq": 2}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [text], "x_meta": "one"},
            {"role": "assistant", "content": [use], "x_tag": 2},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}]},
        ],
    }
    result = govern_request(body, api="anthropic", cache_breakpoints=False)
    merged = result.body["messages"][1]
    assert merged == {"role": "assistant", "content": [text, use], "x_meta": "one", "x_tag": 2}
    assert result.report.actions[0].kind == "merge"


def test_gemini_merge_keeps_both_contents_fields() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "a"}], "x_meta": "first"},
            {"role": "x_note", "parts": [{"text": "between"}]},
            {"role": "user", "parts": [{"text": "b", "x_seq": 1}], "x_tag": 2},
        ]
    }
    result = govern_request(body, api="gemini", model="gemini-2.5-pro")
    assert result.body["contents"] == [
        {"role": "user", "parts": [{"text": "a"}, {"text": "b", "x_seq": 1}], "x_meta": "first",
         "x_tag": 2},
        {"role": "x_note", "parts": [{"text": "between"}]},
    ]  # fmt: skip


def test_responses_merged_user_items_go_out_as_they_came() -> None:
    items = [
        {"type": "message", "role": "user", "content": "a", "x_tag": 1},
        {"role": "user", "content": [{"type": "input_text", "text": "b"}], "x_tag": 2},
    ]
    base = get_profile("openai")
    profile = replace(base, stages=(*base.stages, enforce_alternation))
    result = govern_request({"input": items}, api="responses", profile=profile)
    assert [a.kind for a in result.report.actions] == ["merge"]
    assert result.body["input"] == items


def test_anthropic_user_text_joining_tool_results_keeps_its_fields() -> None:
    # A backfilled result makes the turn's results a new user message; the user text after
    # them joins it: every native message's fields go with it, a conflict is reported.
    uses = [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in ("a", "b")]
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": uses},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ra"}],
                "x_tag": 1,
                "x_meta": "A",
            },
            {"role": "user", "content": "b", "x_tag": 2},
            {"role": "user", "content": "c", "x_seq": "C"},
        ],
    }
    result = govern_request(body, api="anthropic", cache_breakpoints=False)
    turn = result.body["messages"][2]
    assert {k: v for k, v in turn.items() if k.startswith("x_")} == {
        "x_tag": 2, "x_meta": "A", "x_seq": "C",
    }  # fmt: skip
    [lost] = [a for a in result.report.actions if a.stage == "encode"]
    assert lost.kind == "drop" and lost.detail.startswith("messages[2].x_tag left out")


def test_gemini_user_text_joining_responses_keeps_its_fields() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "f", "response": {"output": "r"}}}],
                "x_tag": 1,
            },
            {"role": "user", "parts": [{"text": "and"}], "x_tag": 2, "x_meta": "B"},
        ]
    }
    result = govern_request(body, api="gemini", model="gemini-2.5-pro")
    turn = result.body["contents"][2]
    assert turn["x_tag"] == 2 and turn["x_meta"] == "B"
    assert len(turn["parts"]) == 2
    [lost] = [a for a in result.report.actions if a.stage == "encode"]
    assert lost.detail.startswith("contents[2].x_tag left out")
