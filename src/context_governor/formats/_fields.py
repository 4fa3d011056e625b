"""Checks and helpers every edge shares: the body fields that mean the same in each API,
and the carrying of a native message's fields through decode, merge and encode."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import InputError
from ..messages import Message, join_fields


@dataclass(frozen=True)
class DecodedBody:
    """A decoded native request: what the pipeline governs and what it must not lose.

    What every native edge decodes (Messages, Responses, Gemini); each edge's
    ``Decoded`` adds what it alone carries, and names the private key of its decoded
    messages (``carry``) and the type of what it keeps there (``origin``)."""

    carry: ClassVar[str]
    origin: ClassVar[type[Any]]

    body: dict[str, Any]
    messages: list[Message]
    tools: list[dict[str, Any]] | None
    model: str | None
    max_output: int | None

    def native_index(self, message: Message) -> int:
        """The native message (or first input item) a chat message came from; -1 for
        the system prompt (instructions) and new ones."""
        origin = message.get(self.carry)
        return origin.index if isinstance(origin, self.origin) else -1


def dumps(value: Any) -> str:
    """JSON text of a carried value, for counting it (never raises on odd values)."""
    return json.dumps(value, ensure_ascii=False, default=repr)


def type_name(value: Any) -> str:
    """A value's type as a JSON reader names it, for error messages."""
    return "null" if value is None else type(value).__name__


def check_common(body: dict[str, Any], max_key: str) -> None:
    """``tools``, the output reserve under ``max_key`` and ``model``: InputError naming
    the field when one is unusable."""
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise InputError("tools", "expected a list of tool definition objects")
    out = body.get(max_key)
    if out is not None and (isinstance(out, bool) or not isinstance(out, int) or out < 0):
        raise InputError(max_key, f"expected a non-negative integer, got {out!r}")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise InputError("model", f"expected a string, got {type_name(model)}")


def same(a: Any, b: Any) -> bool:
    """A chat message (or call) that came back as it was decoded: the same object or an
    equal copy (the carried origins compare by identity)."""
    return a is b or a == b


def unchanged(messages: Sequence[Any], group: Sequence[Any]) -> bool:
    """``messages`` are exactly the chat messages decoded from one native message (its
    ``group``), as they were: then the native message itself can go out."""
    return len(messages) == len(group) and all(
        same(a, b) for a, b in zip(messages, group, strict=True)
    )


def parse_arguments(arguments: Any) -> Any:
    """Chat arguments (a JSON string) as a native call's input object: ``{}`` for none,
    the text under ``arguments`` when it is not JSON (kept rather than lost), a value
    that is not an object under ``value``."""
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"value": value}


def other_fields(native: dict[str, Any], content_key: str) -> dict[str, Any]:
    """A native message's fields but its content (``role`` and unknown ones), in order:
    what a rebuilt message keeps."""
    return {k: v for k, v in native.items() if k != content_key}


def carried_text(native: dict[str, Any], content_key: str, after: tuple[Any, ...]) -> str:
    """The text of a native message's unknown fields and the unknown-role messages after
    it: what its chat message carries that the token counter would not see."""
    unknown = {k: v for k, v in native.items() if k not in ("role", content_key)}
    return dumps([unknown, *after]) if unknown or after else ""


def joined_fields(
    natives: Iterable[tuple[int, dict[str, Any]]], content_key: str, where: str, lost: list[str]
) -> dict[str, Any]:
    """The fields of one native message written from several ((index, message) pairs;
    a message seen twice counts once): all their fields (messages.join_fields). A field
    whose earlier value gave way is appended to ``lost`` as its place in the input body
    (``where[index].key``, e.g. ``messages[3].metadata``)."""
    fields: dict[str, Any] = {}
    setter: dict[str, int] = {}  # which native message each kept value came from
    seen: list[dict[str, Any]] = []
    for index, native in natives:
        if any(native is s for s in seen):
            continue
        seen.append(native)
        own = other_fields(native, content_key)
        fields, replaced = join_fields(fields, own)
        lost.extend(f"{where}[{setter[key]}].{key}" for key in replaced)
        setter.update({key: index for key in own if fields[key] is own[key]})
    return fields


def joined_native(
    earlier: tuple[int, dict[str, Any]],
    later: tuple[int, dict[str, Any]],
    content_key: str,
    where: str,
    content: list[Any],
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The native message two merged ones stand for ((index, message) each): both's
    fields (joined_fields) with ``content``, and the places whose earlier value gave way."""
    lost: list[str] = []
    fields = joined_fields([earlier, later], content_key, where, lost)
    return {**fields, content_key: content}, tuple(lost)
