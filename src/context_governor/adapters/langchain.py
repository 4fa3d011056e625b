"""LangChain adapter: govern a list of ``BaseMessage`` before a chat model sees it.

The governor works on OpenAI chat-completions dicts, so this adapter only
converts: LangChain messages go to dicts and back through langchain-core's own
converters (``convert_to_openai_messages`` and ``convert_to_messages``), which
keeps the adapter in step with LangChain's format instead of re-implementing it.
The conversion keeps what the OpenAI format carries (roles, content, names, tool
calls and their ids); LangChain-only fields such as message ids or
``response_metadata`` are not part of the governed output.

    chain = governed(Governor(context_window=128_000)) | chat_model
    chain.invoke(history)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    from langchain_core.messages import (
        BaseMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langchain_core.prompt_values import PromptValue
    from langchain_core.runnables import RunnableLambda
except ImportError as exc:  # pragma: no cover - exercised only without langchain-core
    raise ImportError(
        "context_governor.adapters.langchain needs langchain-core: pip install langchain-core"
    ) from exc

from ..governor import Governor
from ..report import Report

__all__ = ["from_openai", "governed", "to_openai"]

#: What the runnable accepts: the shapes an LCEL chain hands to a chat model.
MessagesInput = str | Sequence[BaseMessage] | PromptValue | Mapping[str, Any]


def to_openai(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as OpenAI chat-completions dicts (what the governor reads)."""
    return list(convert_to_openai_messages(list(messages)))


def from_openai(dicts: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat-completions dicts as LangChain messages (what a chat model reads)."""
    return convert_to_messages([dict(d) for d in dicts])


def _messages_of(value: MessagesInput) -> list[BaseMessage]:
    """The message list inside whatever the previous step of a chain produced."""
    if isinstance(value, str):  # a chat model reads a bare string as one user message
        return convert_to_messages([value])
    if isinstance(value, PromptValue):
        return value.to_messages()
    if isinstance(value, Mapping):
        if "messages" not in value:
            raise TypeError("governed() expects a dict with a 'messages' key")
        return convert_to_messages(value["messages"])
    return convert_to_messages(list(value))


def governed(
    governor: Governor, *, on_report: Callable[[Report], None] | None = None
) -> RunnableLambda[MessagesInput, list[BaseMessage]]:
    """A runnable that governs the messages on their way to a chat model.

    It takes a list of messages, a string, a ``PromptValue`` (what a chat prompt template
    produces) or a dict with ``"messages"``, and returns the governed list, so
    ``governed(gov) | chat_model`` drops into an LCEL chain. The input is never
    mutated. The report, which the chain would otherwise lose, is passed to
    ``on_report`` on every call. One ``Governor`` per conversation, as always: it
    caches what it saw last, so sharing one across conversations only costs speed.
    """

    def _govern(value: MessagesInput) -> list[BaseMessage]:
        result = governor.govern(to_openai(_messages_of(value)))
        if on_report is not None:
            on_report(result.report)
        return from_openai(result.messages)

    return RunnableLambda(_govern, name="governed")
