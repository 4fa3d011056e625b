"""Message types and the small helpers every stage shares.

Messages stay plain OpenAI Chat Completions dicts (drop-in, cheap to pass around);
the TypedDicts document the shape, they are not enforced at run time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypedDict

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})

# A message is a plain dict; the alias keeps signatures readable.
Message = dict[str, Any]
Tools = Sequence[dict[str, Any]]


class FunctionCall(TypedDict):
    name: str
    arguments: str


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall


def role_of(message: Message) -> Any:
    return message.get("role")


def declared_calls(message: Message) -> Iterator[dict[str, Any]]:
    """Tool calls of an assistant message that carry a truthy id (the ones results can answer)."""
    if message.get("role") != "assistant":
        return
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and call.get("id"):
            yield call


def call_name(call: dict[str, Any]) -> Any:
    """The function name of a call as the seed reads it: "" when ``function`` is not a dict."""
    function = call.get("function")
    return function.get("name", "") if isinstance(function, dict) else ""


def has_tool_calls(message: Message) -> bool:
    return bool(message.get("tool_calls"))


def text_parts(content: Any) -> list[dict[str, Any]]:
    """Content as a list of content parts: a str becomes one text part, falsy becomes none."""
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return []


def merge_contents(left: Any, right: Any) -> Any:
    """Join two message contents without losing any part of either.

    Two strings join with a blank line; as soon as one side is a list of parts,
    both become lists and are concatenated, so images and other parts survive.
    """
    if not left:
        return left if right is None else right
    if not right:
        return left
    if isinstance(left, str) and isinstance(right, str):
        return f"{left}\n\n{right}"
    return text_parts(left) + text_parts(right)
