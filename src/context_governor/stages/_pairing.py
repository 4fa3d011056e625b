"""Which tool result answers which tool call, for the strict profiles.

One matching, shared by orphan cleanup (what to drop) and backfill (what to
answer), so the two stages can never disagree.

A result belongs to the assistant message whose block it is in (the nearest
assistant before it) when that message declared its id: it answers the first
of those calls still open, and is a duplicate when none is. Otherwise it
answers the newest open call with its id further back (a late result, e.g.
after an interrupting user message), and is an orphan when there is none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..messages import Message, call_name, declared_calls

__all__ = ["Pairing", "pair", "pair_in"]


@dataclass(slots=True)
class Pairing:
    #: (assistant index, call id, function name) of every declared call, in order.
    calls: list[tuple[int, str, object]] = field(default_factory=list)
    #: positions in ``calls`` that some result answers.
    answered: set[int] = field(default_factory=set)
    #: message index of a result -> position in ``calls`` of the call it answers.
    result_call: dict[int, int] = field(default_factory=dict)
    #: message index -> why that tool result answers nothing.
    unmatched: dict[int, str] = field(default_factory=dict)


def pair(messages: list[Message]) -> Pairing:
    """The pairing of ``messages`` (see the module docstring). Open calls are kept by id
    as one number, or a list only when an id is open more than once, so a long history
    makes no container per call (each one made costs the garbage collector a walk)."""
    result = Pairing()
    calls, answered, unmatched = result.calls, result.answered, result.unmatched
    #: call id -> its open call (one), or its open calls oldest first (two or more)
    open_calls: dict[str, int | list[int]] = {}
    #: call id -> the calls with it in the current assistant message (a number or a list)
    block: dict[str, int | list[int]] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            block = {}
            for call in declared_calls(message):
                call_id = str(call["id"])
                number = len(calls)
                calls.append((index, call_id, call_name(call)))
                _add(open_calls, call_id, number)
                _add(block, call_id, number)
        elif role == "tool":
            tcid = message.get("tool_call_id")
            if not isinstance(tcid, str) or not tcid:
                unmatched[index] = "tool result without a tool_call_id"
                continue
            mine = block.get(tcid)
            if mine is not None:
                first = _first_open(mine, answered)
                if first is None:
                    unmatched[index] = "second result for the same tool call"
                    continue
                number = first
                _close(open_calls, tcid, number)
            elif tcid in open_calls:
                number = _close(open_calls, tcid, None)
            else:
                unmatched[index] = "tool result answers no earlier tool call"
                continue
            answered.add(number)
            result.result_call[index] = number
    return result


def _add(calls: dict[str, int | list[int]], call_id: str, number: int) -> None:
    """Add ``number`` (the newest) to the calls kept under ``call_id``."""
    held = calls.get(call_id)
    if held is None:
        calls[call_id] = number
    elif isinstance(held, int):
        calls[call_id] = [held, number]
    else:
        held.append(number)


def _first_open(held: int | list[int], answered: set[int]) -> int | None:
    """The oldest of ``held`` that no result answers yet, or None."""
    if isinstance(held, int):
        return None if held in answered else held
    return next((n for n in held if n not in answered), None)


def _close(calls: dict[str, int | list[int]], call_id: str, number: int | None) -> int:
    """Take ``number`` (None: the newest) out of the open calls kept under ``call_id``
    (it is there) and return it."""
    held = calls[call_id]
    if isinstance(held, int):
        del calls[call_id]
        return held
    if number is None:
        number = held.pop()
    else:
        held.remove(number)
    if len(held) == 1:
        calls[call_id] = held[0]
    return number


def pair_in(messages: list[Message], ctx: Any) -> Pairing:
    """``pair(messages)``, computed once per list within one govern() call: stages that
    change nothing pass their input list on, and lists are never mutated."""
    cached = ctx.pairing
    if cached is not None and cached[0] is messages:
        result: Pairing = cached[1]
        return result
    result = pair(messages)
    ctx.pairing = (messages, result)
    return result
