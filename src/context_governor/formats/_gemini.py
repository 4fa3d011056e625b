"""The Google Gen AI (Gemini ``generateContent``) edge: a request body <-> chat messages.

A ``generateContent`` body carries its history as ``contents``: a list of
``{"role": "user" | "model", "parts": [...]}``. Decoding turns each content into the
chat-completions dicts the stages understand, in the body's own order:

* ``systemInstruction`` -> one system message;
* a ``model`` content -> one assistant message: its ``functionCall`` parts become
  ``tool_calls`` (a part's ``thoughtSignature`` as the call's
  ``extra_content.google.thought_signature``, where the chat view keeps it), every
  other part (thoughts and their signatures, code execution, inline or file data,
  unknown parts) stays in ``content`` as it is;
* a ``user`` content (or one without a role) -> one ``tool`` message per
  ``functionResponse`` part and one user message per run of other parts.

A plain text part (``{"text": ...}`` and nothing else) becomes a chat text part;
every other part is carried as the native object itself, so a signature never
leaves its part. Gemini pairs a response with its call by ``id`` when both have
one, else by name and order within the call turn right before it: id-less calls
get private ids (:data:`SYNTHETIC`) that never reach the output.

Both spellings the REST API reads (``functionCall`` / ``function_call``, ...) are
understood; a rebuilt part keeps the spelling of the part it came from.

Every decoded message carries its :class:`Origin` under :data:`CARRY`. Encoding
emits the native content *itself* for every content whose decoded messages came
back unchanged and adjacent; only a content the pipeline changed is rebuilt. A user
message right after function responses joins their content (Gemini's turns
alternate: there is no other legal place for it). Contents of a role the edge does
not know travel as they are, after the content they followed. Hence
``encode(decode(body)) == body`` for any body whose shape we can read.
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
CARRY = "_gemini"
#: Prefix of the private ids given to calls and responses that have none.
SYNTHETIC = "_gemini_call_"
#: What a lost thought signature is replaced by (Gemini's documented validator skip).
SKIP_SIGNATURE = "skip_thought_signature_validator"
KNOWN_ROLES = frozenset({"user", "model"})
#: Top-level fields that are settings, not prompt: not counted as prompt tokens.
_SETTINGS = frozenset(
    {
        "model", "contents", "systemInstruction", "system_instruction", "tools",
        "toolConfig", "tool_config", "generationConfig", "generation_config",
        "safetySettings", "safety_settings", "cachedContent", "cached_content", "labels",
    }
)  # fmt: skip


def spelled(obj: Any, camel: str) -> str | None:
    """The key under which ``obj`` has the field ``camel`` (camelCase or snake_case)."""
    if not isinstance(obj, dict):
        return None
    if camel in obj:
        return camel
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return snake if snake in obj else None


def get(obj: Any, camel: str) -> Any:
    """The field ``camel`` of ``obj`` in either spelling (None when absent)."""
    key = spelled(obj, camel)
    return obj[key] if key is not None else None


def role_of(content: Any) -> Any:
    """A content's role; the API reads a content without one (or with null) as the user's."""
    if not isinstance(content, dict):
        return None
    role = content.get("role")
    return "user" if role is None else role


def parts_of(content: Any) -> list[Any]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return parts if isinstance(parts, list) else []


def is_call(part: Any) -> bool:
    return isinstance(get(part, "functionCall"), dict)


def is_response(part: Any) -> bool:
    return isinstance(get(part, "functionResponse"), dict)


@dataclass(frozen=True, eq=False)
class Origin:
    """Where a decoded chat message came from (compared by identity, cheap to copy along).

    ``extra`` is the text of what the message carries that the token counter would
    not see otherwise (unknown content fields, the other fields of a
    ``functionResponse`` part, contents of unknown role that follow it): counted
    with it, and gone with it if it is cut.
    """

    index: int  # the native content's position in body["contents"]
    part: int  # position among the chat messages decoded from it
    content: dict[str, Any]  # the native content, as given
    native: dict[str, Any] | None = None  # tool messages: their functionResponse part
    key: str | None = None  # tool messages: the response's only key, if its value was text
    after: tuple[Any, ...] = ()
    extra: str = ""

    @property
    def renders_structure(self) -> bool:
        """A tool message whose text is our JSON of a structured ``response`` (the lossless
        shrink leaves it alone: the structure, not that text, goes back on the wire)."""
        return self.native is not None and self.key is None

    def joined_with(self, later: Any) -> tuple[Origin, tuple[str, ...]]:
        """The origin of the message the pipeline merged from this one's and ``later``'s
        (two consecutive turns of one role): one native content holding both's fields
        (messages.join_fields) and parts, followed by both's unknown-role contents.
        Also the places whose earlier value gave way (one field holds one value)."""
        if not isinstance(later, Origin):
            return self, ()
        parts = parts_of(self.content) + parts_of(later.content)
        content, lost = joined_native(
            (self.index, self.content), (later.index, later.content), "parts", "contents", parts
        )
        after = self.after + later.after
        extra = carried_text(content, "parts", after)
        return Origin(self.index, self.part, content, after=after, extra=extra), lost


@dataclass(frozen=True)
class Decoded(DecodedBody):
    """A decoded request: what the pipeline governs and what it must not lose."""

    carry: ClassVar[str] = CARRY
    origin: ClassVar[type[Any]] = Origin

    groups: dict[int, tuple[Message, ...]] = field(default_factory=dict)
    system: Message | None = None
    head: tuple[Any, ...] = ()
    #: chat call id -> the native functionCall part it was decoded from
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: what lives server-side ("cachedContent=cachedContents/abc")
    server_state: tuple[str, ...] = ()
    extra: str = ""


# -- checks -----------------------------------------------------------------------------------


def _check_parts(parts: Any, where: str) -> None:
    if not isinstance(parts, list):
        raise InputError(where, f"expected a list of parts, got {_type_name(parts)}")
    for j, part in enumerate(parts):
        if not isinstance(part, dict):
            raise InputError(f"{where}[{j}]", f"expected a part object, got {_type_name(part)}")
        if "text" in part and not isinstance(part["text"], str):
            raise InputError(
                f"{where}[{j}].text", f"expected a string, got {_type_name(part['text'])}"
            )
        for camel in ("functionCall", "functionResponse"):
            key = spelled(part, camel)
            if key is None:
                continue
            value = part[key]
            if not isinstance(value, dict):
                raise InputError(
                    f"{where}[{j}].{key}", f"expected an object, got {_type_name(value)}"
                )
            name = value.get("name")
            if not isinstance(name, str):
                got = "missing" if name is None else f"expected a string, got {_type_name(name)}"
                raise InputError(f"{where}[{j}].{key}.name", got)
            if "id" in value and not isinstance(value["id"], str):
                raise InputError(f"{where}[{j}].{key}.id", "expected a string")


def _check_content(content: Any, where: str) -> bool:
    """True for a content the edge decodes, False for one of unknown role (carried)."""
    if not isinstance(content, dict):
        raise InputError(where, f"expected a content object, got {_type_name(content)}")
    role = role_of(content)
    if not isinstance(role, str):
        raise InputError(f"{where}.role", f"expected a string, got {_type_name(role)}")
    if role not in KNOWN_ROLES:
        return False
    _check_parts(content.get("parts", []), f"{where}.parts")
    return True


def max_output_of(body: dict[str, Any]) -> int | None:
    config_key = spelled(body, "generationConfig") or "generationConfig"
    config = body.get(config_key)
    if config is None:
        return None
    if not isinstance(config, dict):
        raise InputError(config_key, f"expected an object, got {_type_name(config)}")
    key = spelled(config, "maxOutputTokens") or "maxOutputTokens"
    out = config.get(key)
    if out is not None and (isinstance(out, bool) or not isinstance(out, int) or out < 0):
        raise InputError(f"{config_key}.{key}", f"expected a non-negative integer, got {out!r}")
    return out


def model_of(body: dict[str, Any]) -> str | None:
    """The body's model without the resource prefix ("models/gemini-2.5-pro")."""
    model = body.get("model")
    if model is None:
        return None
    if not isinstance(model, str):
        raise InputError("model", f"expected a string, got {_type_name(model)}")
    return model.removeprefix("models/")


def _check_body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InputError(
            "body", f"expected a generateContent request object, got {_type_name(body)}"
        )
    contents = body.get("contents")
    if not isinstance(contents, list):
        raise InputError("contents", f"expected a list of contents, got {_type_name(contents)}")
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise InputError("tools", "expected a list of tool objects")
    key = spelled(body, "systemInstruction")
    if key is not None and body[key] is not None:
        system = body[key]
        if isinstance(system, dict):
            _check_parts(system.get("parts", []), f"{key}.parts")
        elif not isinstance(system, str):
            raise InputError(key, f"expected a content object, got {_type_name(system)}")
    return body


# -- decode -----------------------------------------------------------------------------------


def _plain(part: dict[str, Any]) -> bool:
    return set(part) == {"text"}


def to_chat_parts(parts: list[Any]) -> list[Any]:
    """Native parts as chat content: plain text as text parts, the rest as it is."""
    return [{"type": "text", "text": p["text"]} if _plain(p) else p for p in parts]


def to_call(part: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A functionCall part as a chat tool call (its signature where the chat view keeps it)."""
    fc = get(part, "functionCall")
    call: dict[str, Any] = {
        "id": call_id,
        "type": "function",
        "function": {"name": fc.get("name"), "arguments": _dumps(fc.get("args", {}))},
    }
    signature = get(part, "thoughtSignature")
    if isinstance(signature, str) and signature:
        call["extra_content"] = {"google": {"thought_signature": signature}}
    return call


def response_content(fr: dict[str, Any]) -> tuple[Any, str | None]:
    """A functionResponse's chat content, and the key it was under when its response
    is one text field (``{"output": "..."}``): then the text itself is what stages cap."""
    response = fr.get("response", {})
    if isinstance(response, dict) and len(response) == 1:
        ((key, value),) = response.items()
        if isinstance(value, str):
            return value, key
    return _dumps(response), None


class _Ids:
    """Chat ids for calls and responses: their own ``id`` where they have one, else a
    private one, unique in the request; id-less responses pair by name and order."""

    def __init__(self, contents: list[Any]) -> None:
        self.taken = {
            str(get(p, "functionCall").get("id"))
            for c in contents
            for p in parts_of(c)
            if is_call(p) and "id" in get(p, "functionCall")
        }
        self.serial = 0

    def fresh(self) -> str:
        while True:
            self.serial += 1
            candidate = f"{SYNTHETIC}{self.serial}"
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate


def _decode_model(content: dict[str, Any], ids: _Ids, calls: dict[str, Any]) -> list[Message]:
    parts = parts_of(content)
    chat_parts = to_chat_parts([p for p in parts if not is_call(p)])
    tool_calls = []
    for part in parts:
        if is_call(part):
            own = get(part, "functionCall").get("id")
            call_id = own if isinstance(own, str) else ids.fresh()
            calls[call_id] = part
            tool_calls.append(to_call(part, call_id))
    message: Message = {"role": "assistant", "content": chat_parts or (None if tool_calls else [])}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return [message]


def _pairing(previous: Any, calls: dict[str, Any]) -> list[tuple[str, Any]]:
    """(chat id, name) of the calls of the model content right before a user content,
    in order: what its id-less responses answer."""
    if role_of(previous) != "model":
        return []
    by_part = {id(part): call_id for call_id, part in calls.items()}
    return [
        (by_part[id(p)], get(p, "functionCall").get("name"))
        for p in parts_of(previous)
        if is_call(p) and id(p) in by_part
    ]


def _decode_user(
    content: dict[str, Any], open_calls: list[tuple[str, Any]], ids: _Ids
) -> list[tuple[Message, Any, str | None]]:
    """(chat message, functionResponse part or None, response key) per run of parts."""
    out: list[tuple[Message, Any, str | None]] = []
    run: list[Any] = []
    waiting = list(open_calls)
    for part in parts_of(content):
        if not is_response(part):
            run.append(part)
            continue
        if run:
            out.append(({"role": "user", "content": to_chat_parts(run)}, None, None))
            run = []
        fr = get(part, "functionResponse")
        own = fr.get("id")
        if isinstance(own, str):
            call_id = own
            waiting = [w for w in waiting if w[0] != own]
        else:
            match = next((w for w in waiting if w[1] == fr.get("name")), None)
            if match is not None:
                waiting.remove(match)
            call_id = match[0] if match is not None else ids.fresh()
        text, key = response_content(fr)
        tool: Message = {
            "role": "tool", "tool_call_id": call_id, "name": fr.get("name"), "content": text,
        }  # fmt: skip
        out.append((tool, part, key))
    if run or not out:
        out.append(({"role": "user", "content": to_chat_parts(run)}, None, None))
    return out


def _part_extra(part: Any) -> str:
    """What a functionResponse part carries besides its name, id and response."""
    if part is None:
        return ""
    rest = {k: v for k, v in part.items() if spelled(part, "functionResponse") != k}
    fr = get(part, "functionResponse")
    rest.update({k: v for k, v in fr.items() if k not in ("name", "id", "response")})
    return _dumps(rest) if rest else ""


def server_state(body: dict[str, Any]) -> tuple[str, ...]:
    """What of the prompt lives server-side: a cached content the request refers to."""
    cached = get(body, "cachedContent")
    return (f"cachedContent={cached}",) if cached is not None else ()


def _system(body: dict[str, Any]) -> Message | None:
    raw = get(body, "systemInstruction")
    if isinstance(raw, str) and raw:
        return {"role": "system", "content": raw}
    parts = parts_of(raw)
    return {"role": "system", "content": to_chat_parts(parts)} if parts else None


def decode(body: Any) -> Decoded:
    """The pipeline's view of a generateContent body (which is never modified)."""
    body = _check_body(body)
    contents = body["contents"]
    messages: list[Message] = []
    system = _system(body)
    if system is not None:
        messages.append(system)
    ids = _Ids(contents)
    calls: dict[str, dict[str, Any]] = {}
    decoded: dict[int, list[tuple[Message, Any, str | None]]] = {}
    head: list[Any] = []
    pending: list[Any] = []
    last: int | None = None
    for i, content in enumerate(contents):
        if not _check_content(content, f"contents[{i}]"):
            (pending if last is not None else head).append(content)
            continue
        if last is not None and pending:
            decoded[last] = _with_after(decoded[last], pending)
            pending = []
        if role_of(content) == "model":
            decoded[i] = [(m, None, None) for m in _decode_model(content, ids, calls)]
        else:
            previous = contents[i - 1] if i else None
            decoded[i] = _decode_user(content, _pairing(previous, calls), ids)
        last = i
    if last is not None and pending:
        decoded[last] = _with_after(decoded[last], pending)
    groups: dict[int, tuple[Message, ...]] = {}
    for i, parts in decoded.items():
        group = tuple(
            _attach(contents[i], i, n, m, p, k, len(parts)) for n, (m, p, k) in enumerate(parts)
        )
        groups[i] = group
        messages.extend(group)
    unknown = {k: v for k, v in body.items() if k not in _SETTINGS}
    return Decoded(
        body=body,
        messages=messages,
        tools=body.get("tools"),
        model=model_of(body),
        max_output=max_output_of(body),
        groups=groups,
        system=system,
        head=tuple(head),
        calls=calls,
        server_state=server_state(body),
        extra=_dumps([*head, unknown]) if head or unknown else "",
    )


def _with_after(
    parts: list[tuple[Message, Any, str | None]], after: list[Any]
) -> list[tuple[Message, Any, str | None]]:
    *rest, (message, part, key) = parts
    return [*rest, ({**message, "__after__": tuple(after)}, part, key)]


def _attach(
    native: dict[str, Any], index: int, n: int, message: Message, part: Any, key: str | None,
    count: int,
) -> Message:  # fmt: skip
    after = message.pop("__after__", ())
    last = n == count - 1
    pieces = [_part_extra(part), carried_text(native, "parts", after) if last else ""]
    extra = "\n".join(p for p in pieces if p)
    message[CARRY] = Origin(index, n, native, part, key, after if last else (), extra)
    return message


# -- encode -----------------------------------------------------------------------------------


def origin_of(message: Message) -> Origin | None:
    origin = message.get(CARRY)
    return origin if isinstance(origin, Origin) else None


def _whole(run: Sequence[Message], decoded: Decoded) -> Origin | None:
    """The origin of ``run`` if it is exactly one native content's messages, unchanged."""
    origin = origin_of(run[0])
    if origin is None or origin.part != 0:
        return None
    return origin if unchanged(run, decoded.groups.get(origin.index, ())) else None


def _fields(origin: Origin | None) -> dict[str, Any]:
    """A rebuilt content keeps the native content's other fields, in their order."""
    return {} if origin is None else other_fields(origin.content, "parts")


def to_native_parts(content: Any) -> list[Any]:
    """Chat content as native parts (chat text parts as plain text parts)."""
    if isinstance(content, str):
        return [{"text": content}] if content else []
    if not isinstance(content, list):
        return []
    out = []
    for p in content:
        if isinstance(p, dict) and p.get("type") == "text" and set(p) <= {"type", "text"}:
            out.append({"text": p.get("text", "")})
        else:
            out.append(p)
    return out


def _strip_private(call: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in call.items() if not k.startswith("_")}


def _call_part(call: Any, decoded: Decoded) -> Any:
    """A chat tool call as a functionCall part, from its original part where there is one."""
    if not isinstance(call, dict):
        return call
    call_id = call.get("id")
    original = decoded.calls.get(call_id) if isinstance(call_id, str) else None
    if original is not None and _strip_private(call) == to_call(original, str(call_id)):
        return original
    found = call.get("function")
    function: dict[str, Any] = found if isinstance(found, dict) else {}
    key = spelled(original, "functionCall") or "functionCall"
    old_fc = original.get(key, {}) if original is not None else {}
    arguments = function.get("arguments")
    same_args = original is not None and arguments == _dumps(old_fc.get("args", {}))
    fc = {**old_fc, "name": function.get("name"), "args": old_fc.get("args", {}) if same_args
          else parse_arguments(arguments)}  # fmt: skip
    if isinstance(call_id, str) and not call_id.startswith(SYNTHETIC):
        fc["id"] = call_id
    part = {**(original or {}), key: fc}
    extra = call.get("extra_content")
    google = extra.get("google") if isinstance(extra, dict) else None
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    sig_key = spelled(original, "thoughtSignature") or "thoughtSignature"
    if isinstance(signature, str) and signature:
        part[sig_key] = signature
    else:
        part.pop(sig_key, None)
    return part


def _model(message: Message, decoded: Decoded) -> dict[str, Any]:
    origin = origin_of(message)
    parts = to_native_parts(message.get("content"))
    parts += [_call_part(c, decoded) for c in message.get("tool_calls") or ()]
    return {**_fields(origin), "role": "model", "parts": parts}


def _response(message: Message, decoded: Decoded) -> dict[str, Any]:
    """A tool message as a functionResponse part, from its original part where there is one."""
    origin = origin_of(message)
    native = origin.native if origin is not None else None
    if native is not None and origin is not None:
        group = decoded.groups.get(origin.index, ())
        if origin.part < len(group) and same(message, group[origin.part]):
            return native
    key = spelled(native, "functionResponse") or "functionResponse"
    old = native.get(key, {}) if native is not None else {}
    content = message.get("content")
    text = content if isinstance(content, str) else _text_of(content)
    response: Any
    if native is not None and origin is not None and origin.key is not None:
        response = {origin.key: text}
    elif native is not None and text == _dumps(old.get("response", {})):
        response = old.get("response", {})
    else:
        response = {"output": text}
    call_id = message.get("tool_call_id")
    name = message.get("name")
    if not isinstance(name, str) and isinstance(call_id, str) and call_id in decoded.calls:
        name = get(decoded.calls[call_id], "functionCall").get("name")
    fr = {**old, "name": name if name is not None else old.get("name"), "response": response}
    if isinstance(call_id, str) and not call_id.startswith(SYNTHETIC):
        fr["id"] = call_id
    else:
        fr.pop("id", None)
    return {**(native or {}), key: fr}


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", "")) if isinstance(p, dict) and p.get("type") == "text" else _dumps(p)
            for p in content
        )
    return "" if content is None else _dumps(content)


def _run_fields(taken: Sequence[Message], lost: list[str]) -> dict[str, Any]:
    """The fields of one native content written from chat messages that may come from
    several (a user text joining the function responses' turn): all their native
    contents' fields (see _fields.joined_fields)."""
    origins = [o for o in map(origin_of, taken) if o is not None]
    return joined_fields([(o.index, o.content) for o in origins], "parts", "contents", lost)


def _user(taken: list[Message], decoded: Decoded, lost: list[str]) -> dict[str, Any]:
    """One user content from a run of tool messages and the user messages after them."""
    parts: list[Any] = []
    for message in taken:
        if message.get("role") == "tool":
            parts.append(_response(message, decoded))
        else:
            parts.extend(to_native_parts(message.get("content")))
    fields = _run_fields(taken, lost)
    if "role" in fields or not fields:
        fields["role"] = "user"
    return {**fields, "parts": parts}


def _afters(messages: Sequence[Message]) -> Iterator[Any]:
    for message in messages:
        origin = origin_of(message)
        if origin is not None:
            yield from origin.after


def _pieces(run: list[Message], decoded: Decoded) -> Iterator[tuple[list[Message], bool]]:
    """A run of messages cut into (messages, whole unchanged content?) pieces."""
    at = 0
    pending: list[Message] = []
    while at < len(run):
        origin = origin_of(run[at])
        size = len(decoded.groups.get(origin.index, ())) if origin is not None else 0
        if size and _whole(run[at : at + size], decoded) is not None:
            if pending:
                yield pending, False
                pending = []
            yield run[at : at + size], True
            at += size
        else:
            pending.append(run[at])
            at += 1
    if pending:
        yield pending, False


def encode_contents(
    messages: Sequence[Message],
    decoded: Decoded,
    *,
    join: bool = False,
    lost: list[str] | None = None,
) -> list[Any]:
    """The native contents for the governed chat messages (system messages excluded).

    Each assistant message is one model content. User and tool messages go out as the
    native contents they came from where those came back whole and unchanged; the
    others are rebuilt, a run of them as one user content (function responses travel
    in the user turn). ``join``: every run of user-side messages is one content
    (Gemini's turns alternate), the native content itself only when the run is exactly
    its messages. ``lost``: see :func:`encode`."""
    lost = [] if lost is None else lost
    out: list[Any] = list(decoded.head)
    at = 0
    while at < len(messages):
        end = at + 1
        if messages[at].get("role") != "assistant":
            while end < len(messages) and messages[end].get("role") != "assistant":
                end += 1
        taken = list(messages[at:end])
        pieces = [(taken, False)] if join else list(_pieces(taken, decoded))
        for piece, _ in pieces:
            origin = _whole(piece, decoded)
            if origin is not None:
                out.append(origin.content)
            elif piece[0].get("role") == "assistant":
                out.append(_model(piece[0], decoded))
            else:
                out.append(_user(piece, decoded, lost))
            out.extend(_afters(piece))
        at = end
    return out


def _system_value(systems: list[Message], decoded: Decoded) -> tuple[str | None, Any]:
    """(key, value) of the body's system instruction for the output's system messages."""
    key = spelled(decoded.body, "systemInstruction")
    if decoded.system is None and not systems:
        return key, decoded.body.get(key) if key is not None else None
    if len(systems) == 1 and decoded.system is not None and same(systems[0], decoded.system):
        return key, decoded.body[key] if key is not None else None
    parts = [p for m in systems for p in to_native_parts(m.get("content"))]
    raw = decoded.body.get(key) if key is not None else None
    base = {k: v for k, v in raw.items() if k != "parts"} if isinstance(raw, dict) else {}
    return key or "systemInstruction", {**base, "parts": parts}


def encode(
    messages: Sequence[Message],
    decoded: Decoded,
    *,
    join: bool = False,
    lost: list[str] | None = None,
) -> dict[str, Any]:
    """The generateContent body for governed chat messages: the input body's fields, in
    their order, with the system instruction and ``contents`` rebuilt (``join``: see
    :func:`encode_contents`). Returns the decoded body itself when nothing differs.

    ``lost`` receives the places (``contents[3].metadata``) of the unknown fields that
    could not be kept: where several native contents go out as one and two of them
    hold one field with different values, only the later value fits."""
    systems = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    body = decoded.body
    out = dict(body)
    key, system = _system_value(systems, decoded)
    if key is not None:
        out[key] = system
    out["contents"] = encode_contents(rest, decoded, join=join, lost=lost)
    if out == body:
        return body
    return out
