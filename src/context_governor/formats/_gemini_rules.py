"""Gemini's rules for a native ``contents`` list, with Gemini's error texts.

The same GE rules as for a chat-completions list sent to Gemini
(providers/_gemini.py), checked on the contents as the API receives them: indices
are positions in ``contents`` (-1: the request as a whole). Roles are ``user`` and
``model``; function responses travel in a user content, and pair with the calls of
the model content right before it.

Repairs are the pipeline's own stages on the decoded chat messages (orphan
responses dropped, missing responses backfilled, runs of one role merged, a user
turn opened before a leading call turn, empty contents given a placeholder, a lost
signature replaced by the validator-skip value); the edge then writes each turn as
one content. These rules judge the result.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..providers import GEMINI_RULES as CHAT_RULES
from ..providers import Rule, Violation, find_violations
from ..targets import Target
from ._gemini import KNOWN_ROLES, get, is_call, is_response, parts_of, role_of

Finding = tuple[int, dict[str, Any]]
_CHAT = {rule.id: rule for rule in CHAT_RULES}


def _calls(content: Any) -> list[Any]:
    return [p for p in parts_of(content) if is_call(p)] if role_of(content) == "model" else []


def _responses(content: Any) -> list[Any]:
    return [p for p in parts_of(content) if is_response(p)] if role_of(content) == "user" else []


def call_turn_not_after_user(contents: list[Any]) -> Iterator[Finding]:
    """GE-1: a model content with function calls right after a user content (or first)."""
    for i, content in enumerate(contents):
        if _calls(content) and (i == 0 or role_of(contents[i - 1]) != "user"):
            yield i, {}


def response_turn_not_after_calls(contents: list[Any]) -> Iterator[Finding]:
    """GE-2: a user content with function responses right after a function-call content."""
    for i, content in enumerate(contents):
        if _responses(content) and (i == 0 or not _calls(contents[i - 1])):
            yield i, {}


def response_count(contents: list[Any]) -> Iterator[Finding]:
    """GE-3: the content after a call turn answers each of its calls (by count)."""
    for i, content in enumerate(contents):
        calls = _calls(content)
        if not calls or i + 1 == len(contents):
            continue  # a trailing call turn is GE-7's (or a prefill's) business
        answered = len(_responses(contents[i + 1]))
        if answered != len(calls):
            yield i + 1, {"calls": len(calls), "results": answered}


def alternation(contents: list[Any]) -> Iterator[Finding]:
    """GE-4: no two contents of one role in a row."""
    for i in range(1, len(contents)):
        if role_of(contents[i]) == role_of(contents[i - 1]):
            yield i, {"role": role_of(contents[i])}


def no_contents(contents: list[Any]) -> Iterator[Finding]:
    if not contents:
        yield -1, {}


def empty_parts(contents: list[Any]) -> Iterator[Finding]:
    for i, content in enumerate(contents):
        if role_of(content) in KNOWN_ROLES and not parts_of(content):
            yield i, {"turn": i}


def unsigned_calls(contents: list[Any]) -> Iterator[Finding]:
    """GE-6: the first function call of each call turn carries its thought signature."""
    for i, content in enumerate(contents):
        calls = _calls(content)
        if calls and not get(calls[0], "thoughtSignature"):
            yield i, {"name": get(calls[0], "functionCall").get("name", "")}


def trailing_model(contents: list[Any]) -> Iterator[Finding]:
    if contents and role_of(contents[-1]) == "model":
        yield len(contents) - 1, {}


def unknown_roles(contents: list[Any]) -> Iterator[Finding]:
    for i, content in enumerate(contents):
        if role_of(content) not in KNOWN_ROLES:
            yield i, {"role": role_of(content)}


def _like(rule_id: str, check: Any, **changes: Any) -> Rule:
    """The chat rule of that id, checked natively (same error text and sources)."""
    chat = _CHAT[rule_id]
    return Rule(
        chat.id, chat.summary, changes.get("error", chat.error), chat.hint, check,
        applies=chat.applies, verbatim=chat.verbatim, source=chat.source,
    )  # fmt: skip


RULES: tuple[Rule, ...] = (
    _like("GE-1", call_turn_not_after_user),
    _like("GE-2", response_turn_not_after_calls),
    _like("GE-3", response_count),
    _like("GE-4", alternation),
    _like("GE-5", no_contents),
    _like("GE-5b", empty_parts),
    _like("GE-6", unsigned_calls),
    _like("GE-7", trailing_model),
    _like("GE-7b", trailing_model),
    Rule(
        "GE-8",
        "a content's role is user or model",
        "Please use a valid role: user, model.",
        "map the role (assistant -> model, tool/function -> user)",
        unknown_roles,
    ),
)


def native_violations(body: dict[str, Any], target: Target) -> list[Violation]:
    """Every GE rule the body's contents break (the target knows which rules hold for
    its model: signatures from Gemini 3, a trailing model turn where no prefill is)."""
    contents = body.get("contents")
    return list(find_violations(RULES, contents if isinstance(contents, list) else [], target))
