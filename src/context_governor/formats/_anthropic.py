"""The Anthropic Messages edge: a request body <-> the pipeline's chat messages, losslessly.

Decoding turns each native message into the chat-completions dicts the stages
understand, in the body's own order:

* system (a string or blocks) -> one system message;
* an assistant message -> one assistant message: its ``tool_use`` blocks become
  ``tool_calls``, every other block (text, thinking with its signature,
  server tool blocks, citations, unknown types) stays in ``content`` as it is;
* a user message -> one ``tool`` message per ``tool_result`` block and one user
  message per run of other blocks, in block order (so a text before the results,
  which the API rejects, is an interjection the pipeline's regrouping moves).

Every decoded message carries its :class:`Origin` under the private key
:data:`CARRY`; stages copy it along (they build new messages as ``{**old, ...}``).
Encoding emits the native message *itself* for every native message whose decoded
messages all came back unchanged and adjacent; only a message the pipeline changed
is rebuilt, from its new content plus what it carried (unknown fields, the
original ``tool_use``/``tool_result`` blocks and their extra fields). Messages of a
role the edge does not know travel as they are, after the message they followed.
Hence ``encode(decode(body)) == body`` for any body whose shape we can read.

A ``compaction`` block (server-side compaction: Anthropic's API drops every content
block before the newest one and reads its summary in their place) is the *boundary*:
the native messages before it (and the blocks before it in its own message) are
carried as they are and never decoded, counted or governed; the block itself is
decoded as a system message holding its summary (what the model reads, and a role
no stage cuts or edits), and the rest of its message as usual. See
docs/native-compaction.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import InputError
from ..messages import Message
from ._fields import (
    DecodedBody,
    carried_text,
    check_common,
    joined_fields,
    joined_native,
    other_fields,
    parse_arguments,
    same,
    unchanged,
)
from ._fields import dumps as _dumps
from ._fields import type_name as _type_name

#: Private key of a decoded message: its Origin. Not a chat field; never sent.
CARRY = "_anthropic"
#: Top-level fields that are settings, not prompt: not counted as prompt tokens.
_SETTINGS = frozenset(
    {
        "model", "max_tokens", "messages", "system", "tools", "thinking", "stream",
        "temperature", "top_p", "top_k", "stop_sequences", "metadata", "tool_choice",
        "service_tier", "context_management", "compaction",
    }
)  # fmt: skip
_KNOWN_ROLES = frozenset({"user", "assistant"})
#: The block type of server-side compaction (threshold: ``compact_20260112``; on demand:
#: ``compaction: {"type": "summarize"}``): the API reads its summary in place of every
#: block before it.
COMPACTION = "compaction"
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


@dataclass(frozen=True, eq=False)
class Origin:
    """Where a decoded chat message came from (compared by identity, cheap to copy along).

    ``extra`` is the text of what this message carries that the token counter
    would not see otherwise (unknown message fields, unknown-role messages that
    follow it): counted with it, and gone with it if it is cut.
    """

    index: int  # the native message's position in body["messages"]
    part: int  # position among the chat messages decoded from it
    message: dict[str, Any]  # the native message, as given
    block: dict[str, Any] | None = None  # tool messages: their tool_result block
    after: tuple[Any, ...] = ()  # messages of unknown role that followed it
    extra: str = ""

    def joined_with(self, later: Any) -> tuple[Origin, tuple[str, ...]]:
        """The origin of the message the pipeline merged from this one's and ``later``'s
        (two consecutive turns of one role): one native message holding both's fields
        (messages.join_fields) and blocks, followed by both's unknown-role messages.
        Also the places whose earlier value gave way (one field holds one value)."""
        if not isinstance(later, Origin):
            return self, ()
        blocks = _blocks(self.message.get("content")) + _blocks(later.message.get("content"))
        native, lost = joined_native(
            (self.index, self.message), (later.index, later.message), "content", "messages", blocks
        )
        after = self.after + later.after
        extra = carried_text(native, "content", after)
        return Origin(self.index, self.part, native, None, after, extra), lost


@dataclass(frozen=True)
class Decoded(DecodedBody):
    """A decoded request: what the pipeline governs and what it must not lose."""

    carry: ClassVar[str] = CARRY
    origin: ClassVar[type[Any]] = Origin

    thinking: bool
    #: chat messages decoded from each native message, by native index
    groups: dict[int, tuple[Message, ...]] = field(default_factory=dict)
    system: Message | None = None
    #: messages of unknown role before the first known one
    head: tuple[Any, ...] = ()
    #: text of top-level fields we do not know (counted as prompt, to be safe)
    extra: str = ""
    #: (message, block) of the newest compaction block: where what the model reads starts
    boundary: tuple[int, int] | None = None
    #: the native messages before the boundary's message: carried as they are, unread
    dead: tuple[Any, ...] = ()


def is_compaction(block: Any) -> bool:
    """A compaction block the API reads: its ``content`` a summary. One whose content is
    null (a failed compaction) is a no-op for the API, and an empty one is refused
    (AN-12): neither is a boundary."""
    if not isinstance(block, dict) or block.get("type") != COMPACTION:
        return False
    summary = block.get("content")
    return isinstance(summary, str) and bool(summary)


def boundary(messages: Any) -> tuple[int, int] | None:
    """(message, block) of the newest compaction block in a body's ``messages``: the API
    ignores every content block before it and reads its summary in their place
    (Anthropic's compaction docs); None when there is none."""
    if not isinstance(messages, list):
        return None
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role not in _KNOWN_ROLES:
            continue  # junk is not a boundary (decode reports it)
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j in range(len(content) - 1, -1, -1):
            if is_compaction(content[j]):
                return i, j
    return None


def is_pin(message: Message) -> bool:
    """Whether a decoded message is a compaction block's (a system message standing for
    the summary, sent back as the native block itself)."""
    origin = message.get(CARRY)
    return (
        message.get("role") == "system"
        and isinstance(origin, Origin)
        and isinstance(origin.block, dict)
        and origin.block.get("type") == COMPACTION
    )


# -- decode -----------------------------------------------------------------------------------


def _check_body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InputError("body", f"expected a Messages request object, got {_type_name(body)}")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise InputError("messages", f"expected a list of messages, got {_type_name(messages)}")
    check_common(body, "max_tokens")
    system = body.get("system")
    if system is not None and not isinstance(system, str | list):
        raise InputError(
            "system", f"expected a string or a list of blocks, got {_type_name(system)}"
        )
    if isinstance(system, list):
        _check_blocks(system, "system")
    return body


def _check_blocks(blocks: list[Any], where: str) -> None:
    for j, block in enumerate(blocks):
        if not isinstance(block, dict):
            raise InputError(
                f"{where}[{j}]", f"expected a content block object, got {_type_name(block)}"
            )
        if block.get("type") == "text" and not isinstance(block.get("text", ""), str):
            raise InputError(
                f"{where}[{j}].text", f"expected a string, got {_type_name(block.get('text'))}"
            )


def _known(message: Any, i: int) -> bool:
    """A message the edge decodes (True) or carries as it is (False); InputError if it
    cannot be a message at all."""
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise InputError(where, f"expected a message object, got {_type_name(message)}")
    role = message.get("role")
    if not isinstance(role, str):
        raise InputError(f"{where}.role", "missing" if role is None else "expected a string")
    if role not in _KNOWN_ROLES:
        return False
    content = message.get("content")
    if not isinstance(content, str | list):
        raise InputError(
            f"{where}.content", f"expected a string or a list of blocks, got {_type_name(content)}"
        )
    if isinstance(content, list):
        _check_blocks(content, f"{where}.content")
    return True


def _call(block: dict[str, Any]) -> dict[str, Any]:
    """A tool_use block as a chat tool call."""
    return {
        "id": block.get("id"),
        "type": "function",
        "function": {"name": block.get("name"), "arguments": _dumps(block.get("input", {}))},
    }


def _decode_assistant(message: dict[str, Any]) -> list[Message]:
    content = message["content"]
    if isinstance(content, str):
        return [{"role": "assistant", "content": content}]
    parts = [b for b in content if b.get("type") != "tool_use"]
    calls = [_call(b) for b in content if b.get("type") == "tool_use"]
    out: Message = {"role": "assistant", "content": parts if parts or not calls else None}
    if calls:
        out["tool_calls"] = calls
    return [out]


def _decode_user(message: dict[str, Any], names: dict[Any, Any]) -> list[tuple[Message, Any]]:
    """(chat message, tool_result block or None) per run of the user message's blocks."""
    content = message["content"]
    if isinstance(content, str) or not content:
        return [({"role": "user", "content": content}, None)]
    out: list[tuple[Message, Any]] = []
    run: list[dict[str, Any]] = []
    for block in content:
        if block.get("type") != "tool_result":
            run.append(block)
            continue
        if run:
            out.append(({"role": "user", "content": run}, None))
            run = []
        tool: Message = {"role": "tool", "tool_call_id": block.get("tool_use_id")}
        use_id = block.get("tool_use_id")
        name = names.get(use_id) if isinstance(use_id, str) else None
        if isinstance(name, str):
            tool["name"] = name
        result = block.get("content", "")
        tool["content"] = result if isinstance(result, str | list) else _dumps(result)
        if "cache_control" in block:
            tool["cache_control"] = block["cache_control"]
        out.append((tool, block))
    if run:
        out.append(({"role": "user", "content": run}, None))
    return out


def _decode_boundary(
    message: dict[str, Any], at: int, names: dict[Any, Any]
) -> list[tuple[Message, Any]]:
    """The message holding the boundary: its compaction block as a system message (the
    summary, which the model reads where the dropped blocks were), then the blocks after
    it, decoded as its role's are. The blocks before it are not read."""
    content = message["content"]
    block = content[at]
    pin: Message = {"role": "system", "content": block["content"]}
    rest = {**message, "content": content[at + 1 :]}
    if not rest["content"]:
        return [(pin, block)]
    if message["role"] == "assistant":
        return [(pin, block), *((m, None) for m in _decode_assistant(rest))]
    return [(pin, block), *_decode_user(rest, names)]


def decode(body: Any) -> Decoded:
    """The pipeline's view of a Messages request body (which is never modified)."""
    body = _check_body(body)
    native = body["messages"]
    bound = boundary(native)
    start = 0 if bound is None else bound[0]
    messages: list[Message] = []
    groups: dict[int, tuple[Message, ...]] = {}
    system: Message | None = None
    raw_system = body.get("system")
    if raw_system:  # "" and [] stay as they are, outside the pipeline
        system = {"role": "system", "content": raw_system}
        messages.append(system)
    names: dict[Any, Any] = {}
    head: list[Any] = []
    pending: list[Any] = []  # unknown-role messages waiting for the message they follow
    last_known: int | None = None
    decoded: dict[int, list[tuple[Message, Any]]] = {}
    for i, message in enumerate(native):
        if not _known(message, i) or i < start:
            if i >= start:
                (pending if last_known is not None else head).append(message)
            continue
        if last_known is not None and pending:
            decoded[last_known] = _with_after(decoded[last_known], pending)
            pending = []
        if bound is not None and i == start:
            decoded[i] = _decode_boundary(message, bound[1], names)
            for b in message["content"][bound[1] + 1 :]:
                if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                    names[b["id"]] = b.get("name")
        elif message["role"] == "assistant":
            decoded[i] = [(m, None) for m in _decode_assistant(message)]
            for b in message["content"] if isinstance(message["content"], list) else ():
                if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                    names[b["id"]] = b.get("name")
        else:
            decoded[i] = _decode_user(message, names)
        last_known = i
    if last_known is not None and pending:
        decoded[last_known] = _with_after(decoded[last_known], pending)
    for i, parts in decoded.items():
        group = tuple(_attach(native[i], i, n, m, b, len(parts)) for n, (m, b) in enumerate(parts))
        groups[i] = group
        messages.extend(group)
    max_output = body.get("max_tokens")
    unknown = {k: v for k, v in body.items() if k not in _SETTINGS}
    return Decoded(
        body=body,
        messages=messages,
        tools=body.get("tools"),
        model=body.get("model"),
        max_output=max_output,
        thinking=thinking_enabled(body),
        groups=groups,
        system=system,
        head=tuple(head),
        extra=_dumps([*head, unknown]) if head or unknown else "",
        boundary=bound,
        dead=tuple(native[:start]),
    )


def _with_after(parts: list[tuple[Message, Any]], after: list[Any]) -> list[tuple[Message, Any]]:
    """Mark the last decoded part of a message as followed by ``after`` (opaque messages)."""
    *rest, (message, block) = parts
    return [*rest, ({**message, "__after__": tuple(after)}, block)]


def _attach(
    native: dict[str, Any], index: int, part: int, message: Message, block: Any, count: int
) -> Message:
    after = message.pop("__after__", ())
    last = part == count - 1
    extra = carried_text(native, "content", after) if last else ""
    message[CARRY] = Origin(index, part, native, block, after if last else (), extra)
    return message


def current_turn(messages: Any) -> int:
    """The native index of the last user message that is not only tool results (the
    user's newest prompt), -1 when there is none: assistant messages after it are the
    turn in progress, whose thinking every model reads; earlier ones are earlier turns."""
    if not isinstance(messages, list):
        return -1
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if not isinstance(content, list) or any(
            not (isinstance(b, dict) and b.get("type") == "tool_result") for b in content
        ):
            return index
    return -1


def without_thinking(message: Message) -> Message | None:
    """``message`` without its thinking and redacted_thinking blocks (what a model that
    strips earlier turns' thinking reads of it); None when it has none."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    kept = [b for b in content if not (isinstance(b, dict) and _is_thinking_type(b.get("type")))]
    return None if len(kept) == len(content) else {**message, "content": kept}


def _is_thinking_type(kind: Any) -> bool:
    return isinstance(kind, str) and kind in THINKING_TYPES


def thinking_enabled(body: dict[str, Any]) -> bool:
    """Thinking is on unless ``thinking`` is absent or of type "disabled"."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") not in (None, "disabled")


# -- encode -----------------------------------------------------------------------------------


def _origin(message: Message) -> Origin | None:
    origin = message.get(CARRY)
    return origin if isinstance(origin, Origin) else None


def _matches(messages: Sequence[Message], at: int, decoded: Decoded) -> Origin | None:
    """The origin of messages[at:] if they start with its whole, unchanged group."""
    origin = _origin(messages[at])
    if origin is None or origin.part != 0:
        return None
    group = decoded.groups.get(origin.index, ())
    return origin if unchanged(messages[at : at + len(group)], group) else None


def _verbatim(messages: Sequence[Message], at: int, decoded: Decoded) -> Origin | None:
    """The origin of messages[at:] if it can go out as the native message itself: its
    group is whole and unchanged, and no new tool result follows that belongs with it
    (all the results of a turn go in one message)."""
    origin = _matches(messages, at, decoded)
    if origin is None:
        return None
    end = at + len(decoded.groups[origin.index])
    if (
        messages[end - 1].get("role") == "tool"
        and end < len(messages)
        and messages[end].get("role") == "tool"
        and _matches(messages, end, decoded) is None
    ):
        return None
    return origin


def _fields(origin: Origin | None) -> dict[str, Any]:
    """A rebuilt message keeps the native message's other fields, in their order."""
    return {} if origin is None else other_fields(origin.message, "content")


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, list):
        return list(content)
    if isinstance(content, str) and content:
        return [{"type": "text", "text": content}]
    return []


def _tool_use(call: Any, origin: Origin | None, position: int) -> Any:
    """A chat tool call as a tool_use block, from its original block where there is one."""
    if not isinstance(call, dict):
        return call
    originals = (
        [b for b in origin.message["content"] if b.get("type") == "tool_use"]
        if origin is not None and isinstance(origin.message.get("content"), list)
        else []
    )
    by_id = next((b for b in originals if b.get("id") == call.get("id")), None)
    original = by_id or (originals[position] if position < len(originals) else None)
    if original is not None and same(call, _call(original)):
        return original
    found = call.get("function")
    function: dict[str, Any] = found if isinstance(found, dict) else {}
    arguments = function.get("arguments")
    if original is not None and arguments == _dumps(original.get("input", {})):
        tool_input = original.get("input", {})
    else:
        tool_input = parse_arguments(arguments)
    base = original if original is not None else {"type": "tool_use"}
    return {**base, "id": call.get("id"), "name": function.get("name"), "input": tool_input}


def _assistant(message: Message) -> dict[str, Any]:
    origin = _origin(message)
    content = message.get("content")
    calls = message.get("tool_calls") or []
    uses = [_tool_use(c, origin, n) for n, c in enumerate(calls)]
    native = content if isinstance(content, str) and not uses else _blocks(content) + uses
    return {**_fields(origin), "role": "assistant", "content": native}


def _tool_result(message: Message, decoded: Decoded) -> dict[str, Any]:
    origin = _origin(message)
    block = origin.block if origin is not None else None
    if block is not None and origin is not None:
        group = decoded.groups.get(origin.index, ())
        if origin.part < len(group) and same(message, group[origin.part]):
            return block
    base = {k: v for k, v in (block or {}).items() if k not in ("content", "cache_control")}
    out: dict[str, Any] = {
        "type": "tool_result",
        **base,
        "tool_use_id": message.get("tool_call_id"),
    }
    if message.get("content") is not None:
        out["content"] = message["content"]
    if "cache_control" in message:
        out["cache_control"] = message["cache_control"]
    return out


def _run_fields(parts: Sequence[Message], lost: list[str]) -> dict[str, Any]:
    """The fields of one native message written from chat messages that may come from
    several (tool results of one turn sent in two user messages, a user text joining
    them): all their native messages' fields (see _fields.joined_fields)."""
    origins = [o for o in map(_origin, parts) if o is not None]
    return joined_fields([(o.index, o.message) for o in origins], "content", "messages", lost)


def _user(parts: list[Message], decoded: Decoded, lost: list[str]) -> dict[str, Any]:
    """One user message from a run of tool messages and at most one user message after."""
    fields = _run_fields(parts, lost)
    if len(parts) == 1 and parts[0].get("role") == "user":
        return {**fields, "role": "user", "content": parts[0].get("content")}
    blocks: list[Any] = []
    for part in parts:
        if part.get("role") == "tool":
            blocks.append(_tool_result(part, decoded))
        else:
            blocks.extend(_blocks(part.get("content")))
    return {**fields, "role": "user", "content": blocks}


def _afters(messages: Sequence[Message]) -> Iterator[Any]:
    for message in messages:
        origin = _origin(message)
        if origin is not None:
            yield from origin.after


def _joins(
    messages: Sequence[Message], at: int, run_origin: Origin | None, decoded: Decoded
) -> bool:
    """Does the user message at ``at`` belong to the tool results before it?"""
    if at >= len(messages) or messages[at].get("role") != "user":
        return False
    origin = _origin(messages[at])
    if origin is None or run_origin is None or origin.index == run_origin.index:
        return True
    return _verbatim(messages, at, decoded) is None


def _kept(origin: Origin, decoded: Decoded, drop: bool) -> dict[str, Any]:
    """A native message sent as it came; the boundary's without the blocks before its
    compaction block when what the model does not read is dropped."""
    bound = decoded.boundary
    if not drop or bound is None or origin.index != bound[0] or bound[1] == 0:
        return origin.message
    return {**origin.message, "content": origin.message["content"][bound[1] :]}


def _pinned(
    messages: Sequence[Message], at: int, decoded: Decoded, lost: list[str], drop: bool
) -> tuple[list[Any], int]:
    """The native message of a compaction block whose message changed: the block (and,
    unless dropped, the blocks before it) as it came, then what the pipeline made of the
    rest of its message; and where the next message starts."""
    origin = _origin(messages[at])
    assert origin is not None and decoded.boundary is not None
    end = at + 1
    while end < len(messages):
        later = _origin(messages[end])
        if later is None or later.index != origin.index or later.part == 0:
            break
        end += 1
    natives = _encode_messages(messages[at + 1 : end], decoded, lost, top=False)
    content = origin.message["content"]
    b = decoded.boundary[1]
    pinned = list(content[b : b + 1] if drop else content[: b + 1])
    role = origin.message["role"]
    if natives and isinstance(natives[0], dict) and natives[0].get("role") == role:
        natives[0] = {**natives[0], "content": pinned + _blocks(natives[0].get("content"))}
    else:
        natives.insert(0, {**_fields(origin), "role": role, "content": pinned})
    if end == at + 1:
        natives.extend(origin.after)
    return natives, end


def _encode_messages(
    messages: Sequence[Message],
    decoded: Decoded,
    lost: list[str],
    drop: bool = False,
    top: bool = True,
) -> list[Any]:
    out: list[Any] = [*(() if drop else decoded.dead), *decoded.head] if top else []
    at = 0
    while at < len(messages):
        origin = _verbatim(messages, at, decoded)
        if origin is not None:
            size = len(decoded.groups[origin.index])
            out.append(_kept(origin, decoded, drop))
            out.extend(_afters(messages[at : at + size]))
            at += size
            continue
        message = messages[at]
        role = message.get("role")
        if is_pin(message):
            natives, at = _pinned(messages, at, decoded, lost, drop)
            out.extend(natives)
            continue
        if role == "assistant":
            taken = [message]
            out.append(_assistant(message))
        elif role == "tool":
            end = at
            while end < len(messages) and messages[end].get("role") == "tool":
                end += 1
            if _joins(messages, end, _origin(messages[end - 1]), decoded):
                end += 1
            taken = list(messages[at:end])
            out.append(_user(taken, decoded, lost))
        else:  # user (system messages are taken out before)
            taken = [message]
            out.append(_user(taken, decoded, lost))
        out.extend(_afters(taken))
        at += len(taken)
    return out


def _system(systems: list[Message], decoded: Decoded) -> tuple[bool, Any]:
    """(present, value) of the body's ``system`` for the system messages of the output."""
    if decoded.system is None and not systems:
        return "system" in decoded.body, decoded.body.get("system")
    if len(systems) == 1 and decoded.system is not None and same(systems[0], decoded.system):
        return True, decoded.body["system"]
    contents = [m.get("content") for m in systems]
    if all(isinstance(c, str) for c in contents):
        return True, "\n\n".join(c for c in contents if isinstance(c, str))
    return True, [b for c in contents for b in _blocks(c)]


def encode(
    messages: Sequence[Message],
    decoded: Decoded,
    updates: dict[str, Any] | None = None,
    *,
    lost: list[str] | None = None,
    drop: bool = False,
) -> dict[str, Any]:
    """The Messages body for governed chat messages: the input body's fields, in their
    order, with ``system`` and ``messages`` rebuilt and ``updates`` applied. Returns
    the decoded body itself when nothing differs from it. ``drop``: leave out what
    precedes the newest compaction block (the API ignores it), instead of sending it as
    it came.

    ``lost`` receives the places (``messages[3].metadata``) of the unknown fields that
    could not be kept: where chat messages of several native messages go out as one
    (all the tool results of a turn in one user message) and two of those hold one
    field with different values, only the later value fits."""
    systems = [m for m in messages if m.get("role") == "system" and not is_pin(m)]
    rest = [m for m in messages if m.get("role") != "system" or is_pin(m)]
    present, system = _system(systems, decoded)
    native = _encode_messages(rest, decoded, [] if lost is None else lost, drop)
    body = decoded.body
    out = dict(body)
    if present:
        out["system"] = system
    else:
        out.pop("system", None)
    out["messages"] = native
    out.update(updates or {})
    if out == body:
        return body
    return out
