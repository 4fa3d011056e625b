"""stages/_pairing.py keeps open calls as one number per id (a list only for an id open
more than once): the pairing must be the one the plain lists gave, for any history
(ids reused within a turn and across turns, late, duplicate and orphan results)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_governor.messages import call_name, declared_calls
from context_governor.stages._pairing import Pairing, pair

Message = dict[str, Any]


def _reference(messages: list[Message]) -> Pairing:
    """The pairing as it was computed with a list per id (before the lean version)."""
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


_IDS = st.sampled_from(["a", "b", "c", "", 7, None])


@st.composite
def _histories(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["assistant", "tool", "user"]))
        if kind == "assistant":
            calls = [
                {"id": draw(_IDS), "function": {"name": draw(st.sampled_from(["f", "g"]))}}
                for _ in range(draw(st.integers(0, 4)))
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif kind == "tool":
            messages.append({"role": "tool", "tool_call_id": draw(_IDS), "content": "r"})
        else:
            messages.append({"role": "user", "content": "u"})
    return messages


@given(_histories())
def test_pairing_equals_the_pairing_with_a_list_per_id(messages: list[Message]) -> None:
    assert pair(messages) == _reference(messages)
