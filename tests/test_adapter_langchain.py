"""LangChain adapter: governed messages through a real LCEL chain, and the converters."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples
from transcripts import cases

pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

from context_governor import Governor, Report, govern, validate
from context_governor.adapters.langchain import from_openai, govern_messages, governed, to_openai

WINDOW = 12_000


def _call(call_id: str, path: str) -> dict[str, Any]:
    return {"name": "read_file", "args": {"path": path}, "id": call_id}


def _conversation() -> list[BaseMessage]:
    """A broken, long LangChain history: every repair and the budget are needed."""
    msgs: list[BaseMessage] = [
        SystemMessage("You are a coding agent."),
        HumanMessage("Fix the tokenizer bug."),
        # A lost tool result: the call has no ToolMessage.
        AIMessage("", tool_calls=[_call("call_lost", "src/lost.py")]),
        # An orphan: no AIMessage asked for this result.
        ToolMessage("stale output", tool_call_id="call_orphan"),
        # Two HumanMessages in a row.
        HumanMessage("Also look at the tests."),
        HumanMessage("And the docs."),
    ]
    for step in range(40):
        call_id = f"call_{step}"
        msgs.append(
            AIMessage(f"Reading part {step}.", tool_calls=[_call(call_id, f"src/m{step}.py")])
        )
        msgs.append(ToolMessage(f"line {step}: " + "x = compute(y) " * 80, tool_call_id=call_id))
    msgs.append(HumanMessage("What did you find?"))
    return msgs


class _Recorder(BaseCallbackHandler):
    """Records the messages each chat model call received."""

    def __init__(self) -> None:
        self.received: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.received.extend(messages)


def test_governed_output_is_valid_fits_and_leaves_input_alone() -> None:
    history = _conversation()
    snapshot = copy.deepcopy(history)
    assert validate(to_openai(history))  # broken on the way in
    reports: list[Report] = []

    out = governed(Governor(context_window=WINDOW), on_report=reports.append).invoke(history)

    assert all(isinstance(m, BaseMessage) for m in out)
    dicts = to_openai(out)
    assert validate(dicts) == []
    (report,) = reports
    assert report.tokens_before > report.budget
    assert report.tokens_after <= report.budget
    assert history == snapshot
    done = {(a.stage, a.kind, a.tool_call_id) for a in report.actions}
    assert {("orphans", "drop", "call_orphan"), ("backfill", "insert", "call_lost")} <= done
    assert isinstance(out[-1], HumanMessage) and out[-1].content == "What did you find?"


def test_repairs_show_in_the_langchain_messages() -> None:
    """With room for everything, the repairs are visible in the returned messages."""
    out = governed(Governor(context_window=200_000)).invoke(_conversation())
    assert validate(to_openai(out)) == []
    ids = [m.tool_call_id for m in out if isinstance(m, ToolMessage)]
    assert "call_orphan" not in ids and "call_lost" in ids
    assert out[2].tool_calls[0]["id"] == "call_lost" and out[3].tool_call_id == "call_lost"
    assert [m.content for m in out[4:5]] == ["Also look at the tests.\n\nAnd the docs."]


def test_chain_with_fake_chat_model_receives_governed_messages() -> None:
    history = _conversation()
    model = FakeMessagesListChatModel(responses=[AIMessage("The bug is in m3.")])
    recorder = _Recorder()
    expected = governed(Governor(context_window=WINDOW)).invoke(history)

    chain = governed(Governor(context_window=WINDOW)) | model
    answer = chain.invoke(history, config={"callbacks": [recorder]})

    assert answer.content == "The bug is in m3."
    (received,) = recorder.received
    assert to_openai(received) == to_openai(expected)
    assert len(received) < len(history)
    assert validate(to_openai(received)) == []


def test_prompt_value_dict_and_string_inputs() -> None:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{q}")]
    )
    history = [HumanMessage("a"), HumanMessage("b")]
    gov = Governor(context_window=WINDOW)
    out = (prompt | governed(gov)).invoke({"history": history, "q": "c"})
    assert validate(to_openai(out)) == []
    assert [type(m) for m in out] == [SystemMessage, HumanMessage]  # three user turns merged
    assert out[-1].content == "a\n\nb\n\nc"
    from_dict = governed(Governor(context_window=WINDOW)).invoke({"messages": history})
    assert validate(to_openai(from_dict)) == []
    assert [m.content for m in governed(gov).invoke("hi")] == ["hi"]
    with pytest.raises(TypeError, match="messages"):
        governed(gov).invoke({"history": history})


def test_round_trip_keeps_content_and_tool_call_ids() -> None:
    msgs: list[BaseMessage] = [
        SystemMessage("sys"),
        HumanMessage("read two files"),
        AIMessage("", tool_calls=[_call("c1", "a.py"), _call("c2", "b.py")]),
        ToolMessage("A", tool_call_id="c1"),
        ToolMessage("B", tool_call_id="c2"),
        AIMessage("done"),
    ]
    dicts = to_openai(msgs)
    assert [d["role"] for d in dicts] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert [c["id"] for c in dicts[2]["tool_calls"]] == ["c1", "c2"]
    back = from_openai(dicts)
    assert [type(m) for m in back] == [type(m) for m in msgs]
    assert [m.content for m in back] == [m.content for m in msgs]
    assert isinstance(back[2], AIMessage)
    assert back[2].tool_calls == [
        {**_call("c1", "a.py"), "type": "tool_call"},
        {**_call("c2", "b.py"), "type": "tool_call"},
    ]
    assert [m.tool_call_id for m in back if isinstance(m, ToolMessage)] == ["c1", "c2"]
    assert to_openai(back) == dicts


def test_core_package_does_not_import_langchain() -> None:
    code = "import sys, context_governor; sys.exit('langchain_core' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_missing_langchain_core_says_how_to_install() -> None:
    code = (
        "import sys; sys.modules['langchain_core'] = None\n"
        "try:\n    import context_governor.adapters.langchain\n"
        "except ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "pip install 'context-governor[langchain]'" in out


# -- the edge is lossless ----------------------------------------------------------------------


def _rich_history() -> list[BaseMessage]:
    """Messages with everything LangChain carries beyond the OpenAI format."""
    return [
        SystemMessage("You are a coding agent.", id="sys"),
        HumanMessage(
            [{"type": "text", "text": "What is in this screenshot?"},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}],
            id="human-1",
        ),
        AIMessage(
            [
                {"type": "thinking", "thinking": "I should read it.", "signature": "c2ln"},
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
            ],
            tool_calls=[_call("toolu_1", "a.py")],
            id="ai-1",
            additional_kwargs={"custom": 1},
            response_metadata={"model_name": "claude", "stop_reason": "tool_use"},
            usage_metadata={"input_tokens": 5, "output_tokens": 6, "total_tokens": 11},
        ),
        ToolMessage("x = 1\n" * 400, tool_call_id="toolu_1", id="tool-1", artifact={"bytes": 2400}, status="success"),
        AIMessage(
            [{"type": "reasoning", "reasoning": "done", "id": "rs_1"}, {"type": "text", "text": "It sets x."}],
            id="ai-2",
            response_metadata={"model_name": "gpt"},
        ),
        HumanMessage("Thanks.", id="human-2"),
    ]


def test_unchanged_messages_come_back_as_the_callers_own_objects() -> None:
    """Regression: the way back used to rebuild every message from its OpenAI dict, losing
    ids, additional_kwargs (reasoning_content), response_metadata, usage_metadata, a tool
    message's artifact and status, and provider blocks such as tool_use."""
    history = _rich_history()
    snapshot = copy.deepcopy(history)
    out = governed(Governor(profile="anthropic", context_window=200_000)).invoke(history)
    assert len(out) == len(history)
    assert all(o is h for o, h in zip(out, history, strict=True))
    assert history == snapshot


def test_reasoning_content_is_governed_with_its_message() -> None:
    """reasoning_content travels in the dict: counted, and under the provider's rules
    (Anthropic rejects it, DeepSeek takes it); the rest of the message is kept."""
    history = _rich_history()
    ai = history[2]
    assert isinstance(ai, AIMessage)
    history[2] = ai.model_copy(update={"additional_kwargs": {"reasoning_content": "think", "custom": 1}})
    dicts = to_openai(history)
    assert dicts[2]["reasoning_content"] == "think"
    assert from_openai(dicts)[2].additional_kwargs == {"reasoning_content": "think"}

    out = governed(Governor(profile="anthropic", context_window=200_000)).invoke(history)
    rewritten = out[2]
    assert rewritten is not history[2] and isinstance(rewritten, AIMessage)
    assert rewritten.additional_kwargs == {"custom": 1}
    assert rewritten.content == ai.content  # the tool_use block too: content was not rewritten
    assert (rewritten.id, rewritten.response_metadata, rewritten.usage_metadata) == (
        ai.id, ai.response_metadata, ai.usage_metadata,
    )
    assert [o is h for o, h in zip(out, history, strict=True)] == [True, True, False, True, True, True]
    kept = governed(Governor(profile="deepseek", context_window=128_000)).invoke(history)
    assert kept[2] is history[2]


def test_rewritten_messages_keep_what_governance_did_not_rewrite() -> None:
    history = _rich_history()
    reports: list[Report] = []
    gov = Governor(profile="anthropic", context_window=200_000, max_tool_result_chars=300)
    out = governed(gov, on_report=reports.append).invoke(history)
    (tool,) = [m for m in out if isinstance(m, ToolMessage)]
    assert tool is not history[3] and len(tool.content) < len(history[3].content)  # capped
    assert (tool.id, tool.artifact, tool.status, tool.tool_call_id) == ("tool-1", {"bytes": 2400}, "success", "toolu_1")
    assert [a.stage for a in reports[0].actions if a.index == 3]  # reported
    assert all(o is h for o, h in zip(out, history, strict=True) if not isinstance(o, ToolMessage))


def test_merged_user_turns_and_backfilled_results_are_new_or_traced() -> None:
    history: list[BaseMessage] = [
        HumanMessage("a", id="h1"),
        HumanMessage("b", id="h2"),
        AIMessage("", tool_calls=[_call("c1", "x.py")], id="ai", response_metadata={"k": 1}),
    ]
    out = governed(Governor(context_window=200_000)).invoke([*history, HumanMessage("go on", id="h3")])
    assert out[0].content == "a\n\nb" and out[0].id == "h1"  # traced to the first of the run
    assert out[1] is history[2]
    assert isinstance(out[2], ToolMessage) and out[2].tool_call_id == "c1" and out[2].id is None  # made


def test_a_governor_step_still_returns_the_callers_objects() -> None:
    """A Governor answers an appended step with the dicts of its earlier call; the edge maps
    them back to the new call's messages by equality."""
    gov = Governor(profile="anthropic", context_window=200_000)
    history = _rich_history()
    governed(gov).invoke(history)
    step = [*copy.deepcopy(history), AIMessage("You're welcome.", id="ai-3"), HumanMessage("Bye.", id="h-3")]
    out = governed(gov).invoke(step)
    assert all(o is h for o, h in zip(out, step, strict=True))


@given(
    st.lists(
        st.sampled_from(["human", "ai", "ai_call", "tool", "tool_orphan", "system"]), min_size=1, max_size=12
    ),
    st.sampled_from(["openai", "anthropic", "gemini", "mistral"]),
    st.sampled_from([None, 400]),
)
def test_every_output_message_is_an_original_a_traced_rewrite_or_reported(
    kinds: list[str], profile: str, cap: int | None
) -> None:
    history: list[BaseMessage] = [HumanMessage("start", id="start")]
    open_calls: list[str] = []
    for n, kind in enumerate(kinds):
        if kind == "human":
            history.append(HumanMessage(f"question {n} " * 30, id=f"m{n}"))
        elif kind == "system":
            history.append(SystemMessage(f"rule {n}", id=f"m{n}"))
        elif kind == "ai":
            history.append(AIMessage(f"answer {n}", id=f"m{n}", response_metadata={"n": n}))
        elif kind == "ai_call":
            open_calls.append(f"call_{n}")
            history.append(AIMessage("", tool_calls=[_call(f"call_{n}", f"f{n}.py")], id=f"m{n}", response_metadata={"n": n}))
        elif kind == "tool":
            call_id = open_calls.pop() if open_calls else f"call_x{n}"
            history.append(ToolMessage(f"result {n} " * 80, tool_call_id=call_id, id=f"m{n}", artifact=n))
        else:
            history.append(ToolMessage("stray", tool_call_id=f"orphan_{n}", id=f"m{n}"))
    snapshot = copy.deepcopy(history)
    reports: list[Report] = []
    out = governed(Governor(profile=profile, max_tool_result_chars=cap), on_report=reports.append).invoke(history)
    assert history == snapshot
    assert validate(to_openai(out), provider=profile) == []
    originals = {id(m) for m in history}
    by_id = {m.id: m for m in history}
    for message in out:
        if id(message) in originals:
            continue
        assert reports[0].actions, "a message changed without an action in the report"
        origin = by_id.get(message.id)
        if origin is not None:  # a traced rewrite keeps the original's other fields
            assert type(origin) is type(message)
            assert message.response_metadata == origin.response_metadata
            assert getattr(message, "artifact", None) == getattr(origin, "artifact", None)


def test_steps_of_a_cut_conversation_return_the_callers_objects() -> None:
    """Over several steps of a conversation that is cut to fit, every message sent as the
    caller wrote it is the caller's own object, whichever path the Governor took."""
    gov = Governor(context_window=WINDOW)
    history: list[BaseMessage] = [SystemMessage("You are a coding agent.", id="sys"), HumanMessage("Fix it.", id="h")]
    for n in range(30):
        history.append(AIMessage(f"Reading part {n}.", tool_calls=[_call(f"call_{n}", f"m{n}.py")], id=f"a-{n}"))
        history.append(ToolMessage(f"line {n}: " + "x = compute(y) " * 80, tool_call_id=f"call_{n}", id=f"t-{n}"))
        history.append(AIMessage(f"Part {n} is fine.", id=f"s-{n}"))
        history.append(HumanMessage(f"Next ({n}).", id=f"u-{n}"))
    for step in range(6):
        out = governed(gov).invoke(history)
        assert validate(to_openai(out)) == []
        for message in out:
            twins = [h for h in history if to_openai([h]) == to_openai([message])]
            assert not twins or any(message is t for t in twins), (step, message)
        assert sum(m is h for m in out for h in history) >= 3
        history = [*history, AIMessage(f"Step {step} done.", id=f"a{step}"), HumanMessage(f"Go on {step}.", id=f"h{step}")]


def test_the_way_back_finds_unchanged_messages_after_a_cut_and_never_traces_a_marker() -> None:
    """A Governor's step answers with the dicts of its earlier call (equal, not identical):
    a plain message after a cut must still come back as the caller's object, and the
    marker standing for the cut must not take the id of a message it replaced."""
    history: list[BaseMessage] = [
        SystemMessage("rules", id="s"),
        HumanMessage("first question", id="q1"),
        AIMessage("first answer", id="a1", response_metadata={"n": 1}),
        HumanMessage("second question", id="q2"),
    ]
    marker = {"role": "user", "content": "[2 earlier messages were removed]"}

    def cut(dicts: list[dict[str, Any]]) -> Any:
        from dataclasses import replace

        from context_governor import govern

        return replace(govern(dicts), messages=[dict(dicts[0]), marker, dict(dicts[3])])

    out, _ = govern_messages(cut, history)
    assert out[0] is history[0] and out[2] is history[3]
    assert isinstance(out[1], HumanMessage) and out[1].id is None and out[1].content == marker["content"]


@settings(max_examples=examples(full=60, fast=25), deadline=None)
@given(cases(quirks=True), st.sampled_from(["openai", "anthropic", "gemini", "mistral", "deepseek"]))
def test_the_langchain_path_sends_what_the_dict_path_sends(case: dict[str, Any], profile: str) -> None:
    """Differential: governing LangChain messages sends, message for message, what governing
    their dicts sends (so the way back never hands over an original that governance
    changed), for random agent transcripts."""
    try:
        history = from_openai(case["messages"])
    except (ValueError, TypeError, KeyError):
        return  # a shape LangChain itself cannot hold as messages: nothing to compare
    settings_ = {"profile": profile, "context_window": case["context_window"], "tools": case["tools"]}
    originals = copy.deepcopy(history)
    out, result = govern_messages(Governor(**settings_), history)
    expected = govern(to_openai(history), **settings_)
    assert history == originals
    assert to_openai(out) == to_openai(from_openai(expected.messages))
    assert result.report.tokens_after == expected.report.tokens_after
