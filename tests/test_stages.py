"""Unit tests for each stage, called directly with a ``Context``.

Most tests use ``FakeCounter`` (``len(content) // 4 + 4`` tokens per message), so
that snipping can be steered token by token; ``msg`` helpers build contents of an
exact token size. Every stage call goes through ``run``, which also checks the
invariants every stage must keep: the input list and its dicts are never mutated,
nothing changes without an action, and a stage that records an action returns a
new list.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest

from context_governor import counting as tokens
from context_governor.stages import (
    Context,
    backfill_seed,
    backfill_strict,
    cap_tool_results,
    drop_orphans_seed,
    drop_orphans_strict,
    enforce_alternation,
    enforce_alternation_seed,
    microcompact,
    snip,
)
from context_governor.stages._backfill import BACKFILL_CONTENT
from context_governor.stages._inserted import SYNTHETIC_USER
from context_governor.stages._snip import legal_start

Message = dict[str, Any]

snip_seed = partial(snip, systems_first=True)


# --------------------------------------------------------------------------- helpers


class FakeCounter:
    """``len(content) // 4 + 4`` per message (4 for non-str content).

    ``tool_tokens`` is what tool definitions cost in a prompt estimate, and
    ``prompt_extra`` is added per message to the prompt estimate only, to model
    counters (like the seed's) whose whole-prompt estimate differs from the sum
    of the per-message estimates.
    """

    name = "fake"

    def __init__(self, tool_tokens: int = 0, prompt_extra: int = 0) -> None:
        self.tool_tokens = tool_tokens
        self.prompt_extra = prompt_extra

    def message_tokens(self, message: Message) -> int:
        content = message.get("content")
        return (len(content) // 4 if isinstance(content, str) else 0) + 4

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        return (
            sum(self.message_tokens(m) for m in messages)
            + (self.tool_tokens if tools else 0)
            + self.prompt_extra * len(messages)
        )


EXACT = tokens.ExactCounter(tokens.load_encoding("cl100k_base"))


def text(tag: str, size: int) -> str:
    """A content of exactly ``size`` FakeCounter tokens, starting with ``tag``."""
    length = 4 * (size - 4)
    assert len(tag) <= length, (tag, size)
    return tag.ljust(length, ".")


def sys_(size: int = 10, tag: str = "S") -> Message:
    return {"role": "system", "content": text(tag, size)}


def user(size: int = 10, tag: str = "U") -> Message:
    return {"role": "user", "content": text(tag, size)}


def asst(size: int = 10, tag: str = "A", calls: Sequence[str] = ()) -> Message:
    message: Message = {"role": "assistant", "content": text(tag, size)}
    if calls:
        message["tool_calls"] = [call(c) for c in calls]
    return message


def call(call_id: Any, name: Any = "read_file", function: Any = None) -> dict[str, Any]:
    fn = {"name": name, "arguments": "{}"} if function is None else function
    return {"id": call_id, "type": "function", "function": fn}


def calls_msg(*ids: Any, content: Any = None, name: str = "read_file") -> Message:
    return {"role": "assistant", "content": content, "tool_calls": [call(i, name) for i in ids]}


def result(
    call_id: Any, content: Any = "ok", name: str | None = "read_file", **extra: Any
) -> Message:
    message: Message = {"role": "tool", "content": content}
    if call_id is not _MISSING:
        message["tool_call_id"] = call_id
    if name is not None:
        message["name"] = name
    message.update(extra)
    return message


_MISSING = object()


def tres(call_id: Any, size: int = 10, tag: str = "T") -> Message:
    """A tool result of an exact FakeCounter size."""
    return {"role": "tool", "tool_call_id": call_id, "name": "exec", "content": text(tag, size)}


def run(stage: Any, messages: list[Message], counter: Any = None, **settings: Any):
    """Call one stage the way the pipeline does and check the shared invariants."""
    ctx = Context(counter=counter or FakeCounter(), **settings)
    before = copy.deepcopy(messages)
    out = stage(messages, ctx)
    assert messages == before, "the stage mutated its input"
    assert isinstance(out, list)
    if ctx.actions:
        assert out is not messages, "a stage that changed something returned its input list"
    else:
        assert out == messages, "the output differs from the input but no action says why"
    for action in ctx.actions:
        assert isinstance(action.index, int) and action.index >= 0
        assert action.tool_call_id is None or isinstance(action.tool_call_id, str)
    return out, ctx


def kinds(ctx: Context) -> list[tuple[str, str, int]]:
    return [(a.stage, a.kind, a.index) for a in ctx.actions]


def roles(messages: Sequence[Message]) -> list[str]:
    return [m["role"] for m in messages]


# --------------------------------------------------------------------------- orphans


class TestOrphansSeed:
    def test_undeclared_id_is_dropped_and_reported(self) -> None:
        msgs = [user(), calls_msg("a"), result("a"), result("zzz", content="orphan")]
        out, ctx = run(drop_orphans_seed, msgs)
        assert out == msgs[:3]
        assert out[0] is msgs[0] and out[2] is msgs[2]
        [action] = ctx.actions
        assert (action.stage, action.kind, action.index) == ("orphans", "drop", 3)
        assert action.tool_call_id == "zzz"
        assert action.tokens_saved > 0

    @pytest.mark.parametrize("tcid", [_MISSING, None, ""], ids=["missing", "None", "empty"])
    def test_result_without_id_is_kept(self, tcid: Any) -> None:
        msgs = [user(), calls_msg("a"), result("a"), result(tcid)]
        out, ctx = run(drop_orphans_seed, msgs)
        assert out is msgs
        assert ctx.actions == []

    def test_duplicate_result_is_kept(self) -> None:
        msgs = [user(), calls_msg("a"), result("a"), result("a", content="again")]
        out, _ = run(drop_orphans_seed, msgs)
        assert out is msgs

    def test_result_before_its_call_is_dropped(self) -> None:
        msgs = [user(), result("a", content="early"), calls_msg("a"), result("a")]
        out, ctx = run(drop_orphans_seed, msgs)
        assert out == [msgs[0], msgs[2], msgs[3]]
        assert kinds(ctx) == [("orphans", "drop", 1)]
        assert ctx.actions[0].tool_call_id == "a"

    def test_repeated_id_in_two_assistants_keeps_both_results(self) -> None:
        msgs = [user(), calls_msg("a"), result("a"), user(), calls_msg("a"), result("a")]
        out, _ = run(drop_orphans_seed, msgs)
        assert out is msgs

    def test_ids_compare_as_strings_and_non_dict_calls_declare_nothing(self) -> None:
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": ["junk", call(7), call(""), {"id": None}],
        }
        msgs = [user(), assistant, result("7"), result("junk")]
        out, ctx = run(drop_orphans_seed, msgs)
        assert out == msgs[:3]
        assert kinds(ctx) == [("orphans", "drop", 3)]

    def test_result_declared_only_by_a_user_message_is_dropped(self) -> None:
        bogus_user = {"role": "user", "content": "x", "tool_calls": [call("a")]}
        msgs = [bogus_user, result("a")]
        out, ctx = run(drop_orphans_seed, msgs)
        assert out == [bogus_user]
        assert kinds(ctx) == [("orphans", "drop", 1)]

    def test_several_orphans_report_their_own_input_index(self) -> None:
        msgs = [result("x"), user(), result("y"), calls_msg("a"), result("a"), result("z")]
        out, ctx = run(drop_orphans_seed, msgs)
        assert out == [msgs[1], msgs[3], msgs[4]]
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(0, "x"), (2, "y"), (5, "z")]


class TestOrphansStrict:
    def test_undeclared_id_is_dropped(self) -> None:
        msgs = [user(), calls_msg("a"), result("a"), result("zzz")]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out == msgs[:3]
        [action] = ctx.actions
        assert (action.stage, action.kind, action.index, action.tool_call_id) == (
            "orphans",
            "drop",
            3,
            "zzz",
        )
        assert action.tokens_saved > 0

    @pytest.mark.parametrize("tcid", [_MISSING, None, ""], ids=["missing", "None", "empty"])
    def test_result_without_id_is_dropped(self, tcid: Any) -> None:
        msgs = [user(), calls_msg("a"), result("a"), result(tcid)]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out == msgs[:3]
        [action] = ctx.actions
        assert (action.stage, action.kind, action.index) == ("orphans", "drop", 3)
        assert action.tool_call_id is None
        assert action.tokens_saved > 0

    def test_second_result_for_one_id_is_dropped(self) -> None:
        msgs = [user(), calls_msg("a"), result("a", content="first"), result("a", content="dup")]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out == msgs[:3]
        assert out[2]["content"] == "first"
        assert [(a.kind, a.index, a.tool_call_id) for a in ctx.actions] == [("drop", 3, "a")]

    def test_result_before_its_call_is_dropped(self) -> None:
        msgs = [user(), result("a", content="early"), calls_msg("a"), result("a")]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out == [msgs[0], msgs[2], msgs[3]]
        assert kinds(ctx) == [("orphans", "drop", 1)]

    def test_repeated_id_in_two_assistants_each_answered_once(self) -> None:
        msgs = [user(), calls_msg("a"), result("a"), user(), calls_msg("a"), result("a")]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out is msgs
        assert ctx.actions == []

    def test_repeated_id_third_result_is_dropped(self) -> None:
        msgs = [
            user(),
            calls_msg("a"),
            result("a"),
            user(),
            calls_msg("a"),
            result("a"),
            result("a", content="third"),
        ]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out == msgs[:6]
        assert kinds(ctx) == [("orphans", "drop", 6)]

    def test_duplicate_in_a_later_block_does_not_answer_an_earlier_call(self) -> None:
        # The first call of "a" was never answered; the second assistant's block has
        # two results for "a". The second one is a duplicate inside that block: it
        # cannot answer the earlier call (it does not follow it), so it must go, and
        # backfill then answers the first call where it belongs.
        msgs = [
            user(),
            calls_msg("a"),
            user(),
            calls_msg("a"),
            result("a", content="first"),
            result("a", content="dup"),
        ]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out == msgs[:5]
        assert kinds(ctx) == [("orphans", "drop", 5)]

    def test_non_string_id_is_dropped_with_a_string_in_the_report(self) -> None:
        msgs = [user(), calls_msg("a"), result("a"), result(7)]
        out, ctx = run(drop_orphans_strict, msgs)
        assert out == msgs[:3]
        assert [a.index for a in ctx.actions] == [3]


# --------------------------------------------------------------------------- backfill


def _placeholder(call_id: str, name: Any) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": BACKFILL_CONTENT}


BACKFILLS = [backfill_seed, backfill_strict]


@pytest.mark.parametrize("stage", BACKFILLS, ids=["seed", "strict"])
class TestBackfillBoth:
    def test_lost_result_gets_a_placeholder_after_its_assistant(self, stage: Any) -> None:
        msgs = [user(), calls_msg("a", name="exec"), user(tag="next")]
        out, ctx = run(stage, msgs)
        assert out == [msgs[0], msgs[1], _placeholder("a", "exec"), msgs[2]]
        assert out[0] is msgs[0] and out[1] is msgs[1] and out[3] is msgs[2]
        [action] = ctx.actions
        assert (action.stage, action.kind, action.index, action.tool_call_id) == (
            "backfill",
            "insert",
            2,
            "a",
        )
        assert action.tokens_saved < 0
        assert BACKFILL_CONTENT == "[Tool result unavailable \u2014 call was interrupted or lost]"

    def test_complete_history_is_returned_as_is(self, stage: Any) -> None:
        msgs = [user(), calls_msg("a", "b"), result("a"), result("b"), asst()]
        out, ctx = run(stage, msgs)
        assert out is msgs
        assert ctx.actions == []

    def test_parallel_calls_partly_answered(self, stage: Any) -> None:
        msgs = [user(), calls_msg("a", "b", "c"), result("b"), user(tag="next")]
        out, ctx = run(stage, msgs)
        assert out == [
            msgs[0],
            msgs[1],
            msgs[2],
            _placeholder("a", "read_file"),
            _placeholder("c", "read_file"),
            msgs[3],
        ]
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(3, "a"), (4, "c")]
        for action in ctx.actions:
            assert out[action.index]["tool_call_id"] == action.tool_call_id

    def test_insertions_shift_later_positions(self, stage: Any) -> None:
        msgs = [
            user(),
            calls_msg("a", "b"),
            result("a"),
            asst(),
            user(),
            calls_msg("c"),
            result("x_unrelated_but_kept_here"),
            user(tag="end"),
        ]
        out, ctx = run(stage, msgs)
        assert [m.get("tool_call_id") for m in out] == [
            None,
            None,
            "a",
            "b",
            None,
            None,
            None,
            "x_unrelated_but_kept_here",
            "c",
            None,
        ]
        assert out[3]["content"] == BACKFILL_CONTENT and out[8]["content"] == BACKFILL_CONTENT
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(3, "b"), (8, "c")]

    def test_two_assistants_with_the_same_unanswered_id_each_get_one(self, stage: Any) -> None:
        msgs = [user(), calls_msg("dup"), user(tag="u2"), calls_msg("dup"), user(tag="u3")]
        out, ctx = run(stage, msgs)
        assert roles(out) == ["user", "assistant", "tool", "user", "assistant", "tool", "user"]
        assert out[2] == _placeholder("dup", "read_file")
        assert out[5] == _placeholder("dup", "read_file")
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(2, "dup"), (5, "dup")]

    @pytest.mark.parametrize(
        "function, expected",
        [("not a dict", ""), (None, ""), ({"arguments": "{}"}, ""), ({"name": "grep"}, "grep")],
        ids=["str", "None", "dict-without-name", "named"],
    )
    def test_name_of_the_placeholder(self, stage: Any, function: Any, expected: str) -> None:
        assistant = {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("a", function=function)],
        }
        if function is None:
            del assistant["tool_calls"][0]["function"]
        msgs = [user(), assistant]
        out, ctx = run(stage, msgs)
        assert out[2] == _placeholder("a", expected)
        assert ctx.actions[0].tool_call_id == "a"

    def test_calls_without_usable_id_are_ignored(self, stage: Any) -> None:
        assistant = {
            "role": "assistant",
            "content": "x",
            "tool_calls": [call(""), call(None), "junk", {"function": {"name": "f"}}],
        }
        msgs = [user(), assistant]
        out, _ = run(stage, msgs)
        assert out is msgs

    def test_int_id_placeholder_has_a_string_id(self, stage: Any) -> None:
        msgs = [user(), calls_msg(7)]
        out, ctx = run(stage, msgs)
        assert out[2]["tool_call_id"] == "7"
        assert ctx.actions[0].tool_call_id == "7"


class TestBackfillSeedOnly:
    def test_a_result_anywhere_counts_as_an_answer(self) -> None:
        # The seed collects answered ids over the whole list, even before the call.
        msgs = [user(), result("a"), calls_msg("a"), user(tag="next")]
        out, _ = run(backfill_seed, msgs)
        assert out is msgs

    def test_repeated_id_answered_once_is_answered_for_both(self) -> None:
        msgs = [user(), calls_msg("a"), user(tag="u2"), calls_msg("a"), result("a")]
        out, _ = run(backfill_seed, msgs)
        assert out is msgs


class TestBackfillStrictOnly:
    def test_a_result_before_the_call_does_not_answer_it(self) -> None:
        msgs = [user(), result("a", content="early"), calls_msg("a"), user(tag="next")]
        out, ctx = run(backfill_strict, msgs)
        assert out == [msgs[0], msgs[1], msgs[2], _placeholder("a", "read_file"), msgs[3]]
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(3, "a")]

    def test_repeated_id_unanswered_first_call_gets_the_placeholder(self) -> None:
        # The only result for "a" follows the second assistant: it answers that
        # call. The first call is the one left without an answer; its placeholder
        # belongs right after the first assistant, not as a second result after
        # the second one.
        msgs = [
            user(tag="u1"),
            calls_msg("a"),
            user(tag="u2"),
            calls_msg("a"),
            result("a", content="real"),
            user(tag="u3"),
        ]
        out, ctx = run(backfill_strict, msgs)
        assert out == [
            msgs[0],
            msgs[1],
            _placeholder("a", "read_file"),
            msgs[2],
            msgs[3],
            msgs[4],
            msgs[5],
        ]
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(2, "a")]

    def test_two_declarations_two_results_is_complete(self) -> None:
        msgs = [user(), calls_msg("a"), result("a"), user(), calls_msg("a"), result("a")]
        out, _ = run(backfill_strict, msgs)
        assert out is msgs


# --------------------------------------------------------------------------- microcompact

BIG = "x" * 600


def _compactables(n: int, content: Any = BIG, name: str = "read_file") -> list[Message]:
    msgs: list[Message] = [user()]
    for i in range(n):
        msgs.append(calls_msg(f"c{i}", name=name))
        msgs.append(result(f"c{i}", content=content, name=name))
    return msgs


class TestMicrocompact:
    def test_exactly_ten_compactable_results_change_nothing(self) -> None:
        msgs = _compactables(10)
        out, ctx = run(microcompact, msgs)
        assert out is msgs
        assert ctx.actions == []

    def test_eleven_compact_only_the_oldest(self) -> None:
        msgs = _compactables(11)
        out, ctx = run(microcompact, msgs)
        assert out[2] == {**msgs[2], "content": "[read_file result omitted from context]"}
        assert out[3:] == msgs[3:]
        assert all(a is b for a, b in zip(out[3:], msgs[3:], strict=True))
        [action] = ctx.actions
        assert (action.stage, action.kind, action.index, action.tool_call_id) == (
            "microcompact",
            "replace",
            2,
            "c0",
        )
        assert action.tokens_saved > 0

    def test_summary_uses_the_tool_name(self) -> None:
        msgs = _compactables(11, name="exec")
        out, _ = run(microcompact, msgs)
        assert out[2]["content"] == "[exec result omitted from context]"

    def test_min_chars_boundary(self) -> None:
        msgs = _compactables(13)
        msgs[2] = {**msgs[2], "content": "y" * 499}
        msgs[4] = {**msgs[4], "content": "y" * 500}
        msgs[6] = {**msgs[6], "content": ""}
        out, ctx = run(microcompact, msgs)
        assert out[2] is msgs[2]
        assert out[4]["content"] == "[read_file result omitted from context]"
        assert out[6] is msgs[6]
        assert [a.index for a in ctx.actions] == [4]

    def test_non_compactable_tools_do_not_count_and_are_untouched(self) -> None:
        msgs = _compactables(3, name="write_file") + _compactables(10)[1:]
        msgs.append(result("nameless", content=BIG, name=None))
        out, _ = run(microcompact, msgs)
        assert out is msgs

        msgs = _compactables(3, name="write_file") + _compactables(11)[1:]
        out, ctx = run(microcompact, msgs)
        assert [m for m in out if m.get("name") == "write_file"] == [
            m for m in msgs if m.get("name") == "write_file"
        ]
        assert len(ctx.actions) == 1
        assert msgs[ctx.actions[0].index]["name"] == "read_file"

    def test_only_tool_messages_count(self) -> None:
        msgs = _compactables(10)
        msgs.insert(1, {"role": "user", "content": BIG, "name": "read_file"})
        out, _ = run(microcompact, msgs)
        assert out is msgs

    def test_list_content_is_untouched(self) -> None:
        parts = [{"type": "text", "text": BIG}]
        msgs = _compactables(11)
        msgs[2] = {**msgs[2], "content": parts}
        out, ctx = run(microcompact, msgs)
        assert out is msgs
        assert ctx.actions == []

    def test_many_stale_results(self) -> None:
        msgs = _compactables(25)
        out, ctx = run(microcompact, msgs)
        stubbed = [
            i
            for i, m in enumerate(out)
            if m.get("content") == "[read_file result omitted from context]"
        ]
        assert stubbed == [2 + 2 * k for k in range(15)]
        assert [a.index for a in ctx.actions] == stubbed
        run(microcompact, out)  # compacting compacted output: stubs are short, nothing to do


# --------------------------------------------------------------------------- cap


class TestCap:
    def test_off_without_a_cap(self) -> None:
        msgs = [user(), calls_msg("a"), result("a", content="z" * 100_000)]
        out, ctx = run(cap_tool_results, msgs)
        assert out is msgs and ctx.actions == []

    @pytest.mark.parametrize("limit", [100, 101, 150, 257, 1000])
    def test_truncation_never_exceeds_the_cap_and_is_idempotent(self, limit: int) -> None:
        lengths = [0, 1, limit - 1, limit, limit + 1, limit + 50, 2 * limit, 10_000, 1_000_003]
        msgs: list[Message] = [user()]
        for i, n in enumerate(lengths):
            msgs.append(calls_msg(f"c{i}"))
            msgs.append(result(f"c{i}", content=("abcdefghij" * (n // 10 + 1))[:n]))
        out, ctx = run(cap_tool_results, msgs, max_tool_result_chars=limit)
        over = [i for i, m in enumerate(msgs) if m["role"] == "tool" and len(m["content"]) > limit]
        assert [a.index for a in ctx.actions] == over
        for i, (before, after) in enumerate(zip(msgs, out, strict=True)):
            if i in over:
                assert len(after["content"]) <= limit
                assert after["content"] != before["content"]
                head = after["content"].split("\n… [truncated:")[0]
                assert before["content"].startswith(head)
                assert {k: v for k, v in after.items() if k != "content"} == {
                    k: v for k, v in before.items() if k != "content"
                }
            else:
                assert after is before
        for action in ctx.actions:
            assert (action.stage, action.kind) == ("cap", "truncate")
            assert action.tool_call_id == msgs[action.index]["tool_call_id"]
            if len(msgs[action.index]["content"]) >= 2 * limit:
                assert action.tokens_saved > 0
        again, ctx2 = run(cap_tool_results, out, max_tool_result_chars=limit)
        assert again is out and ctx2.actions == []

    def test_only_tool_results_are_capped_text_parts_included(self) -> None:
        long = "w " * 5000
        image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        msgs = [
            {"role": "system", "content": long},
            {"role": "user", "content": long},
            calls_msg("a", content=long),
            result(
                "a", content=[{"type": "text", "text": long}, image, {"type": "text", "text": long}]
            ),
            result("a", content=None),
        ]
        out, ctx = run(cap_tool_results, msgs, max_tool_result_chars=100)
        assert out[:3] == msgs[:3] and out[4] is msgs[4]
        parts = out[3]["content"]
        assert image in parts
        assert sum(len(p["text"]) for p in parts if p.get("type") == "text") <= 100
        assert kinds(ctx) == [("cap", "truncate", 3)]
        again, ctx2 = run(cap_tool_results, out, max_tool_result_chars=100)
        assert again is out and ctx2.actions == []


# --------------------------------------------------------------------------- snip


def six_turns() -> list[Message]:
    """S, U1, A1, U2, A2, U3, A3: 10 FakeCounter tokens each, 70 in all."""
    return [
        sys_(),
        user(tag="U1"),
        asst(tag="A1"),
        user(tag="U2"),
        asst(tag="A2"),
        user(tag="U3"),
        asst(tag="A3"),
    ]


def tags(messages: Sequence[Message]) -> list[str]:
    return [str(m["content"]).rstrip(".") for m in messages]


SNIPS = [snip_seed, snip]
SNIP_IDS = ["seed", "openai"]


@pytest.mark.parametrize("stage", SNIPS, ids=SNIP_IDS)
class TestSnipBoth:
    def test_no_messages(self, stage: Any) -> None:
        msgs: list[Message] = []
        out, _ = run(stage, msgs, budget=10)
        assert out is msgs

    def test_no_window_means_no_snip(self, stage: Any) -> None:
        msgs = six_turns()
        out, ctx = run(stage, msgs, budget=None)
        assert out is msgs and ctx.actions == []

    @pytest.mark.parametrize("budget", [0, -1, -5000])
    def test_budget_not_positive_means_no_snip(self, stage: Any, budget: int) -> None:
        msgs = six_turns()
        out, ctx = run(stage, msgs, budget=budget)
        assert out is msgs and ctx.actions == []

    @pytest.mark.parametrize("budget", [70, 71, 10_000])
    def test_fits(self, stage: Any, budget: int) -> None:
        msgs = six_turns()
        out, ctx = run(stage, msgs, budget=budget)
        assert out is msgs and ctx.actions == [] and ctx.notes == []

    def test_tool_definitions_count_toward_the_estimate(self, stage: Any) -> None:
        msgs = six_turns()
        out, _ = run(stage, msgs, counter=FakeCounter(tool_tokens=5), tools=[{"x": 1}], budget=74)
        assert out is not msgs
        assert tags(out) == ["S", "U2", "A2", "U3", "A3"]

    def test_walk_from_the_newest_and_cut_at_the_first_kept_user(self, stage: Any) -> None:
        # remaining = 45 - 10 = 35: A3, U3, A2 fit (30), U2 does not; the window
        # [A2, U3, A3] is then cut at its first user message.
        msgs = six_turns()
        out, ctx = run(stage, msgs, budget=45)
        assert tags(out) == ["S", "U3", "A3"]
        assert out[0] is msgs[0] and out[1] is msgs[5] and out[2] is msgs[6]
        assert kinds(ctx) == [("snip", "drop", i) for i in (1, 2, 3, 4)]
        assert all(a.tokens_saved == 10 and a.tool_call_id is None for a in ctx.actions)

    def test_boundary_total_equal_to_remaining_is_kept(self, stage: Any) -> None:
        msgs = six_turns()
        out, _ = run(stage, msgs, budget=50)  # remaining 40 = U2 + A2 + U3 + A3
        assert tags(out) == ["S", "U2", "A2", "U3", "A3"]
        out, _ = run(stage, msgs, budget=49)  # remaining 39
        assert tags(out) == ["S", "U3", "A3"]

    def test_walk_stops_at_the_first_message_that_does_not_fit(self, stage: Any) -> None:
        msgs = [
            user(5, "U1"),
            asst(5, "A1"),
            user(50, "U2"),
            asst(10, "A2"),
            user(10, "U3"),
            asst(10, "A3"),
        ]
        out, ctx = run(stage, msgs, budget=40)  # U1 and A1 would fit, but are older
        assert tags(out) == ["U3", "A3"]
        assert [a.index for a in ctx.actions] == [0, 1, 2, 3]

    def test_remaining_subtracts_tool_definitions(self, stage: Any) -> None:
        msgs = six_turns()
        out, _ = run(stage, msgs, counter=FakeCounter(tool_tokens=7), tools=[{"t": 1}], budget=50)
        assert tags(out) == ["S", "U3", "A3"]  # remaining = 50 - (10 + 7) = 33
        out, _ = run(stage, msgs, budget=50)
        assert tags(out) == ["S", "U2", "A2", "U3", "A3"]  # remaining = 40

    def test_remaining_uses_the_larger_of_per_message_and_prompt_system_estimates(
        self, stage: Any
    ) -> None:
        # The prompt estimate of the system message alone is 7, its per-message
        # estimate 10: the larger one counts, so remaining = 48 - 10 = 38.
        msgs = six_turns()
        out, _ = run(stage, msgs, counter=FakeCounter(prompt_extra=-3), budget=48)
        assert tags(out) == ["S", "U3", "A3"]

    def test_systems_larger_than_the_budget_leave_only_the_newest(self, stage: Any) -> None:
        msgs = [sys_(100), user(tag="U1"), asst(tag="A1"), user(tag="U2")]
        out, ctx = run(stage, msgs, budget=50)
        assert tags(out) == ["S", "U2"]
        assert [a.index for a in ctx.actions] == [1, 2]
        assert any("oversized" in n for n in ctx.notes)

    def test_only_system_messages(self, stage: Any) -> None:
        msgs = [sys_(100), sys_(100)]
        out, ctx = run(stage, msgs, budget=50)
        assert out is msgs and ctx.actions == []

    def test_newest_is_always_kept(self, stage: Any) -> None:
        msgs = [user(tag="U1"), asst(tag="A1"), user(300, "U2")]
        out, ctx = run(stage, msgs, budget=50)
        assert out == [msgs[2]]
        assert [a.index for a in ctx.actions] == [0, 1]
        assert any("oversized" in n for n in ctx.notes)

    def test_no_user_kept_recovers_the_newest_user(self, stage: Any) -> None:
        msgs = [
            sys_(),
            user(tag="U1"),
            asst(tag="A1"),
            user(tag="U2"),
            asst(tag="A2"),
            asst(100, "A3"),
        ]
        out, ctx = run(stage, msgs, budget=60)
        assert tags(out) == ["S", "U2", "A2", "A3"]
        assert [a.index for a in ctx.actions] == [1, 2]
        assert any("oversized" in n for n in ctx.notes)

    def test_no_user_at_all_keeps_what_fits(self, stage: Any) -> None:
        msgs = [asst(tag="A0"), asst(tag="A1"), asst(tag="A2")]
        out, ctx = run(stage, msgs, budget=25)
        assert tags(out) == ["A1", "A2"]
        assert [a.index for a in ctx.actions] == [0]

    def test_legal_start_skips_an_orphan_result(self, stage: Any) -> None:
        msgs = [
            asst(tag="A0", calls=["x"]),
            tres("x", tag="Tx"),
            asst(tag="A1", calls=["y"]),
            tres("y", tag="Ty"),
        ]
        out, ctx = run(stage, msgs, budget=35)  # window [Tx, A1, Ty]; x was cut away
        assert tags(out) == ["A1", "Ty"]
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(0, None), (1, "x")]
        assert all(a.tokens_saved > 0 for a in ctx.actions)

    @pytest.mark.parametrize("empty", [_MISSING, None, ""], ids=["missing", "None", "empty"])
    def test_legal_start_ignores_results_without_id(self, stage: Any, empty: Any) -> None:
        nameless = tres("", tag="T?")
        if empty is _MISSING:
            del nameless["tool_call_id"]
        else:
            nameless["tool_call_id"] = empty
        msgs = [
            asst(tag="A0", calls=["x"]),
            nameless,
            asst(tag="A1", calls=["y"]),
            tres("y", tag="Ty"),
        ]
        out, ctx = run(stage, msgs, budget=35)
        assert tags(out) == ["T?", "A1", "Ty"]
        assert [a.index for a in ctx.actions] == [0]

    def test_legal_start_after_the_user_cut(self, stage: Any) -> None:
        msgs = [
            asst(tag="A0", calls=["x"]),
            user(tag="U1"),
            tres("x", tag="Tx"),
            user(tag="U2"),
        ]
        out, ctx = run(stage, msgs, budget=35)  # window [U1, Tx, U2]; Tx's call was cut
        assert tags(out) == ["U2"]
        assert [a.index for a in ctx.actions] == [0, 1, 2]

    def test_fallback_keeps_the_last_four(self, stage: Any) -> None:
        msgs = [
            asst(tag="Aold"),
            asst(tag="A0"),
            asst(tag="A1"),
            asst(100, "A2", calls=["w"]),
            tres("w", tag="Tw"),
        ]
        out, ctx = run(stage, msgs, budget=50)  # window [Tw]: an orphan, nothing left
        assert tags(out) == ["A0", "A1", "A2", "Tw"]
        assert [a.index for a in ctx.actions] == [0]

    def test_fallback_with_fewer_than_four(self, stage: Any) -> None:
        msgs = [sys_(), asst(100, "A2", calls=["w"]), tres("w", tag="Tw")]
        out, ctx = run(stage, msgs, budget=50)
        assert out is msgs or out == msgs
        assert ctx.actions == []

    def test_fallback_is_cut_at_the_legal_start(self, stage: Any) -> None:
        msgs = [tres("z", tag="Tz"), asst(100, "A2", calls=["w"]), tres("w", tag="Tw")]
        out, ctx = run(stage, msgs, budget=50)
        assert tags(out) == ["A2", "Tw"]
        assert [(a.index, a.tool_call_id) for a in ctx.actions] == [(0, "z")]

    def test_result_equal_to_the_input_is_the_input_object(self, stage: Any) -> None:
        # Over budget, but the newest user message is the first message: recovery
        # reaches back to the start, so nothing is cut. Nothing changed, so the
        # stage must hand back its input list.
        msgs = [sys_(), user(tag="U1"), asst(100, "A1")]
        out, ctx = run(stage, msgs, budget=50)
        assert out == msgs
        assert ctx.actions == []
        assert out is msgs

    def test_prompt_estimate_larger_than_the_sum_nothing_cut_is_the_input_object(
        self, stage: Any
    ) -> None:
        # A counter whose prompt estimate exceeds the sum of its message estimates
        # (the seed's does: its whole-prompt text is joined differently): over
        # budget, yet every message fits what remains, so nothing is cut.
        msgs = [sys_(), user(tag="U1"), asst(tag="A1")]
        out, ctx = run(stage, msgs, counter=FakeCounter(prompt_extra=5), budget=35)
        assert ctx.actions == []
        assert out is msgs


class TestSnipSystems:
    def _history(self) -> list[Message]:
        return [
            sys_(tag="S0"),
            user(tag="U1"),
            asst(tag="A1"),
            user(tag="U2"),
            sys_(tag="S1"),
            asst(tag="A2"),
        ]

    def test_seed_moves_system_messages_to_the_front(self) -> None:
        msgs = self._history()
        out, ctx = run(snip_seed, msgs, budget=45)  # remaining 25: window [U2, A2]
        assert tags(out) == ["S0", "S1", "U2", "A2"]
        assert kinds(ctx) == [("snip", "drop", 1), ("snip", "drop", 2), ("snip", "move", 4)]
        assert ctx.actions[2].tokens_saved == 0

    def test_openai_keeps_system_messages_in_place(self) -> None:
        msgs = self._history()
        out, ctx = run(snip, msgs, budget=45)
        assert tags(out) == ["S0", "U2", "S1", "A2"]
        assert all(o is msgs[i] for o, i in zip(out, (0, 3, 4, 5), strict=True))
        assert kinds(ctx) == [("snip", "drop", 1), ("snip", "drop", 2)]

    def test_system_messages_in_the_cut_region_are_kept(self) -> None:
        msgs = [user(tag="U1"), sys_(tag="S0"), asst(tag="A1"), user(tag="U2"), asst(tag="A2")]
        for stage in SNIPS:
            out, ctx = run(stage, msgs, budget=40)  # remaining 30: [U2, A2]
            assert tags(out) == ["S0", "U2", "A2"]
            assert [a.index for a in ctx.actions] == [0, 2]


class TestSnipCounters:
    def test_seed_counter_special_token_text_is_never_snipped(self) -> None:
        # The seed's whole-prompt estimate fails on "<|endoftext|>" and reads as 0.
        msgs = [
            user(tag="U1 <|endoftext|>"),
            asst(tag="A1"),
            user(300, "U2"),
            asst(tag="A2"),
        ]
        out, ctx = run(snip_seed, msgs, counter=tokens.seed_counter(), budget=50)
        assert out is msgs and ctx.actions == []

    def test_exact_counter_snips_special_token_text(self) -> None:
        msgs = [
            user(tag="U1 <|endoftext|>"),
            asst(tag="A1"),
            user(300, "U2"),
            asst(tag="A2"),
        ]
        out, ctx = run(snip, msgs, counter=EXACT, budget=50)
        assert out == msgs[2:]
        assert [a.index for a in ctx.actions] == [0, 1]


class TestLegalStart:
    @pytest.mark.parametrize(
        "messages, expected",
        [
            ([], 0),
            ([user(), calls_msg("x"), result("x")], 0),
            ([result("x")], 1),
            ([calls_msg("x"), result("w"), result("x")], 3),  # the declared set is cleared
            ([calls_msg("x"), result("x"), result("w"), calls_msg("y"), result("y")], 3),
            ([result(""), calls_msg("x"), result("x")], 0),
            ([result(None), result("z"), user()], 2),
            ([{"role": "user", "tool_calls": [call("u")]}, result("u")], 2),
            ([calls_msg(5), result("5")], 0),
        ],
    )
    def test_legal_start(self, messages: list[Message], expected: int) -> None:
        assert legal_start(messages) == expected


# --------------------------------------------------------------------------- alternation


def u(content: Any = "u", **extra: Any) -> Message:
    return {"role": "user", "content": content, **extra}


def a(content: Any = "a", **extra: Any) -> Message:
    return {"role": "assistant", "content": content, **extra}


IMG = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


class TestAlternationSeed:
    def test_user_run_is_joined(self) -> None:
        msgs = [u("a"), u("b"), a("r")]
        out, ctx = run(enforce_alternation_seed, msgs, counter=EXACT)
        assert out[0]["content"] == "a\n\nb"
        assert roles(out) == ["user"]  # the trailing assistant is dropped too
        first = ctx.actions[0]
        assert (first.stage, first.kind, first.index) == ("alternation", "merge", 1)
        assert ctx.actions[0].tokens_saved > 0

    def test_joined_content_is_stripped(self) -> None:
        msgs = [u("\n  a"), u("b \n"), u("  ")]
        out, _ = run(enforce_alternation_seed, msgs)
        assert out == [u("a\n\nb")]

    @pytest.mark.parametrize(
        "first, second, expected",
        [
            (None, "b", "b"),
            ("", "b", "b"),
            ([], "b", "b"),
            (0, "b", "b"),
            ("a", None, "a"),
            ("a", [], "a"),
            (None, None, ""),
            (_MISSING, "b", "b"),
        ],
        ids=[
            "None",
            "empty",
            "empty-list",
            "zero",
            "then-None",
            "then-empty-list",
            "both-None",
            "missing",
        ],
    )
    def test_falsy_content_counts_as_empty_string(
        self, first: Any, second: Any, expected: str
    ) -> None:
        m1 = u(first)
        if first is _MISSING:
            del m1["content"]
        msgs = [m1, u(second)]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out == [{"role": "user", "content": expected}]
        assert kinds(ctx) == [("alternation", "merge", 1)]

    @pytest.mark.parametrize("order", ["list-then-str", "str-then-list"])
    def test_list_content_replaces(self, order: str) -> None:
        listed = u([{"type": "text", "text": "look"}, IMG])
        plain = u("plain")
        msgs = [listed, plain] if order == "list-then-str" else [plain, listed]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out == [msgs[1]]
        assert kinds(ctx) == [("alternation", "replace", 1)]
        assert ctx.actions[0].tokens_saved > 0

    def test_assistant_with_calls_replaces_the_previous(self) -> None:
        msgs = [u(), a("thinking"), calls_msg("x"), result("x")]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out == [msgs[0], msgs[2], msgs[3]]
        assert kinds(ctx) == [("alternation", "replace", 2)]

    def test_assistant_with_calls_replaces_one_with_calls(self) -> None:
        msgs = [u(), calls_msg("x"), calls_msg("y"), result("y")]
        out, _ = run(enforce_alternation_seed, msgs)
        assert out == [msgs[0], msgs[2], msgs[3]]

    @pytest.mark.parametrize("no_calls", [_MISSING, None, []], ids=["missing", "None", "empty"])
    def test_assistant_without_calls_after_one_with_calls_is_dropped(self, no_calls: Any) -> None:
        after = a("after")
        if no_calls is not _MISSING:
            after["tool_calls"] = no_calls
        msgs = [u(), calls_msg("x", content="before"), after, result("x")]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out == [msgs[0], msgs[1], msgs[3]]
        [action] = ctx.actions
        assert (action.stage, action.kind, action.index) == ("alternation", "drop", 2)
        assert action.tokens_saved > 0

    def test_assistant_run_without_calls_is_joined(self) -> None:
        msgs = [u(), a("one"), a("two"), u("next")]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out == [msgs[0], a("one\n\ntwo"), msgs[3]]
        assert kinds(ctx) == [("alternation", "merge", 2)]

    def test_system_and_tool_are_never_merged(self) -> None:
        msgs = [
            {"role": "system", "content": "s1"},
            {"role": "system", "content": "s2"},
            u(),
            calls_msg("x", "y"),
            result("x"),
            result("y"),
            u("again"),
        ]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out is msgs and ctx.actions == []

    def test_trailing_assistant_is_dropped(self) -> None:
        msgs = [u("q"), calls_msg("x"), result("x"), a("prefill")]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out == msgs[:3]
        assert kinds(ctx) == [("alternation", "drop", 3)]
        assert ctx.actions[0].tokens_saved > 0

    def test_last_popped_assistant_is_resent_as_user(self) -> None:
        msgs = [{"role": "system", "content": "s"}, a("answer", reasoning_content="r")]
        out, ctx = run(enforce_alternation_seed, msgs)
        assert out == [msgs[0], {"role": "user", "content": "answer", "reasoning_content": "r"}]
        assert kinds(ctx) == [("alternation", "drop", 1), ("alternation", "insert", 1)]

    def test_no_recovery_when_a_tool_result_is_left(self) -> None:
        msgs = [{"role": "system", "content": "s"}, calls_msg("x"), result("x"), a("done")]
        out, _ = run(enforce_alternation_seed, msgs)
        assert out == msgs[:3]

    def test_only_assistants_leave_nothing(self) -> None:
        msgs = [a("one"), a("two")]
        out, _ = run(enforce_alternation_seed, msgs)
        assert out == []

    def test_synthetic_user_before_a_leading_assistant(self) -> None:
        msgs = [{"role": "system", "content": "s"}, a("hello"), u("hi")]
        out, ctx = run(enforce_alternation_seed, msgs, counter=EXACT)
        assert out == [msgs[0], {"role": "user", "content": SYNTHETIC_USER}, msgs[1], msgs[2]]
        assert SYNTHETIC_USER == "(conversation continued)"
        [action] = ctx.actions
        assert (action.stage, action.kind, action.index) == ("alternation", "insert", 1)
        assert action.tokens_saved < 0

    def test_synthetic_user_when_tool_calls_is_empty(self) -> None:
        msgs = [a("hello", tool_calls=[]), u("hi")]
        out, _ = run(enforce_alternation_seed, msgs)
        assert out[0] == {"role": "user", "content": SYNTHETIC_USER}
        assert out[1:] == msgs

    def test_no_synthetic_user_before_an_assistant_with_calls(self) -> None:
        msgs = [{"role": "system", "content": "s"}, calls_msg("x"), result("x"), u("hi")]
        out, _ = run(enforce_alternation_seed, msgs)
        assert out is msgs

    def test_empty_list(self) -> None:
        msgs: list[Message] = []
        out, _ = run(enforce_alternation_seed, msgs)
        assert out is msgs


class TestAlternationLossless:
    def test_strings_are_joined(self) -> None:
        msgs = [u("a"), u("b")]
        out, ctx = run(enforce_alternation, msgs)
        assert out == [u("a\n\nb")]
        assert kinds(ctx) == [("alternation", "merge", 1)]

    def test_list_then_string_is_concatenated(self) -> None:
        msgs = [u([{"type": "text", "text": "look"}, IMG]), u("and this")]
        out, ctx = run(enforce_alternation, msgs)
        assert out == [
            u([{"type": "text", "text": "look"}, IMG, {"type": "text", "text": "and this"}])
        ]
        assert kinds(ctx) == [("alternation", "merge", 1)]

    def test_string_then_list_is_concatenated(self) -> None:
        msgs = [u("first"), u([IMG])]
        out, _ = run(enforce_alternation, msgs)
        assert out == [u([{"type": "text", "text": "first"}, IMG])]

    @pytest.mark.parametrize("empty", [None, "", []], ids=["None", "empty", "empty-list"])
    def test_empty_side_does_not_add_parts(self, empty: Any) -> None:
        out, _ = run(enforce_alternation, [u(empty), u([IMG])])
        assert out == [u([IMG])]
        out, _ = run(enforce_alternation, [u("x"), u(empty)])
        assert out == [u("x")]

    def test_assistant_text_survives_a_following_tool_call_message(self) -> None:
        msgs = [u(), a("let me check"), calls_msg("x"), result("x"), u("thanks")]
        out, ctx = run(enforce_alternation, msgs)
        assert roles(out) == ["user", "assistant", "tool", "user"]
        assert out[1]["content"] == "let me check"
        assert out[1]["tool_calls"] == msgs[2]["tool_calls"]
        assert kinds(ctx) == [("alternation", "merge", 2)]

    def test_text_after_a_tool_call_message_survives(self) -> None:
        msgs = [u(), calls_msg("x", content="before"), a("after"), result("x"), u("ok")]
        out, _ = run(enforce_alternation, msgs)
        assert roles(out) == ["user", "assistant", "tool", "user"]
        assert out[1]["content"] == "before\n\nafter"
        assert [c["id"] for c in out[1]["tool_calls"]] == ["x"]

    def test_two_tool_call_messages_keep_all_calls(self) -> None:
        msgs = [u(), calls_msg("x"), calls_msg("y"), result("x"), result("y"), u("ok")]
        out, _ = run(enforce_alternation, msgs)
        assert [c["id"] for c in out[1]["tool_calls"]] == ["x", "y"]

    def test_reasoning_is_joined(self) -> None:
        msgs = [u(), a("one", reasoning_content="r1"), a("two", reasoning_content="r2"), u()]
        out, _ = run(enforce_alternation, msgs)
        assert out[1]["reasoning_content"] == "r1\n\nr2"
        assert out[1]["content"] == "one\n\ntwo"

    def test_trailing_assistant_is_still_dropped(self) -> None:
        msgs = [u("q"), a("prefill")]
        out, ctx = run(enforce_alternation, msgs)
        assert out == [msgs[0]]
        assert kinds(ctx) == [("alternation", "drop", 1)]

    def test_synthetic_user_and_recovery(self) -> None:
        out, _ = run(enforce_alternation, [{"role": "system", "content": "s"}, a("x"), u("y")])
        assert out[1] == {"role": "user", "content": SYNTHETIC_USER}
        out, _ = run(enforce_alternation, [{"role": "system", "content": "s"}, a("x")])
        assert out[1] == {"role": "user", "content": "x"}

    def test_clean_history_is_the_input_object(self) -> None:
        msgs = [
            {"role": "system", "content": "s"},
            u(),
            calls_msg("x"),
            result("x"),
            a("done"),
            u(),
        ]
        out, ctx = run(enforce_alternation, msgs)
        assert out is msgs and ctx.actions == []


# --------------------------------------------------------------------------- invariants

_NESTED = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": [{"type": "text", "text": "look"}, copy.deepcopy(IMG)]},
    {"role": "user", "content": "again"},
    {
        "role": "assistant",
        "content": "x" * 800,
        "tool_calls": [call("k1"), call("k2", name="exec")],
        "reasoning_content": "hmm",
    },
    {"role": "tool", "tool_call_id": "k1", "name": "read_file", "content": "r" * 800},
    {"role": "tool", "tool_call_id": "ghost", "name": "exec", "content": "g" * 800},
    {"role": "assistant", "content": "a1"},
    {"role": "assistant", "content": None, "tool_calls": [call("k3", name="grep")]},
    {"role": "user", "content": "u" * 3000},
    {"role": "assistant", "content": "tail"},
]

ALL_STAGES = [
    ("orphans-seed", drop_orphans_seed, {}),
    ("orphans-strict", drop_orphans_strict, {}),
    ("backfill-seed", backfill_seed, {}),
    ("backfill-strict", backfill_strict, {}),
    ("microcompact", microcompact, {}),
    ("cap", cap_tool_results, {"max_tool_result_chars": 100}),
    ("snip-seed", snip_seed, {"budget": 700}),
    ("snip-openai", snip, {"budget": 700}),
    ("alternation-seed", enforce_alternation_seed, {}),
    ("alternation", enforce_alternation, {}),
]


@pytest.mark.parametrize("name, stage, settings", ALL_STAGES, ids=[s[0] for s in ALL_STAGES])
def test_stage_never_mutates_and_reports_every_change(
    name: str, stage: Any, settings: dict
) -> None:
    msgs = copy.deepcopy(_NESTED)
    snapshot = json.dumps(msgs, sort_keys=True)
    _, ctx = run(stage, msgs, counter=EXACT, **settings)
    assert json.dumps(msgs, sort_keys=True) == snapshot
    if name not in ("microcompact",):
        assert ctx.actions, f"{name} had something to do on this history"
    assert json.dumps(msgs, sort_keys=True) == snapshot


CLEAN = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": None, "tool_calls": [call("k1")]},
    {"role": "tool", "tool_call_id": "k1", "name": "read_file", "content": "r" * 800},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "thanks"},
]


@pytest.mark.parametrize("name, stage, settings", ALL_STAGES, ids=[s[0] for s in ALL_STAGES])
def test_stage_returns_its_input_when_nothing_changes(
    name: str, stage: Any, settings: dict
) -> None:
    msgs = copy.deepcopy(CLEAN)
    if "budget" in settings:
        settings = {**settings, "budget": 100_000}
    if "max_tool_result_chars" in settings:
        settings = {**settings, "max_tool_result_chars": 1000}
    out, ctx = run(stage, msgs, counter=EXACT, **settings)
    assert out is msgs
    assert ctx.actions == [] and ctx.notes == []
