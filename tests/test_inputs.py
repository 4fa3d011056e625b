"""Bad input through the public API, for both profiles.

Every problem gives either a reported repair or an ``InputError`` / ``ConfigError``
whose one-line message starts with the path of the offending part, never another
exception type, never a hang, and never a change to the caller's list.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from context_governor import ConfigError, GovernResult, InputError, govern

Message = dict[str, Any]
PROFILES = ["openai", "nanobot"]
EM_DASH_BACKFILL = "[Tool result unavailable \u2014 call was interrupted or lost]"


# --------------------------------------------------------------------------- helpers


def u(content: Any = "hi", **extra: Any) -> Message:
    return {"role": "user", "content": content, **extra}


def a(content: Any = "ok", **extra: Any) -> Message:
    return {"role": "assistant", "content": content, **extra}


def call(call_id: Any = "c1", name: Any = "read_file", arguments: Any = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def with_calls(*calls: Any, content: Any = None) -> Message:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def tool(call_id: Any = "c1", content: Any = "result", name: str = "read_file") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def governed(messages: Any, **kwargs: Any) -> GovernResult:
    """govern(), checking that the caller's list is left exactly as it was."""
    before = copy.deepcopy(messages)
    res = govern(messages, **kwargs)
    assert messages == before, "govern() mutated its input"
    return res


def input_error(messages: Any, path: str, **kwargs: Any) -> InputError:
    """govern() must raise InputError at ``path`` with a one-line message."""
    before = copy.deepcopy(messages)
    with pytest.raises(InputError) as info:
        govern(messages, **kwargs)
    assert messages == before
    err = info.value
    text = str(err)
    assert "\n" not in text and "\r" not in text, text
    assert err.path == path, text
    assert text.startswith(f"{path}: "), text
    assert len(text) < 300, text
    return err


def config_error(name: str, **kwargs: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        govern([u()], **kwargs)
    text = str(info.value)
    assert "\n" not in text, text
    assert name in text, text
    return info.value


def repairs(res: GovernResult) -> list[str]:
    return [x.detail for x in res.report.actions if (x.stage, x.kind) == ("input", "repair")]


def assert_repairs(res: GovernResult, expected: list[str]) -> None:
    """The input stage's repairs, each starting with the given path and problem."""
    got = repairs(res)
    assert len(got) == len(expected), got
    for detail, prefix in zip(got, expected, strict=True):
        assert detail.startswith(prefix), (detail, prefix)
        assert "\n" not in detail


def stage_kinds(res: GovernResult) -> list[tuple[str, str]]:
    return [(x.stage, x.kind) for x in res.report.actions]


def wire(messages: list[Message]) -> bytes:
    """What an HTTP client sends: UTF-8 JSON (fails on lone surrogates)."""
    return json.dumps(messages, ensure_ascii=False).encode("utf-8")


def assert_openai_legal(messages: list[Message]) -> None:
    """Every call answered once, right after its assistant; no other tool message."""
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            raise AssertionError(f"tool message at {i} does not follow a tool-call block")
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            assert all(isinstance(x, str) and x for x in ids), ids
            j = i + 1
            answered: list[str] = []
            while j < len(messages) and messages[j]["role"] == "tool":
                answered.append(messages[j]["tool_call_id"])
                j += 1
            assert sorted(answered) == sorted(ids), (i, ids, answered)
            i = j
            continue
        i += 1


# --------------------------------------------------------------------------- structure errors


@pytest.mark.parametrize("profile", PROFILES)
class TestStructure:
    @pytest.mark.parametrize(
        "value, type_name",
        [(None, "null"), ({"role": "user"}, "dict"), ("hi", "str"), ((u(),), "tuple"), (5, "int")],
    )
    def test_not_a_list(self, profile: str, value: Any, type_name: str) -> None:
        err = input_error(value, "messages", profile=profile)
        assert type_name in str(err)

    def test_not_a_list_generator(self, profile: str) -> None:
        gen: Iterator[Message] = iter([u()])
        with pytest.raises(InputError) as info:
            govern(gen, profile=profile)  # type: ignore[arg-type]
        assert str(info.value).startswith("messages: ")

    @pytest.mark.parametrize("bad", ["hello", None, ["role", "user"], 3])
    def test_message_not_an_object(self, profile: str, bad: Any) -> None:
        input_error([u(), bad], "messages[1]", profile=profile)

    @pytest.mark.parametrize("message", [{"content": "x"}, {"role": None, "content": "x"}, {}])
    def test_missing_role(self, profile: str, message: Message) -> None:
        err = input_error([u(), a(), message], "messages[2].role", profile=profile)
        assert "missing" in str(err)

    @pytest.mark.parametrize("role", ["bot", "", "User", 5, ["user"], {"r": 1}])
    def test_unknown_role(self, profile: str, role: Any) -> None:
        err = input_error([{"role": role, "content": "x"}], "messages[0].role", profile=profile)
        assert "unknown role" in str(err)

    def test_the_deprecated_function_role(self, profile: str) -> None:
        """OpenAI still takes its deprecated function calling (messages/legacy.py); elsewhere it
        is refused, naming what to send instead."""
        messages = [u(), {"role": "function", "name": "f", "content": "x"}]
        if profile in ("openai", "nanobot"):
            result = govern(messages, profile=profile)  # a result with no call: removed
            assert any("answers no earlier tool call" in a.detail for a in result.report.actions)
            return
        err = input_error(messages, "messages[1]", profile=profile)
        assert "deprecated function calling" in str(err) and "tool_calls" in str(err)

    def test_unknown_role_lists_the_roles_taken(self, profile: str) -> None:
        err = input_error([{"role": "bot", "content": "x"}, u()], "messages[0].role", profile=profile)
        assert "system, developer, user, assistant or tool" in str(err)

    def test_role_with_a_newline_gives_a_one_line_message(self, profile: str) -> None:
        input_error([{"role": "dev\neloper", "content": "x"}], "messages[0].role", profile=profile)

    @pytest.mark.parametrize(
        "content, type_name",
        [(5, "int"), ({"text": "hi"}, "dict"), (True, "bool"), (1.5, "float"), (b"hi", "bytes")],
    )
    def test_content_of_an_odd_type(self, profile: str, content: Any, type_name: str) -> None:
        err = input_error([u(), a(content)], "messages[1].content", profile=profile)
        assert type_name in str(err)

    @pytest.mark.parametrize("part", ["plain", None, 7, ["nested"]])
    def test_content_part_not_an_object(self, profile: str, part: Any) -> None:
        content = [{"type": "text", "text": "ok"}, part]
        input_error([u(content)], "messages[0].content[1]", profile=profile)

    @pytest.mark.parametrize("text", [5, None, ["a"], {"t": 1}])
    def test_text_part_whose_text_is_not_a_string(self, profile: str, text: Any) -> None:
        # Either rejected at the part's path, or governed like any other list
        # content (no crash, no silent fallback of the pipeline).
        msgs = [u([{"type": "text", "text": text}]), u("second")]
        for window in (None, 8000):
            try:
                res = governed(msgs, profile=profile, context_window=window)
            except InputError as err:
                assert str(err).startswith("messages[0].content[0]"), str(err)
                assert "\n" not in str(err)
                continue
            assert ("pipeline", "fallback") not in stage_kinds(res)
            assert [m["role"] for m in res.messages] == ["user"]

    @pytest.mark.parametrize("calls", ["c1", {"id": "c1"}, 5, True])
    def test_tool_calls_not_a_list(self, profile: str, calls: Any) -> None:
        msgs = [u(), {"role": "assistant", "content": None, "tool_calls": calls}]
        input_error(msgs, "messages[1].tool_calls", profile=profile)

    @pytest.mark.parametrize("name", [5, ["n"], {"n": 1}])
    def test_name_not_a_string(self, profile: str, name: Any) -> None:
        input_error([u(), u("x", name=name)], "messages[1].name", profile=profile)

    def test_first_problem_is_reported(self, profile: str) -> None:
        msgs = [u(), a(5), {"role": "wizard"}]
        input_error(msgs, "messages[1].content", profile=profile)

    @pytest.mark.parametrize(
        "tools, path",
        [
            ("read_file", "tools"),
            ({"type": "function"}, "tools"),
            (5, "tools"),
            (["read_file"], "tools[0]"),
            ([{"type": "function", "function": {"name": "f"}}, None], "tools[1]"),
        ],
    )
    def test_tools_not_a_list_of_objects(self, profile: str, tools: Any, path: str) -> None:
        input_error([u()], path, profile=profile, tools=tools)

    def test_empty_history_is_fine(self, profile: str) -> None:
        msgs: list[Message] = []
        res = governed(msgs, profile=profile, context_window=8000)
        assert res.messages == []


# --------------------------------------------------------------------------- repairs


class TestToolCallRepairsOpenAI:
    @pytest.mark.parametrize(
        "bad_call, problem",
        [
            ({"type": "function", "function": {"name": "f", "arguments": "{}"}}, "missing id"),
            (call(call_id=""), "missing id"),
            (call(call_id=None), "missing id"),
            (call(call_id=1.5), "id"),
            (call(call_id=True), "id"),
            (
                {"id": "c1", "type": "function", "function": {"arguments": "{}"}},
                "missing function name",
            ),
            (call(name=""), "missing function name"),
            ({"id": "c1", "type": "function"}, "missing function name"),
            ({"id": "c1", "type": "function", "function": "read_file"}, "missing function name"),
            (call(name=5), "function name"),
            (call(name=["f"]), "function name"),
            ("read_file()", "not an object"),
            (None, "not an object"),
        ],
    )
    def test_unusable_call_is_stripped_and_empty_assistant_dropped(
        self, bad_call: Any, problem: str
    ) -> None:
        msgs = [u("q"), with_calls(bad_call), u("more")]
        res = governed(msgs)
        assert_repairs(res, [f"messages[1].tool_calls[0]: {problem}"])
        repair = next(x for x in res.report.actions if x.kind == "repair")
        assert repair.index == 1
        drop = [x for x in res.report.actions if (x.stage, x.kind) == ("input", "drop")]
        assert [x.index for x in drop] == [1]
        assert "messages[1]" in drop[0].detail
        assert drop[0].tokens_saved > 0
        assert all(m["role"] != "assistant" for m in res.messages)
        assert res.messages == [u("q\n\nmore")]
        assert_openai_legal(res.messages)

    def test_assistant_with_text_keeps_its_text(self) -> None:
        msgs = [u("q"), with_calls(call(name=5), content="Let me look."), u("more")]
        res = governed(msgs)
        assert res.messages[1] == {"role": "assistant", "content": "Let me look."}
        assert ("input", "drop") not in stage_kinds(res)

    def test_only_the_bad_call_is_stripped(self) -> None:
        msgs = [
            u("q"),
            with_calls(call("c1"), {"function": {"name": "x"}}, call("c3", name="grep")),
            tool("c1"),
            tool("c3", name="grep"),
            u("next"),
        ]
        res = governed(msgs)
        assert_repairs(res, ["messages[1].tool_calls[1]: missing id"])
        assert [c["id"] for c in res.messages[1]["tool_calls"]] == ["c1", "c3"]
        assert res.messages[2:] == msgs[2:]
        assert_openai_legal(res.messages)

    def test_result_of_a_stripped_call_is_dropped_as_an_orphan(self) -> None:
        nameless = {"id": "c1", "type": "function", "function": {"arguments": "{}"}}
        msgs = [u("q"), with_calls(nameless), tool("c1"), u("next")]
        res = governed(msgs)
        assert_repairs(res, ["messages[1].tool_calls[0]: missing function name"])
        orphan = [x for x in res.report.actions if x.stage == "orphans"]
        assert [(x.kind, x.tool_call_id) for x in orphan] == [("drop", "c1")]
        assert [m["role"] for m in res.messages] == ["user"]
        assert_openai_legal(res.messages)

    def test_tool_calls_on_a_user_message_are_removed(self) -> None:
        msgs = [u("q", tool_calls=[call()]), a("fine"), u("ok")]
        res = governed(msgs)
        assert_repairs(res, ["messages[0].tool_calls: "])
        assert "tool_calls" not in res.messages[0]

    def test_arguments_not_a_string_are_serialized(self) -> None:
        msgs = [u("q"), with_calls(call(arguments={"path": "a.py"})), tool(), u("n")]
        res = governed(msgs)
        assert json.loads(res.messages[1]["tool_calls"][0]["function"]["arguments"]) == {
            "path": "a.py"
        }
        assert any("function.arguments" in d for d in repairs(res))

    def test_several_calls_several_repairs_with_paths(self) -> None:
        msgs = [
            u("q"),
            a("thinking"),
            u("go on"),
            with_calls(call(None), "junk", call("c3"), content="x"),
            tool("c3"),
            u("n"),
        ]
        res = governed(msgs)
        assert_repairs(
            res,
            ["messages[3].tool_calls[0]: missing id", "messages[3].tool_calls[1]: not an object"],
        )
        assert_openai_legal(res.messages)


class TestToolCallsNanobot:
    def test_call_without_id_is_sent_as_the_seed_sends_it(self) -> None:
        no_id = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
        msgs = [u("q"), with_calls(no_id), u("more")]
        res = governed(msgs, profile="nanobot")
        assert res.messages is msgs
        assert res.report.actions == []

    def test_call_without_name_gets_a_backfill_named_empty(self) -> None:
        nameless = {"id": "c1", "type": "function", "function": {"arguments": "{}"}}
        msgs = [u("q"), with_calls(nameless), u("more")]
        res = governed(msgs, profile="nanobot")
        assert res.messages[2] == {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "",
            "content": EM_DASH_BACKFILL,
        }

    @pytest.mark.parametrize("bad_call", ["junk", None, 5])
    def test_non_object_call_is_ignored(self, bad_call: Any) -> None:
        msgs = [u("q"), with_calls(bad_call, call("c1")), tool("c1"), u("n")]
        res = governed(msgs, profile="nanobot")
        assert res.messages is msgs


class TestIntIds:
    def test_openai_turns_int_ids_into_strings(self) -> None:
        msgs = [u("q"), with_calls(call(7)), tool(7), u("n")]
        res = governed(msgs)
        assert res.messages[1]["tool_calls"][0]["id"] == "7"
        assert res.messages[2]["tool_call_id"] == "7"
        assert msgs[1]["tool_calls"][0]["id"] == 7 and msgs[2]["tool_call_id"] == 7
        assert_repairs(res, ["messages[1].tool_calls[0].id: ", "messages[2].tool_call_id: "])
        assert {x.stage for x in res.report.actions} == {"input"}
        assert_openai_legal(res.messages)

    def test_openai_int_call_id_with_string_result_id_pairs(self) -> None:
        msgs = [u("q"), with_calls(call(7)), tool("7"), u("n")]
        res = governed(msgs)
        assert {x.stage for x in res.report.actions} == {"input"}
        assert_openai_legal(res.messages)

    def test_nanobot_keeps_int_ids_and_pairs_them(self) -> None:
        msgs = [u("q"), with_calls(call(7)), tool(7), u("n")]
        res = governed(msgs, profile="nanobot")
        assert res.messages is msgs
        assert res.report.actions == []

    @pytest.mark.parametrize("tcid", [{"id": "c1"}, ["c1"], 1.5])
    @pytest.mark.parametrize("profile", PROFILES)
    def test_odd_tool_call_id_type(self, profile: str, tcid: Any) -> None:
        msgs = [u("q"), with_calls(call("c1")), tool(tcid), u("n")]
        try:
            res = governed(msgs, profile=profile)
        except InputError as err:
            assert str(err).startswith("messages[2].tool_call_id"), str(err)
            return
        if profile == "openai":
            assert_openai_legal(res.messages)


# --------------------------------------------------------------------------- settings


@pytest.mark.parametrize("profile", PROFILES)
class TestSettings:
    @pytest.mark.parametrize("window", [-1, True, False, 1.5, "8000", [8000]])
    def test_bad_context_window(self, profile: str, window: Any) -> None:
        config_error("context_window", profile=profile, context_window=window)

    def test_zero_context_window(self, profile: str) -> None:
        """0 is "no window" for the nanobot profile, as in the seed; an error elsewhere."""
        if profile != "nanobot":
            config_error("context_window", profile=profile, context_window=0)
            return
        res = governed([u("q"), a("x" * 4000), u("n")], profile=profile, context_window=0)
        assert res.report.context_window is None and res.report.budget is None
        assert len(res.messages) == 3

    @pytest.mark.parametrize("cap", [0, 99, -1, True, 1.5, "1000", [1000]])
    def test_bad_max_tool_result_chars(self, profile: str, cap: Any) -> None:
        config_error("max_tool_result_chars", profile=profile, max_tool_result_chars=cap)

    def test_smallest_cap_is_accepted(self, profile: str) -> None:
        msgs = [
            u("q"),
            with_calls(call(name="exec")),
            tool(content="x" * 1000, name="exec"),
            u("n"),
        ]
        res = governed(msgs, profile=profile, max_tool_result_chars=100)
        if profile == "nanobot":  # the seed's format: the cap's worth, then its suffix
            assert res.messages[2]["content"] == "x" * 100 + "\n... (truncated)"
        else:
            assert len(res.messages[2]["content"]) <= 100

    @pytest.mark.parametrize("model", [123, ["gpt-4o"], {"m": 1}, 4.0])
    def test_model_of_the_wrong_type(self, profile: str, model: Any) -> None:
        try:
            governed([u()], profile=profile, model=model)
        except ConfigError as err:
            assert "model" in str(err) and "\n" not in str(err)


@pytest.mark.parametrize("name", ["nope", "OpenAI", "", None, 5, ["openai"], {"n": 1}])
def test_unknown_profile(name: Any) -> None:
    config_error("profile", profile=name)


class TestMaxOutput:
    @pytest.mark.parametrize("value", [-1, 1.5, 512.0, "512", True, False, [1]])
    def test_openai_rejects_a_bad_max_output(self, value: Any) -> None:
        config_error("max_output", max_output=value, context_window=8000)

    @pytest.mark.parametrize(
        "value, used",
        [
            (None, 4096),
            (True, 1),
            (False, 0),
            (0, 0),
            (-100, -100),
            (512, 512),
            (512.0, 4096),
            ("512", 4096),
            ([1], 4096),
        ],
    )
    def test_nanobot_reads_max_output_like_the_seed(self, value: Any, used: int) -> None:
        res = governed([u()], profile="nanobot", max_output=value, context_window=8000)
        assert res.report.max_output == used
        assert res.report.budget == 8000 - used - 1024

    def test_openai_budget(self) -> None:
        res = governed([u()], max_output=1000, context_window=8000)
        assert res.report.budget == 8000 - 1000 - 1024
        res = governed([u()], context_window=8000)
        assert res.report.budget == 8000 - 4096 - 1024

    @pytest.mark.parametrize("profile", PROFILES)
    def test_budget_not_positive_is_noted_not_raised(self, profile: str) -> None:
        msgs = [u("x" * 4000), a("y" * 4000), u("z")]
        res = governed(msgs, profile=profile, context_window=5000)
        assert res.messages is msgs
        assert any("budget" in n for n in res.report.notes)


# --------------------------------------------------------------------------- odd values


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("window", [None, 2000])
class TestNotJsonSerializable:
    """Python callers can pass values JSON cannot carry; that is bad input, not a crash."""

    def test_bytes_in_a_content_part(self, profile: str, window: Any) -> None:
        msgs = [u([{"type": "image_url", "image_url": {"url": b"\x89PNG"}}]), a("seen"), u("x")]
        try:
            governed(msgs, profile=profile, context_window=window, max_output=100)
        except InputError as err:
            assert str(err).startswith("messages[0].content[0]"), str(err)

    def test_set_as_tool_arguments(self, profile: str, window: Any) -> None:
        msgs = [u("q"), with_calls(call(arguments={"a", "b"})), tool(), u("n")]
        try:
            governed(msgs, profile=profile, context_window=window, max_output=100)
        except InputError as err:
            assert str(err).startswith("messages[1].tool_calls[0]"), str(err)


# --------------------------------------------------------------------------- huge content


def _huge_text(size: int) -> str:
    # no line repeats the one before it: the lossless shrink would fold a run of one line
    lines = "".join(
        f"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor {k}\n"
        for k in range(10)
    )
    return (lines * (size // len(lines) + 1))[:size]


HUGE = _huge_text(5_000_000)


def _huge_history(content: str) -> list[Message]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        u("build it"),
        with_calls(call("c1", "exec", '{"cmd": "make"}')),
        tool("c1", content=content, name="exec"),
        a("The build printed a lot."),
        u("summarize"),
    ]


@pytest.mark.parametrize("profile", PROFILES)
class TestHugeContent:
    def test_five_megabyte_tool_output_with_the_cap(self, profile: str) -> None:
        msgs = _huge_history(HUGE)
        start = time.perf_counter()
        res = governed(msgs, profile=profile, max_tool_result_chars=20_000)
        assert time.perf_counter() - start < 8
        capped = res.messages[3]
        assert capped["tool_call_id"] == "c1"
        # The nanobot profile cuts in the seed's format: the cap's worth, then a suffix.
        seed = profile == "nanobot"
        marker = "\n... (truncated)" if seed else "\n… [truncated"
        assert len(capped["content"]) <= 20_000 + (len(marker) if seed else 0)
        assert HUGE.startswith(capped["content"].split(marker)[0])
        cap = [x for x in res.report.actions if x.stage == ("tool_budget" if seed else "cap")]
        assert [(x.kind, x.index, x.tool_call_id) for x in cap] == [("truncate", 3, "c1")]
        assert cap[0].tokens_saved > 100_000
        assert res.report.tokens_after < res.report.tokens_before
        assert msgs[3]["content"] is HUGE

    def test_five_megabyte_tool_output_with_snip(self, profile: str) -> None:
        size = 5_000_000 if profile == "openai" else 2_000_000  # the seed counts it 3 times
        content = HUGE[:size]
        msgs = _huge_history(content)
        start = time.perf_counter()
        res = governed(msgs, profile=profile, context_window=32_000)
        assert time.perf_counter() - start < 8
        assert res.report.within_budget, res.report.notes
        assert all(m.get("content") is not content for m in res.messages)
        assert res.messages[0] is msgs[0]
        assert res.messages[-1] is msgs[-1]
        # The seed cuts it to its default cap of 16,000 characters (then nothing more
        # needs snipping); the cache policy clears it or cuts its turn.
        stages = ("snip", "compact", "tool_budget")
        removed = [x.index for x in res.report.actions if x.stage in stages]
        assert 3 in removed

    def test_many_messages(self, profile: str) -> None:
        msgs: list[Message] = [{"role": "system", "content": "s"}]
        for i in range(1500):
            msgs += [
                u(f"step {i}"),
                with_calls(call(f"c{i}", "grep", '{"q": "x"}')),
                tool(f"c{i}", content=f"match {i} " * 80, name="grep"),
                a(f"done {i}"),
            ]
        msgs.append(u("last"))
        start = time.perf_counter()
        res = governed(msgs, profile=profile, context_window=16_000)
        assert time.perf_counter() - start < 8
        assert res.messages[-1] is msgs[-1]
        assert res.messages[0] is msgs[0]
        assert res.messages[1]["role"] == "user"
        assert 10 < len(res.messages) < 1000
        if profile == "nanobot":
            compacted = [x for x in res.report.actions if x.stage == "microcompact"]
            assert len(compacted) == 1490
        else:  # the cache policy cuts old turns in big steps instead
            assert sum(x.stage == "compact" for x in res.report.actions) > 1000
        if profile == "openai":
            assert res.report.within_budget, res.report.notes
            assert_openai_legal(res.messages)


# --------------------------------------------------------------------------- invalid unicode

LONE = "\ud83d"  # the first half of an emoji's surrogate pair, alone


class TestInvalidUnicodeOpenAI:
    def test_string_content(self) -> None:
        msgs = [u(f"bad {LONE} text"), a("ok"), u("n")]
        res = governed(msgs)
        assert res.messages[0]["content"] == "bad \ufffd text"
        assert_repairs(res, ["messages[0].content: invalid unicode"])
        assert msgs[0]["content"] == f"bad {LONE} text"
        wire(res.messages)

    def test_text_part(self) -> None:
        msgs = [u([{"type": "text", "text": "ok"}, {"type": "text", "text": f"x{LONE}"}])]
        res = governed(msgs)
        assert res.messages[0]["content"][1]["text"] == "x\ufffd"
        assert res.messages[0]["content"][0] is msgs[0]["content"][0]
        assert_repairs(res, ["messages[0].content[1].text: invalid unicode"])
        wire(res.messages)

    def test_tool_result_content(self) -> None:
        msgs = [u("q"), with_calls(call()), tool(content=f"out {LONE}"), u("n")]
        res = governed(msgs, context_window=8000, max_tool_result_chars=100)
        assert res.messages[2]["content"] == "out \ufffd"
        assert any(d.startswith("messages[2].content") for d in repairs(res))
        wire(res.messages)

    def test_tool_arguments(self) -> None:
        msgs = [u("q"), with_calls(call(arguments=f'{{"p": "{LONE}"}}')), tool(), u("n")]
        res = governed(msgs)
        assert "\ufffd" in res.messages[1]["tool_calls"][0]["function"]["arguments"]
        assert any(
            d.startswith("messages[1].tool_calls[0].function.arguments") for d in repairs(res)
        )
        wire(res.messages)

    @pytest.mark.parametrize(
        "messages, path",
        [
            (
                [u("q"), a("x", reasoning_content=f"hmm {LONE}"), u("n")],
                "messages[1].reasoning_content",
            ),
            ([u("q", name=f"al{LONE}ce"), a("x"), u("n")], "messages[0].name"),
            (
                [u([{"type": "image_url", "image_url": {"url": f"https://x/{LONE}.png"}}])],
                "messages[0].content[0]",
            ),
            (
                [u("q"), with_calls(call(name=f"read{LONE}")), tool(), u("n")],
                "messages[1].tool_calls[0]",
            ),
        ],
        ids=["reasoning_content", "name", "non-text-part", "function-name"],
    )
    def test_every_string_field_is_cleaned(self, messages: list[Message], path: str) -> None:
        res = governed(messages, context_window=8000)
        wire(res.messages)  # raises UnicodeEncodeError if a lone surrogate is left
        assert any(d.startswith(path) for d in repairs(res)), repairs(res)

    def test_tool_call_id_is_cleaned_and_stays_paired(self) -> None:
        cid = f"call_{LONE}1"
        msgs = [u("q"), with_calls(call(cid)), tool(cid), u("n")]
        res = governed(msgs)
        wire(res.messages)
        assert res.messages[1]["tool_calls"][0]["id"] == res.messages[2]["tool_call_id"]
        assert not [x for x in res.report.actions if x.stage in ("orphans", "backfill")]
        assert_openai_legal(res.messages)


@pytest.mark.parametrize("window", [None, 2000])
def test_invalid_unicode_nanobot_passes_through(window: Any) -> None:
    msgs = [
        u(f"bad {LONE}"),
        with_calls(call(f"c{LONE}", arguments=f'"{LONE}"')),
        tool(f"c{LONE}", content=f"r {LONE}" * 50),
        a(f"x {LONE}", reasoning_content=LONE),
        u("n" * 4000),
    ]
    res = governed(msgs, profile="nanobot", context_window=window, max_output=100)
    assert ("pipeline", "fallback") not in stage_kinds(res)
    if window is not None:
        assert ("snip", "drop") in stage_kinds(res)
    assert res.messages[-1] is msgs[-1]
    if window is None:
        assert res.messages is msgs


# -- stored shapes that carry meaning: read or refuse, never drop -------------------------------

_SWE_AGENT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Fix the failing test."},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "call_abc", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
    ]},
    {"role": "tool", "content": "setup.py\nsrc\ntests", "tool_call_ids": ["call_abc"]},
    {"role": "user", "content": "go on"},
]  # fmt: skip


@pytest.mark.parametrize("profile", ["openai", "anthropic", "mistral", "gemini", "bedrock"])
def test_a_stored_tool_call_ids_list_of_one_is_read_as_the_result_s_call(profile: str) -> None:
    """SWE-agent stores tool results with ``tool_call_ids: [id]``; the result is real output
    and must reach the model, answered to its call, not replaced by a placeholder."""
    from context_governor import govern

    result = govern(copy.deepcopy(_SWE_AGENT), profile=profile, context_window=32_000)
    texts = json.dumps(result.messages)
    assert "setup.py" in texts and "unavailable" not in texts
    assert "tool_call_ids" not in texts
    assert any("tool_call_ids: read as tool_call_id 'call_abc'" in a.detail for a in result.report.actions)
    assert result.report.ok


@pytest.mark.parametrize(
    ("ids", "extra", "said"),
    [
        (["call_abc", "call_def"], {}, "a list of one call id"),
        ([], {}, "a list of one call id"),
        ("call_abc", {}, "a list of one call id"),
        ([7], {}, "a list of one call id"),
        (["call_abc"], {"tool_call_id": "call_zzz"}, "which call this result answers is not certain"),
    ],
)
def test_a_tool_call_ids_whose_meaning_is_not_certain_is_refused_naming_it(
    ids: Any, extra: dict[str, Any], said: str
) -> None:
    from context_governor import govern

    messages = copy.deepcopy(_SWE_AGENT)
    messages[3] = {"role": "tool", "content": "out", "tool_call_ids": ids, **extra}
    with pytest.raises(InputError) as caught:
        govern(messages, profile="openai")
    assert "messages[3].tool_call_ids" in str(caught.value) and said in str(caught.value)
