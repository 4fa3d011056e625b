"""Anthropic rules that only exist in a native Messages body, and the thinking repairs.

The chat-level rules (AN-1..AN-8, AN-11 in providers/_anthropic.py) run on the
decoded messages; what they cannot see is here: the thinking-mode rules (AN-9),
which depend on the request's ``thinking`` setting and on thinking blocks, and
the cache breakpoint limit over the whole request (AN-10: tools, system and
messages together). Error texts are the API's own (rules AN-9 and AN-10 of docs/providers.md).

Thinking blocks carry signatures: nothing here edits or reorders one. The only
repairs are the ones the API's error texts recommend: drop the thinking blocks
of an *earlier* assistant turn whole, or disable thinking for the request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from ..messages import Message
from ..providers import Rule, Violation, find_violations
from ..stages import Context
from ..targets import Target
from ._anthropic import COMPACTION, THINKING_TYPES, boundary

ThinkingMode = Literal["off", "enabled", "adaptive"]
MAX_BREAKPOINTS = 4
STAGE = "thinking"
Finding = tuple[int, dict[str, Any]]


def thinking_mode(body: dict[str, Any]) -> ThinkingMode:
    """The request's thinking mode: "enabled" (a budget: the strict rules hold),
    "adaptive" (the model decides whether to think, so a turn without thinking is
    legal), or "off"."""
    thinking = body.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") in (None, "disabled"):
        return "off"
    return "adaptive" if thinking.get("type") == "adaptive" else "enabled"


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _is_thinking(block: Any) -> bool:
    return isinstance(block, dict) and _type(block) in THINKING_TYPES


def _type(block: Any) -> str:
    return str(block.get("type")) if isinstance(block, dict) else type(block).__name__


def _last_assistant(messages: list[Message]) -> int | None:
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )


# -- native checks (on body["messages"]) ----------------------------------------------------


def _continuation(messages: list[Message]) -> int | None:
    """The final assistant turn in the sense of AN-9a: an assistant message in the final
    position, or the one whose tool_use the final user message answers."""
    last = _last_assistant(messages)
    if last is None or last + 1 == len(messages):
        return last
    if not any(_type(b) == "tool_use" for b in _blocks(messages[last])):
        return None
    following = _blocks(messages[last + 1])
    if messages[last + 1].get("role") != "user" or not following:
        return None
    return last if _type(following[0]) == "tool_result" else None


def final_turn_without_thinking(messages: list[Message]) -> Iterator[Finding]:
    index = _continuation(messages)
    if index is None:
        return
    content = messages[index].get("content")
    blocks = [{"type": "text"}] if isinstance(content, str) else _blocks(messages[index])
    if blocks and not _is_thinking(blocks[0]):
        yield index, {"found": _type(blocks[0])}


def thinking_not_first(messages: list[Message]) -> Iterator[Finding]:
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        first_ok = not blocks or _is_thinking(blocks[0])
        if message.get("role") == "assistant" and not first_ok and any(map(_is_thinking, blocks)):
            yield i, {"found": _type(blocks[0])}


def thinking_last(messages: list[Message]) -> Iterator[Finding]:
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        if message.get("role") == "assistant" and blocks and _is_thinking(blocks[-1]):
            yield i, {}


def thinking_in_final_when_disabled(messages: list[Message]) -> Iterator[Finding]:
    if not messages or messages[-1].get("role") != "assistant":
        return
    for j, block in enumerate(_blocks(messages[-1])):
        if _is_thinking(block):
            yield len(messages) - 1, {"block": j}
            return


_EXTENDED_THINKING_DOC = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

AN_9A = Rule(
    "AN-9a",
    "with thinking enabled, the final assistant turn (a prefill, or the one the final "
    "tool_result answers) starts with thinking",
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
    "`{found}`. When `thinking` is enabled, a final `assistant` message must start with a "
    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
    "recommend you include thinking blocks from previous turns. To avoid this requirement, "
    f"disable `thinking`. Please consult our documentation at {_EXTENDED_THINKING_DOC}",
    "send the turn's thinking blocks back as returned, or disable thinking for the request",
    final_turn_without_thinking,
)
AN_9B = Rule(
    "AN-9b",
    "an assistant message with thinking blocks starts with one",
    "messages.{index}.content.0: If an assistant message contains any thinking blocks, the "
    "first block must be thinking or redacted_thinking. Found {found}.",
    "drop the thinking blocks of that (earlier) turn whole",
    thinking_not_first,
)
AN_9C = Rule(
    "AN-9c",
    "with thinking disabled, a final assistant message has no thinking blocks",
    "messages.{index}.content.{block}: When thinking is disabled, an `assistant` message in the "
    "final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in "
    "your request.",
    "drop the thinking blocks of the final assistant message, or enable thinking",
    thinking_in_final_when_disabled,
)
AN_9D = Rule(
    "AN-9d",
    "an assistant message does not end with a thinking block",
    "messages.{index}: The final block in an assistant message cannot be `thinking`.",
    "drop the thinking blocks of that (earlier) turn whole",
    thinking_last,
)
AN_10 = Rule(
    "AN-10",
    "at most 4 cache_control breakpoints in the request (tools, system and messages)",
    "A maximum of 4 blocks with cache_control may be provided. Found {found}.",
    "keep the newest 4 breakpoints",
    lambda messages: iter(()),  # counted over the whole body: see breakpoints()
)

# -- compaction blocks (server-side compaction) ----------------------------------------------

_COMPACTION_DOCS = "https://platform.claude.com/docs/en/build-with-claude/compaction"
_ON_DEMAND_DOCS = "https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand"
#: The fields a compaction block takes (BetaCompactionBlockParam; ``signature`` on blocks
#: made on demand): anything else is refused.
COMPACTION_FIELDS = frozenset(
    {"type", "content", "cache_control", "encrypted_content", "signature"}
)


def _compaction_blocks(messages: list[Message]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    for i, message in enumerate(messages):
        for j, block in enumerate(_blocks(message)):
            if isinstance(block, dict) and block.get("type") == COMPACTION:
                yield i, j, block


def compaction_content(messages: list[Message]) -> Iterator[Finding]:
    for i, j, block in _compaction_blocks(messages):
        summary = block.get("content")
        if summary is not None and not (isinstance(summary, str) and summary):
            yield i, {"block": j}


def compaction_extra_fields(messages: list[Message]) -> Iterator[Finding]:
    for i, j, block in _compaction_blocks(messages):
        extra = sorted(k for k in block if k not in COMPACTION_FIELDS)
        if extra:
            yield i, {"block": j, "field": extra[0]}


def signed_compaction_not_first(messages: list[Message]) -> Iterator[Finding]:
    for i, j, block in _compaction_blocks(messages):
        if "signature" in block and (i, j) != (0, 0):
            yield i, {"block": j}


AN_12 = Rule(
    "AN-12",
    "a compaction block's content is its summary (a non-empty string), or null for a "
    "failed compaction",
    "messages.{index}.content.{block}.content: a compaction block's content must be a "
    "non-empty string, or null",
    "send the block as the API returned it",
    compaction_content,
    verbatim=False,
    source=(_COMPACTION_DOCS,),
)
AN_12B = Rule(
    "AN-12b",
    "a compaction block has no fields but type, content, cache_control, encrypted_content "
    "and signature",
    "messages.{index}.content.{block}.{field}: Extra inputs are not permitted",
    "send the block as the API returned it (in Python: to_dict() or "
    "model_dump(exclude_none=True), not a plain model_dump())",
    compaction_extra_fields,
    verbatim=False,
    source=(_COMPACTION_DOCS + "-threshold",),
)
AN_12C = Rule(
    "AN-12c",
    "a compaction block made on demand (signed) comes first, in place of the messages it "
    "summarizes",
    "compaction_block_misplaced: the compaction block must be sent first, in place of the "
    "messages it summarizes; remove those messages",
    "drop the messages in front of the block",
    signed_compaction_not_first,
    verbatim=False,
    source=(_ON_DEMAND_DOCS,),
)
AN_12D = Rule(
    "AN-12d",
    "an on-demand compaction request (compaction) carries no context_management",
    "compaction cannot be combined with context_management on one request",
    "send the edits on the other requests of the conversation",
    lambda messages: iter(()),  # a setting of the request: see native_violations()
    verbatim=False,
    source=(_ON_DEMAND_DOCS,),
)
COMPACTION_RULES = (AN_12, AN_12B, AN_12C)

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    (
        "AN-9e",
        "thinking blocks of the latest assistant message must be sent as returned: one body "
        "cannot show it (governance never edits, reorders or drops them)",
    ),
    (
        "AN-12e",
        "the role of the message holding a threshold compaction block (the API returns it in "
        "an assistant message; no other place is documented or refused): not judged",
    ),
)


def _marks(value: Any) -> int:
    """cache_control breakpoints in a block list (tool_result contents included)."""
    if not isinstance(value, list):
        return 0
    total = 0
    for block in value:
        if isinstance(block, dict):
            total += "cache_control" in block
            if block.get("type") == "tool_result":
                total += _marks(block.get("content"))
    return total


def tool_breakpoints(body: dict[str, Any]) -> int:
    return _marks(body.get("tools"))


def breakpoints(body: dict[str, Any]) -> int:
    messages = body.get("messages")
    native = messages if isinstance(messages, list) else []
    return (
        tool_breakpoints(body)
        + _marks(body.get("system"))
        + sum(_marks(_blocks(m)) for m in native if isinstance(m, dict))
    )


def native_rules(mode: ThinkingMode) -> tuple[Rule, ...]:
    """The AN-9 rules that hold for the request's thinking mode."""
    if mode == "off":
        return (AN_9B, AN_9D, AN_9C)
    if mode == "adaptive":
        return (AN_9B, AN_9D)
    return (AN_9A, AN_9B, AN_9D)


def read_view(messages: Any) -> tuple[list[Message], int]:
    """What the model reads of a body's messages, for the thinking rules: from the newest
    compaction block on (the API ignores every block before it), the block's own message
    without the block and what precedes it; and the position of the first of them in
    the body."""
    native = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    found = boundary(native)
    if found is None:
        return native, 0
    at, block = found
    first = {**native[at], "content": native[at]["content"][block + 1 :]}
    return [first, *native[at + 1 :]], at


def native_violations(body: dict[str, Any], target: Target) -> list[Violation]:
    """The rules only a native body can break, with the API's error texts. The thinking
    rules judge what the model reads (from the newest compaction block on); the
    compaction blocks' own rules, the whole body."""
    messages = [m for m in body.get("messages", ()) if isinstance(m, dict)]
    read, offset = read_view(messages)
    found = [
        Violation(v.rule, v.index + offset, v.error, v.hint, v.provider)
        for v in find_violations(native_rules(thinking_mode(body)), read, target)
    ]
    found += find_violations(COMPACTION_RULES, messages, target)
    if body.get("compaction") is not None and body.get("context_management") is not None:
        found.append(Violation(AN_12D.id, -1, AN_12D.error, AN_12D.hint, target.provider))
    count = breakpoints(body)
    if count > MAX_BREAKPOINTS:
        error = AN_10.error.format(found=count)
        found.append(Violation(AN_10.id, -1, error, AN_10.hint, target.provider))
    return found


# -- the thinking repair (a finishing stage on the decoded messages) -------------------------


def _parts(message: Message) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _illegal_earlier(message: Message) -> bool:
    """An earlier assistant message whose thinking the API would reject where it is."""
    parts = _parts(message)
    if not any(_is_thinking(p) for p in parts):
        return False
    ends_with_thinking = _is_thinking(parts[-1]) and not message.get("tool_calls")
    return not _is_thinking(parts[0]) or ends_with_thinking


def _without_thinking(message: Message) -> Message | None:
    """The message without its thinking blocks (all of them), or None if nothing is left."""
    kept = [p for p in _parts(message) if not _is_thinking(p)]
    if not kept and not message.get("tool_calls"):
        return None
    return {**message, "content": kept or None}


def repair_thinking(messages: list[Message], ctx: Context, *, mode: ThinkingMode) -> list[Message]:
    """Make the thinking blocks legal where they are, the way the API's errors recommend.

    Earlier assistant turns whose thinking would be rejected (not first, or last)
    lose their thinking blocks whole; with thinking off, so do the latest turn's
    (the API keeps none then) and an assistant message in the final position
    (AN-9c). With thinking on, the latest assistant message's thinking is never
    touched (AN-9e): when thinking is enabled and the
    turn a tool result continues does not start with thinking (AN-9a), thinking
    is disabled for the request instead (``ctx.disable_thinking``).
    """
    latest = _last_assistant(messages)
    out = list(messages)
    dropped = 0
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        final_when_off = mode == "off" and i == len(messages) - 1
        # With thinking on, the latest assistant's thinking is sent exactly as returned;
        # with it off, the API keeps no thinking of any turn, so none is protected.
        protected = i == latest and mode != "off"
        if protected:
            continue
        if not (final_when_off and any(_is_thinking(p) for p in _parts(message))) and not (
            _illegal_earlier(message)
        ):
            continue
        new = _without_thinking(message)
        why = (
            "thinking is disabled and the message is in the final position (AN-9c)"
            if final_when_off
            else "they were not first, or last, in the message (AN-9b/AN-9d)"
        )
        at = i - dropped
        if new is None:
            ctx.record(STAGE, "drop", at, f"assistant message of thinking blocks only: {why}",
                       tokens_saved=ctx.tokens(message))  # fmt: skip
            out.pop(at)
            dropped += 1
        else:
            ctx.record(STAGE, "repair", at, f"thinking blocks dropped whole: {why}",
                       tokens_saved=ctx.tokens(message) - ctx.tokens(new))  # fmt: skip
            out[at] = new
    if mode == "enabled" and _chat_continuation_without_thinking(out):
        ctx.disable_thinking = True
        ctx.record(
            STAGE,
            "repair",
            _last_assistant(out) or 0,
            "thinking disabled for this request: the final assistant turn has no thinking "
            "block to start with, and none can be made up (AN-9a)",
        )
    return out if dropped or out != messages else messages


def _chat_continuation_without_thinking(messages: list[Message]) -> bool:
    latest = _last_assistant(messages)
    if latest is None:
        return False
    final = latest + 1 == len(messages)
    continued = (
        not final
        and bool(messages[latest].get("tool_calls"))
        and messages[latest + 1].get("role") == "tool"
    )
    parts = _parts(messages[latest])
    return (final or continued) and not (parts and _is_thinking(parts[0]))
