"""A LangChain v1 agent whose every model call is governed; its stored history is not.

``ScriptedModel`` (scripted_model.py) stands in for a real chat model so that
this runs offline; with an API key, pass ``init_chat_model("anthropic:claude-sonnet-4-5")``:
the middleware reads the provider, the model name and its window from the model.
"""

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from scripted_model import ScriptedModel, read_file

from context_governor import Report
from context_governor.adapters.langchain import GovernorMiddleware


def show(report: Report) -> None:
    print(
        f"model call: {report.tokens_before:,} tokens of history -> {report.tokens_after:,} sent "
        f"(budget {report.budget:,}, {len(report.actions)} changes)"
    )


governor = GovernorMiddleware(context_window=4_000, max_output=500, on_report=show)
agent = create_agent(
    ScriptedModel(),
    tools=[read_file],
    system_prompt="You are a coding agent.",
    middleware=[governor],
    checkpointer=InMemorySaver(),
)
config: Any = {"configurable": {"thread_id": "bug-42"}}
result = agent.invoke({"messages": [HumanMessage("Find the bug in the m files.")]}, config)
print(f"stored history: {len(result['messages'])} messages, none cut")
print("answer:", result["messages"][-1].content)
