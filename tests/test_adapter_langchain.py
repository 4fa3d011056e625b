"""LangChain adapter: governed messages through a real LCEL chain, and the converters."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest

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

from context_governor import Governor, Report, validate
from context_governor.adapters.langchain import from_openai, governed, to_openai

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
