"""Squeeze: make a request that the cache policy left over its budget fit, in the
order that costs the agent least.

The cache policy compacts to a goal by clearing old results and cutting old turns,
but it keeps the newest ``keep_recent`` results and the newest turn whole. Real
clients put a whole tool session in one turn (Claude Code sends one assistant
message holding every call of the session, then one user message with all their
results), so that turn alone can be several times the window, and forwarding it
only earns a "prompt is too long" refusal. Under that pressure ``keep_recent`` is a
preference, not a floor:

1. clear results inside the newest turn too, oldest first, every one but the newest
   (they become the policy's placeholder, or its offload note with ``offload_dir``);
2. then truncate what is left of the results, oldest first, keeping each one's head
   and tail with a note in the middle that says how much was removed (and, with
   ``offload_dir``, where the whole output is);
3. snip (the next stage) then cuts whatever else may legally go.

What cannot be made smaller legally (system messages, tools, the newest user text,
the newest assistant message, whose thinking may be signed and whose calls are
answered) stays, and ``overflow_note`` says exactly which of those is over.

Each step stops as soon as the request fits, and each is an action in the report.
The result depends on the list and the budget alone, so every process (a Governor,
govern(), govern_request, the proxy) gives the same request; it is a fixed point of
the pipeline (the output fits, so nothing runs again).
"""

from __future__ import annotations

import re
from typing import Any

from ..messages import Message
from ..policies import CompactionPolicy, settings_of
from ._base import Context
from ._media_mask import media_in
from ._offload import offload as _offload
from ._replay import masks_media, placeholder_for
from ._shrink import settled

__all__ = [
    "HEAD_SHARE",
    "MIN_KEPT_CHARS",
    "OFFLOADED_NOTE",
    "STAGE",
    "TRUNCATION_NOTE",
    "overflow_note",
    "squeeze",
    "squeezed",
    "truncated_text",
]

STAGE = "squeeze"
#: A truncated result keeps at least this many characters (its head and tail) while
#: anything else can still give way; a smaller remainder says nothing useful.
MIN_KEPT_CHARS = 400
#: The share of the kept characters that comes from the head (the rest from the tail).
HEAD_SHARE = 2 / 3
TRUNCATION_NOTE = (
    "\n\n[... {removed:,} of {total:,} characters of this {name} result were removed "
    "here to fit the context window ...]\n\n"
)
OFFLOADED_NOTE = (
    "\n\n[... {removed:,} of {total:,} characters of this {name} result were removed "
    "here to fit the context window; the whole output is in {path} ...]\n\n"
)


#: What every truncation note says (either template): a result carrying it was
#: truncated by an earlier pass and is not touched again (governing the output again
#: changes nothing).
_MARK = re.compile(r"characters of this .* result were removed here to fit the context window")


def squeezed(message: Message) -> bool:
    """Whether ``message`` is a result this stage truncated (by its note)."""
    text = _text(message.get("content"))
    return text is not None and _MARK.search(text) is not None


def _policy(ctx: Context) -> CompactionPolicy:
    return settings_of(ctx.compaction)


def _over(messages: list[Message], ctx: Context) -> int:
    """Tokens over the budget (0 or less: it fits)."""
    assert ctx.budget is not None
    return ctx.counter.prompt_tokens(messages, ctx.tools) - ctx.budget


def squeeze(messages: list[Message], ctx: Context) -> list[Message]:
    """Clear, then truncate, tool results until the request fits its budget (see the
    module docstring); the list unchanged when it fits or nothing can be done."""
    budget = ctx.budget
    if budget is None or budget <= 0 or not messages or _over(messages, ctx) <= 0:
        return messages
    results = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if not results:
        return messages
    out = list(messages)
    out = _clear(out, results[:-1], ctx)
    if _over(out, ctx) > 0:
        out = _truncate(out, results, ctx)
    return out if any(a is not b for a, b in zip(out, messages, strict=True)) else messages


def _clear(out: list[Message], candidates: list[int], ctx: Context) -> list[Message]:
    """Clear ``candidates`` (result indices) oldest first until the request fits."""
    policy = _policy(ctx)
    over = _over(out, ctx)
    for i in candidates:
        if over <= 0:
            break
        message = out[i]
        if (
            message.get("name") in policy.exclude_tools
            or (_size(message) < policy.min_chars and not media_in(message))
            or squeezed(message)
        ):
            continue  # kept, as compaction keeps them (a placeholder is under min_chars)
        cleared, path = _cleared(message, policy, ctx, placeholder_for)
        saved = ctx.tokens(message) - ctx.tokens(cleared)
        if saved <= 0:
            continue  # already a placeholder, or too small to gain anything
        out[i] = cleared
        over -= saved
        where = f"; the whole output is in {path}" if path else ""
        what = "its media masked" if masks_media(message, policy) else "cleared"
        ctx.record(
            STAGE,
            "replace",
            i,
            f"{message.get('name') or 'tool'} result ({_size(message)} chars) {what} although "
            f"it is among the newest: the request was over its budget (keep_recent yields "
            f"under pressure){where}",
            tool_call_id=message.get("tool_call_id"),
            tokens_saved=saved,
        )
    return out


def _cleared(
    message: Message, policy: CompactionPolicy, ctx: Context, placeholder_for: Any
) -> tuple[Message, str | None]:
    path = _offloaded(message, policy, ctx, "cleared")
    # under pressure the bare placeholder (a digest, stages/_digest.py, is a compaction's)
    return placeholder_for(message, policy, path, digest=False), path


def _size(message: Message) -> int:
    text = _text(message.get("content"))
    return 0 if text is None else len(text)


def _text(content: Any) -> str | None:
    """The text of a result that truncation can work on: a string, or a list of text
    parts only (a result with images or other parts is cleared, never cut inside)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    if not all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return None
    texts = [p.get("text") for p in content]
    return "\n".join(str(t) for t in texts) if all(isinstance(t, str) for t in texts) else None


def _truncate(out: list[Message], results: list[int], ctx: Context) -> list[Message]:
    """Truncate the results still verbatim, oldest first, each just enough (never below
    ``MIN_KEPT_CHARS``) until the request fits."""
    policy = _policy(ctx)
    over = _over(out, ctx)
    for i in results:
        if over <= 0:
            break
        message = out[i]
        text = _text(message.get("content"))
        if text is None or len(text) <= MIN_KEPT_CHARS or squeezed(message):
            continue
        path = _offloaded(message, policy, ctx)
        cut = _fitted(message, text, over, path, ctx)
        if cut is None:
            continue
        trimmed, removed = cut
        trimmed = settled(out, i, trimmed, ctx)  # as a second pass's shrink leaves it
        saved = ctx.tokens(message) - ctx.tokens(trimmed)
        if saved <= 0:
            continue
        out[i] = trimmed
        over -= saved
        ctx.record(
            STAGE,
            "replace",
            i,
            f"{message.get('name') or 'tool'} result truncated: {removed:,} of {len(text):,} "
            f"characters removed from its middle (head and tail kept) to fit the budget",
            tool_call_id=message.get("tool_call_id"),
            tokens_saved=saved,
        )
    return out


def _offloaded(
    message: Message, policy: CompactionPolicy, ctx: Context, done: str = "cut"
) -> str | None:
    """Where ``offload_dir`` keeps the whole output (None: no store, or it failed, noted:
    the output is then only ``done``)."""
    if policy.offload_dir is None:
        return None
    try:
        return _offload(policy.offload_dir, message)
    except OSError as exc:
        ctx.notes.append(f"offload to {policy.offload_dir} failed ({exc}); output only {done}")
        return None


def truncated_text(text: str, keep: int, name: str, path: str | None) -> str:
    """``text`` with its middle removed so that ``keep`` characters remain (head and
    tail), and a note there saying how much went (and where the whole is)."""
    head = int(keep * HEAD_SHARE)
    tail = keep - head
    template = TRUNCATION_NOTE if path is None else OFFLOADED_NOTE
    note = template.format(removed=len(text) - keep, total=len(text), name=name, path=path)
    return text[:head] + note + (text[len(text) - tail :] if tail else "")


def _fitted(
    message: Message, text: str, over: int, path: str | None, ctx: Context
) -> tuple[Message, int] | None:
    """``message`` truncated to the most characters that save at least ``over`` tokens
    (at least ``MIN_KEPT_CHARS`` kept), and how many characters went; None if even the
    smallest truncation is no smaller."""
    name = str(message.get("name") or "tool")
    before = ctx.tokens(message)

    def made(keep: int) -> Message:
        return {**message, "content": truncated_text(text, keep, name, path)}

    low, high = MIN_KEPT_CHARS, len(text) - 1  # the most kept that is known to fit: low
    if before - ctx.tokens(made(low)) < over:
        smallest = made(low)
        if ctx.tokens(smallest) >= before:
            return None
        return smallest, len(text) - low  # all it can give; the next result gives the rest
    while low < high:  # the largest keep whose saving still covers ``over``
        mid = (low + high + 1) // 2
        if before - ctx.tokens(made(mid)) >= over:
            low = mid
        else:
            high = mid - 1
    return made(low), len(text) - low


def overflow_note(messages: list[Message], ctx: Context) -> None:
    """Say what keeps a request over its budget when nothing more may legally go: the
    parts that cannot be made smaller, with their tokens."""
    budget = ctx.budget
    if budget is None or budget <= 0 or not messages:
        return
    over = _over(messages, ctx)
    if over <= 0:
        return
    counter = ctx.counter
    tools = counter.prompt_tokens([], ctx.tools)
    systems = sum(ctx.tokens(m) for m in messages if m.get("role") == "system")
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    last_assistant = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    results = sum(ctx.tokens(m) for m in messages if m.get("role") == "tool")
    parts = [
        f"tools and request overhead {tools:,}",
        f"system messages {systems:,}",
        f"the newest user message {0 if last_user is None else ctx.tokens(last_user):,}",
        "the newest assistant message (its thinking may be signed, its calls answered) "
        f"{0 if last_assistant is None else ctx.tokens(last_assistant):,}",
        f"tool results as cleared or truncated {results:,}",
    ]
    ctx.notes.append(
        f"over budget by {over:,} tokens after every legal reduction; what cannot be made "
        f"smaller: {', '.join(parts)}. A larger context window, a smaller output reserve "
        "(max_tokens), fewer tools or a shorter system prompt would let it fit"
    )
