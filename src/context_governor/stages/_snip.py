"""Snip: cut the oldest history so that the request fits the token budget.

The cut always keeps the newest message, starts the kept window at a user
message when it can (GLM rejects system→assistant), and never starts it on a
tool result whose call was cut away.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Message, declared_calls
from ._base import Context

__all__ = [
    "FALLBACK_KEEP",
    "FLATTENED_RESULT",
    "SAFETY_BUFFER",
    "STAGE",
    "flattened_result",
    "legal_start",
    "snip",
]

STAGE = "snip"
SAFETY_BUFFER = 1024
FALLBACK_KEEP = 4
#: How a tool result written as text starts (provider_fixes.flatten_tools): a user
#: message there, but a result, not a turn of its own.
FLATTENED_RESULT = "[result of "


def flattened_result(message: Message) -> bool:
    """Whether ``message`` is a tool result that flatten_tools wrote as a user message."""
    if message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, list):
        first = content[0] if content else None
        content = first.get("text") if isinstance(first, dict) else None
    return isinstance(content, str) and content.startswith(FLATTENED_RESULT)


def _flattens(ctx: Context) -> bool:
    """Whether the target gets tool calls and results as text (the output's results are
    then user messages that snip must not take for turns: see _window_start)."""
    return (
        ctx.policy is not None and ctx.target is not None and ctx.policy.flatten_tools(ctx.target)
    )


def legal_start(messages: Sequence[Message]) -> int:
    """First index from which every tool result with an id answers a kept call."""
    declared: set[str] = set()
    start = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            declared.update(str(call["id"]) for call in declared_calls(message))
        elif role == "tool":
            tcid = message.get("tool_call_id")
            if tcid and str(tcid) not in declared:
                start = index + 1
                declared.clear()
    return start


def _window_start(
    non_system: Sequence[Message], remaining: int, ctx: Context, keep_last_turn: bool
) -> int:
    """Index into ``non_system`` where the kept suffix starts (len(non_system) = keep none)."""
    n = len(non_system)
    start, total = n, 0
    for j in range(n - 1, -1, -1):
        tokens = ctx.tokens(non_system[j])
        if start < n and total + tokens > remaining:
            break
        start, total = j, total + tokens
    # Where the target gets tools as text, a result written as a user message (by a
    # previous pass) is still part of its model turn: taking it for a turn start would
    # cut a turn that the previous pass kept whole (governing its output again would
    # cut it).
    flat = _flattens(ctx)
    turns = [m.get("role") == "user" and not (flat and flattened_result(m)) for m in non_system]
    first_user = next((j for j in range(start, n) if turns[j]), None)
    if first_user is not None:
        start = first_user
    else:
        # Oversized beats invalid: reach back to the newest user message.
        newest_user = next((j for j in range(n - 1, -1, -1) if turns[j]), None)
        if newest_user is not None:
            start = newest_user
    start += legal_start(non_system[start:])
    if start == n:
        start = n - min(n, FALLBACK_KEEP)
        start += legal_start(non_system[start:])
    if start == n and keep_last_turn:
        # Nothing left (no user message, and the last messages are results of a call that
        # was cut): keep the newest model turn whole rather than send nothing.
        start = next(
            (j for j in range(n - 1, -1, -1) if non_system[j].get("role") == "assistant"), n
        )
    return start


def _split(messages: list[Message]) -> tuple[list[int], list[int]]:
    systems: list[int] = []
    others: list[int] = []
    for index, message in enumerate(messages):
        (systems if message.get("role") == "system" else others).append(index)
    return systems, others


def snip(
    messages: list[Message],
    ctx: Context,
    *,
    systems_first: bool = False,
    keep_last_turn: bool = True,
) -> list[Message]:
    """Cut to ``ctx.budget``. ``systems_first`` moves all system messages to the front
    (the seed does); otherwise they keep their relative positions. ``keep_last_turn``
    keeps the newest model turn when nothing else would be left (the seed sends nothing)."""
    budget = ctx.budget
    if not messages or budget is None or budget <= 0:
        return messages
    estimate = ctx.counter.prompt_tokens(messages, ctx.tools)
    if estimate <= budget:
        return messages
    system_idx, other_idx = _split(messages)
    if not other_idx:
        ctx.notes.append("over budget with system messages only: nothing to snip")
        return messages
    systems = [messages[i] for i in system_idx]
    non_system = [messages[i] for i in other_idx]
    system_tokens = sum(ctx.tokens(m) for m in systems)
    fixed = max(system_tokens, ctx.counter.prompt_tokens(systems, ctx.tools))
    remaining = max(0, budget - fixed)
    start = _window_start(non_system, remaining, ctx, keep_last_turn)
    cut_at = other_idx[start] if start < len(other_idx) else len(messages)

    for index in other_idx[:start]:
        ctx.record(
            STAGE,
            "drop",
            index,
            "older than what fits the budget",
            tool_call_id=messages[index].get("tool_call_id"),
            tokens_saved=ctx.tokens(messages[index]),
        )
    kept_tokens = sum(ctx.tokens(m) for m in non_system[start:])
    if kept_tokens > remaining:
        ctx.notes.append(
            f"snip: the newest turn needs {kept_tokens} tokens but only {remaining} remain "
            f"after {fixed} for system messages and tools; kept whole (oversized beats invalid)"
        )
    moved = [i for i in system_idx if i > cut_at] if systems_first else []
    if start == 0 and not moved:
        return messages
    if systems_first:
        for index in moved:
            ctx.record(STAGE, "move", index, "system message moved to the front")
        return systems + non_system[start:]
    return [m for i, m in enumerate(messages) if i >= cut_at or m.get("role") == "system"]
