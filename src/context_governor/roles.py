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

from .messages import Message
from .report import Action, Report

DEVELOPER = "developer"
STAGE = "input"


def first_developer(messages: Sequence[Message], start: int = 0) -> int | None:
    """The index of the first message of role developer at or after ``start``; None
    when there is none (a scan of the roles only: the common case costs one dict
    look-up per message)."""
    for i in range(start, len(messages)):
        message = messages[i]
        if type(message) is dict and message.get("role") == DEVELOPER:
            return i
    return None


class Developers:
    """The system-role copies of a conversation's developer messages.

    A copy is made once per message object and kept (with its original, so that the
    original's id cannot be reused while the entry lives): a Governor then sees the
    same copy on every call, and its identity checks hold."""

    def __init__(self) -> None:
        #: id(original) -> (original, copy)
        self._copies: dict[int, tuple[Message, Message]] = {}
        #: id(copy) -> original
        self._originals: dict[int, Message] = {}

    def decode(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with each developer message replaced by its system-role copy.
        Copies of messages the history no longer holds are dropped once they outnumber
        the live ones (a history rewritten again and again keeps the table small)."""
        out = list(messages)
        live: list[Message] = []
        start = first_developer(out)
        while start is not None:
            live.append(out[start])
            out[start] = self._copy(out[start])
            start = first_developer(out, start + 1)
        if len(self._copies) > 2 * len(live) + 8:
            self._keep(live)
        return out

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
        accepted: bool,
        provider: str,
    ) -> tuple[list[Message], list[Action]]:
        """The list to send, and the report's entries for what the edge did.

        ``sent`` is the pipeline's output over ``decoded`` (the decoding of
        ``inputs``). Where the role is ``accepted`` each copy is sent as its original;
        a copy a stage changed goes out as a system message (reported). Elsewhere
        each developer message is sent as a system message (reported)."""
        if sent is decoded:  # nothing changed: the input list itself, where accepted
            out = inputs if accepted else sent
            return out, _entries(inputs, decoded, None, accepted, provider)
        out = [self._originals.get(id(m), m) for m in sent] if accepted else sent
        return out, _entries(inputs, decoded, {id(m) for m in sent}, accepted, provider)


def _entries(
    inputs: Sequence[Message],
    decoded: Sequence[Message],
    kept: set[int] | None,
    accepted: bool,
    provider: str,
) -> list[Action]:
    """One entry per developer message the output does not send as one: each of them
    where the provider has no developer role; where it has, those a stage changed
    (their copy is not in the output as it was: the stages treat a developer message
    as a system message, and none removes those). ``kept``: the ids of the output's
    messages, None when the output is the decoded list itself."""
    actions: list[Action] = []
    for i, (original, copy) in enumerate(zip(inputs, decoded, strict=True)):
        if original is copy:
            continue
        if not accepted:
            why = f"{provider} has no developer role"
        elif kept is None or id(copy) in kept:
            continue
        else:
            why = "the message was changed by a repair listed below"
        detail = f"messages[{i}].role: 'developer' sent as 'system' ({why})"
        actions.append(Action(STAGE, "repair", i, detail))
    return actions


def with_entries(report: Report, actions: list[Action]) -> Report:
    """``report`` with the edge's entries first (they describe the input, as the input
    stage's do); the report itself is left as it is (a Governor may keep it)."""
    if not actions:
        return report
    return replace(report, actions=[*actions, *report.actions])
