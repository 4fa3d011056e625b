"""The Responses API's rules for an ``input`` item list, and the repairs only items need.

Checked on the native items of a body (indices are positions in ``input``), with
OpenAI's error texts. Where a text has only been seen for function calls, the
custom-tool variant is marked ``verbatim=False`` (our paraphrase, same shape).
Pairing is by ``call_id`` anywhere in the list: the Responses API does not ask
for an output to follow its call directly.

The pairing repairs themselves (orphan outputs dropped, unanswered calls
backfilled) are the pipeline's own stages on the decoded chat messages; this
module adds what the chat view cannot express: a reasoning item left without the
item it must precede is dropped, and call ids longer than 64 characters are
shortened (the call and its outputs alike).

Sources (public reports quoting the API's errors), by rule id, in the shape of a
vendor module's ``SOURCES`` (providers/_openai.py) so that they can move there:
:data:`SOURCES`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..messages import Message
from ..providers import Rule, Violation, find_violations
from ..stages import Context
from ..targets import Target
from ._responses import (
    CALL_ORIGIN,
    CALLS,
    COMPACTION,
    MAX_CALL_ID,
    OUTPUTS,
    boundary,
    input_side,
    item_type,
    origin_of,
    short_id,
    with_items,
)

STAGE = "responses"
Finding = tuple[int, dict[str, Any]]

_GH = "https://github.com/"
SOURCES: dict[str, tuple[str, ...]] = {
    "RS-1": (
        _GH + "smallmain/vscode-unify-chat-provider/issues/40",
        _GH + "Azure/azure-sdk-for-python/issues/46092",
    ),
    "RS-2": (_GH + "continuedev/continue/issues/10092", _GH + "james-6-23/codex2api/issues/414"),
    "RS-3": (_GH + "continuedev/continue/issues/8933", _GH + "openai/openai-agents-js/issues/326"),
    "RS-4": (_GH + "AnswerDotAI/fastllm/issues/45",),
    "RS-6": (
        _GH + "vercel/ai/pull/15492",
        "https://community.openai.com/t/duplicate-item-found-with-id-msg-when-submitting-tool-"
        "output-400-invalid-request-error/1373703",
    ),
}


def _call_id(item: Any) -> Any:
    return item.get("call_id") if isinstance(item, dict) else None


def _unanswered(kind: str) -> Any:
    output = CALLS[kind]

    def check(items: list[Message]) -> Iterator[Finding]:
        last_output: dict[Any, int] = {}
        for j, item in enumerate(items):
            if item_type(item) == output:
                last_output[_call_id(item)] = j
        for i, item in enumerate(items):
            call_id = _call_id(item)
            unanswered = isinstance(call_id, str) and last_output.get(call_id, -1) < i
            if item_type(item) == kind and unanswered:
                yield i, {"call_id": call_id}

    return check


def _orphans(kind: str) -> Any:
    output = CALLS[kind]

    def check(items: list[Message]) -> Iterator[Finding]:
        declared: set[Any] = set()
        for i, item in enumerate(items):
            if item_type(item) == kind:
                declared.add(_call_id(item))
            elif item_type(item) == output and _call_id(item) not in declared:
                yield i, {"call_id": _call_id(item)}

    return check


def _follows(item: Any) -> bool:
    """Can this item be the one a reasoning item must precede? (What the model produced
    after reasoning: not a client's item, not more reasoning.)"""
    return not input_side(item) and item_type(item) != "reasoning"


def dangling_reasoning(items: list[Message]) -> Iterator[Finding]:
    for i, item in enumerate(items):
        if item_type(item) != "reasoning":
            continue
        j = i + 1
        while j < len(items) and item_type(items[j]) == "reasoning":
            j += 1
        if j == len(items) or not _follows(items[j]):
            yield i, {"id": item.get("id")}


def long_call_ids(items: list[Message]) -> Iterator[Finding]:
    for i, item in enumerate(items):
        call_id = _call_id(item)
        too_long = isinstance(call_id, str) and len(call_id) > MAX_CALL_ID
        if item_type(item) in (*CALLS, *OUTPUTS) and too_long:
            assert isinstance(call_id, str)
            yield i, {"length": len(call_id)}


def duplicate_ids(items: list[Message]) -> Iterator[Finding]:
    seen: set[str] = set()
    for i, item in enumerate(items):
        item_id = item.get("id") if isinstance(item, dict) else None
        if item_type(item) == "item_reference" or not isinstance(item_id, str):
            continue
        if item_id in seen:
            yield i, {"id": item_id}
        seen.add(item_id)


def unsealed_compaction(items: list[Message]) -> Iterator[Finding]:
    for i, item in enumerate(items):
        sealed = item.get("encrypted_content") if isinstance(item, dict) else None
        if item_type(item) == COMPACTION and not (isinstance(sealed, str) and sealed):
            yield i, {}


def _empty(items: list[Message]) -> Iterator[Finding]:
    if not items:
        yield -1, {}


RS_1 = Rule(
    "RS-1",
    "every function_call has a function_call_output with its call_id after it",
    "No tool output found for function call {call_id}.",
    "add the missing output after the call",
    _unanswered("function_call"),
)
RS_1C = Rule(
    "RS-1c",
    "every custom_tool_call has a custom_tool_call_output with its call_id after it",
    "No tool output found for custom tool call {call_id}.",
    "add the missing output after the call",
    _unanswered("custom_tool_call"),
    verbatim=False,
)
RS_2 = Rule(
    "RS-2",
    "a function_call_output answers a function_call before it",
    "No tool call found for function call output with call_id {call_id}.",
    "drop the orphan output",
    _orphans("function_call"),
)
RS_2C = Rule(
    "RS-2c",
    "a custom_tool_call_output answers a custom_tool_call before it",
    "No tool call found for custom tool call output with call_id {call_id}.",
    "drop the orphan output",
    _orphans("custom_tool_call"),
    verbatim=False,
)
RS_3 = Rule(
    "RS-3",
    "a reasoning item is followed by the item it was produced with",
    "Item '{id}' of type 'reasoning' was provided without its required following item.",
    "send the reasoning item with the item after it, or drop both",
    dangling_reasoning,
)
RS_4 = Rule(
    "RS-4",
    "call_id is at most 64 characters",
    "Invalid 'input[{index}].call_id': string too long. Expected a string with maximum "
    "length 64, but got a string with length {length} instead.",
    "shorten the id (on the call and its outputs alike)",
    long_call_ids,
)
RS_5 = Rule(
    "RS-5",
    "input is not empty (unless the conversation continues server-side)",
    "Invalid 'input': empty array. Expected an array with minimum length 1, but got an "
    "empty array instead.",
    "send at least one item",
    _empty,
    verbatim=False,
)
RS_6 = Rule(
    "RS-6",
    "no two items with the same id",
    "Duplicate item found with id {id}. Remove duplicate items from your input and try again.",
    "send each item once",
    duplicate_ids,
)

RS_8 = Rule(
    "RS-8",
    "a compaction item carries its encrypted_content (a non-empty string)",
    "Missing required parameter: 'input[{index}].encrypted_content'.",
    "send the compaction item as the API returned it",
    unsealed_compaction,
    verbatim=False,
    source=(
        "https://github.com/openai/openai-python/blob/main/src/openai/types/responses/"
        "response_compaction_item_param_param.py",
    ),
)

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    (
        "RS-7",
        "an item produced with a reasoning item, sent by id without it (\"Item 'msg_…' of type "
        "'message' was provided without its required 'reasoning' item\"): which items belong "
        "together is known server-side only; governance keeps a step's items together",
    ),
)


def native_rules(server_side: bool) -> tuple[Rule, ...]:
    """The rules a body's items can be checked against. With server-side state, an
    output may answer a stored call and the input may be empty: RS-2 and RS-5 are
    not ours to judge."""
    if server_side:
        return (RS_1, RS_1C, RS_3, RS_4, RS_6)
    return (RS_1, RS_1C, RS_2, RS_2C, RS_3, RS_4, RS_5, RS_6)


#: Rules judged over the whole ``input``, compaction or not: an id is one item's in the
#: whole request, and a compaction item must be readable wherever it is.
WHOLE_INPUT = (RS_6, RS_8)


def native_violations(body: dict[str, Any], server_side: bool, target: Target) -> list[Violation]:
    """The rules of a body's items. Pairing, reasoning, call ids and emptiness are judged
    on what the model reads: from the newest compaction item on (the items before it are
    carried as they came; the API lets a client drop them)."""
    items = body.get("input")
    if isinstance(items, str):
        return []
    listed = [it for it in items or () if isinstance(it, dict)]
    start = boundary(listed) or 0
    # the items before the boundary stand as inert ones: positions stay the body's
    read = [_UNREAD if i < start else item for i, item in enumerate(listed)]
    rules = [r for r in native_rules(server_side) if r not in WHOLE_INPUT]
    found = list(find_violations(rules, read, target))
    return found + list(find_violations(WHOLE_INPUT, listed, target))


#: An item before the newest compaction item, to the rules that judge what is read.
_UNREAD: dict[str, Any] = {"type": "compacted"}


# -- repairs (finishing stages on the decoded chat messages) ---------------------------------


def drop_dangling_reasoning(messages: list[Message], ctx: Context) -> list[Message]:
    """A reasoning item with nothing of its step after it (the rest of the step was
    removed, or the client sent it so) is dropped, with the reasoning right before it:
    the API rejects it (RS-3), and a signed reasoning item cannot be completed."""
    out: list[Message] | None = None
    for i, message in enumerate(messages):
        origin = origin_of(message)
        if message.get("role") != "assistant" or origin is None:
            continue
        items = origin.items
        keep = len(items)
        while keep and item_type(items[keep - 1]) == "reasoning":
            keep -= 1
        if keep == len(items):
            continue
        out = out if out is not None else list(messages)
        dropped = len(items) - keep
        at = out.index(message)
        if keep == 0 and not message.get("tool_calls") and not message.get("content"):
            ctx.record(STAGE, "drop", i, f"{dropped} reasoning item(s) with no following item "
                       "(RS-3)", tokens_saved=ctx.tokens(message))  # fmt: skip
            out.pop(at)
            continue
        new = with_items(message, items[:keep])
        saved = ctx.tokens(message) - ctx.tokens(new)
        why = f"{dropped} reasoning item(s) at the end of the step, with no following item (RS-3)"
        ctx.record(STAGE, "drop", i, why, tokens_saved=saved)
        out[at] = new
    return messages if out is None else out


def shorten_call_ids(messages: list[Message], ctx: Context) -> list[Message]:
    """Call ids over 64 characters (RS-4) shortened on the call and its outputs alike."""
    long_ids = {
        c["id"]
        for m in messages
        for c in m.get("tool_calls") or ()
        if isinstance(c, dict) and isinstance(c.get("id"), str) and len(c["id"]) > MAX_CALL_ID
    }
    long_ids |= {
        m["tool_call_id"]
        for m in messages
        if m.get("role") == "tool"
        and isinstance(m.get("tool_call_id"), str)
        and len(m["tool_call_id"]) > MAX_CALL_ID
    }
    if not long_ids:
        return messages
    out = list(messages)
    for i, message in enumerate(messages):
        calls = message.get("tool_calls")
        if isinstance(calls, list) and any(
            isinstance(c, dict) and c.get("id") in long_ids for c in calls
        ):
            new_calls = [
                {**c, "id": short_id(c["id"]), CALL_ORIGIN: c.get(CALL_ORIGIN, c["id"])}
                if isinstance(c, dict) and c.get("id") in long_ids
                else c
                for c in calls
            ]
            out[i] = {**message, "tool_calls": new_calls}
            ctx.record(STAGE, "repair", i, "call_id longer than 64 characters shortened (RS-4)")
        elif message.get("role") == "tool" and message.get("tool_call_id") in long_ids:
            out[i] = {**message, "tool_call_id": short_id(message["tool_call_id"])}
            ctx.record(STAGE, "repair", i, "call_id longer than 64 characters shortened (RS-4)",
                       tool_call_id=message["tool_call_id"])  # fmt: skip
    return out


FINISH = (drop_dangling_reasoning, shorten_call_ids)
