"""LangChain adapter: govern a list of ``BaseMessage`` before a chat model sees it.

The governor works on OpenAI chat-completions dicts, so the adapter converts at
its edge, through langchain-core's own converters (``convert_to_openai_messages``
and ``convert_to_messages``), which keeps it in step with LangChain's format
instead of re-implementing it. Content blocks (text, images, ``thinking`` with its
signature, ``reasoning``) travel inside ``content`` as they are, and an AI
message's ``additional_kwargs["reasoning_content"]`` travels as the dict's
``reasoning_content`` (so it is counted and the provider's reasoning rules apply).

The way back is lossless (:func:`govern_messages`): a message governance left
alone is returned as the caller's very own object (ids, ``additional_kwargs``,
``response_metadata``, ``usage_metadata``, a tool message's ``artifact`` and
``status``, provider blocks such as Anthropic ``tool_use`` in ``content``); a
message governance rewrote is the original with the rewritten fields replaced,
when it can be traced to one (a tool result by its ``tool_call_id``, an AI message
by its tool call ids, any other by its place among the unchanged ones); a message
governance made (a backfilled result, merged user turns) is new.

Three ways in:

* :func:`governed`: an LCEL runnable, ``governed(Governor(...)) | chat_model``;
* :class:`GovernorMiddleware`: an ``AgentMiddleware`` for ``langchain.agents.create_agent``
  (needs the ``langchain`` package; imported on first use);
* ``context_governor.adapters.langgraph.pre_model_hook`` for LangGraph's prebuilt agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._langchain_core import (
    MessagesInput,
    Target,
    from_openai,
    govern_messages,
    governed,
    target_of,
    to_openai,
    tool_dicts,
)

if TYPE_CHECKING:
    from ._langchain_agent import GovernorMiddleware

__all__ = [
    "GovernorMiddleware",
    "MessagesInput",
    "Target",
    "from_openai",
    "govern_messages",
    "governed",
    "target_of",
    "to_openai",
    "tool_dicts",
]


def __getattr__(name: str) -> Any:
    if name == "GovernorMiddleware":
        from ._langchain_agent import GovernorMiddleware

        return GovernorMiddleware
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
