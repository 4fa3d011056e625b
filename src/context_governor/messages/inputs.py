"""Input checks and repairs: bad input gets a clear error or a reported repair.

Two levels, because some problems leave nothing sensible to send (a message that
is not an object, an unknown role) while others have one obvious repair (a tool
call without an id can never be answered: strip it).

Every walk over user data here is iterative: a hostile message may nest 10^5
levels deep or contain itself, and Python's recursion limit (1,000 frames) must
never be what stops it. check_messages() refuses such input up front
(``MAX_DEPTH``, cycles), so the stages after it, and json.dumps inside the token
counters, only ever see finite trees of bounded depth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InputError, brief
from ..report import moves_messages
from . import INPUT_ROLES, Message

__all__ = [
    "MAX_CONTAINERS",
    "MAX_DEPTH",
    "STAGE",
    "check_messages",
    "check_structure",
    "check_tools",
    "has_surrogate",
    "repair_message",
    "stored_call_id",
    "structure_problem",
    "unserializable_path",
]

STAGE = moves_messages("input")
_SURROGATE = re.compile("[\ud800-\udfff]")

#: How many containers (objects and lists) one message or tool definition may nest,
#: itself included. Real messages nest 3-5 levels (message, content list, part,
#: image_url) and tool schemas a few dozen; strict JSON parsers in front of model
#: APIs stop far earlier (serde_json, common in Rust services, at 128). 256 leaves
#: room for every legitimate use while keeping the recursive code that is not ours
#: safe: CPython 3.11 spends one frame per level in json.dumps and json.loads and two
#: in a comprehension-based copy, so 256 levels use at most ~520 of the 1,000 frames
#: a thread may have, leaving the rest to the caller's own stack.
MAX_DEPTH = 256
#: How many objects and lists one message or tool definition may hold, a shared
#: one counted each time it occurs (its JSON has that many). Far above any real
#: message (a 1 MB JSON document of empty lists has 500,000).
MAX_CONTAINERS = 1_000_000
_CONTAINERS = (dict, list, tuple)
#: The containers a message's JSON is made of.
_NESTED = (dict, list)
_TEXT_OR_NESTED = (str, dict, list)


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def check_messages(messages: Any, *, legacy: bool = False) -> list[Message]:
    """Raise InputError at the first problem that no repair can fix; return the list.

    ``legacy`` lets role ``function`` (OpenAI's deprecated function calling) through, for
    callers that hand the history to the edge that rewrites it (legacy.py)."""
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
        if not isinstance(role, str) or (
            role not in INPUT_ROLES and not (legacy and role == "function")
        ):
            hint = (
                "; role 'function' is OpenAI's deprecated function-calling form: send the "
                "call as the assistant's tool_calls and its result as role 'tool'"
                if role == "function"
                else ""
            )
            raise InputError(
                f"{where}.role",
                f"unknown role {brief(role)}; expected system, developer, user, assistant "
                f"or tool{hint}",
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
        if "tool_call_ids" in message:
            _check_call_ids(message, where)
        check_structure(message, where)
    return messages


def stored_call_id(message: Message) -> str | None:
    """The call id a stored ``tool_call_ids`` list names, when its meaning is certain: a
    tool message whose list holds exactly one id string, agreeing with ``tool_call_id``
    where that is set too. SWE-agent stores its tool results this way (one call per
    step; the id goes out as ``tool_call_id``). None otherwise."""
    ids = message.get("tool_call_ids")
    if message.get("role") != "tool" or not isinstance(ids, list) or len(ids) != 1:
        return None
    only = ids[0]
    if not isinstance(only, str) or not only:
        return None
    given = message.get("tool_call_id")
    return only if given is None or given == only else None


def _check_call_ids(message: Message, where: str) -> None:
    """Refuse a ``tool_call_ids`` whose meaning is not certain (see stored_call_id): read,
    it would be a guess at which call a result answers; dropped, a real result would
    become an orphan and be replaced by a placeholder."""
    if message.get("role") != "tool" or stored_call_id(message) is not None:
        return  # on other roles it is an unknown field, sent as the caller gave it
    ids = message.get("tool_call_ids")
    given = message.get("tool_call_id")
    if isinstance(ids, list) and len(ids) == 1 and given is not None and ids[0] != given:
        raise InputError(
            f"{where}.tool_call_ids",
            f"names call {brief(ids[0])} but tool_call_id is {brief(given)}: which call this "
            "result answers is not certain; send one of them",
        )
    raise InputError(
        f"{where}.tool_call_ids",
        f"expected a list of one call id (SWE-agent's stored form), got {brief(ids)}: one tool "
        "message answers one call; send each result as its own message with tool_call_id",
    )


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
        check_structure(tool, f"tools[{i}]")
    return tools


def _label(key: Any) -> str:
    """One step of a path as the error messages write it: ``.key`` or ``[index]``."""
    if isinstance(key, str):
        return f".{key}"
    return f"[{brief(key)}]" if not isinstance(key, int) or isinstance(key, bool) else f"[{key}]"


def _short_path(where: str, labels: Sequence[str]) -> str:
    """``where`` plus the steps, eliding the middle of a very long path (one of 10^5
    levels would otherwise make a megabyte of error message)."""
    if len(labels) <= 8:
        return where + "".join(labels)
    return where + "".join(labels[:4]) + "[...]" + "".join(labels[-2:])


def _children(value: Any) -> Iterator[tuple[Any, Any]]:
    if isinstance(value, dict):
        return iter(value.items())
    return enumerate(value)


def structure_problem(value: Any, where: str) -> tuple[str, str] | None:
    """The first place where ``value`` nests deeper than MAX_DEPTH containers or
    contains itself, as (path, problem); None when it is a finite tree of bounded
    depth. Iterative, linear in the number of containers for trees.

    A container reached twice without being its own ancestor (the same dict used
    in two places) is shared, not a cycle: JSON carries it as two copies, and so it
    is walked once per place. That is also why the walk stops after MAX_CONTAINERS:
    a few shared lists nested in each other stand for exponentially many copies
    (2^60 from 60 lists of two), which json.dumps and every stage would expand.
    """
    if not isinstance(value, _CONTAINERS):
        return None
    stack: list[Iterator[tuple[Any, Any]]] = [_children(value)]
    labels: list[str] = []
    on_path: list[int] = [id(value)]
    ancestors = {id(value)}
    budget = MAX_CONTAINERS
    while stack:
        found = next(((k, v) for k, v in stack[-1] if isinstance(v, _CONTAINERS)), None)
        if found is None:
            stack.pop()
            ancestors.discard(on_path.pop())
            if labels:
                labels.pop()
            continue
        key, child = found
        depth = len(stack) + 1
        child_id = id(child)
        if child_id in ancestors:
            return _short_path(
                where, [*labels, _label(key)]
            ), "contains a cycle (it contains itself)"
        if depth > MAX_DEPTH:
            return (
                _short_path(where, [*labels, _label(key)]),
                f"nested deeper than {MAX_DEPTH} levels",
            )
        budget -= 1
        if budget < 0:
            return (
                _short_path(where, [*labels, _label(key)]),
                f"holds more than {MAX_CONTAINERS:,} objects and lists "
                "(counting a shared one each time it occurs)",
            )
        stack.append(_children(child))
        labels.append(_label(key))
        on_path.append(child_id)
        ancestors.add(child_id)
    return None


def _plain_tree(value: Any) -> bool:
    """The fast check for the common case: at most MAX_DEPTH levels and MAX_CONTAINERS
    containers, counting a shared one each time (so a cycle, being infinitely deep,
    fails too). False means "look closer" with structure_problem. Walked a level at a
    time (every message of a history passes here: no tuple per container)."""
    budget = MAX_CONTAINERS
    level = [value]
    depth = 1
    while level:
        budget -= len(level)
        if depth > MAX_DEPTH or budget < 0:
            return False
        below: list[Any] = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if type(child) is not str and isinstance(child, _CONTAINERS):
                    below.append(child)
        level = below
        depth += 1
    return True


def check_structure(value: Any, where: str) -> None:
    """Raise InputError when ``value`` is too deep or cyclic (see structure_problem)."""
    if not isinstance(value, _CONTAINERS) or _plain_tree(value):
        return
    problem = structure_problem(value, where)
    if problem is not None:
        raise InputError(*problem)


def _clean_text(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)


def _plain_call(call: Any) -> bool:
    """Whether ``call`` surely needs no repair (_repair_call would change nothing): the
    common case, told without a copy or a message."""
    if type(call) is not dict or call.get("type") != "function":
        return False
    call_id, function = call.get("id"), call.get("function")
    if type(call_id) is not str or not call_id or type(function) is not dict:
        return False
    name = function.get("name")
    return type(name) is str and name != "" and type(function.get("arguments")) is str


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


def has_surrogate(value: Any) -> bool:
    """Whether a lone surrogate hides anywhere in ``value`` (cheap: most text is ASCII).

    Iterative, and each container is looked at once, so depth and sharing cost nothing.
    A message's own strings are looked at first, without the walk's bookkeeping."""
    if type(value) is not dict:
        return _surrogate_in([value], set())
    nested: list[Any] = []
    for item in value.values():
        if type(item) is str:
            if not item.isascii() and _SURROGATE.search(item) is not None:
                return True
        elif isinstance(item, _TEXT_OR_NESTED):
            nested.append(item)
    return bool(nested) and _surrogate_in(nested, {id(value)})


def _surrogate_in(pending: list[Any], seen: set[int]) -> bool:
    """has_surrogate's walk over ``pending`` (containers in ``seen`` are not looked at)."""
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item) is not None:
                return True
        elif isinstance(item, _NESTED):
            if id(item) in seen:
                continue
            seen.add(id(item))
            pending.extend(item.values() if isinstance(item, dict) else item)
    return False


def _surrogate_paths(value: Any) -> list[tuple[Any, ...]]:
    """The key paths, in document order, of every string with a lone surrogate inside
    ``value`` (dicts and lists; iterative; a container that contains itself is not
    followed into itself)."""
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Iterator[tuple[Any, Any]]]] = [((), _children(value))]
    ancestors = [id(value)]
    while stack:
        keys, items = stack[-1]
        for key, item in items:
            if isinstance(item, str):
                if not item.isascii() and _SURROGATE.search(item) is not None:
                    found.append((*keys, key))
            elif isinstance(item, dict | list) and id(item) not in ancestors:
                stack.append(((*keys, key), _children(item)))
                ancestors.append(id(item))
                break
        else:
            stack.pop()
            ancestors.pop()
    return found


def _clean_unicode(value: Any, path: str, fixes: list[str]) -> Any:
    """``value`` with lone surrogates replaced in every string inside it (the same
    object when there are none), so that the output can always be sent as UTF-8.

    Only the containers on the way to a repaired string are copied; the rest of the
    copy shares the input's objects (which are never modified)."""
    if not has_surrogate(value):
        return value
    if isinstance(value, str):
        fixes.append(f"{path}: invalid unicode (lone surrogate) replaced")
        return _clean_text(value)
    if not isinstance(value, dict | list):
        return value
    root: Any = dict(value) if isinstance(value, dict) else list(value)
    copies: dict[tuple[Any, ...], Any] = {(): root}
    for keys in _surrogate_paths(value):
        fixes.append(
            f"{path}{''.join(map(_label, keys))}: invalid unicode (lone surrogate) replaced"
        )
        parent = root
        for n, key in enumerate(keys[:-1], 1):
            copied = copies.get(keys[:n])
            if copied is None:
                original = parent[key]
                copied = dict(original) if isinstance(original, dict) else list(original)
                parent[key] = copied
                copies[keys[:n]] = copied
            parent = copied
        parent[keys[-1]] = _clean_text(parent[keys[-1]])
    return root


def repair_message(message: Message, i: int) -> tuple[Message | None, list[str]]:
    """Message ``i`` with what providers would reject outright fixed or stripped, and what
    was done (one line each); None when nothing sensible is left to send."""
    where = f"messages[{i}]"
    fixes: list[str] = []
    repaired: Message = _clean_unicode(message, where, fixes)
    role = message.get("role")
    if role == "tool":
        stored = stored_call_id(repaired)
        if stored is not None:
            repaired = {k: v for k, v in repaired.items() if k != "tool_call_ids"}
            repaired["tool_call_id"] = stored
            fixes.append(
                f"{where}.tool_call_ids: read as tool_call_id {stored!r} (the stored form of "
                "SWE-agent; no provider accepts the list)"
            )
        tcid = repaired.get("tool_call_id")
        if isinstance(tcid, int) and not isinstance(tcid, bool):
            repaired = {**repaired, "tool_call_id": str(tcid)}
            fixes.append(f"{where}.tool_call_id: number turned into a string")
    calls = repaired.get("tool_calls")
    if role != "assistant" and calls is not None:
        repaired = {k: v for k, v in repaired.items() if k != "tool_calls"}
        fixes.append(f"{where}.tool_calls: only assistant messages make tool calls, removed")
    elif role == "assistant" and calls and not all(_plain_call(call) for call in calls):
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


_JSON_LEAVES = (str, int, float, bool, type(None))


def unserializable_path(value: Any, path: str) -> str | None:
    """Where in ``value`` something is that JSON cannot carry: a value of another type,
    a key that is not a string or a number, or a container that contains itself (slow:
    only used to explain an error once one has happened; iterative, so any depth)."""
    if isinstance(value, _JSON_LEAVES):
        return None
    if not isinstance(value, _CONTAINERS):
        return path
    stack: list[Iterator[tuple[Any, Any]]] = [_children(value)]
    labels: list[str] = []
    ancestors: list[int] = [id(value)]
    open_ids = {id(value)}  # the same ids as a set: a lookup per step, not a scan (depth 10^5)
    while stack:
        for key, item in stack[-1]:
            if isinstance(key, str | int | float | bool) or key is None:
                pass
            else:
                return _short_path(path, [*labels, f".{brief(key)}"])
            if isinstance(item, _JSON_LEAVES):
                continue
            if not isinstance(item, _CONTAINERS) or id(item) in open_ids:
                return _short_path(path, [*labels, _label(key)])
            stack.append(_children(item))
            labels.append(_label(key))
            ancestors.append(id(item))
            open_ids.add(id(item))
            break
        else:
            stack.pop()
            open_ids.discard(ancestors.pop())
            if labels:
                labels.pop()
    return None
