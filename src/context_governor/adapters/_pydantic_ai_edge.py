"""pydantic-ai's ``ModelMessage`` list <-> the pipeline's chat messages, losslessly.

Decoding mirrors what pydantic-ai's OpenAI chat model sends, so that the governed
view is the request a Chat Completions provider would see:

* a ``ModelRequest``'s parts, in order: a system prompt -> a system message; a user
  prompt -> a user message (its text, image and file items as content parts); a
  tool return -> a tool message; a retry prompt -> a tool message (with a tool
  name) or a user message; retry feedback -> a user message;
* a ``ModelResponse`` -> one assistant message: its text parts as content, its
  tool calls as ``tool_calls``;
* every other part (thinking, built-in tool calls and returns, files, compaction,
  settings deltas, part kinds we do not know) travels with the chat message of the
  part before it in its message (or after it, when it comes first), counted as
  text with that message and gone with it if the message is cut. A request made of
  such parts only travels with the chat message before it (or after it) and is
  emitted as its own request again; a history of nothing else has no chat view
  (and nothing to govern).

Each chat message carries its :class:`Origin` under the private key :data:`CARRY`.
Encoding groups consecutive chat messages of one origin message back into it: a
chat message that came back as the same object gives back its own parts, a
changed one its parts rebuilt with what changed (content, tool call ids and
arguments), a new one (a backfilled result) new parts. A message whose parts all
came back as they were is the original object itself, so
``encode(decode(messages)) == messages`` element by element, by identity.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from operator import is_
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..messages import Message

#: Private key of a decoded chat message: its Origin. Not a chat field; never sent.
CARRY = "_pydantic_ai"
#: Content parts standing for user content that has no chat form (audio, documents...).
OPAQUE_PART = "x-pydantic-ai"


@dataclass(frozen=True, eq=False)
class Origin:
    """Where a chat message came from (compared by identity).

    ``parts`` are the origin message's parts this chat message stands for (the
    mapped part first, then the opaque ones travelling with it); ``items`` maps the
    ``ref`` of each content part that stands for a user content item other than a
    plain string (its ``id()``, an int: it survives the part dict being copied or
    merged into another message) to that item; ``before`` and ``after`` are requests
    with no chat form that travel with it; ``extra`` is the text of what the token
    counter does not see otherwise.
    """

    message: ModelMessage
    parts: tuple[Any, ...]
    items: dict[int, Any] = field(default_factory=dict)
    before: tuple[ModelMessage, ...] = ()
    after: tuple[ModelMessage, ...] = ()
    extra: str = ""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def opaque_text(part: Any) -> str:
    """The text a part the chat view cannot express is counted as."""
    if isinstance(part, ModelRequest | ModelResponse):
        return "\n".join(opaque_text(p) for p in part.parts)
    for name in ("content", "args", "data"):
        value = getattr(part, name, None)
        if isinstance(value, bytes):
            return f"[{len(value)} bytes]"
        if value is not None:
            return value if isinstance(value, str) else _dumps(value)
    return _dumps(getattr(part, "part_kind", type(part).__name__))


# -- decode -----------------------------------------------------------------------------------


def _content_part(item: Any) -> dict[str, Any]:
    """A chat content part for one item of a user prompt (as pydantic-ai's OpenAI model
    would send it, so that it is counted alike); every item but a plain string carries
    its ``ref``, by which encoding finds the item again."""
    if isinstance(item, str):
        return {"type": "text", "text": item}
    ref = id(item)
    if isinstance(item, TextContent):
        return {"type": "text", "text": item.content, "ref": ref}
    if isinstance(item, ImageUrl):
        return {"type": "image_url", "image_url": {"url": item.url}, "ref": ref}
    if isinstance(item, BinaryContent):
        if item.is_image:
            return {"type": "image_url", "image_url": {"url": item.data_uri}, "ref": ref}
        return {"type": "file", "file": {"file_data": item.data_uri}, "ref": ref}
    url = getattr(item, "url", None)
    described: dict[str, Any] = {"kind": getattr(item, "kind", type(item).__name__)}
    if isinstance(url, str):
        described["url"] = url
    return {"type": OPAQUE_PART, **described, "ref": ref}


def _user(part: UserPromptPart) -> tuple[Message, dict[int, Any]]:
    if isinstance(part.content, str):
        return {"role": "user", "content": part.content}, {}
    parts = [_content_part(item) for item in part.content]
    return {"role": "user", "content": parts}, {
        id(item): item for item in part.content if not isinstance(item, str)
    }


#: Request parts that have a chat form (see _request_part).
_CHAT_FORM = (SystemPromptPart, UserPromptPart, ToolReturnPart, RetryPromptPart, RetryFeedbackPart)


def _request_part(part: Any) -> tuple[Message, dict[int, Any]] | None:
    """The chat message of a request part, or None for a part with no chat form."""
    if isinstance(part, SystemPromptPart):
        return {"role": "system", "content": part.content}, {}
    if isinstance(part, UserPromptPart):
        return _user(part)
    if isinstance(part, ToolReturnPart):
        tool: Message = {
            "role": "tool",
            "tool_call_id": part.tool_call_id,
            "content": part.model_response_str(),
        }
        if part.tool_name:
            tool["name"] = part.tool_name
        return tool, {}
    if isinstance(part, RetryPromptPart):
        if part.tool_name is None:
            return {"role": "user", "content": part.model_response()}, {}
        return {
            "role": "tool",
            "tool_call_id": part.tool_call_id,
            "name": part.tool_name,
            "content": part.model_response(),
        }, {}
    if isinstance(part, RetryFeedbackPart):
        return {"role": "user", "content": part.model_response()}, {}
    return None


def _chat_call(part: ToolCallPart) -> dict[str, Any]:
    return {
        "id": part.tool_call_id,
        "type": "function",
        "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
    }


def _response(message: ModelResponse) -> Message:
    texts = [p.content for p in message.parts if isinstance(p, TextPart)]
    calls = [_chat_call(p) for p in message.parts if isinstance(p, ToolCallPart)]
    opaque = [p for p in message.parts if not isinstance(p, TextPart | ToolCallPart)]
    chat: Message = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        chat["tool_calls"] = calls
    extra = "\n".join(opaque_text(p) for p in opaque)
    chat[CARRY] = Origin(message, tuple(message.parts), extra=extra)
    return chat


def _request(message: ModelRequest) -> list[Message]:
    """The chat messages of one request; opaque parts join the message before them."""
    decoded: list[tuple[Message, dict[int, Any], list[Any]]] = []
    leading: list[Any] = []
    for part in message.parts:
        mapped = _request_part(part)
        if mapped is not None:
            decoded.append((mapped[0], mapped[1], [part]))
        elif decoded:
            decoded[-1][2].append(part)
        else:
            leading.append(part)
    if decoded and leading:
        first = decoded[0]
        decoded[0] = (first[0], first[1], [*leading, *first[2]])
    out = []
    for chat, items, parts in decoded:
        extra = "\n".join(opaque_text(p) for p in parts if not isinstance(p, _CHAT_FORM))
        chat[CARRY] = Origin(message, tuple(parts), items, extra=extra)
        out.append(chat)
    return out


def _with_floating(
    chat: Message, before: Sequence[ModelMessage], after: Sequence[ModelMessage]
) -> Message:
    origin: Origin = chat[CARRY]
    extra = "\n".join(filter(None, [origin.extra, *(opaque_text(m) for m in (*before, *after))]))
    carried = replace(
        origin, before=(*origin.before, *before), after=(*origin.after, *after), extra=extra
    )
    return {**chat, CARRY: carried}


#: A conversation's decode cache: id(message) -> (message, its parts, its chat messages).
Cache = dict[int, tuple[ModelMessage, tuple[Any, ...], list[Message]]]


def _same_parts(before: tuple[Any, ...], now: Sequence[Any]) -> bool:
    """The message still has the parts it was decoded with (a framework may append a
    part to a message in place, or replace one)."""
    return len(before) == len(now) and all(map(is_, before, now))


def decode_one(message: ModelMessage) -> list[Message]:
    """The chat messages of one ModelMessage (none for a request with no chat form)."""
    if isinstance(message, ModelResponse):
        return [_response(message)]
    if isinstance(message, ModelRequest):
        return _request(message)
    raise TypeError(f"expected a ModelRequest or ModelResponse, got {type(message).__name__}")


def decode(
    messages: Sequence[ModelMessage],
    cache: Cache | None = None,
) -> list[Message]:
    """The chat view of a message history. ``cache`` (by message identity) lets a
    conversation decode each message once, and keeps the chat dicts the same objects
    from one call to the next (what makes a Governor's step incremental)."""
    out: list[Message] = []
    floating: list[ModelMessage] = []  # requests with no chat form, waiting for a message
    for message in messages:
        hit = cache.get(id(message)) if cache is not None else None
        if hit is not None and hit[0] is message and _same_parts(hit[1], message.parts):
            chats = hit[2]
        else:
            chats = decode_one(message)
            if cache is not None:
                cache[id(message)] = (message, tuple(message.parts), chats)
        if not chats:
            floating.append(message)
            continue
        if floating and out:  # after the chat message before them
            out[-1] = _with_floating(out[-1], (), floating)
            floating = []
        elif floating:  # first in the history: before the first chat message
            chats = [_with_floating(chats[0], floating, ()), *chats[1:]]
            floating = []
        out.extend(chats)
    if floating and out:
        out[-1] = _with_floating(out[-1], (), floating)
    return out  # empty for a history with no chat form at all: nothing to govern


# -- encode -----------------------------------------------------------------------------------


def _user_content(content: Any, refs: dict[int, Any]) -> Any:
    """A user prompt's content from chat content: each part with a known ``ref`` is its
    item itself; other text is a string, another image an ImageUrl, anything else its
    JSON text (never dropped)."""
    if isinstance(content, str) or content is None:
        return content or ""
    out: list[Any] = []
    for part in content:
        ref = part.get("ref") if isinstance(part, dict) else None
        if isinstance(ref, int) and ref in refs:
            out.append(refs[ref])
        elif isinstance(part, dict) and part.get("type") == "text":
            out.append(str(part.get("text", "")))
        elif isinstance(part, dict) and part.get("type") == "image_url":
            out.append(ImageUrl(url=str((part.get("image_url") or {}).get("url", ""))))
        else:
            out.append(_dumps(part))
    return out


def _rebuilt_request_part(chat: Message, original: Any, refs: dict[int, Any]) -> Any:
    """The request part a changed (or new) chat message stands for."""
    role = chat.get("role")
    content = chat.get("content")
    if role == "tool":
        text = content if isinstance(content, str) else _dumps(content)
        call_id = str(chat.get("tool_call_id", ""))
        if isinstance(original, ToolReturnPart):
            if original.model_response_str() == text:
                return replace(original, tool_call_id=call_id)
            return replace(original, content=text, tool_call_id=call_id)
        if isinstance(original, RetryPromptPart):
            return replace(original, content=text, tool_call_id=call_id)
        return ToolReturnPart(
            tool_name=str(chat.get("name") or ""), content=text, tool_call_id=call_id
        )
    if role == "system":
        text = content if isinstance(content, str) else _dumps(content)
        if isinstance(original, SystemPromptPart):
            return replace(original, content=text)
        return SystemPromptPart(content=text)
    user = _user_content(content, refs)
    if isinstance(original, UserPromptPart):
        return replace(original, content=user)
    return UserPromptPart(content=user)


def _request_parts(chat: Message, origin: Origin | None, refs: dict[int, Any]) -> list[Any]:
    """The parts of a changed (or new) non-assistant chat message."""
    if origin is None:
        return [_rebuilt_request_part(chat, None, refs)]
    mapped = [p for p in origin.parts if isinstance(p, _CHAT_FORM)]
    opaque = [p for p in origin.parts if not isinstance(p, _CHAT_FORM)]
    first = mapped[0] if mapped else None
    return [_rebuilt_request_part(chat, first, refs), *opaque]


def _response_parts(chat: Message, origin: Origin | None) -> list[Any]:
    """The parts of a changed (or new) assistant message: its text and tool calls as the
    chat message says, every other part of the origin as it was, in its place."""
    originals = list(origin.parts) if origin is not None else []
    content = chat.get("content")
    text = content if isinstance(content, str) else ("" if content is None else _dumps(content))
    old_text = "".join(p.content for p in originals if isinstance(p, TextPart))
    old_calls = [p for p in originals if isinstance(p, ToolCallPart)]
    new_calls = [c for c in chat.get("tool_calls") or () if isinstance(c, dict)]
    by_id = {p.tool_call_id: p for p in old_calls}
    calls: list[Any] = []
    for n, call in enumerate(new_calls):
        function = call.get("function") or {}
        call_id = str(call.get("id", ""))
        found = by_id.get(call_id)
        if found is None and len(new_calls) == len(old_calls):
            found = old_calls[n]  # same position: an id the target's rules changed
        arguments = function.get("arguments")
        if found is None:
            calls.append(
                ToolCallPart(
                    tool_name=str(function.get("name", "")), args=arguments, tool_call_id=call_id
                )
            )
        elif found.tool_call_id == call_id and found.args_as_json_str() == arguments:
            calls.append(found)
        else:
            calls.append(replace(found, tool_call_id=call_id, args=arguments))
    out: list[Any] = []
    text_done = False
    call_iter = iter(calls)
    for part in originals:
        if isinstance(part, TextPart):
            if text == old_text:
                out.append(part)
            elif not text_done and text:
                out.append(replace(part, content=text))
            text_done = True
        elif isinstance(part, ToolCallPart):
            nxt = next(call_iter, None)
            if nxt is not None:
                out.append(nxt)
        else:
            out.append(part)
    if not text_done and (text or content == ""):
        # an empty text the target's rules asked for (content "" rather than null)
        out.insert(0, TextPart(content=text))
    out.extend(call_iter)
    return out


@dataclass
class _Building:
    kind: str  # "request" | "response"
    source: ModelMessage | None
    parts: list[Any] = field(default_factory=list)
    after: list[ModelMessage] = field(default_factory=list)
    chats: int = 0  # chat messages it stands for (a response may have no parts)

    def build(self, memo: Memo) -> ModelMessage:
        source = self.source
        if source is not None and _same_parts(tuple(self.parts), source.parts):
            return source
        if source is not None:  # rebuilt the same way as on the last call: the same object
            hit = memo.built.get(id(source))
            if hit is not None and hit[0] is source and _same_parts(hit[1], self.parts):
                return hit[2]
        built: ModelMessage
        # Two branches: mypy types replace() on the union as taking no parts.
        if isinstance(source, ModelResponse):  # noqa: SIM114
            built = replace(source, parts=self.parts)
        elif isinstance(source, ModelRequest):
            built = replace(source, parts=self.parts)
        elif self.kind == "response":
            built = ModelResponse(parts=self.parts)
        else:
            built = ModelRequest(parts=self.parts)
        if source is not None:
            memo.built[id(source)] = (source, tuple(self.parts), built)
        return built


@dataclass
class Memo:
    """What a conversation's last encode rebuilt, by identity, so that a step whose
    governed list repeats the last one's changes (the cache policy keeps them stable)
    costs a look-up per message and gives the same objects as before."""

    #: id(changed chat message) -> (it, the parts rebuilt from it)
    parts: dict[int, tuple[Message, list[Any]]] = field(default_factory=dict)
    #: id(source message) -> (it, the parts it was rebuilt with, the rebuilt message)
    built: dict[int, tuple[ModelMessage, tuple[Any, ...], ModelMessage]] = field(
        default_factory=dict
    )
    #: (id(source message), the changed chat message's fields) -> (source, parts): a
    #: full run (a compaction that only clears) makes new dicts equal to the last ones
    #: for the changes it repeats; they give back the same parts too
    equal: dict[tuple[int, str], tuple[ModelMessage, list[Any]]] = field(default_factory=dict)

    def keep_only(self, chats: Sequence[Message], messages: Sequence[ModelMessage]) -> None:
        """Forget what is no longer in play (the memo never outgrows the conversation)."""
        live = {id(c) for c in chats}
        self.parts = {k: v for k, v in self.parts.items() if k in live}
        sources = {id(m) for m in messages}
        self.built = {k: v for k, v in self.built.items() if k in sources}
        self.equal = {k: v for k, v in self.equal.items() if k[0] in sources}


def _changed_parts(
    chat: Message, origin: Origin | None, kind: str, memo: Memo, refs: dict[int, Any]
) -> list[Any]:
    hit = memo.parts.get(id(chat))
    if hit is not None and hit[0] is chat:
        return hit[1]
    key = None
    if origin is not None:
        key = (id(origin.message), repr(sorted((k, v) for k, v in chat.items() if k != CARRY)))
        equal = memo.equal.get(key)
        if equal is not None and equal[0] is origin.message:
            memo.parts[id(chat)] = (chat, equal[1])
            return equal[1]
    if kind == "response":
        parts = _response_parts(chat, origin)
    else:
        parts = _request_parts(chat, origin, refs)
    memo.parts[id(chat)] = (chat, parts)
    if key is not None and origin is not None:
        memo.equal[key] = (origin.message, parts)
    return parts


def encode(
    chats: Sequence[Message], decoded: Sequence[Message], memo: Memo | None = None
) -> list[ModelMessage]:
    """The ModelMessages of a governed chat list. ``decoded`` is what :func:`decode`
    gave (to tell the messages that came back unchanged, by identity); ``memo`` keeps
    a conversation's rebuilt parts and messages from one call to the next."""
    memo = memo if memo is not None else Memo()
    unchanged = {id(m) for m in decoded}
    refs: dict[int, Any] = {}  # every user content item of the history, by its ref
    for message in decoded:
        origin = message.get(CARRY)
        if isinstance(origin, Origin):
            refs.update(origin.items)
    out: list[ModelMessage] = []
    current: _Building | None = None

    def flush() -> None:
        nonlocal current
        if current is not None:
            if current.chats:
                out.append(current.build(memo))
            out.extend(current.after)
        current = None

    for chat in chats:
        found = chat.get(CARRY)
        origin = found if isinstance(found, Origin) else None
        same = id(chat) in unchanged
        kind = "response" if chat.get("role") == "assistant" else "request"
        source = origin.message if origin is not None else None
        if (
            current is None
            or kind != current.kind
            or (source is not None and current.source is not None and source is not current.source)
        ):
            flush()
            current = _Building(kind, source)
        elif current.source is None:
            current.source = source
        if origin is not None and origin.before:
            if current.chats:
                flush()
                current = _Building(kind, source)
            out.extend(origin.before)
        if same and origin is not None:
            parts = list(origin.parts)
        else:
            parts = _changed_parts(chat, origin, kind, memo, refs)
        current.parts.extend(parts)
        current.chats += 1
        if origin is not None:
            current.after.extend(origin.after)
    flush()
    return out
