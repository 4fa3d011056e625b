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

from collections import defaultdict
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
    result = Pairing()
    open_by_id: defaultdict[str, list[int]] = defaultdict(list)
    block: dict[str, list[int]] = {}
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant":
            block = {}
            for call in declared_calls(message):
                call_id = str(call["id"])
                number = len(result.calls)
                result.calls.append((index, call_id, call_name(call)))
                open_by_id[call_id].append(number)
                block.setdefault(call_id, []).append(number)
        elif role == "tool":
            tcid = message.get("tool_call_id")
            if not isinstance(tcid, str) or not tcid:
                result.unmatched[index] = "tool result without a tool_call_id"
                continue
            if tcid in block:
                mine = [n for n in block[tcid] if n not in result.answered]
                if not mine:
                    result.unmatched[index] = "second result for the same tool call"
                    continue
                number = mine[0]
                open_by_id[tcid].remove(number)
            elif open_by_id[tcid]:
                number = open_by_id[tcid].pop()
            else:
                result.unmatched[index] = "tool result answers no earlier tool call"
                continue
            result.answered.add(number)
            result.result_call[index] = number
    return result


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
