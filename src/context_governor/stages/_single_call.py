"""One tool call per model turn: how a history reaches a model that takes one call a turn.

Llama 3.x chat templates raise on an assistant message with several tool calls, so
the provider repairs (``provider_fixes.split_parallel_calls``) send
``[A(c1, c2), r1, r2]`` as ``[A(c1), r1, A(c2), r2]``. Those single-call turns are
what the model, and a second ``govern()`` of the output, see: the cache policy must
decide its cuts on them too, or a second pass finds cut points (between the calls of
a long parallel turn) that the first pass could not use, and cuts again.

This module holds the one rule for which messages split and how, shared by the
repair and by the compaction's view of the history (``SentView``), so the two can
never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..messages import Message

__all__ = ["SentView", "keep_from", "parallel_blocks", "sent_view", "split_message"]


def parallel_blocks(messages: Sequence[Message]) -> dict[int, list[int]]:
    """Each assistant message that splits -> the indices of its results, in call order.

    A message splits when it has two or more calls (all objects) and the tool messages
    right after it answer exactly those calls, each once (compared as strings). With a
    missing, extra or repeated id it stays whole: each call must get its own result."""
    blocks: dict[int, list[int]] = {}
    n = len(messages)
    index = 0
    while index < n:
        message = messages[index]
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if isinstance(calls, list) and len(calls) >= 2 and all(isinstance(c, dict) for c in calls):
            end = index + 1  # found here only: each tool message is passed over once
            while end < n and messages[end].get("role") == "tool":
                end += 1
            ids = [str(c.get("id")) for c in calls]
            by_id = {str(messages[r].get("tool_call_id")): r for r in range(index + 1, end)}
            if end - index - 1 == len(ids) and sorted(by_id) == sorted(ids):
                blocks[index] = [by_id[i] for i in ids]
                index = end
                continue
        index += 1
    return blocks


def split_message(message: Message) -> list[Message]:
    """The single-call turns of a parallel call: the text stays on the first."""
    calls = message["tool_calls"]
    parts: list[Message] = [{**message, "tool_calls": [call]} for call in calls]
    for part in parts[1:]:
        part["content"] = None if message.get("content") is None else ""
    return parts


def keep_from(message: Message, first: int) -> Message:
    """``message`` without its calls before ``first`` (cut away with their results): what
    splits into the single-call turns ``first`` onwards of ``split_message(message)``."""
    if first == 0:
        return message
    blank = None if message.get("content") is None else ""
    return {**message, "tool_calls": message["tool_calls"][first:], "content": blank}


@dataclass(frozen=True, slots=True)
class SentView:
    """A history as a one-call-per-turn model gets it, mapped back to the history.

    ``messages`` is the history with every parallel call split (its results in call
    order after their own calls); ``origin[v]`` is the history index of ``messages[v]``
    (a split call's turns all come from its assistant message); ``turn[v]`` is which
    call of that message the turn ``v`` holds (0 for every other message);
    ``where[i]`` lists the view positions of history message ``i`` (one per call for a
    split message, else one)."""

    messages: list[Message]
    origin: list[int]
    turn: list[int]
    where: list[list[int]]

    def counted(self) -> list[bool]:
        """Per view position: whether removing it (and what precedes it) removes a whole
        history message. Only the last turn of a split call does."""
        return [self.where[i][-1] == v for v, i in enumerate(self.origin)]

    def at(self, v: int) -> int:
        """The history index of view position ``v`` (past the end: the history's end)."""
        return self.origin[v] if v < len(self.origin) else len(self.where)


def sent_view(messages: list[Message]) -> SentView | None:
    """The view of ``messages`` as split for a one-call-per-turn model; None when
    nothing splits (the view is the history itself)."""
    blocks = parallel_blocks(messages)
    if not blocks:
        return None
    view: list[Message] = []
    origin: list[int] = []
    turn: list[int] = []
    where: list[list[int]] = [[] for _ in messages]
    placed: set[int] = set()
    for index, message in enumerate(messages):
        if index in placed:
            continue
        results = blocks.get(index)
        if results is None:
            where[index].append(len(view))
            view.append(message)
            origin.append(index)
            turn.append(0)
            continue
        for k, (part, r) in enumerate(zip(split_message(message), results, strict=True)):
            where[index].append(len(view))
            where[r].append(len(view) + 1)
            view += [part, messages[r]]
            origin += [index, r]
            turn += [k, 0]
            placed.add(r)
    return SentView(view, origin, turn, where)
