"""The stand-in chat model of the LangChain and LangGraph examples: it runs offline.

It says it is Anthropic's claude-sonnet-4-5 (the adapters read the provider and
the model name from the model) and answers from a script: six tool calls, one
file each, then the answer. With an API key, use a real model instead, e.g.
``init_chat_model("anthropic:claude-sonnet-4-5")``.
"""

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return "\n".join(f"{path}:{n}: value_{n} = compute({n})" for n in range(60))


class ScriptedModel(BaseChatModel):
    """Reads six files, one per call, then answers."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _get_ls_params(self, stop: Any = None, **kwargs: Any) -> Any:
        return {"ls_provider": "anthropic", "ls_model_name": "claude-sonnet-4-5"}

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.calls += 1
        if self.calls <= 6:
            path = f"src/m{self.calls}.py"
            call = {"name": "read_file", "args": {"path": path}, "id": f"toolu_{self.calls}"}
            message = AIMessage(f"Reading m{self.calls}.", tool_calls=[call])
        else:
            message = AIMessage("The bug is in m3: compute(3) is never called.")
        return ChatResult(generations=[ChatGeneration(message=message)])
