"""LangGraph's prebuilt ReAct agent with a governing pre-model hook.

The hook hands the model the governed messages as ``llm_input_messages``; the
graph state keeps the whole history. ``ScriptedModel`` (scripted_model.py) stands
in for a real chat model so that the example runs offline.
"""

import warnings
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from scripted_model import ScriptedModel, read_file

from context_governor import Report
from context_governor.adapters.langgraph import pre_model_hook


def show(report: Report) -> None:
    before, after = report.tokens_before, report.tokens_after
    print(f"model call: {before:,} -> {after:,} tokens (budget {report.budget:,})")


model = ScriptedModel()
hook = pre_model_hook(
    chat_model=model, tools=[read_file], context_window=4_000, max_output=500, on_report=show
)
with warnings.catch_warnings():  # LangGraph 1.x suggests langchain.agents.create_agent
    warnings.simplefilter("ignore")
    agent = create_react_agent(
        model, [read_file], pre_model_hook=hook, checkpointer=InMemorySaver()
    )
config: Any = {"configurable": {"thread_id": "bug-42"}}
history = [SystemMessage("You are a coding agent."), HumanMessage("Find the bug in the m files.")]
result = agent.invoke({"messages": history}, config)
print(f"stored history: {len(result['messages'])} messages, none cut")
print("answer:", result["messages"][-1].content)
