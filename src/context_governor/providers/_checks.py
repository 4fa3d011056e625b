"""Small predicates over an OpenAI-format message list, shared by the providers' rules.

Each check yields ``(index, fields)``: the message it objects to (-1 for the
request as a whole) and the values the provider's error text quotes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ..messages import Message, has_tool_calls

__all__ = [
    "Finding",
    "any_system",
    "blank_content",
    "blank_text_parts",
    "cache_control_count",
    "call_id_format",
    "call_name_pattern",
    "calls_without_results_after",
    "consecutive_same_role",
    "content_and_calls",
    "duplicate_call_ids",
    "duplicate_results",
    "empty_request",
    "empty_text_parts",
    "empty_tool_calls",
    "ends_with_assistant",
    "first_is_function_call",
    "first_is_not_user",
    "first_non_system",
    "first_tool_block",
    "hoisted",
    "interjection_in_tool_block",
    "key_present",
    "last_role_not_in",
    "list_content",
    "lone_message_not_in",
    "missing_thought_signature",
    "name_outside_tool",
    "name_pattern",
    "no_user_message",
    "null_content",
    "null_content_without_calls",
    "only_system",
    "prefill_with_trailing_whitespace",
    "reasoning_missing",
    "result_count_mismatch",
    "result_without_call_before",
    "role_order",
    "role_refused",
    "several_tool_calls",
    "system_not_first",
    "template_alternation",
    "template_late_system",
    "template_other_role",
    "tool_messages_present",
    "turn_alternation",
    "unknown_keys",
    "untyped_parts",
    "user_after_tool",
    "whitespace_text_parts",
]

Finding = tuple[int, dict[str, Any]]


def _call_ids(message: Message) -> list[str]:
    return [
        str(c.get("id"))
        for c in message.get("tool_calls") or ()
        if isinstance(c, dict) and c.get("id") is not None
    ]


def _is_blank(content: Any) -> bool:
    """No text worth a content block: None, "", whitespace, or a list of only blank text parts."""
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                return False
            if isinstance(part.get("text"), str) and part["text"].strip():
                return False
        return True
    return False


def first_non_system(messages: list[Message]) -> int | None:
    return next((i for i, m in enumerate(messages) if m.get("role") != "system"), None)


def hoisted(check: Any) -> Any:
    """``check`` run on the list as Anthropic and Bedrock receive it: system messages lifted
    into the request's ``system`` field, so a system message between a call and its results
    separates nothing. Indices stay the input's; ``turn`` (and ``next_turn``) is the position
    among the provider's turns, what its error texts count: consecutive messages of one side
    are one turn, tool results and the user text after them being the user side.
    """

    def wrapped(messages: list[Message]) -> Iterator[Finding]:
        kept = [i for i, m in enumerate(messages) if m.get("role") != "system"]
        turns: list[int] = []
        side: str | None = None
        for i in kept:
            current = "assistant" if messages[i].get("role") == "assistant" else "user"
            turns.append(turns[-1] + (current != side) if turns else 0)
            side = current
        for index, fields in check([messages[i] for i in kept]):
            if index < 0:
                yield index, fields
            else:
                yield kept[index], {**fields, "turn": turns[index], "next_turn": turns[index] + 1}

    # the check it wraps, for the Governor's probe (probe.unwrapped): on a list without
    # system messages the wrapper finds what ``check`` finds, at the same messages
    wrapped.hoisted_from = check  # type: ignore[attr-defined]
    return wrapped


# -- tool pairing ------------------------------------------------------------------------


def result_without_call_before(messages: list[Message]) -> Iterator[Finding]:
    """A tool message must answer a call of the assistant message right before its block."""
    owner: Message | None = None
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            tcid = m.get("tool_call_id")
            if owner is None or str(tcid) not in _call_ids(owner):
                yield i, {"id": tcid}
        else:
            owner = m if role == "assistant" and has_tool_calls(m) else None


def calls_without_results_after(messages: list[Message]) -> Iterator[Finding]:
    """Every call needs a tool message in the block of tool messages right after it."""
    for i, m in enumerate(messages):
        if m.get("role") != "assistant" or not has_tool_calls(m):
            continue
        answered = set()
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            answered.add(str(messages[j].get("tool_call_id")))
            j += 1
        missing = [cid for cid in _call_ids(m) if cid not in answered]
        if missing:
            yield i, {"ids": ", ".join(missing), "next": j}


def duplicate_results(messages: list[Message]) -> Iterator[Finding]:
    seen: dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and has_tool_calls(m):
            for cid in _call_ids(m):
                seen.pop(cid, None)  # a re-declared id may be answered again
        elif m.get("role") == "tool":
            tcid = str(m.get("tool_call_id"))
            if tcid in seen:
                yield i, {"id": tcid, "first": seen[tcid]}
            else:
                seen[tcid] = i


def result_count_mismatch(messages: list[Message]) -> Iterator[Finding]:
    """The block after a call turn has exactly as many results as there were calls."""
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and has_tool_calls(m):
            j = i + 1
            while j < len(messages) and messages[j].get("role") == "tool":
                j += 1
            if j - i - 1 != len(m["tool_calls"]):
                yield i + 1, {"calls": len(m["tool_calls"]), "results": j - i - 1}


def duplicate_call_ids(messages: list[Message]) -> Iterator[Finding]:
    counts: Counter[str] = Counter()
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            for cid in _call_ids(m):
                counts[cid] += 1
                if counts[cid] == 2:
                    yield i, {"id": cid}


def call_id_format(pattern: str) -> Any:
    compiled = re.compile(pattern)

    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            ids = (
                [(f"tool_calls[{j}].id", cid) for j, cid in enumerate(_call_ids(m))]
                if m.get("role") == "assistant"
                else []
            )
            if m.get("role") == "tool" and m.get("tool_call_id") is not None:
                ids = [("tool_call_id", str(m["tool_call_id"]))]
            for path, cid in ids:
                if not compiled.fullmatch(cid):
                    yield i, {"id": cid, "length": len(cid), "path": path}

    return check


def empty_tool_calls(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("tool_calls") == []:
            yield i, {}


def interjection_in_tool_block(messages: list[Message]) -> Iterator[Finding]:
    """A user or system message between a call and one of its later results."""
    for i, m in enumerate(messages):
        if m.get("role") != "assistant" or not has_tool_calls(m):
            continue
        ids = set(_call_ids(m))
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            ids.discard(str(messages[j].get("tool_call_id")))
            j += 1
        if j < len(messages) and messages[j].get("role") in ("user", "system") and ids:
            later = any(
                x.get("role") == "tool" and str(x.get("tool_call_id")) in ids
                for x in messages[j + 1 :]
            )
            if later:
                yield j, {"role": messages[j]["role"], "count": len(_call_ids(m))}


# -- order -------------------------------------------------------------------------------


def first_is_not_user(*, tool_call_assistant_ok: bool = False) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        i = first_non_system(messages)
        if i is None:
            return
        m = messages[i]
        if m.get("role") == "user":
            return
        if tool_call_assistant_ok and m.get("role") == "assistant" and has_tool_calls(m):
            return
        yield i, {"role": m.get("role")}

    return check


def template_alternation(*, skip_tool_turns: bool = False) -> Any:
    """The Jinja check of alternation templates, verbatim in effect: after an optional
    system message at index 0, ``(role == 'user') != (n % 2 == 0)`` raises. Mistral v0.3
    counts only messages that are neither tool results nor tool calls."""

    def check(messages: list[Message]) -> Iterator[Finding]:
        start = 1 if messages and messages[0].get("role") == "system" else 0
        n = 0
        for i in range(start, len(messages)):
            m = messages[i]
            if skip_tool_turns and (m.get("role") == "tool" or m.get("tool_calls") is not None):
                continue
            if (m.get("role") == "user") != (n % 2 == 0):
                yield i, {"role": m.get("role"), "expected": "user" if n % 2 == 0 else "assistant"}
                return  # the template stops at the first one
            n += 1

    return check


def template_other_role(messages: list[Message]) -> Iterator[Finding]:
    """Mistral v0.1/v0.2's template after the optional system message at index 0: a role
    other than user or assistant at an odd position passes the alternation check and
    reaches the template's ``else`` branch (at an even position the alternation check
    raises first: ``template_alternation``)."""
    start = 1 if messages and messages[0].get("role") == "system" else 0
    for n, i in enumerate(range(start, len(messages))):
        role = messages[i].get("role")
        if n % 2 == 1 and role not in ("user", "assistant"):
            yield i, {"role": role}


def template_late_system(messages: list[Message]) -> Iterator[Finding]:
    """Mistral v0.3's template: a later system message reaches the ``else`` branch only
    at an odd position of its alternation count (tool calls and results not counted);
    at an even one the alternation check raises first (``template_alternation``)."""
    start = 1 if messages and messages[0].get("role") == "system" else 0
    n = 0
    for i in range(start, len(messages)):
        m = messages[i]
        if m.get("role") == "tool" or m.get("tool_calls") is not None:
            continue
        if n % 2 == 1 and m.get("role") == "system":
            yield i, {"role": "system"}
        n += 1


def first_is_function_call(messages: list[Message]) -> Iterator[Finding]:
    i = first_non_system(messages)
    if i is not None and messages[i].get("role") == "assistant" and has_tool_calls(messages[i]):
        yield i, {}


def consecutive_same_role(*, roles: tuple[str, ...] = ("user", "assistant")) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        previous: str | None = None
        previous_index = -1
        for i, m in enumerate(messages):
            role = m.get("role")
            if role == "system":
                continue
            if role == previous and role in roles:
                yield i, {"role": role, "previous": previous_index}
            previous, previous_index = role, i

    return check


def turn_alternation(messages: list[Message]) -> Iterator[Finding]:
    """Strict user/assistant turns as converters build them (tool results are user turns);
    consecutive tool results form one turn, and so does user text right after them
    (`user` right after `tool` is accepted, merged, by Gemini and Bedrock)."""
    previous: str | None = None
    previous_role: Any = None
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "system":
            continue  # hoisted: no turn, and no boundary between the turns around it
        turn = "user" if role in ("user", "tool") else "assistant"
        if turn == previous and not (previous_role == "tool" and role in ("tool", "user")):
            yield i, {"role": turn}
        previous, previous_role = turn, role


def ends_with_assistant(messages: list[Message]) -> Iterator[Finding]:
    if messages and messages[-1].get("role") == "assistant":
        yield len(messages) - 1, {}


def prefill_with_trailing_whitespace(messages: list[Message]) -> Iterator[Finding]:
    if messages and messages[-1].get("role") == "assistant":
        content = messages[-1].get("content")
        if isinstance(content, list):
            texts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
            content = texts[-1].get("text") if texts and texts[-1] is content[-1] else None
        if isinstance(content, str) and content != content.rstrip():
            yield len(messages) - 1, {}


def role_order(allowed_after: dict[str, frozenset[str]]) -> Any:
    """Each message's role is one that the previous message's role allows after it
    (a role missing from ``allowed_after`` allows anything)."""

    def check(messages: list[Message]) -> Iterator[Finding]:
        for i in range(1, len(messages)):
            previous, role = messages[i - 1].get("role"), messages[i].get("role")
            allowed = allowed_after.get(str(previous))
            if allowed is not None and role not in allowed:
                yield i, {"role": role, "previous": previous}

    return check


def last_role_not_in(roles: tuple[str, ...], *, assistant_flag: str | None = None) -> Any:
    """The last message has one of ``roles`` (or is an assistant carrying ``assistant_flag``)."""

    def check(messages: list[Message]) -> Iterator[Finding]:
        if not messages:
            return
        last = messages[-1]
        role = last.get("role")
        if role in roles or (assistant_flag and role == "assistant" and last.get(assistant_flag)):
            return
        yield len(messages) - 1, {"role": role}

    return check


def lone_message_not_in(roles: tuple[str, ...]) -> Any:
    """A one-message conversation is one of ``roles`` (longer ones are judged by role order)."""

    def check(messages: list[Message]) -> Iterator[Finding]:
        if len(messages) == 1 and messages[0].get("role") not in roles:
            yield 0, {"role": messages[0].get("role")}

    return check


def user_after_tool(messages: list[Message]) -> Iterator[Finding]:
    for i in range(1, len(messages)):
        if messages[i].get("role") == "user" and messages[i - 1].get("role") == "tool":
            yield i, {}


def only_system(messages: list[Message]) -> Iterator[Finding]:
    if all(m.get("role") == "system" for m in messages):
        yield -1, {}


def no_user_message(messages: list[Message]) -> Iterator[Finding]:
    if not any(m.get("role") == "user" for m in messages):
        yield -1, {}


def system_not_first(messages: list[Message]) -> Iterator[Finding]:
    """Only one system message, at the very start."""
    for i, m in enumerate(messages):
        if m.get("role") == "system" and i > 0:
            yield i, {}


def any_system(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("role") == "system":
            yield i, {}


def first_tool_block(messages: list[Message]) -> Iterator[Finding]:
    """The first tool call or tool result: what a converter turns into a toolUse or
    toolResult block (an empty ``tool_calls`` makes no block)."""
    for i, m in enumerate(messages):
        if m.get("role") == "tool" or (m.get("role") == "assistant" and has_tool_calls(m)):
            yield i, {"role": m.get("role")}
            return


def tool_messages_present(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("role") == "tool" or (m.get("role") == "assistant" and has_tool_calls(m)):
            yield i, {"role": m.get("role")}


# -- content -----------------------------------------------------------------------------


def null_content_without_calls(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("content") is None and not has_tool_calls(m):
            yield i, {"role": m.get("role")}


def list_content(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if isinstance(m.get("content"), list):
            yield i, {}


def several_tool_calls(messages: list[Message]) -> Iterator[Finding]:
    """Llama 3.x tests ``'tool_calls' in message`` and then ``length == 1``: an empty
    list or a null (as SDK dumps often carry) fails as surely as two calls."""
    for i, m in enumerate(messages):
        if "tool_calls" not in m:
            continue
        calls = m.get("tool_calls")
        count = len(calls) if isinstance(calls, list) else 0
        if count != 1:
            yield i, {"count": count}


def null_content(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("content") is None:
            yield i, {}


def blank_content(
    *, except_tool_call_assistants: bool = True, except_last_assistant: bool = False
) -> Any:
    """Empty or whitespace-only text where the provider wants real content."""

    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            if except_tool_call_assistants and has_tool_calls(m):
                continue
            if except_last_assistant and i == len(messages) - 1 and m.get("role") == "assistant":
                continue
            if _is_blank(m.get("content")):
                yield i, {}

    return check


def blank_text_parts(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and part.get("type") == "text":
                    text = part.get("text")
                    if not isinstance(text, str) or not text.strip():
                        yield i, {"part": j}


def empty_text_parts(messages: list[Message]) -> Iterator[Finding]:
    """Text parts with no text at all ("" or a missing or non-string text)."""
    for i, fields in blank_text_parts(messages):
        text = messages[i]["content"][fields["part"]].get("text")
        if not isinstance(text, str) or not text:
            yield i, fields


def whitespace_text_parts(messages: list[Message]) -> Iterator[Finding]:
    """Text parts of whitespace only (but not empty)."""
    for i, fields in blank_text_parts(messages):
        text = messages[i]["content"][fields["part"]].get("text")
        if isinstance(text, str) and text:
            yield i, fields


def untyped_parts(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and not part.get("type"):
                    yield i, {"part": j}


def content_and_calls(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if has_tool_calls(m) and not _is_blank(m.get("content")):
            yield i, {}


def role_refused(role: str) -> Any:
    """Messages of ``role``, which the provider answers with a 400 (govern() never sends
    one there: messages/roles.py)."""

    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            if m.get("role") == role:
                yield i, {"role": role}

    return check


def name_pattern(
    pattern: str, *, roles: tuple[str, ...] = ("system", "user", "assistant", "tool")
) -> Any:
    compiled = re.compile(pattern)

    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            name = m.get("name")
            if name is not None and m.get("role") in roles and not compiled.fullmatch(str(name)):
                yield i, {"name": name}

    return check


def call_name_pattern(pattern: str) -> Any:
    """``tool_calls[].function.name`` of assistant messages. A call with no name (missing,
    empty or not a string) is a malformed call, which the input stage strips: not this check's."""
    compiled = re.compile(pattern)

    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            if m.get("role") != "assistant" or not isinstance(m.get("tool_calls"), list):
                continue
            for j, c in enumerate(m["tool_calls"]):
                function = c.get("function") if isinstance(c, dict) else None
                name = function.get("name") if isinstance(function, dict) else None
                if isinstance(name, str) and name and not compiled.fullmatch(name):
                    yield i, {"call": j, "name": name}

    return check


def name_outside_tool(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("role") != "tool" and m.get("name") is not None:
            yield i, {"name": m["name"]}


def cache_control_count(limit: int) -> Any:
    def marks(m: Message) -> int:
        content = m.get("content")
        parts = content if isinstance(content, list) else ()
        return ("cache_control" in m) + sum(
            1 for p in parts if isinstance(p, dict) and "cache_control" in p
        )

    def check(messages: list[Message]) -> Iterator[Finding]:
        total = sum(marks(m) for m in messages)
        running = 0
        for i, m in enumerate(messages):
            here = marks(m)
            running += here
            if here and running > limit:
                yield i, {"found": total}

    return check


# -- keys --------------------------------------------------------------------------------


def key_present(key: str, *, roles: tuple[str, ...] = ("assistant",)) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            if key in m and m.get("role") in roles:
                yield i, {"key": key}

    return check


def reasoning_missing(*, tool_call_turns_only: bool) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            if m.get("role") != "assistant" or "reasoning_content" in m:
                continue
            if tool_call_turns_only and not has_tool_calls(m):
                continue
            yield i, {}

    return check


def unknown_keys(allowed: frozenset[str]) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        for i, m in enumerate(messages):
            for key in m:
                if key not in allowed:
                    yield i, {"key": key, "role": m.get("role")}

    return check


def missing_thought_signature(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("role") == "assistant" and has_tool_calls(m):
            first = m["tool_calls"][0]
            extra = first.get("extra_content") if isinstance(first, dict) else None
            google = extra.get("google") if isinstance(extra, dict) else None
            if not (isinstance(google, dict) and google.get("thought_signature")):
                yield i, {"name": (first.get("function") or {}).get("name", "")}


def empty_request(messages: list[Message]) -> Iterator[Finding]:
    if not messages:
        yield -1, {}
