"""The OpenAI Responses edge: a request body <-> the pipeline's chat messages, losslessly.

A Responses body carries its history as ``input``: a string (one user message) or
a list of *items*. Decoding cuts the item list into runs, one chat message per run,
in the body's own order:

* a ``message`` item of role user -> a user message; system or developer -> a
  system message (content as it is: ``input_text``, images, files...);
* a ``function_call_output`` / ``custom_tool_call_output`` -> a ``tool`` message
  (``output`` as content, the call's name as ``name``);
* every other item joins the *assistant step* it stands in: a maximal run of
  items the model produced (assistant messages, ``function_call``,
  ``custom_tool_call``, ``reasoning``, hosted-tool items and their outputs,
  ``item_reference``, item types we do not know) -> one assistant message whose
  ``tool_calls`` are the step's function and custom tool calls and whose content
  is the text parts of its assistant messages.

So a reasoning item travels with the item that follows it (they are in one
step, and a stage removes a message whole), a computer call with its output, and
encrypted reasoning is never looked at. Each chat message carries its
:class:`Origin` (the native items of its run) under the private key :data:`CARRY`.
Encoding emits a run's native items *themselves* when its chat message came back
unchanged; a changed message is rebuilt from its items, with the calls, outputs
and content the pipeline changed. Hence ``encode(decode(body)) == body``.

With server-side state (``previous_response_id``, ``conversation``, a stored
``prompt`` or ``item_reference`` items), an output may answer a call the body
does not carry: it is then decoded as an opaque user message, kept as it is,
rather than dropped as an orphan.

A ``compaction`` item (server-side compaction, or ``/responses/compact``) carries the
state of what came before it, encrypted: OpenAI's guide lets a client drop the items
before the newest one. Those items are carried as they are and never decoded or
governed; of them, only the message items of the client's roles (user, system,
developer) are counted, since a compacted window keeps them (``/responses/compact``
answers "all user messages, followed by a single compaction item"). The newest
compaction item is decoded as a system message holding it (a role no stage cuts or
edits), sent back as it came. See docs/native-compaction.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from ..errors import InputError
from ..messages import Message, join_fields, merge_contents
from ._fields import DecodedBody, check_common
from ._fields import dumps as _dumps
from ._fields import type_name as _type_name

#: Private key of a decoded message: its Origin. Not a chat field; never sent.
CARRY = "_responses"
#: Private key on a chat tool call: the call_id it had in the body (ids can be rekeyed).
CALL_ORIGIN = "_responses_call_id"
#: Top-level fields that are settings, not prompt: not counted as prompt tokens.
_SETTINGS = frozenset(
    {
        "model", "input", "instructions", "tools", "tool_choice", "max_output_tokens",
        "temperature", "top_p", "stream", "stream_options", "store", "reasoning", "text",
        "include", "metadata", "parallel_tool_calls", "previous_response_id", "conversation",
        "truncation", "user", "service_tier", "background", "prompt", "prompt_cache_key",
        "safety_identifier", "max_tool_calls", "top_logprobs", "context_management",
    }
)  # fmt: skip
CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
OUTPUTS = frozenset(CALLS.values())
INPUT_ROLES = {"user": "user", "system": "system", "developer": "system"}
#: What makes a body continue a history the body does not carry.
SERVER_STATE = ("previous_response_id", "conversation", "prompt")
MAX_CALL_ID = 64
#: Origin.index of the system message decoded from ``instructions``.
INSTRUCTIONS = -2
#: The item type of server-side compaction: the encrypted state of every item before it.
COMPACTION = "compaction"


@dataclass(frozen=True, eq=False)
class Origin:
    """The native items a chat message was decoded from (compared by identity).

    ``extra`` is the text of what the message carries that the token counter does
    not see otherwise (reasoning, hosted-tool items, unknown items and fields):
    counted with it, and gone with it if it is cut.
    """

    index: int  # the run's first item in body["input"] (-1: a string input; -2: instructions)
    items: tuple[Any, ...]
    extra: str = ""
    #: a step after the user's newest message: its reasoning is read (see _step)
    live: bool = True

    def joined_with(self, later: Any) -> tuple[Origin, tuple[str, ...]]:
        """The origin of the message the pipeline merged from this one's and ``later``'s:
        both runs' items, in order. Nothing gives way: the API takes consecutive items
        of one side, so the encoder can send them all (see ``_rebuild_inputs``)."""
        if not isinstance(later, Origin):
            return self, ()
        extra = "\n".join(e for e in (self.extra, later.extra) if e)
        return Origin(self.index, self.items + later.items, extra, self.live or later.live), ()


@dataclass(frozen=True)
class Decoded(DecodedBody):
    """A decoded request: what the pipeline governs and what it must not lose."""

    carry: ClassVar[str] = CARRY
    origin: ClassVar[type[Any]] = Origin

    #: the chat message decoded from each run, by the run's first item index
    groups: dict[int, Message] = field(default_factory=dict)
    instructions: Message | None = None
    #: call_id -> the type of the call item declaring it ("function_call", ...)
    call_types: dict[str, str] = field(default_factory=dict)
    #: what continues server-side ("previous_response_id=resp_1", "item_reference"...)
    server_state: tuple[str, ...] = ()
    #: text of top-level fields we do not know (counted as prompt, to be safe)
    extra: str = ""
    #: the position of the newest compaction item in ``input``: what the model reads
    #: starts there
    boundary: int | None = None
    #: the items before it: carried as they are, unread
    dead: tuple[Any, ...] = ()


def is_compaction(item: Any) -> bool:
    """A compaction item the API can read: its ``encrypted_content`` a non-empty string
    (one without is refused: RS-8)."""
    if item_type(item) != COMPACTION:
        return False
    sealed = item.get("encrypted_content")
    return isinstance(sealed, str) and bool(sealed)


def boundary(items: Any) -> int | None:
    """The position of the newest compaction item of ``input``; None when there is none."""
    if not isinstance(items, list):
        return None
    return next((i for i in range(len(items) - 1, -1, -1) if is_compaction(items[i])), None)


def read_before(item: Any) -> bool:
    """An item before the newest compaction item that the model may still read: a
    message of the client's roles (a compacted window keeps the user messages)."""
    return item_type(item) == "message" and _client_role(item)


def item_type(item: Any) -> str:
    """An item's type; a message item may omit it (the "easy" input message)."""
    if not isinstance(item, dict):
        return ""
    kind = item.get("type")
    if isinstance(kind, str):
        return kind
    return "message" if kind is None and "role" in item else ""


def input_side(item: Any) -> bool:
    """Items the client writes: user/system/developer messages and call outputs. Every
    other item belongs to an assistant step."""
    kind = item_type(item)
    if kind == "message":
        return _client_role(item)
    return kind in OUTPUTS


def _client_role(item: dict[str, Any]) -> bool:
    """A message item of the client's roles (a role that is not a string is none)."""
    role = item.get("role")
    return isinstance(role, str) and role in INPUT_ROLES


def short_id(call_id: str) -> str:
    """A deterministic call id of at most 64 characters for a longer one: a prefix, "_",
    and 16 hex digits of its SHA-256 (the API's limit, RS-4)."""
    if len(call_id) <= MAX_CALL_ID:
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{call_id[: MAX_CALL_ID - 17]}_{digest}"


# -- decode -----------------------------------------------------------------------------------


def _check_parts(parts: list[Any], where: str) -> None:
    for j, part in enumerate(parts):
        if not isinstance(part, dict):
            raise InputError(
                f"{where}[{j}]", f"expected a content part object, got {_type_name(part)}"
            )
        if part.get("type") == "text" and not isinstance(part.get("text", ""), str):
            raise InputError(f"{where}[{j}].text", "expected a string")


def _check_item(item: Any, i: int) -> None:
    where = f"input[{i}]"
    if not isinstance(item, dict):
        raise InputError(where, f"expected an item object, got {_type_name(item)}")
    kind = item_type(item)
    if kind == "message":
        role = item.get("role")
        if not isinstance(role, str):
            raise InputError(f"{where}.role", "missing" if role is None else "expected a string")
        content = item.get("content")
        if not isinstance(content, str | list):
            raise InputError(
                f"{where}.content",
                f"expected a string or a list of content parts, got {_type_name(content)}",
            )
        if isinstance(content, list):
            _check_parts(content, f"{where}.content")
    if kind in CALLS or kind in OUTPUTS:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            got = "missing" if call_id is None else f"expected a string, got {_type_name(call_id)}"
            raise InputError(f"{where}.call_id", got)
    if kind in OUTPUTS:
        output = item.get("output")
        if not isinstance(output, str | list):
            raise InputError(
                f"{where}.output",
                f"expected a string or a list of content parts, got {_type_name(output)}",
            )
        if isinstance(output, list):
            _check_parts(output, f"{where}.output")


def _check_body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InputError("body", f"expected a Responses request object, got {_type_name(body)}")
    items = body.get("input")
    if items is not None and not isinstance(items, str | list):
        raise InputError("input", f"expected a string or a list of items, got {_type_name(items)}")
    for i, item in enumerate(items if isinstance(items, list) else ()):
        _check_item(item, i)
    check_common(body, "max_output_tokens")
    return body


def _runs(items: list[Any]) -> list[tuple[int, list[Any]]]:
    """(first index, items) of each run: one per input-side item, one per assistant step."""
    runs: list[tuple[int, list[Any]]] = []
    step: list[Any] = []
    start = 0
    for i, item in enumerate(items):
        if input_side(item):
            if step:
                runs.append((start, step))
                step = []
            runs.append((i, [item]))
        else:
            if not step:
                start = i
            step.append(item)
    if step:
        runs.append((start, step))
    return runs


def to_call(item: dict[str, Any]) -> dict[str, Any]:
    """A function or custom tool call item as a chat tool call (custom input as arguments)."""
    arguments = item.get("arguments") if item_type(item) == "function_call" else item.get("input")
    return {
        "id": item.get("call_id"),
        "type": "function",
        "function": {"name": item.get("name"), "arguments": arguments},
    }


#: Part types whose ``text`` the model reads as text (a chat message's ``text`` part).
_TEXT_PARTS = frozenset({"input_text", "output_text"})


def _read_part(part: Any) -> Any:
    kind = part.get("type") if isinstance(part, dict) else None
    if isinstance(kind, str) and kind in _TEXT_PARTS and "text" in part:
        return {"type": "text", "text": part["text"]}
    return part


def model_view(message: Message) -> Message | None:
    """What the model reads of a message decoded from Responses items, for counting
    (None: the message as it is). OpenAI's models read a call as its name and arguments
    and a result as its output: not the call ids, not the arguments JSON-escaped inside a
    JSON list, not the text parts' JSON. Counted this way, six real Codex sessions (362
    requests) come within a few percent of the usage the upstream recorded
    (docs/token-counting.md); counted as chat JSON they were 10-16% high."""
    content = message.get("content")
    parts: list[Any] | None = None
    changed = False
    if isinstance(content, list):
        parts = [_read_part(p) for p in content]
        changed = any(a is not b for a, b in zip(parts, content, strict=True))
    calls = message.get("tool_calls")
    if not calls and not changed and "tool_call_id" not in message:
        return None
    view = {k: v for k, v in message.items() if k not in ("tool_calls", "tool_call_id")}
    if parts is not None:
        view["content"] = parts
    if calls:
        said = [_call_text(call) for call in calls]
        if isinstance(view.get("content"), list):
            view["content"] = [*view["content"], *({"type": "text", "text": t} for t in said)]
        else:
            view["content"] = "\n".join([*filter(None, [view.get("content")]), *said])
    return view


def model_views(
    messages: Sequence[Message],
) -> tuple[list[Message], Callable[[Message], Message | None]]:
    """``model_view`` of each message, made once: the list to seed the call's counter and
    count store with (the objects it will be asked about), and the view function, which
    answers a message it has seen with the same object (counts are kept by identity)."""
    made: dict[int, tuple[Message, Message]] = {}
    seen: list[Message] = []
    for message in messages:
        view = model_view(message)
        if view is not None:
            made[id(message)] = (message, view)
        seen.append(message if view is None else view)

    def unread(message: Message) -> Message | None:
        entry = made.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        return model_view(message)

    return seen, unread


def _call_text(call: Any) -> str:
    """A tool call as the model reads it: the recipient and its arguments as sent."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return _dumps(call)
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        arguments = _dumps(arguments)
    return f"to=functions.{function.get('name')} json {arguments}"


def _text_parts(item: dict[str, Any]) -> list[Any]:
    content = item.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _reasoning_read(item: dict[str, Any], live: bool) -> dict[str, Any]:
    """What of a reasoning item the model reads, for counting (never its id): nothing but
    its type before the user's newest message (the API ignores and removes earlier turns'
    reasoning: OpenAI's reasoning guide); after it, its ``encrypted_content`` (counted by
    length, counting/_payload.py) or, without one, its summary as the best text we have."""
    if not live:
        return {"type": "reasoning"}
    if isinstance(item.get("encrypted_content"), str):
        return {"type": "reasoning", "encrypted_content": item["encrypted_content"]}
    return {k: v for k, v in item.items() if k != "id"}


#: Keys of a call item and of an assistant message item in a step that the chat message
#: holds (name, arguments, content) or that the model does not read (the envelope: type,
#: ids, status): what else an item has is carried and counted.
_CALL_READ = frozenset({"name", "arguments", "input", "type", "call_id", "id", "status"})
_STEP_MESSAGE_READ = frozenset({"content", "type", "role", "id", "status"})


def _step(items: list[Any], live: bool = True) -> tuple[Message, str]:
    """An assistant step as one chat message, and the text of what it carries opaquely
    (reasoning as the model reads it: ``live``, after the user's newest message)."""
    content: list[Any] = []
    calls: list[dict[str, Any]] = []
    opaque: list[Any] = []
    for item in items:
        kind = item_type(item)
        if kind == "reasoning":
            opaque.append(_reasoning_read(item, live))
        elif kind in CALLS:
            calls.append(to_call(item))
            opaque.append({k: v for k, v in item.items() if k not in _CALL_READ})
        elif kind == "message" and item.get("role") == "assistant":
            content.extend(_text_parts(item))
            opaque.append({k: v for k, v in item.items() if k not in _STEP_MESSAGE_READ})
        else:
            opaque.append(item)
    message: Message = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = calls
    kept = [value for value in opaque if value]
    return message, _dumps(kept) if kept else ""


def _single(
    item: dict[str, Any], names: dict[str, Any], declared: set[str], server: bool
) -> Message:
    """The chat message of one input-side item."""
    kind = item_type(item)
    if kind == "message":
        message: Message = {"role": INPUT_ROLES[item["role"]], "content": item["content"]}
        return message
    call_id = item.get("call_id")
    if server and not (isinstance(call_id, str) and call_id in declared):
        # It may answer a call stored server-side: carried as it is, never an orphan.
        return {"role": "user", "content": item["output"]}
    tool: Message = {"role": "tool", "tool_call_id": call_id, "content": item["output"]}
    name = names.get(call_id) if isinstance(call_id, str) else None
    if isinstance(name, str):
        tool["name"] = name
    return tool


def _fields_text(item: dict[str, Any], known: frozenset[str]) -> str:
    rest = {k: v for k, v in item.items() if k not in known}
    return _dumps(rest) if rest else ""


_MESSAGE_KEYS = frozenset({"type", "role", "content"})
_OUTPUT_KEYS = frozenset({"type", "call_id", "output"})


def server_state(body: dict[str, Any]) -> tuple[str, ...]:
    """What of the conversation lives server-side: the body's references to it."""
    found = [
        f"{key}={body[key] if isinstance(body[key], str) else _dumps(body[key])}"
        for key in SERVER_STATE
        if body.get(key) is not None
    ]
    items = body.get("input")
    refs = (
        sum(1 for it in items if item_type(it) == "item_reference")
        if isinstance(items, list)
        else 0
    )
    if refs:
        found.append(f"{refs} item_reference item(s)")
    return tuple(found)


def _newest_prompt(items: Sequence[Any]) -> int:
    """The index of the user's newest message in ``items``; -1 when there is none."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item_type(item) == "message" and item.get("role") == "user":
            return index
    return -1


def decode(body: Any) -> Decoded:
    """The pipeline's view of a Responses request body (which is never modified)."""
    body = _check_body(body)
    messages: list[Message] = []
    instructions: Message | None = None
    raw = body.get("instructions")
    if isinstance(raw, str) and raw:
        instructions = {"role": "system", "content": raw, CARRY: Origin(INSTRUCTIONS, ())}
        messages.append(instructions)
    state = server_state(body)
    groups: dict[int, Message] = {}
    call_types: dict[str, str] = {}
    items = body.get("input")
    if isinstance(items, str):
        message: Message = {"role": "user", "content": items, CARRY: Origin(-1, (items,))}
        groups[-1] = message
        messages.append(message)
        items = []
    bound = boundary(items)
    dead: tuple[Any, ...] = ()
    if bound is not None:
        assert isinstance(items, list)
        dead = tuple(items[:bound])
        pin: Message = {"role": "system", "content": [_sealed(items[bound])]}
        pin[CARRY] = Origin(bound, (items[bound],))
        groups[bound] = pin
        messages.append(pin)
    first = 0 if bound is None else bound + 1
    live = [] if not isinstance(items, list) else items[first:]
    names: dict[str, Any] = {}
    declared: set[str] = set()
    for item in live:
        if item_type(item) in CALLS and isinstance(item.get("call_id"), str):
            declared.add(item["call_id"])
            names.setdefault(item["call_id"], item.get("name"))
            call_types.setdefault(item["call_id"], item_type(item))
            call_types.setdefault(short_id(item["call_id"]), item_type(item))
    prompt = _newest_prompt(items or [])
    for at, run in _runs(live):
        start = at + first
        if input_side(run[0]):
            item = run[0]
            chat = _single(item, names, declared, bool(state))
            known = _MESSAGE_KEYS if item_type(item) == "message" else _OUTPUT_KEYS
            extra = _fields_text(item, known)
        else:
            chat, extra = _step(run, start > prompt)
        chat[CARRY] = Origin(start, tuple(run), extra, start > prompt)
        groups[start] = chat
        messages.append(chat)
    unknown = {k: v for k, v in body.items() if k not in _SETTINGS}
    kept = [
        {"role": it.get("role"), "content": it.get("content")} for it in dead if read_before(it)
    ]
    carried = [_dumps(value) for value in (unknown, kept) if value]
    return Decoded(
        body=body,
        messages=messages,
        tools=body.get("tools"),
        model=body.get("model"),
        max_output=body.get("max_output_tokens"),
        groups=groups,
        instructions=instructions,
        call_types=call_types,
        server_state=state,
        extra="\n".join(carried),
        boundary=bound,
        dead=dead,
    )


def _sealed(item: dict[str, Any]) -> dict[str, Any]:
    """What the model reads of a compaction item, for counting: its encrypted state
    (counted by length, counting/_payload.py), never its id."""
    return {"type": COMPACTION, "encrypted_content": item["encrypted_content"]}


# -- encode -----------------------------------------------------------------------------------


def origin_of(message: Message) -> Origin | None:
    origin = message.get(CARRY)
    return origin if isinstance(origin, Origin) else None


def _unchanged(message: Message, decoded: Decoded) -> Origin | None:
    """The origin of a message that came back as it was decoded (or an equal copy)."""
    origin = origin_of(message)
    if origin is None:
        return None
    original = decoded.groups.get(origin.index)
    if original is None or original.get(CARRY) is not origin:
        return None  # a stage rebuilt the origin (e.g. dropped a reasoning item)
    return origin if (message is original or message == original) else None


def _call_item(call: Any, original: dict[str, Any] | None, decoded: Decoded) -> dict[str, Any]:
    """A chat tool call as a call item, from its original item where there is one."""
    function = call.get("function") if isinstance(call, dict) else None
    fn: dict[str, Any] = function if isinstance(function, dict) else {}
    call_id = call.get("id") if isinstance(call, dict) else None
    if original is not None and to_call(original) == {
        k: v for k, v in call.items() if k != CALL_ORIGIN
    }:
        return original
    kind = item_type(original) if original is not None else "function_call"
    base = original if original is not None else {"type": kind}
    field_name = "arguments" if kind == "function_call" else "input"
    return {**base, "call_id": call_id, "name": fn.get("name"), field_name: fn.get("arguments")}


def _rebuild_step(message: Message, origin: Origin | None, decoded: Decoded) -> list[Any]:
    """The items of a changed assistant step: its own items, with the pipeline's calls
    (matched to the originals by the call_id they were decoded with) and content."""
    calls = [c for c in message.get("tool_calls") or () if isinstance(c, dict)]
    by_origin: dict[Any, dict[str, Any]] = {}
    for call in calls:
        by_origin.setdefault(call.get(CALL_ORIGIN, call.get("id")), call)
    used: set[int] = set()
    items: list[Any] = []
    content_changed = (
        message.get("content") != _step(list(origin.items))[0].get("content") if origin else True
    )
    for item in origin.items if origin is not None else ():
        kind = item_type(item)
        if kind in CALLS:
            match = by_origin.get(item.get("call_id"))
            if match is None or id(match) in used:
                continue  # the pipeline removed this call
            used.add(id(match))
            items.append(_call_item(match, item, decoded))
        elif kind == "message" and item.get("role") == "assistant" and content_changed:
            continue  # re-emitted below from the message's new content
        else:
            items.append(item)
    if content_changed and message.get("content"):
        items.append(_assistant_message(message.get("content"), origin))
    items.extend(_call_item(c, None, decoded) for c in calls if id(c) not in used)
    return items


def _assistant_message(content: Any, origin: Origin | None) -> dict[str, Any]:
    first = next(
        (
            it
            for it in (origin.items if origin else ())
            if item_type(it) == "message" and it.get("role") == "assistant"
        ),
        None,
    )
    base = {k: v for k, v in (first or {"type": "message"}).items() if k != "content"}
    parts = [
        {"type": "output_text", "text": p.get("text", ""), "annotations": []}
        if isinstance(p, dict) and p.get("type") == "text"
        else p
        for p in (content if isinstance(content, list) else [{"type": "text", "text": content}])
    ]
    return {**base, "role": "assistant", "content": parts}


def _output_item(message: Message, origin: Origin | None, decoded: Decoded) -> dict[str, Any]:
    call_id = message.get("tool_call_id")
    if origin is not None:
        native = origin.items[0]
        return {**native, "call_id": call_id, "output": message.get("content")}
    kind = CALLS.get(decoded.call_types.get(str(call_id), "function_call"), "function_call_output")
    return {"type": kind, "call_id": call_id, "output": message.get("content")}


def _rebuild(message: Message, decoded: Decoded) -> list[Any]:
    origin = origin_of(message)
    role = message.get("role")
    if role == "assistant":
        return _rebuild_step(message, origin, decoded)
    if role == "tool":
        return [_output_item(message, origin, decoded)]
    if origin is not None and len(origin.items) > 1:
        return _rebuild_inputs(message, origin.items)
    native = origin.items[0] if origin is not None else None
    if isinstance(native, str):  # the string input, changed (e.g. invalid unicode replaced)
        return [{"role": "user", "content": message.get("content")}]
    if isinstance(native, dict) and item_type(native) == "message":
        return [{**native, "content": message.get("content")}]
    if native is not None:
        return [native]  # an opaque output (server-side call): sent as it came
    return [{"type": "message", "role": "user" if role == "user" else "developer",
             "content": message.get("content")}]  # fmt: skip


def _as_item(native: Any) -> Any:
    """An input-side item as a dict: the string input as the user message it stands for."""
    return {"role": "user", "content": native} if isinstance(native, str) else native


def _rebuild_inputs(message: Message, natives: tuple[Any, ...]) -> list[Any]:
    """The items of a user message the pipeline merged from several input-side items.

    The API takes consecutive user items, so while the message's content is just theirs
    joined, they go out as they came (nothing lost, fields and all). A stage that then
    changed the content gets one message item: every field of the message items
    (messages.join_fields), the new content; outputs stay as they came, before it."""
    items = [_as_item(n) for n in natives]
    joined: Any = None
    for item in items:
        own = item.get("content") if item_type(item) == "message" else item.get("output")
        joined = merge_contents(joined, own)
    if message.get("content") == joined:
        return items
    fields: dict[str, Any] = {}
    for item in items:
        if item_type(item) == "message":
            fields, _ = join_fields(fields, item)
    outputs = [item for item in items if item_type(item) != "message"]
    return [*outputs, {"role": "user", **fields, "content": message.get("content")}]


def encode(messages: Sequence[Message], decoded: Decoded, drop: bool = False) -> dict[str, Any]:
    """The Responses body for governed chat messages: the input body's fields, in their
    order, with ``input`` rebuilt. Returns the decoded body itself when nothing differs.
    ``drop``: leave out the items before the newest compaction item (the API lets a
    client drop them), instead of sending them as they came."""
    body = decoded.body
    # The pipeline never rewrites a system message: ``instructions`` stays as it was.
    rest = [m for m in messages if getattr(origin_of(m), "index", None) != INSTRUCTIONS]
    if isinstance(body.get("input"), str) and len(rest) == 1 and _unchanged(rest[0], decoded):
        return body
    items: list[Any] = [it for it in decoded.dead if not drop or read_before(it)]
    for message in rest:
        origin = _unchanged(message, decoded)
        if origin is not None and origin.index >= 0:
            items.extend(origin.items)
        elif origin is not None:  # the string input, unchanged but not alone
            items.append({"role": "user", "content": origin.items[0]})
        else:
            items.extend(_rebuild(message, decoded))
    out = dict(body)
    if "input" in body or items:
        out["input"] = items
    if out == body:
        return body
    return out


def with_items(message: Message, items: tuple[Any, ...]) -> Message:
    """The message carrying ``items`` instead of its own (a repair of its run)."""
    origin = origin_of(message)
    if origin is None:
        return message
    extra = _step(list(items), origin.live)[1]
    return {**message, CARRY: replace(origin, items=items, extra=extra)}
