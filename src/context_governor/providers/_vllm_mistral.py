"""vLLM serving a model with the Mistral tokenizer (Devstral, Magistral, Mistral Small 3
and later, ``--tokenizer-mode mistral``).

No chat template is rendered: vLLM checks the request's last message itself, then
hands the OpenAI-format list to mistral_common (``ChatCompletionRequest.from_openai``)
and its request validator, in the "test" mode vLLM requires. The checks below follow
that validator (mistral_common 1.13), and the differential test runs the real one.

Before validating, vLLM cuts tool-call ids longer than 9 characters to their last 9
(``truncate_tool_call_ids``), so the checks see the ids as the validator does.

The tokenizer version (v7, v11, v13...) changes a few rules and cannot be told from
the model name, so these rules are the union: the id format of v7 to v11 (v13 takes
any id but ``"null"``) and v11's id-based pairing (v7 only counts results).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..messages import Message, declared_calls
from . import _checks as checks
from ._checks import Finding
from ._rules import Rule
from ._sources import MISTRAL_COMMON, MISTRAL_COMMON_DIR, VLLM_MISTRAL
from ._vendor import NotChecked, Sources

__all__ = [
    "CHUNKS",
    "NEXT_ROLES",
    "NOT_CHECKED",
    "RULES",
    "SOURCES",
    "call_ids",
    "function_names",
    "mistral_tokenizer_model",
    "non_text_parts",
    "null_content_outside_assistant",
    "served_id",
    "unknown_part_types",
]

#: Mistral's own model names: a major version, or a release date (YYMM) as the newer ones use.
_MISTRAL_RELEASE = re.compile(
    r"(?:mistral-(?:small|medium|large)|ministral)(?:-\d+b)?(?:-instruct)?-(\d+)(?:[.-](\d+))?"
)


def mistral_tokenizer_model(model: str) -> bool:
    """Models vLLM serves with the Mistral tokenizer (``--tokenizer-mode mistral``, the mode
    their model cards ask for): Devstral, Magistral, and Mistral Small 3 (2501) and later
    releases, whose requests mistral_common validates instead of a chat template.

    ``model`` is lowered and without its organisation (Target.lowered)."""
    if "devstral" in model or "magistral" in model:
        return True
    for found in _MISTRAL_RELEASE.finditer(model):
        number = int(found.group(1))
        if 3 <= number < 100 or number >= 2501:  # a major version, or a YYMM date
            return True
    return False


#: mistral_common 1.13's role order: the roles allowed right after each role.
NEXT_ROLES: dict[str, frozenset[str]] = {
    "system": frozenset({"user", "assistant", "system"}),
    "user": frozenset({"assistant", "system", "user"}),
    "assistant": frozenset({"assistant", "user", "tool"}),
    "tool": frozenset({"assistant", "tool", "user"}),
}
#: The content part types ``from_openai`` turns into chunks, and the chunk class names its
#: errors quote. Any other type fails as "'<type>' is not a valid ChunkTypes".
CHUNKS = {
    "text": "TextChunk",
    "image_url": "ImageURLChunk",
    "input_audio": "AudioChunk",
    "audio_url": "AudioURLChunk",
}
_ID = re.compile(r"[a-zA-Z0-9]{9}")
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def served_id(value: Any) -> str:
    """A tool-call id as the validator sees it: vLLM keeps the last 9 characters."""
    text = str(value)
    return text[-9:] if len(text) > 9 else text


def _pairing(messages: list[Message]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """The validator's pairing walk (v11+): ``(kind, index, fields)`` for each objection.
    Like the validator, it starts after the first message, whatever that is."""
    expected: set[str] = set()
    observed: set[str] = set()
    for index, message in enumerate(messages):
        if index == 0:
            continue
        role = message.get("role")
        if role == "tool":
            tcid = served_id(message.get("tool_call_id"))
            if tcid in observed:
                yield "duplicate_result", index, {"id": tcid}
            elif tcid not in expected:
                yield "unexpected", index, {"id": tcid}
            else:
                observed.add(tcid)
        elif role == "assistant":
            if len(expected) != len(observed):
                yield "count", index, {}
            expected.clear()
            observed.clear()
            for call in declared_calls(message):
                cid = served_id(call.get("id"))
                if cid in expected:
                    yield "duplicate_call", index, {"id": cid}
                expected.add(cid)


def _pairing_check(kind: str) -> Any:
    def check(messages: list[Message]) -> Iterator[Finding]:
        for found, index, fields in _pairing(messages):
            if found == kind:
                yield index, fields

    return check


def call_ids(messages: list[Message]) -> Iterator[Finding]:
    """Ids of calls and of results, after vLLM's cut, are 9 letters or digits (v7-v11)."""
    for index, message in enumerate(messages):
        role = message.get("role")
        ids = [c.get("id") for c in declared_calls(message)] if role == "assistant" else []
        if role == "tool" and message.get("tool_call_id") is not None:
            ids = [message["tool_call_id"]]
        for value in ids:
            if not _ID.fullmatch(served_id(value)):
                yield index, {"id": served_id(value)}


def function_names(messages: list[Message]) -> Iterator[Finding]:
    """Names of called functions, and the ``name`` of tool messages."""
    for index, message in enumerate(messages):
        names: list[Any] = []
        if message.get("role") == "assistant":
            names = [(c.get("function") or {}).get("name") for c in declared_calls(message)]
        elif message.get("role") == "tool" and message.get("name") is not None:
            names = [message["name"]]
        for name in names:
            if isinstance(name, str) and not _NAME.fullmatch(name):
                yield index, {"name": name}


def null_content_outside_assistant(messages: list[Message]) -> Iterator[Finding]:
    """from_openai parses the content of user, system and tool messages as a string or
    a part list: null fails (pydantic's text); an assistant's may be null."""
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" and message.get("content") is None:
            yield index, {"role": message.get("role")}


def _parts(message: Message) -> list[dict[str, Any]]:
    content = message.get("content")
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def unknown_part_types(messages: list[Message]) -> Iterator[Finding]:
    for index, message in enumerate(messages):
        for part in _parts(message):
            kind = part.get("type")
            if isinstance(kind, str) and kind and kind not in CHUNKS:
                yield index, {"type": kind}


def non_text_parts(*roles: str) -> Any:
    """Parts other than text in the messages of ``roles`` (images and audio are for users)."""

    def check(messages: list[Message]) -> Iterator[Finding]:
        for index, message in enumerate(messages):
            if message.get("role") not in roles:
                continue
            chunks = [
                CHUNKS[p["type"]]
                for p in _parts(message)
                if isinstance(p.get("type"), str) and p["type"] in CHUNKS
            ]
            other = sorted({c for c in chunks if c != "TextChunk"})
            if other:
                yield index, {"role": message.get("role"), "chunk": other[0], "chunks": other}

    return check


RULES: tuple[Rule, ...] = (
    Rule(
        "MT-1",
        "role order: no tool after user or system, no system after tool",
        "Unexpected role '{role}' after role '{previous}'",
        "keep tool results right after their call; merge system messages at the front",
        checks.role_order(NEXT_ROLES),
    ),
    Rule(
        "MT-2",
        "a one-message conversation is a user or system message",
        "Conversation must start with a user message or system message",
        "add a user message",
        checks.lone_message_not_in(("user", "system")),
    ),
    Rule(
        "MT-3",
        "the calls of an assistant message are all answered before the next assistant message",
        "Not the same number of function calls and responses",
        "add the missing results right after the call",
        _pairing_check("count"),
    ),
    Rule(
        "MT-4",
        "a tool result answers a call of the assistant message before it",
        "Unexpected tool call id {id} in tool results",
        "drop the orphan result or move it after its call",
        _pairing_check("unexpected"),
    ),
    Rule(
        "MT-5",
        "no second result for one call",
        "Duplicate tool call id {id} in tool results",
        "keep the first result, drop the others",
        _pairing_check("duplicate_result"),
    ),
    Rule(
        "MT-6",
        "the calls of one assistant message have distinct ids (after vLLM keeps their last 9 "
        "characters)",
        "Duplicate tool call id {id} in assistant message",
        "rename the repeated id (on its result too)",
        _pairing_check("duplicate_call"),
    ),
    Rule(
        "MT-7",
        "tool call ids are 9 letters or digits once vLLM keeps their last 9 characters "
        "(tokenizers v7 to v11; v13 takes any id)",
        "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
        "rewrite the id to 9 letters or digits, on the call and its result",
        call_ids,
    ),
    Rule(
        "MT-8",
        "function names and tool message names match ^[a-zA-Z0-9_-]{1,64}$",
        "Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores and "
        "dashes, with a maximum length of 64.",
        "rename the tool message's name; a called function's name must be changed in the "
        "tool definitions too, so govern reports it",
        function_names,
    ),
    Rule(
        "MT-9",
        "system and assistant messages hold text only",
        "{chunk} cannot be used in {role} message.",
        "write the content as text",
        non_text_parts("system", "assistant"),
    ),
    Rule(
        "MT-9b",
        "tool messages hold text only (tokenizers before v15)",
        "Unexpected content chunk types in tool message: {chunks}",
        "write the content as text",
        non_text_parts("tool"),
    ),
    Rule(
        "MT-10",
        "content parts are text, image_url, input_audio or audio_url",
        "'{type}' is not a valid ChunkTypes",
        "write the part as text",
        unknown_part_types,
    ),
    Rule(
        "MT-12",
        "no reasoning_content in history: it becomes a thinking chunk, which v7 tokenizers "
        "reject (v11 and later take it)",
        "Unexpected content chunk types in assistant message: ['ThinkChunk']",
        "strip it",
        checks.key_present("reasoning_content"),
    ),
    Rule(
        "MT-13",
        "content is null only on assistant messages",
        "Input should be a valid string",
        "use an empty string",
        null_content_outside_assistant,
    ),
    Rule(
        "MT-11",
        "an empty message list (vLLM reads the last message before mistral_common's check)",
        "Conversation must have at least one message",
        "send at least one message",
        checks.empty_request,
        verbatim=False,
    ),
)

NOT_CHECKED: NotChecked = (
    (
        "MT-14",
        "a text part without text, or a part without a type, fails mistral_common's parsing "
        "(pydantic); the input check of govern already repairs or rejects such parts",
    ),
)

#: vLLM's request checks, then mistral_common's validator.
SOURCES: Sources = {
    **{f"MT-{n}": (MISTRAL_COMMON,) for n in (1, 2, 3, 4, 5, 6, 11)},
    "MT-6": (VLLM_MISTRAL, MISTRAL_COMMON),
    "MT-7": (VLLM_MISTRAL, MISTRAL_COMMON),
    "MT-8": (MISTRAL_COMMON,),
    "MT-9": (MISTRAL_COMMON_DIR + "messages.py",),
    "MT-9b": (MISTRAL_COMMON,),
    "MT-10": (MISTRAL_COMMON_DIR + "chunk.py",),
    "MT-12": (MISTRAL_COMMON,),
    "MT-13": (MISTRAL_COMMON_DIR + "messages.py",),
}
