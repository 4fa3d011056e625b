"""Input checks and repairs: bad input gets a clear error or a reported repair.

Two levels, because some problems leave nothing sensible to send (a message that
is not an object, an unknown role) while others have one obvious repair (a tool
call without an id can never be answered: strip it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .errors import InputError
from .messages import ROLES, Message
from .stages.base import Context

STAGE = "input"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def check_messages(messages: Any) -> list[Message]:
    """Raise InputError at the first problem that no repair can fix; return the list."""
    if isinstance(messages, dict) and "messages" in messages:
        raise InputError(
            "messages",
            "got a whole request body (a dict with 'messages'); pass body['messages'] "
            "(and tools=body.get('tools')), or govern the body with govern_request(body, api=...)",
        )
    if not isinstance(messages, list):
        raise InputError(
            "messages", f"expected a list of message objects, got {_type_name(messages)}"
        )
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise InputError(where, f"expected a message object, got {_type_name(message)}")
        role = message.get("role")
        if role is None:
            raise InputError(f"{where}.role", "missing")
        if not isinstance(role, str) or role not in ROLES:
            hint = " (use 'system' for developer messages)" if role == "developer" else ""
            raise InputError(
                f"{where}.role",
                f"unknown role {role!r}; expected system, user, assistant or tool{hint}",
            )
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            raise InputError(
                f"{where}.content",
                f"expected a string, a list of parts or null, got {_type_name(content)}",
            )
        if isinstance(content, list):
            for j, part in enumerate(content):
                if not isinstance(part, dict):
                    raise InputError(
                        f"{where}.content[{j}]",
                        f"expected a content part object, got {_type_name(part)}",
                    )
                if part.get("type") == "text" and not isinstance(part.get("text", ""), str):
                    raise InputError(
                        f"{where}.content[{j}].text",
                        f"expected a string, got {_type_name(part.get('text'))}",
                    )
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise InputError(f"{where}.tool_calls", f"expected a list, got {_type_name(calls)}")
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise InputError(f"{where}.name", f"expected a string, got {_type_name(name)}")
    return messages


def check_tools(tools: Any) -> Sequence[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise InputError("tools", f"expected a list of tool definitions, got {_type_name(tools)}")
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise InputError(
                f"tools[{i}]", f"expected a tool definition object, got {_type_name(tool)}"
            )
    return tools


def _clean_text(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def _repair_call(call: Any, where: str) -> tuple[dict[str, Any] | None, list[str]]:
    """A usable copy of one tool call (or None: strip it) and what was repaired."""
    if not isinstance(call, dict):
        return None, [f"{where}: not an object, removed"]
    call_id = call.get("id")
    if isinstance(call_id, bool) or not isinstance(call_id, str | int) or call_id == "":
        problem = "missing id" if call_id in (None, "") else f"id is {_type_name(call_id)}"
        return None, [f"{where}: {problem}, removed"]
    function = call.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        problem = "missing function name" if name in (None, "") else "function name is not a string"
        return None, [f"{where}: {problem}, removed"]
    assert isinstance(function, dict)
    fixes: list[str] = []
    repaired = dict(call)  # returned only when ``fixes`` is not empty
    if not isinstance(call_id, str):
        repaired["id"] = str(call_id)
        fixes.append(f"{where}.id: number turned into a string")
    if repaired.get("type") != "function":
        repaired["type"] = "function"
        fixes.append(f"{where}.type: set to 'function'")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        new_args = "{}" if arguments is None else json.dumps(arguments, ensure_ascii=False)
        repaired["function"] = {**function, "arguments": new_args}
        fixes.append(
            f"{where}.function.arguments: {_type_name(arguments)} serialized to a JSON string"
        )
    return (repaired if fixes else call), fixes


def _has_surrogate(value: Any) -> bool:
    """Whether a lone surrogate hides anywhere in ``value`` (cheap: most text is ASCII)."""
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_surrogate(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


def _clean_unicode(value: Any, path: str, fixes: list[str]) -> Any:
    """``value`` with lone surrogates replaced in every string inside it (the same
    object when there are none), so that the output can always be sent as UTF-8."""
    if not _has_surrogate(value):
        return value
    if isinstance(value, str):
        if _SURROGATE.search(value):
            fixes.append(f"{path}: invalid unicode (lone surrogate) replaced")
            return _clean_text(value)
        return value
    if isinstance(value, dict):
        cleaned_dict: dict[str, Any] | None = None
        for key, item in value.items():
            new = _clean_unicode(item, f"{path}.{key}", fixes)
            if new is not item:
                cleaned_dict = cleaned_dict if cleaned_dict is not None else dict(value)
                cleaned_dict[key] = new
        return value if cleaned_dict is None else cleaned_dict
    if isinstance(value, list):
        cleaned_list: list[Any] | None = None
        for i, item in enumerate(value):
            new = _clean_unicode(item, f"{path}[{i}]", fixes)
            if new is not item:
                cleaned_list = cleaned_list if cleaned_list is not None else list(value)
                cleaned_list[i] = new
        return value if cleaned_list is None else cleaned_list
    return value


def _repair_message(message: Message, i: int) -> tuple[Message | None, list[str]]:
    where = f"messages[{i}]"
    fixes: list[str] = []
    repaired: Message = _clean_unicode(message, where, fixes)
    role = message.get("role")
    if role == "tool":
        tcid = repaired.get("tool_call_id")
        if isinstance(tcid, int) and not isinstance(tcid, bool):
            repaired = {**repaired, "tool_call_id": str(tcid)}
            fixes.append(f"{where}.tool_call_id: number turned into a string")
    calls = repaired.get("tool_calls")
    if role != "assistant" and calls is not None:
        repaired = {k: v for k, v in repaired.items() if k != "tool_calls"}
        fixes.append(f"{where}.tool_calls: only assistant messages make tool calls, removed")
    elif role == "assistant" and calls:
        new_calls: list[dict[str, Any]] = []
        call_fixes: list[str] = []
        for j, call in enumerate(calls):
            fixed_call, notes = _repair_call(call, f"{where}.tool_calls[{j}]")
            call_fixes += notes
            if fixed_call is not None:
                new_calls.append(fixed_call)
        if call_fixes:
            fixes += call_fixes
            repaired = {k: v for k, v in repaired.items() if k != "tool_calls"}
            if new_calls:
                repaired["tool_calls"] = new_calls
            elif not repaired.get("content"):
                return None, fixes
    return repaired, fixes


def repair_messages(messages: list[Message], ctx: Context) -> list[Message]:
    """Strict profiles' first stage: fix or strip what providers would reject outright."""
    updated: list[Message] | None = None
    for i, message in enumerate(messages):
        repaired, fixes = _repair_message(message, i)
        if not fixes:
            if updated is not None:
                updated.append(message)
            continue
        if updated is None:
            updated = list(messages[:i])
        for n, fix in enumerate(fixes, 1):
            # The token change of the whole message is booked on its last repair.
            saved = (
                ctx.tokens(message) - ctx.tokens(repaired) if repaired and n == len(fixes) else 0
            )
            ctx.record(STAGE, "repair", i, fix, tokens_saved=saved)
        if repaired is None:
            ctx.record(
                STAGE,
                "drop",
                i,
                f"messages[{i}]: assistant message left with nothing to say",
                tokens_saved=ctx.tokens(message),
            )
        else:
            updated.append(repaired)
    return messages if updated is None else updated


_JSON_LEAVES = (str, int, float, bool, type(None))


def unserializable_path(value: Any, path: str) -> str | None:
    """Where in ``value`` something is that JSON cannot carry (slow: only used to explain
    an error once one has happened)."""
    if isinstance(value, _JSON_LEAVES):
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str | int | float | bool):
                return f"{path}.{key!r}"
            found = unserializable_path(item, f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = unserializable_path(item, f"{path}[{i}]")
            if found:
                return found
        return None
    return path
