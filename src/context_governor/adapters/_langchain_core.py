"""The LangChain adapter's core, on langchain-core alone: conversion, the lossless way
back, the LCEL runnable and what a chat model says about itself.

``context_governor.adapters.langchain`` is its public face (see that module's docstring);
the agent middleware (_langchain_agent.py) builds on it too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

try:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ToolMessage,
        convert_to_messages,
        convert_to_openai_messages,
    )
    from langchain_core.prompt_values import PromptValue
    from langchain_core.runnables import RunnableLambda
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - exercised only without langchain-core
    raise ImportError(
        "context_governor.adapters.langchain needs langchain-core: "
        "pip install 'context-governor[langchain]'"
    ) from exc

from ..governor import Governor
from ..messages import Message
from ..pipeline import GovernResult
from ..providers.windows import default_window
from ..report import Report
from ._model_profile import named_profile

__all__ = [
    "MessagesInput",
    "Target",
    "from_openai",
    "govern_messages",
    "governed",
    "target_of",
    "to_openai",
    "tool_dicts",
]

#: What the runnable accepts: the shapes an LCEL chain hands to a chat model.
MessagesInput = str | Sequence[BaseMessage] | PromptValue | Mapping[str, Any]

#: additional_kwargs that describe the tool calls or reasoning the dict carries itself:
#: a rewritten message takes them from the governed dict, not from the original.
_CARRIED_BY_DICT = frozenset({"tool_calls", "function_call", "reasoning_content"})


def _to_dict(message: BaseMessage) -> Message:
    out: dict[str, Any] = convert_to_openai_messages(message)  # one message in, one dict out
    if isinstance(message, AIMessage):
        reasoning = message.additional_kwargs.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            out["reasoning_content"] = reasoning
    return out


def to_openai(messages: Sequence[BaseMessage]) -> list[Message]:
    """LangChain messages as OpenAI chat-completions dicts (what the governor reads).

    One dict per message, in order.
    """
    return [_to_dict(m) for m in convert_to_messages(list(messages))]


def from_openai(dicts: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """OpenAI chat-completions dicts as LangChain messages (what a chat model reads)."""
    out = []
    for d in dicts:
        plain = {k: v for k, v in d.items() if k != "reasoning_content"}
        message = convert_to_messages([plain])[0]
        reasoning = d.get("reasoning_content")
        if isinstance(message, AIMessage) and isinstance(reasoning, str) and reasoning:
            message.additional_kwargs["reasoning_content"] = reasoning
        out.append(message)
    return out


@dataclass
class _Edge:
    """The caller's messages and their dicts, to map governed dicts back losslessly."""

    originals: list[BaseMessage]
    dicts: list[Message]

    def restore(self, governed: Sequence[Message]) -> list[BaseMessage]:
        by_identity = {id(d): i for i, d in enumerate(self.dicts)}
        kept = {id(d) for d in governed}
        by_call_id = self._by_call_id()
        out: list[BaseMessage] = []
        used: set[int] = set()
        last = -1  # the original the previous output message came from
        for d in governed:
            i = by_identity.get(id(d))
            if i is None or self.dicts[i] is not d:
                # A Governor answers an appended step with the dicts of its earlier
                # calls: equal to ours where the message is unchanged.
                nxt = last + 1
                i = nxt if nxt < len(self.dicts) and self.dicts[nxt] == d else None
            if i is not None:
                out.append(self.originals[i])
                used.add(i)
                last = i
                continue
            rebuilt = from_openai([d])[0]
            origin = self._origin(d, rebuilt, by_call_id, last, kept)
            if origin is None:
                out.append(rebuilt)
                continue
            if self.dicts[origin] == d:  # rewritten back to what it was: the original itself
                out.append(self.originals[origin])
            else:
                out.append(
                    _rewritten(
                        self.originals[origin],
                        rebuilt,
                        d,
                        self.dicts[origin],
                        keep_id=origin not in used,
                    )
                )
            used.add(origin)
            last = origin
        return out

    def _by_call_id(self) -> dict[tuple[str, str], int]:
        found: dict[tuple[str, str], int] = {}
        for i, message in enumerate(self.originals):
            if isinstance(message, ToolMessage):
                found.setdefault(("tool", message.tool_call_id), i)
            elif isinstance(message, AIMessage):
                for call in message.tool_calls:
                    found.setdefault(("ai", str(call.get("id"))), i)
        return found

    def _origin(
        self,
        d: Message,
        rebuilt: BaseMessage,
        by_call_id: dict[tuple[str, str], int],
        last: int,
        kept: set[int],
    ) -> int | None:
        """The original a rewritten message came from, or None for a message governance made."""
        if isinstance(rebuilt, ToolMessage):
            return by_call_id.get(("tool", rebuilt.tool_call_id))
        if isinstance(rebuilt, AIMessage) and rebuilt.tool_calls:
            for call in rebuilt.tool_calls:
                found = by_call_id.get(("ai", str(call.get("id"))))
                if found is not None:
                    return found
            return None
        # No id to trace it by: an original further on that it equals (a Governor's step
        # after a cut answers with its earlier dicts), else the original right after the
        # previous output message's, if of the same type, not kept as it is, and its text
        # is in the new one (turns merged into one; not a marker standing for a cut).
        for j in range(last + 1, len(self.dicts)):
            if self.dicts[j] == d:
                return j
        nxt = last + 1
        if nxt >= len(self.originals) or id(self.dicts[nxt]) in kept:
            return None
        candidate = self.originals[nxt]
        if type(candidate) is type(rebuilt) and candidate.text in rebuilt.text:
            return nxt
        return None


def _rewritten(
    origin: BaseMessage, rebuilt: BaseMessage, d: Message, was: Message, *, keep_id: bool
) -> BaseMessage:
    """``origin`` with what governance rewrote taken from ``rebuilt``; the rest kept.

    ``was`` is the dict ``origin`` was governed as: a field equal there and in ``d``
    was not rewritten, so the original's own value is kept (its content may hold
    blocks the dict leaves out, such as Anthropic ``tool_use``).
    """
    update: dict[str, Any] = {}
    if d.get("content") != was.get("content"):
        update["content"] = rebuilt.content
    if "name" in d or origin.name is not None:
        update["name"] = rebuilt.name
    kwargs = {k: v for k, v in origin.additional_kwargs.items() if k not in _CARRIED_BY_DICT}
    kwargs.update(rebuilt.additional_kwargs)
    update["additional_kwargs"] = kwargs
    if isinstance(rebuilt, AIMessage) and d.get("tool_calls") != was.get("tool_calls"):
        update["tool_calls"] = rebuilt.tool_calls
        update["invalid_tool_calls"] = rebuilt.invalid_tool_calls
    if isinstance(rebuilt, ToolMessage):
        update["tool_call_id"] = rebuilt.tool_call_id
    if not keep_id:
        update["id"] = None
    return origin.model_copy(update=update)


def govern_messages(
    governor: Governor | Callable[[list[Message]], GovernResult],
    messages: Sequence[BaseMessage],
) -> tuple[list[BaseMessage], GovernResult]:
    """Govern LangChain messages: the governed messages (see the module docstring for
    what is kept) and the result, whose report indexes the governed list.

    ``governor`` is a Governor or any function from chat dicts to a GovernResult.
    ``messages`` is never mutated.
    """
    originals = convert_to_messages(list(messages))
    edge = _Edge(originals, [_to_dict(m) for m in originals])
    run = governor.govern if isinstance(governor, Governor) else governor
    result = run(edge.dicts)
    return edge.restore(result.messages), result


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
        out, result = govern_messages(governor, _messages_of(value))
        if on_report is not None:
            on_report(result.report)
        return out

    return RunnableLambda(_govern, name="governed")


# -- the target of a chat model -------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What a chat model says about itself: our profile, its model name, its window."""

    profile: str
    model: str | None
    context_window: int | None
    max_output: int | None


def target_of(chat_model: Any) -> Target:
    """The profile, model name, window and output reserve a LangChain chat model implies.

    The provider is the model's ``ls_provider`` (mapped through the adapters' one table,
    _model_profile.PROVIDER_PROFILES; ``openai`` when unknown); the window is the model's
    ``profile["max_input_tokens"]`` when it has one, else the model's known window.
    """
    for _ in range(8):  # a model with bound arguments (``model.bind_tools(...)``): the model
        inner = getattr(chat_model, "bound", None)
        if inner is None:
            break
        chat_model = inner
    params: Mapping[str, Any] = {}
    if isinstance(chat_model, BaseChatModel):
        try:
            params = chat_model._get_ls_params()
        except Exception:  # a partner model whose tracing params fail: no hints
            params = {}
    provider = str(params.get("ls_provider") or "").lower()
    profile = named_profile(provider)
    name = params.get("ls_model_name")
    model = name if isinstance(name, str) and name else None
    window = None
    model_profile = getattr(chat_model, "profile", None)
    if isinstance(model_profile, Mapping):
        found = model_profile.get("max_input_tokens")
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            window = found
    if window is None:
        window = default_window(model)[0]
    output = params.get("ls_max_tokens")
    max_output = output if isinstance(output, int) and not isinstance(output, bool) else None
    return Target(profile, model, window, max_output)


def tool_dicts(tools: Sequence[Any]) -> list[dict[str, Any]] | None:
    """The agent's tools as OpenAI tool definitions (counted against the budget);
    a provider-native tool that has no such form is left out of the count."""
    out = []
    for tool in tools:
        try:
            out.append(convert_to_openai_tool(tool))
        except Exception:  # e.g. {"type": "web_search"}: nothing to count
            continue
    return out or None
