"""Message types and the small helpers every stage shares.

Messages stay plain OpenAI Chat Completions dicts (drop-in, cheap to pass around);
the TypedDicts document the shape, they are not enforced at run time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

__all__ = [
    "INPUT_ROLES",
    "ROLES",
    "TEXT_PARTS",
    "FunctionCall",
    "Joinable",
    "Message",
    "Role",
    "ToolCall",
    "Tools",
    "call_name",
    "content_text",
    "declared_calls",
    "has_tool_calls",
    "join_fields",
    "merge_contents",
    "role_of",
    "text_parts",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
#: The roles a history may hold: the stages' four, and OpenAI's ``developer`` (system
#: instructions under another name), which govern() hands the stages as a system
#: message and sends back as it came where the provider takes it (roles.py).
INPUT_ROLES: frozenset[str] = ROLES | {"developer"}

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


@runtime_checkable
class Joinable(Protocol):
    """What a format edge carries on a message under its private key (its origin in the
    native body) when two messages can be merged into one: ``joined_with`` gives the carry of
    the merged message and the places (e.g. ``messages[3].metadata``) whose earlier
    value had to give way, because one field holds one value."""

    def joined_with(self, later: Any) -> tuple[Any, tuple[str, ...]]: ...


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value)


def _same(a: Any, b: Any) -> bool:
    """Equal to the letter: 1 == True == 1.0 in Python, but not on the wire."""
    return a is b or (type(a) is type(b) and a == b and repr(a) == repr(b))


def join_fields(
    earlier: Mapping[str, Any], later: Mapping[str, Any], own: Collection[str] = ()
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The fields of two records written as one (two merged messages), and the keys of
    ``earlier`` whose value was replaced.

    Every key of either record is kept, in first-seen order. Where both hold a key with
    different values, only one can stay: the later one (it describes the latest state),
    unless it is empty (None or ""), which never replaces a value; such a key is
    returned so that the caller reports it. Carried origins (:class:`Joinable`) are
    joined instead. ``own`` keys are the caller's to merge: the earlier value is kept
    and never reported.
    """
    out = dict(earlier)
    lost: list[str] = []
    for key, value in later.items():
        if key not in out or key in own:
            out.setdefault(key, value)
            continue
        kept = out[key]
        if _empty(value) or _same(kept, value):
            continue
        if _empty(kept):
            out[key] = value
        elif type(kept) is type(value) and isinstance(kept, Joinable):
            out[key], more = kept.joined_with(value)
            lost.extend(more)
        else:
            out[key] = value
            lost.append(key)
    return out, tuple(lost)


#: Content parts whose ``text`` is answer text: chat and Messages "text", Responses
#: "output_text" (a Responses answer keeps its parts as the API returned them).
TEXT_PARTS = frozenset({"text", "output_text"})


def content_text(content: Any) -> str:
    """The text of a message content: a str as is, the text parts of a list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, dict)
            and isinstance(p.get("type"), str)
            and p["type"] in TEXT_PARTS
            and isinstance(p.get("text"), str)
        )
    return ""
