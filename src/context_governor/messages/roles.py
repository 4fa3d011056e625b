"""The ``developer`` role: OpenAI's name for system instructions, at the edge.

OpenAI's Chat Completions API takes instructions in messages of role ``developer``
(the role it recommends since its o1 models; clients such as the OpenAI SDKs and
the Vercel AI SDK send it for reasoning models). To every stage of the pipeline
such a message is a system message: never cut, kept in place, hoisted or folded
where a provider wants system text elsewhere. Rather than teach every stage and
rule a fifth role, this edge hands the pipeline a system-role copy of each
developer message and, on the way out:

* where the provider accepts the role (OpenAI: ``Policy.developer_role``), puts
  the client's own message back in place of its copy, so an unchanged history
  comes out as the very list that came in;
* elsewhere, sends the copy as a system message and reports it: DeepSeek and Qwen
  answer ``developer`` with a 400, and no other provider documents it.

A developer message that a stage had to change (e.g. invalid unicode replaced)
comes out as the changed system-role copy, and the report says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..report import Action, Report, moves_messages
from . import Message
from .legacy import FUNCTION, Legacy, first_legacy, is_legacy

__all__ = ["DEVELOPER", "STAGE", "Developers", "first_developer", "first_edge", "with_entries"]

DEVELOPER = "developer"
STAGE = moves_messages("input")


def first_developer(messages: Sequence[Message], start: int = 0) -> int | None:
    """The index of the first message of role developer at or after ``start``; None
    when there is none (a scan of the roles only: the common case costs one dict
    look-up per message)."""
    for i in range(start, len(messages)):
        message = messages[i]
        if type(message) is dict and message.get("role") == DEVELOPER:
            return i
    return None


def first_edge(messages: Sequence[Message], start: int = 0) -> int | None:
    """The index of the first message at or after ``start`` that the edge rewrites for
    the stages: role developer, or OpenAI's deprecated function calling (legacy.py)."""
    for i in range(start, len(messages)):
        message = messages[i]
        if type(message) is dict:
            role = message.get("role")
            if role in (DEVELOPER, FUNCTION):
                return i
            if role == "assistant" and "function_call" in message and is_legacy(message):
                return i  # the common case never calls is_legacy: every call counts here
    return None


class Developers:
    """The system-role copies of a conversation's developer messages, and the tool-call
    form copies of its deprecated function calls (legacy.py).

    A copy is made once per message object and kept (with its original, so that the
    original's id cannot be reused while the entry lives): a Governor then sees the
    same copy on every call, and its identity checks hold."""

    def __init__(self) -> None:
        #: the deprecated function calls' copies, once one was seen
        self.legacy: Legacy | None = None
        #: id(original) -> (original, copy)
        self._copies: dict[int, tuple[Message, Message]] = {}
        #: id(copy) -> original
        self._originals: dict[int, Message] = {}

    def decode(self, messages: Sequence[Message]) -> tuple[list[Message], list[int]]:
        """``messages`` with each developer message replaced by its system-role copy, and
        the positions replaced. Copies of messages the history no longer holds are
        dropped once they outnumber the live ones (a history rewritten again and again
        keeps the table small)."""
        out = list(messages)
        positions: list[int] = []
        start = first_developer(out)
        while start is not None:
            positions.append(start)
            out[start] = self._copy(out[start])
            start = first_developer(out, start + 1)
        if len(self._copies) > 2 * len(positions) + 8:
            self._keep([messages[i] for i in positions])
        if self.legacy is None and first_legacy(out) is not None:
            self.legacy = Legacy()
        if self.legacy is not None:
            out = self.legacy.decode(out)
        return out, positions

    def _copy(self, original: Message) -> Message:
        entry = self._copies.get(id(original))
        if entry is not None and entry[0] is original:
            return entry[1]
        copy = {**original, "role": "system"}
        self._copies[id(original)] = (original, copy)
        self._originals[id(copy)] = original
        return copy

    def _keep(self, live: Sequence[Message]) -> None:
        """Drop the copies of developer messages not in ``live``."""
        ids = {id(m) for m in live}
        for key in [k for k in self._copies if k not in ids]:
            _, copy = self._copies.pop(key)
            self._originals.pop(id(copy), None)

    def encode(
        self,
        sent: list[Message],
        inputs: list[Message],
        decoded: Sequence[Message],
        positions: Sequence[int],
        accepted: bool,
        provider: str,
    ) -> tuple[list[Message], list[Action]]:
        """The list to send, and the report's entries for what the edge did.

        ``sent`` is the pipeline's output over ``decoded``, the decoding of ``inputs``
        (``positions``: where it put copies). Where the role is ``accepted`` each copy
        is sent as its original; a copy a stage changed goes out as a system message
        (reported). Elsewhere each developer message is sent as a system message
        (reported)."""
        if sent is decoded and accepted:  # nothing changed: the input list itself
            return inputs, []
        if self.legacy is not None:
            sent = self.legacy.encode(sent)
        if not accepted:
            why = f"{provider} has no developer role"
            return sent, [_entry(i, why) for i in positions]
        out = [self._originals.get(id(m), m) for m in sent]
        # A copy missing from the output was changed by a stage: the stages treat it as
        # a system message, and none removes those. Developer messages come first in a
        # history, so the search for each stops early.
        why = "the message was changed by a repair listed below"
        changed = [i for i in positions if not any(m is decoded[i] for m in sent)]
        return out, [_entry(i, why) for i in changed]


def _entry(index: int, why: str) -> Action:
    """The report's entry for the developer message at ``index`` of the input."""
    return Action(
        STAGE, "repair", index, f"messages[{index}].role: 'developer' sent as 'system' ({why})"
    )


def with_entries(report: Report, actions: list[Action]) -> Report:
    """``report`` with the edge's entries first (they describe the input, as the input
    stage's do); the report itself is left as it is (a Governor may keep it)."""
    if not actions:
        return report
    return replace(report, actions=[*actions, *report.actions])
