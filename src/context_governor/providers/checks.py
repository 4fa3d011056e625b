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
            ids = _call_ids(m) if m.get("role") == "assistant" else []
            if m.get("role") == "tool" and m.get("tool_call_id") is not None:
                ids = [str(m["tool_call_id"])]
            for cid in ids:
                if not compiled.fullmatch(cid):
                    yield i, {"id": cid, "length": len(cid)}

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
                yield j, {"role": messages[j]["role"]}


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


def first_is_function_call(messages: list[Message]) -> Iterator[Finding]:
    i = first_non_system(messages)
    if i is not None and messages[i].get("role") == "assistant" and has_tool_calls(messages[i]):
        yield i, {}


def consecutive_same_role(*, roles: tuple[str, ...] = ("user", "assistant")) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        previous: str | None = None
        for i, m in enumerate(messages):
            role = m.get("role")
            if role == "system":
                continue
            if role == previous and role in roles:
                yield i, {"role": role, "previous": i - 1}
            previous = role

    return check


def turn_alternation(messages: list[Message]) -> Iterator[Finding]:
    """Strict user/assistant turns as converters build them (tool results are user turns);
    consecutive tool results form one turn."""
    previous: str | None = None
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "system":
            continue
        turn = "user" if role in ("user", "tool") else "assistant"
        merged_tool_block = role == "tool" and i > 0 and messages[i - 1].get("role") == "tool"
        if turn == previous and not merged_tool_block:
            yield i, {"role": turn}
        previous = turn


def ends_with_assistant(messages: list[Message]) -> Iterator[Finding]:
    if messages and messages[-1].get("role") == "assistant":
        yield len(messages) - 1, {}


def prefill_with_trailing_whitespace(messages: list[Message]) -> Iterator[Finding]:
    if messages and messages[-1].get("role") == "assistant":
        content = messages[-1].get("content")
        if isinstance(content, str) and content != content.rstrip():
            yield len(messages) - 1, {}


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


def tool_messages_present(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("role") == "tool" or (m.get("role") == "assistant" and has_tool_calls(m)):
            yield i, {"role": m.get("role")}


# -- content -----------------------------------------------------------------------------


def null_content_without_calls(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("content") is None and not has_tool_calls(m):
            yield i, {}


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


def name_outside_tool(messages: list[Message]) -> Iterator[Finding]:
    for i, m in enumerate(messages):
        if m.get("role") != "tool" and m.get("name") is not None:
            yield i, {"name": m["name"]}


def cache_control_count(limit: int) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        found = 0
        for i, m in enumerate(messages):
            marks = 1 if "cache_control" in m else 0
            content = m.get("content")
            if isinstance(content, list):
                marks += sum(1 for p in content if isinstance(p, dict) and "cache_control" in p)
            found += marks
            if marks and found > limit:
                yield i, {"found": found}

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
                    yield i, {"key": key}

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
