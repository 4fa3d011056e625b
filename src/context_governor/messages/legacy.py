"""OpenAI's deprecated function calling (``function_call`` and role ``function``), at the edge.

Before tool calls, Chat Completions had one function call per assistant message
(``{"role": "assistant", "content": null, "function_call": {"name", "arguments"}}``)
answered by a message of role ``function`` (``{"role": "function", "name", "content"}``),
with no ids. OpenAI still takes that form, and older clients still send it. Rather than
teach every stage and rule a second way to call tools, this edge hands the pipeline the
same history in tool-call form and, on the way out, puts the caller's own messages back:

* an assistant message with a ``function_call`` (and no ``tool_calls``) becomes a copy
  with one tool call, its id made from the message's place (``cg-function-call-00000007``);
* a ``function`` message becomes a ``tool`` result of the newest call before it that no
  result answered yet (the form pairs them by order); one with no such call gets an id
  of its own, so the stages treat it as any result without a call (reported, removed);
* on the way out each copy the stages left alone is sent as the caller's own message;
  one they changed (an output cleared for space, arguments cleared) or made (a result
  for a call that had none) is written back in the old form, under the call's name.

Only where the provider takes the form (OpenAI: ``Policy.legacy_functions``); elsewhere
such a history is refused with what to send instead, as before: converting it there
would also mean rewriting the body's ``functions`` and the client's reading of the
answer, which is not ours to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from . import Message

__all__ = [
    "FUNCTION",
    "LEGACY_FORM",
    "PREFIX",
    "Legacy",
    "call_id",
    "first_legacy",
    "is_legacy",
    "refusal",
    "rules_view",
    "tools_of",
]

FUNCTION = "function"
#: What an error says the deprecated form is.
LEGACY_FORM = "OpenAI's deprecated function calling (function_call, role 'function')"
#: The ids of the calls this edge makes (a legacy call has none).
PREFIX = "cg-function-call-"


def call_id(index: int) -> str:
    """The id of the call made for the legacy call at ``index``: fixed-width digits, so
    that its token count does not depend on the place (the BPE encodings cut digits in
    threes), and governing an output again counts what the first run counted."""
    return f"{PREFIX}{index:08d}"


def is_legacy(message: Any) -> bool:
    """Whether ``message`` is in the deprecated form: role function, or an assistant
    message with a ``function_call`` and no ``tool_calls``."""
    if type(message) is not dict:
        return False
    role = message.get("role")
    if role == FUNCTION:
        return True
    return (
        role == "assistant"
        and isinstance(message.get("function_call"), dict)
        and not message.get("tool_calls")
    )


def first_legacy(messages: Sequence[Message], start: int = 0) -> int | None:
    """The index of the first message in the deprecated form at or after ``start``."""
    for i in range(start, len(messages)):
        if is_legacy(messages[i]):
            return i
    return None


class Legacy:
    """The tool-call form copies of a conversation's legacy messages, made once per
    message object and place (a Governor then sees the same copy on every call)."""

    def __init__(self) -> None:
        #: (id(original), call id) -> (original, copy)
        self._copies: dict[tuple[int, str], tuple[Message, Message]] = {}
        #: id(copy) -> original
        self._originals: dict[int, Message] = {}
        #: call id -> the function's name (to write a result back in the old form): the
        #: result's own name where it had one, else its call's
        self._names: dict[str, str] = {}
        self._result_names: dict[str, str] = {}

    def decode(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with each legacy message replaced by its tool-call form copy."""
        out = list(messages)
        waiting: list[str] = []  # calls not answered yet, oldest first
        live: set[tuple[int, str]] = set()
        for i, message in enumerate(out):
            if type(message) is not dict:
                continue
            role = message.get("role")
            if role == FUNCTION:
                made = waiting.pop() if waiting else call_id(i) + "-result"
                out[i] = self._copy(message, made, live)
            elif is_legacy(message):
                made = call_id(i)
                out[i] = self._copy(message, made, live)
                waiting = [made]
            elif role in ("user", "assistant", "system", "developer"):
                waiting = []  # a call is answered right after it, or not at all
        if len(self._copies) > 2 * len(live) + 8:
            for key in [k for k in self._copies if k not in live]:
                _, copy = self._copies.pop(key)
                self._originals.pop(id(copy), None)
        return out

    def _copy(self, original: Message, call_id: str, live: set[tuple[int, str]]) -> Message:
        key = (id(original), call_id)
        live.add(key)
        entry = self._copies.get(key)
        if entry is not None and entry[0] is original:
            return entry[1]
        if original.get("role") == FUNCTION:
            name = original.get("name")
            copy: Message = {
                k: v for k, v in original.items() if k not in ("role", "name", "tool_call_id")
            }
            copy = {"role": "tool", "tool_call_id": call_id, **copy}
            if isinstance(name, str) and name:
                self._result_names[call_id] = name
        else:
            call = original["function_call"]
            copy = {k: v for k, v in original.items() if k not in ("function_call", "tool_calls")}
            copy["tool_calls"] = [{"id": call_id, "type": "function", "function": call}]
            name = call.get("name")
            if isinstance(name, str) and name:
                self._names[call_id] = name
        self._copies[key] = (original, copy)
        self._originals[id(copy)] = original
        return copy

    def encode(self, sent: Sequence[Message]) -> list[Message]:
        """The list to send for the pipeline's output ``sent``: each copy left alone as
        the caller's own message, each message of this edge's calls a stage changed or
        made written back in the old form."""
        return [self._encode(m) for m in sent]

    def _encode(self, message: Message) -> Message:
        original = self._originals.get(id(message))
        if original is not None:
            return original
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id.startswith(PREFIX):
                rest = {k: v for k, v in message.items() if k not in ("role", "tool_call_id")}
                name = self._result_names.get(call_id) or self._names.get(call_id) or FUNCTION
                return {"role": FUNCTION, "name": name, **rest}
        elif role == "assistant":
            calls = message.get("tool_calls")
            if (
                isinstance(calls, list)
                and len(calls) == 1
                and isinstance(calls[0], dict)
                and str(calls[0].get("id", "")).startswith(PREFIX)
            ):
                rest = {k: v for k, v in message.items() if k != "tool_calls"}
                return {**rest, "function_call": calls[0].get("function")}
        return message


def tools_of(body: dict[str, Any]) -> Any:
    """The body's ``tools``, or its deprecated ``functions`` in tools form (to count them
    and check tool names), or None."""
    tools = body.get("tools")
    if tools is not None:
        return tools
    functions = body.get("functions")
    if not isinstance(functions, list):
        return None
    return [{"type": "function", "function": f} for f in functions if isinstance(f, dict)]


def refusal(index: int, provider: str) -> InputError:
    """The error for a history in the deprecated form where ``provider`` does not take it."""
    return InputError(
        f"messages[{index}]",
        f"{LEGACY_FORM}, which {provider} does not take: send the call as the assistant's "
        "tool_calls and its result as role 'tool'",
    )


def rules_view(messages: list[Message], accepted: bool, provider: str) -> list[Message]:
    """``messages`` as a provider's rules should see them: in tool-call form where the
    provider takes the deprecated form (``accepted``), refused where it does not."""
    first = first_legacy(messages)
    if first is None:
        return messages
    if not accepted:
        raise refusal(first, provider)
    return Legacy().decode(messages)
