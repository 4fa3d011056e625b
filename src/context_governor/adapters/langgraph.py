"""LangGraph adapter: a ``pre_model_hook`` for the prebuilt ``create_react_agent``.

The hook returns the governed messages as ``llm_input_messages``, which the
prebuilt agent hands to the model *instead of* ``messages`` without writing them
to the graph state; it never returns ``messages``, so the stored history is left
exactly as the agent built it. A Governor is kept per LangGraph thread
(``config["configurable"]["thread_id"]``).

    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook(model=model))

The prebuilt agent's ``prompt`` is applied after the hook, so a system prompt
given there is not seen by governance: put it in the history (a ``SystemMessage``
first), or leave room for it with ``max_output``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    import langgraph  # noqa: F401  (the import is the check)
    from langchain_core.messages import BaseMessage
except ImportError as exc:  # pragma: no cover - exercised only without langgraph
    raise ImportError(
        "context_governor.adapters.langgraph needs langgraph: "
        "pip install 'context-governor[langgraph]'"
    ) from exc

from ..profiles import Profile
from ..report import Report
from ._conversations import DEFAULT_CONVERSATIONS, Conversations, thread_id
from .langchain import govern_messages, target_of, tool_dicts

__all__ = ["GovernedInput", "pre_model_hook"]


class GovernedInput:
    """The hook itself: ``state -> {"llm_input_messages": governed}``.

    Build it with :func:`pre_model_hook`. ``conversations.get(thread_id)`` is the
    Governor of a thread.
    """

    def __init__(
        self,
        settings: dict[str, Any],
        tools: list[dict[str, Any]] | None,
        on_report: Callable[[Report], None] | None,
        max_conversations: int,
    ) -> None:
        self.settings = settings
        self.tools = tools
        self.on_report = on_report
        self.conversations = Conversations(max_conversations)

    def __call__(self, state: Any) -> dict[str, list[BaseMessage]]:
        messages = state.get("messages") if isinstance(state, Mapping) else state.messages
        if messages is None:
            raise ValueError("the pre-model hook expects a state with a 'messages' key")
        settings = self.settings
        out, result = govern_messages(
            lambda dicts: self.conversations.govern(thread_id(), settings, dicts, self.tools),
            messages,
        )
        if self.on_report is not None:
            self.on_report(result.report)
        return {"llm_input_messages": out}


def pre_model_hook(
    *,
    chat_model: Any = None,
    profile: str | Profile | None = None,
    model: str | None = None,
    context_window: int | None = None,
    max_output: int | None = None,
    tools: Sequence[Any] | None = None,
    on_report: Callable[[Report], None] | None = None,
    max_conversations: int = DEFAULT_CONVERSATIONS,
    **governor_settings: Any,
) -> GovernedInput:
    """A ``pre_model_hook`` that governs what the prebuilt agent's model is sent.

    ``chat_model`` (the agent's LangChain chat model) supplies the profile, model
    name, window and output reserve it implies (see ``adapters.langchain.target_of``);
    the explicit arguments win. ``tools`` (the agent's tools: LangChain tools,
    functions or OpenAI tool definitions) are counted against the budget.
    ``on_report`` gets each call's report.
    """
    found: dict[str, Any] = {}
    if chat_model is not None:
        target = target_of(chat_model)
        found = {
            "profile": target.profile,
            "model": target.model,
            "context_window": target.context_window,
            "max_output": target.max_output,
        }
    given = {
        "profile": profile,
        "model": model,
        "context_window": context_window,
        "max_output": max_output,
    }
    settings = {**governor_settings, **found, **{k: v for k, v in given.items() if v is not None}}
    return GovernedInput(settings, tool_dicts(tools or ()), on_report, max_conversations)
