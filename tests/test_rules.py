"""Every provider rule against a list the provider rejects and a close list it accepts.

``CASES`` holds one entry per rule id of every provider's catalog (a new rule without
a case fails ``test_every_rule_has_a_case``). For each rule:

* the rejected list gives exactly the expected violations of that rule (index and the
  provider's error text from RULEBOOK.md, fields filled in by hand here), and no rule
  fires that the case does not name in ``also``;
* the accepted list, a minimal edit of the rejected one, validates clean: the provider
  takes it as a whole, not only this rule.

Model-aware rules are also checked on both sides of their model boundary
(``BOUNDARIES``), and each check fix that RULEBOOK.md motivated has a regression case.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest
from chat_templates import FAMILIES, TemplateError, render

from context_governor.providers import CATALOG, applicable_rules, validate
from context_governor.providers._vllm import template_family
from context_governor.targets._target import Target

Message = dict[str, Any]


# -- message builders ---------------------------------------------------------------------


def s(content: Any = "You are an agent.") -> Message:
    return {"role": "system", "content": content}


def u(content: Any = "hi", **extra: Any) -> Message:
    return {"role": "user", "content": content, **extra}


def a(content: Any = "ok", **extra: Any) -> Message:
    return {"role": "assistant", "content": content, **extra}


def call(id: str, name: str = "ls", **extra: Any) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}, **extra}


def calls(*ids: str, name: str = "ls", content: Any = None, **extra: Any) -> Message:
    """An assistant message making one tool call per id."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [call(i, name) for i in ids],
        **extra,
    }


def t(id: str, content: Any = "done") -> Message:
    return {"role": "tool", "tool_call_id": id, "content": content}


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def t_parts(id: str, *parts: dict[str, Any]) -> Message:
    """A tool result whose content is a list of parts."""
    return {"role": "tool", "tool_call_id": id, "content": list(parts)}


IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
FILE_PART = {"type": "file", "file": {"filename": "a.txt", "file_data": "hello"}}
CC = {"cache_control": {"type": "ephemeral"}}
SIGNED = {"extra_content": {"google": {"thought_signature": "skip_thought_signature_validator"}}}

# -- provider texts (RULEBOOK.md) ------------------------------------------------------------

OA_ORPHAN = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
OA_UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)


def oa_duplicate(id: str, first: int, second: int) -> str:
    return (
        f"Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in "
        f"messages[{first}] and messages[{second}]."
    )


def too_long(index: int, path: str, length: int) -> str:
    return (
        f"Invalid 'messages[{index}].{path}': string too long. Expected a string with maximum "
        f"length 40, but got a string with length {length} instead."
    )


AN_PREFILL = (
    "This model does not support assistant message prefill. The conversation must end with "
    "a user message."
)
BR_START = (
    "A conversation must start with a user message. Try again with a conversation that "
    "starts with a user message."
)
BR_TOOL_CONFIG = (
    "The toolConfig field must be defined when using toolUse and toolResult content blocks."
)
BR_LAST_USER = (
    "The model that you are using requires the last turn in the conversation to be a user "
    "message. Add a user message to the conversation and try again."
)
GE_MODEL_TURN = "Requests ending with a model turn are not supported."
DS_ORPHAN = "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
DS_UNANSWERED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. (insufficient tool messages following tool_calls message)"
)
DS_REASONING = "The `reasoning_content` in the thinking mode must be passed back to the API."
E1214 = "The messages parameter is illegal. Please check the documentation. (1214)"
QW = "<400> InternalError.Algo.InvalidParameter: "
MI_LAST = "Expected last role User or Tool (or Assistant with prefix True) for serving but got "

ID_41 = "call_" + "x" * 36  # one over OpenAI's 40
ID_40 = "call_" + "x" * 35
ID_65 = "tooluse_" + "y" * 57  # one over Bedrock's 64
ID_64 = "tooluse_" + "y" * 56
MISTRAL_OPENAI_ID = "call_PTLP8xhu3uwZk4l3nlnrrJha"
ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."
ALTERNATE_AFTER_SYSTEM = (
    "After the optional system message, " + ALTERNATE[0].lower() + ALTERNATE[1:]
)
ONLY_USER_AND_ASSISTANT = (
    "Only user and assistant roles are supported, with the exception of an initial optional "
    "system message!"
)


@dataclass(frozen=True)
class Case:
    provider: str
    model: str | None
    rejected: list[Message]
    #: (index, error text) of every violation of the rule, in order
    expected: list[tuple[int, str]]
    accepted: list[Message]
    #: other rules the rejected list breaks too (the accepted list breaks none)
    also: frozenset[str] = field(default_factory=frozenset)
    #: the request's tools, for rules that depend on them (None: not said)
    tools: list[dict[str, Any]] | None = None


def case(
    provider: str,
    model: str | None,
    rejected: list[Message],
    expected: list[tuple[int, str]],
    accepted: list[Message],
    *also: str,
) -> Case:
    return Case(provider, model, rejected, expected, accepted, frozenset(also))


GPT = "gpt-4o"
SONNET_45 = "claude-sonnet-4-5-20250929"
OPUS_46 = "claude-opus-4-6"
GEMINI_25 = "gemini-2.5-pro"
GEMINI_3 = "gemini-3-pro-preview"
BEDROCK_CLAUDE = "anthropic.claude-3-7-sonnet-20250219-v1:0"
BEDROCK_LLAMA = "meta.llama3-70b-instruct-v1:0"
MISTRAL = "mistral-large-latest"
GLM = "glm-4.6"
QWEN = "qwen-plus"
QWEN_THINKING = "qwen3-235b-a22b-thinking-2507"
KIMI = "kimi-k2-0905-preview"
KIMI_THINKING = "kimi-k2-thinking"
GROQ = "llama-3.3-70b-versatile"
# vLLM: one model per chat-template family (providers.vllm.template_family)
LLAMA2 = "meta-llama/Llama-2-7b-chat-hf"
LLAMA31 = "meta-llama/Llama-3.1-8B-Instruct"
MISTRAL_V02 = "mistralai/Mistral-7B-Instruct-v0.2"
MISTRAL_V03 = "mistralai/Mistral-7B-Instruct-v0.3"
GEMMA2 = "google/gemma-2-9b-it"
GEMMA3 = "google/gemma-3-12b-it"
QWEN25 = "Qwen/Qwen2.5-7B-Instruct"
QWEN35 = "Qwen/Qwen3.5-27B"
CHATML = "HuggingFaceTB/SmolLM2-1.7B-Instruct"
DEVSTRAL = "mistralai/Devstral-Small-2507"  # vLLM with the Mistral tokenizer


def _openai_style_pairing(
    prefix: str,
    provider: str,
    model: str,
    orphan: str,
    unanswered: str,
    duplicate: str,
    call_content: Any = None,
) -> dict[str, Case]:
    """The three pairing rules every OpenAI-compatible provider shares (its own texts)."""

    def calls(*ids: str) -> Message:
        return {"role": "assistant", "content": call_content, "tool_calls": [call(i) for i in ids]}

    return {
        f"{prefix}-1": case(
            provider,
            model,
            [u("hi"), a("hello"), t("call_1", "42"), u("continue")],
            [(2, orphan)],
            # the assistant message makes the call the result answers
            [u("hi"), calls("call_1"), t("call_1", "42"), u("continue")],
        ),
        f"{prefix}-2": case(
            provider,
            model,
            [u("list files"), calls("call_1"), u("never mind")],
            [(1, unanswered)],
            [u("list files"), calls("call_1"), t("call_1"), u("never mind")],
        ),
        f"{prefix}-4": case(
            provider,
            model,
            [u("list files"), calls("call_1"), t("call_1", "a"), t("call_1", "b"), u("next")],
            [(3, duplicate)],
            [u("list files"), calls("call_1"), t("call_1", "a"), u("next")],
        ),
    }


CASES: dict[str, Case] = {
    # -- OpenAI (RULEBOOK §1) ----------------------------------------------------------------
    "OA-1": case(
        "openai",
        GPT,
        [s("You are an agent."), t("call_abc", "42"), u("continue")],
        [(1, OA_ORPHAN)],
        [s("You are an agent."), calls("call_abc"), t("call_abc", "42"), u("continue")],
    ),
    "OA-2": case(
        "openai",
        GPT,
        # RULEBOOK OA-2's own example: a system message injected into the tool block
        [
            u("list files"),
            calls("call_1", "call_2"),
            t("call_1", "a.txt"),
            s("Skill injected"),
            t("call_2", "/home"),
        ],
        [(1, OA_UNANSWERED + "call_2")],
        [
            u("list files"),
            calls("call_1", "call_2"),
            t("call_1", "a.txt"),
            t("call_2", "/home"),
            s("Skill injected"),
        ],
        "OA-1",
    ),
    "OA-4": case(
        "openai",
        GPT,
        [u("ls"), calls("call_1"), t("call_1", "a"), t("call_1", "b"), u("next")],
        [(3, oa_duplicate("call_1", 2, 3))],
        [u("ls"), calls("call_1"), t("call_1", "a"), u("next")],
    ),
    "OA-5": case(
        "openai",
        GPT,
        [u("hi"), a(None), u("go on")],
        [(1, "Invalid value for 'content': expected a string, got null.")],
        [u("hi"), a(""), u("go on")],
    ),
    "OA-6": case(
        "openai",
        GPT,
        [u("hi"), a("ok", tool_calls=[]), u("go on")],
        [
            (
                1,
                "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum "
                "length 1, but got an empty array instead.",
            )
        ],
        [u("hi"), a("ok"), u("go on")],
    ),
    "OA-6b": case(
        "openai",
        GPT,
        [],
        [
            (
                -1,
                "Invalid 'messages': empty array. Expected an array with minimum length 1, but "
                "got an empty array instead.",
            )
        ],
        [u("hi")],
    ),
    "OA-7": case(
        "openai",
        GPT,
        [u("hi", name="John Doe")],
        [
            (
                0,
                "Invalid 'messages[0].name': string does not match pattern. Expected a string "
                "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            )
        ],
        [u("hi", name="John_Doe")],
    ),
    "OA-7b": case(
        "openai",
        GPT,
        [u("weather?"), calls("call_1", name="get weather"), t("call_1", "sunny"), u("thanks")],
        [
            (
                1,
                "Invalid 'messages[1].tool_calls[0].function.name': string does not match "
                "pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            )
        ],
        [u("weather?"), calls("call_1", name="get_weather"), t("call_1", "sunny"), u("thanks")],
    ),
    "OA-8": case(
        "openai",
        GPT,
        [u("ls"), calls("call_1", ID_41), t("call_1"), t(ID_41), u("next")],
        [(1, too_long(1, "tool_calls[1].id", 41)), (3, too_long(3, "tool_call_id", 41))],
        # 40 characters is the limit itself
        [u("ls"), calls("call_1", ID_40), t("call_1"), t(ID_40), u("next")],
    ),
    # -- Anthropic (RULEBOOK §2): system messages are hoisted, messages.N counts turns ----
    "AN-1": case(
        "anthropic",
        SONNET_45,
        [s(), u("read a.txt"), calls("toolu_01A", name="read"), u("never mind")],
        [
            (
                2,
                "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
                "after: toolu_01A. Each `tool_use` block must have a corresponding `tool_result` "
                "block in the next message.",
            )
        ],
        [s(), u("read a.txt"), calls("toolu_01A", name="read"), t("toolu_01A"), u("never mind")],
    ),
    "AN-2": case(
        "anthropic",
        SONNET_45,
        # RULEBOOK AN-2's example: history cut so that it starts with a tool result
        [s(), t("toolu_X", "..."), u("go on")],
        [
            (
                1,
                "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
                "toolu_X. Each `tool_result` block must have a corresponding `tool_use` block in "
                "the previous message.",
            )
        ],
        [s(), u("go on")],
    ),
    "AN-3": case(
        "anthropic",
        SONNET_45,
        # RULEBOOK AN-3's example: a user interjection between the call and its result
        [
            u("look around"),
            calls("toolu_01", name="bash"),
            u("also check hidden files"),
            t("toolu_01", "a.txt"),
        ],
        [
            (
                2,
                "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this "
                "message. Messages following `tool_use` blocks must begin with a matching number "
                "of `tool_result` blocks.",
            )
        ],
        # as a system message it is hoisted out of the list: the result follows its call
        [
            u("look around"),
            calls("toolu_01", name="bash"),
            s("also check hidden files"),
            t("toolu_01", "a.txt"),
        ],
        "AN-1",
        "AN-2",
    ),
    "AN-4": case(
        "anthropic",
        "claude-3-opus-20240229",
        [s(), a("Hi! How can I help?"), u("summarise this")],
        [(1, 'messages: first message must use the "user" role')],
        [s(), u("hello"), a("Hi! How can I help?"), u("summarise this")],
    ),
    "AN-6": case(
        "anthropic",
        OPUS_46,
        [u("Write a story"), a("Once upon a time")],
        [(1, AN_PREFILL)],
        [u("Write a story"), a("Once upon a time"), u("Please continue.")],
    ),
    "AN-6b": case(
        "anthropic",
        SONNET_45,
        [u("Write a story"), a("Once upon a time ")],
        [(1, "messages: final assistant content cannot end with trailing whitespace")],
        [u("Write a story"), a("Once upon a time")],
    ),
    "AN-7": case(
        "anthropic",
        SONNET_45,
        # the system message goes to `system`: the blank assistant is messages.1
        [s(), u("hi"), a("   "), u("go on")],
        [
            (
                2,
                "messages.1: all messages must have non-empty content except for the optional "
                "final assistant message",
            )
        ],
        [s(), u("hi"), a("(empty)"), u("go on")],
    ),
    "AN-7b": case(
        "anthropic",
        SONNET_45,
        [u([text(" "), text("what is this?")])],
        [(0, "messages: text content blocks must contain non-whitespace text")],
        [u([text("what is this?")])],
    ),
    "AN-7c": case(
        "anthropic",
        SONNET_45,
        [u([text(""), text("what is this?")])],
        [(0, "messages: text content blocks must be non-empty")],
        [u([text("what is this?")])],
    ),
    "AN-8": case(
        "anthropic",
        SONNET_45,
        [s(), u("ls"), calls("toolu_1"), t("toolu_1"), calls("toolu_1"), t("toolu_1"), u("ok")],
        [(4, "messages.3.content.1: `tool_use` ids must be unique")],
        [s(), u("ls"), calls("toolu_1"), t("toolu_1"), calls("toolu_2"), t("toolu_2"), u("ok")],
    ),
    "AN-8b": case(
        "anthropic",
        SONNET_45,
        [u("ls"), calls("functions.Bash:0"), t("functions.Bash:0"), u("next")],
        [
            (
                1,
                "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
            ),
            (
                2,
                "messages.2.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
            ),
        ],
        [u("ls"), calls("functions_Bash_0"), t("functions_Bash_0"), u("next")],
    ),
    "AN-10": case(
        "anthropic",
        SONNET_45,
        [
            s([text("S", **CC)]),
            u([text("q1", **CC)]),
            a([text("a1", **CC)]),
            u([text("q2", **CC)]),
            a([text("a2", **CC)]),
            u("q3"),
        ],
        [(4, "A maximum of 4 blocks with cache_control may be provided. Found 5.")],
        [
            s([text("S")]),
            u([text("q1", **CC)]),
            a([text("a1", **CC)]),
            u([text("q2", **CC)]),
            a([text("a2", **CC)]),
            u("q3"),
        ],
    ),
    "AN-11": case(
        "anthropic",
        SONNET_45,
        [u([{"text": "hi"}])],
        [(0, "content.0.type: Field required")],
        [u([text("hi")])],
    ),
    "AN-13": case(
        "anthropic",
        SONNET_45,
        [s()],
        [(-1, "messages: at least one message is required")],
        [s(), u("hi")],
    ),
    # -- Gemini (RULEBOOK §3) ------------------------------------------------------------------
    "GE-1": case(
        "gemini",
        GEMINI_25,
        # RULEBOOK GE-1's example: the history begins with a function call
        [s("You are a background worker."), calls("c1", name="scan"), t("c1", "ok")],
        [
            (
                1,
                "Please ensure that function call turn comes immediately after a user turn or "
                "after a function response turn.",
            )
        ],
        [s("You are a background worker."), u("(continue)"), calls("c1", name="scan"), t("c1")],
    ),
    "GE-2": case(
        "gemini",
        GEMINI_25,
        [u("hi"), a("hello"), t("c1", "ok"), u("go on")],
        [
            (
                2,
                "Please ensure that function response turn comes immediately after a function "
                "call turn.",
            )
        ],
        # also: user text right after the results is merged into their turn, so accepted
        [u("hi"), calls("c1"), t("c1", "ok"), u("go on")],
    ),
    "GE-3": case(
        "gemini",
        GEMINI_25,
        [u("weather?"), calls("c1", "c2", name="weather"), t("c1", "sunny"), u("and?")],
        [
            (
                2,
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn.",
            )
        ],
        [
            u("weather?"),
            calls("c1", "c2", name="weather"),
            t("c1", "sunny"),
            t("c2", "rain"),
            u("and?"),
        ],
    ),
    "GE-4": case(
        "gemini",
        GEMINI_25,
        [u("hi"), u("are you there?")],
        [(1, "Please ensure that multiturn requests alternate between user and model")],
        [u("hi\n\nare you there?")],
    ),
    "GE-5": case(
        "gemini",
        GEMINI_25,
        [s("You are helpful.")],
        [(-1, "* GenerateContentRequest.contents: contents is not specified")],
        [s("You are helpful."), u("hi")],
    ),
    "GE-5b": case(
        "gemini",
        GEMINI_25,
        # the system message goes to systemInstruction: the blank model turn is contents[1]
        [s(), u("hi"), a(""), u("go on")],
        [(2, "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty.")],
        [s(), u("hi"), a("(empty)"), u("go on")],
    ),
    "GE-6": case(
        "gemini",
        GEMINI_3,
        [u("sections?"), calls("c1", name="list-sections"), t("c1"), u("thanks")],
        [
            (
                1,
                "Function call is missing a thought_signature in functionCall parts. This is "
                "required for tools to work correctly, and missing thought_signature may lead to "
                "degraded model performance. Additional data, function call "
                "`default_api:list-sections` , position 1. Please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
            )
        ],
        [
            u("sections?"),
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("c1", "list-sections", **SIGNED)],
            },
            t("c1"),
            u("thanks"),
        ],
    ),
    "GE-7": case(
        "gemini",
        "gemini-3.5-pro",
        [u("Write a story"), a("Once upon a time")],
        [(1, GE_MODEL_TURN)],
        [u("Write a story"), a("Once upon a time"), u("Please continue.")],
    ),
    "GE-7b": case(
        "gemini",
        "gemini-pro",
        [u("Write a story"), a("Once upon a time")],
        [
            (
                1,
                "Please ensure that multiturn requests ends with a user role or a function "
                "response.",
            )
        ],
        [u("Write a story"), a("Once upon a time"), u("Please continue.")],
    ),
    # -- Bedrock Converse (RULEBOOK §7) -------------------------------------------------------
    "BR-1": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [s(), a("Hi! How can I help?"), u("summarise this")],
        [(1, BR_START)],
        [s(), u("hello"), a("Hi! How can I help?"), u("summarise this")],
    ),
    "BR-1b": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [s()],
        [(-1, BR_START)],
        [s(), u("hi")],
    ),
    "BR-2": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [u("hi"), u("are you there?")],
        [
            (
                1,
                "A conversation must alternate between user and assistant roles. Make sure the "
                "conversation alternates between user and assistant roles and try again.",
            )
        ],
        [u("hi\n\nare you there?")],
    ),
    "BR-3": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [s(), u("read"), calls("tooluse_1", name="read"), u("never mind")],
        [(2, "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_1")],
        [s(), u("read"), calls("tooluse_1", name="read"), t("tooluse_1"), u("never mind")],
    ),
    "BR-3b": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [s(), u("hi"), a("hello"), t("tooluse_9", "ok"), u("go")],
        [
            (
                3,
                "The number of toolResult blocks at messages.2.content exceeds the number of "
                "toolUse blocks of previous turn.",
            )
        ],
        [s(), u("hi"), calls("tooluse_9"), t("tooluse_9", "ok"), u("go")],
    ),
    "BR-3c": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [u("ls"), calls("tooluse_1"), t("tooluse_1"), calls("tooluse_1"), t("tooluse_1"), u("ok")],
        [
            (
                3,
                "The number of toolResult blocks at messages.4.content exceeds the number of "
                "toolUse blocks of previous turn.",
            )
        ],
        [u("ls"), calls("tooluse_1"), t("tooluse_1"), calls("tooluse_2"), t("tooluse_2"), u("ok")],
    ),
    "BR-4": replace(
        case(
            "bedrock",
            BEDROCK_CLAUDE,
            [s(), u("read"), calls("tooluse_1", name="read"), t("tooluse_1"), u("thanks")],
            [(2, BR_TOOL_CONFIG)],
            # the repair: the old tool turns as text (the request still declares no tools)
            [s(), u("read"), a("[calls read({}) as tooluse_1]"), u("[result of tool tooluse_1]")],
        ),
        tools=[],
    ),
    "BR-5": case(
        "bedrock",
        BEDROCK_CLAUDE,
        # the system message goes to `system`: the blank assistant is messages.1
        [s(), u("hi"), a(" "), u("go on")],
        [
            (
                2,
                "The text field in the ContentBlock object at messages.1.content.0 is blank. Add "
                "text to the text field, and try again.",
            )
        ],
        [s(), u("hi"), a("(empty)"), u("go on")],
    ),
    "BR-5b": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [s(), u("hi"), a("hello"), u([text("what is this?"), text("")])],
        [
            (
                3,
                "The text field in the ContentBlock object at messages.2.content.1 is blank. Add "
                "text to the text field, and try again.",
            )
        ],
        [s(), u("hi"), a("hello"), u([text("what is this?")])],
    ),
    "BR-6": case(
        "bedrock",
        BEDROCK_CLAUDE,
        [u("ls"), calls(ID_65), t(ID_65), u("next")],
        [
            (1, "messages.1: toolUseId must match [a-zA-Z0-9_.:-]+ and be 1-64 characters"),
            (2, "messages.2: toolUseId must match [a-zA-Z0-9_.:-]+ and be 1-64 characters"),
        ],
        # 64 characters is the limit itself
        [u("ls"), calls(ID_64), t(ID_64), u("next")],
    ),
    "BR-7": case(
        "bedrock",
        BEDROCK_LLAMA,
        [u("Write a story"), a("Once upon a time")],
        [(1, BR_LAST_USER)],
        [u("Write a story"), a("Once upon a time"), u("Please continue.")],
    ),
    # -- Mistral (RULEBOOK §6): ids are 9 alphanumerics -------------------------------------
    "MI-0-1": case(
        "mistral",
        MISTRAL,
        [u("hi"), a("hello"), t("abcdefghi", "42")],
        [(2, "Unexpected tool call id abcdefghi in tool results")],
        [u("hi"), calls("abcdefghi"), t("abcdefghi", "42")],
    ),
    "MI-0-2": case(
        "mistral",
        MISTRAL,
        [u("ls"), calls("abcdefghi", "bcdefghij"), t("abcdefghi")],
        [(1, "Not the same number of function calls and responses")],
        [u("ls"), calls("abcdefghi", "bcdefghij"), t("abcdefghi"), t("bcdefghij")],
    ),
    "MI-0-4": case(
        "mistral",
        MISTRAL,
        [u("ls"), calls("abcdefghi"), t("abcdefghi", "a"), t("abcdefghi", "b")],
        [(3, "Duplicate tool call id abcdefghi in tool results")],
        [u("ls"), calls("abcdefghi"), t("abcdefghi", "a")],
    ),
    "MI-1": case(
        "mistral",
        MISTRAL,
        [u("ls"), calls(MISTRAL_OPENAI_ID), t(MISTRAL_OPENAI_ID)],
        [
            (
                i,
                f"Tool call id was {MISTRAL_OPENAI_ID} but must be a-z, A-Z, 0-9, with a length "
                "of 9.",
            )
            for i in (1, 2)
        ],
        [u("ls"), calls("PTLP8xhu3"), t("PTLP8xhu3")],
    ),
    "MI-2": case(
        "mistral",
        MISTRAL,
        [u("ls"), calls("abcdefghi"), t("abcdefghi"), u("thanks")],
        [(3, "Unexpected role 'user' after role 'tool'")],
        [u("ls"), calls("abcdefghi"), t("abcdefghi"), a("Ok."), u("thanks")],
    ),
    "MI-3": case(
        "mistral",
        MISTRAL,
        [u("Write a story"), a("Once upon a time")],
        [(1, MI_LAST + "assistant")],
        [u("Write a story"), a("Once upon a time", prefix=True)],
    ),
    "MI-4": case(
        "mistral",
        MISTRAL,
        [u("ls"), calls("abcdefghi"), t("abcdefghi"), calls("abcdefghi"), t("abcdefghi")],
        [(3, "Duplicate tool call id abcdefghi in assistant message")],
        [u("ls"), calls("abcdefghi"), t("abcdefghi"), calls("bcdefghij"), t("bcdefghij")],
    ),
    "MI-5": case(
        "mistral",
        MISTRAL,
        [u("hi", name="john")],
        [(0, "Extra inputs are not permitted")],
        [u("hi")],
    ),
    "MI-5b": case(
        "mistral",
        MISTRAL,
        [u("hi"), a("hello", reasoning_content="greet back"), u("go on")],
        [(1, "reasoning_content is not permitted in messages")],
        [u("hi"), a("hello"), u("go on")],
    ),
    "MI-6": case(
        "mistral",
        MISTRAL,
        [a("Hi! How can I help?")],
        [(0, "Conversation must start with a user message or system message")],
        [u("Hi! How can I help?")],
        "MI-3",
    ),
    # -- DeepSeek (RULEBOOK §5) -------------------------------------------------------------
    **_openai_style_pairing(
        "DS-0",
        "deepseek",
        "deepseek-chat",
        DS_ORPHAN,
        DS_UNANSWERED,
        oa_duplicate("call_1", 2, 3),
    ),
    "DS-1": case(
        "deepseek",
        "deepseek-reasoner",
        # a system message in between is no turn boundary, and not the "previous" message
        [u("first"), s("note"), u("second")],
        [
            (
                2,
                "deepseek-reasoner does not support successive user or assistant messages "
                "(messages[0] and messages[2] in your input). You should interleave the "
                "user/assistant messages in the message sequence.",
            )
        ],
        [u("first"), s("note"), a("ok", reasoning_content=" "), u("second")],
    ),
    "DS-2": case(
        "deepseek",
        "deepseek-chat",
        [u("Write a story"), a("Once upon a time")],
        [
            (
                1,
                "The last message of deepseek-reasoner must be a user message, or an assistant "
                "message with prefix mode on (refer to "
                "https://api-docs.deepseek.com/guides/chat_prefix_completion).",
            )
        ],
        [u("Write a story"), a("Once upon a time", prefix=True)],
    ),
    "DS-3": case(
        "deepseek",
        "deepseek-reasoner",
        [u("hi"), a("hello"), u("go on")],
        [(1, DS_REASONING)],
        [u("hi"), a("hello", reasoning_content=" "), u("go on")],
    ),
    "DS-6": case(
        "deepseek",
        "deepseek-chat",
        [{"role": "developer", "content": "Be brief."}, u("hi")],
        [(0, "messages[0].role: developer is not a supported role")],
        [s("Be brief."), u("hi")],
    ),
    # -- GLM (RULEBOOK §4): error 1214 for everything -----------------------------------------
    **_openai_style_pairing("GLM-0", "glm", GLM, E1214, E1214, E1214),
    "GLM-1": case(
        "glm",
        GLM,
        # RULEBOOK GLM-1's example: system -> assistant tool call
        [s(), calls("call_1", content=""), t("call_1")],
        [(1, E1214)],
        [s(), u("go"), calls("call_1", content=""), t("call_1")],
    ),
    "GLM-2": case("glm", GLM, [s()], [(-1, E1214)], [s(), u("hi")]),
    "GLM-3": case(
        "glm",
        GLM,
        [
            u("ls"),
            calls("call_8469015594668440441"),
            t("call_8469015594668440441"),
            calls("call_8469015594668440441"),
            t("call_8469015594668440441"),
            u("ok"),
        ],
        [(3, E1214)],
        [
            u("ls"),
            calls("call_8469015594668440441"),
            t("call_8469015594668440441"),
            calls("call_8469015594668440442"),
            t("call_8469015594668440442"),
            u("ok"),
        ],
    ),
    "GLM-4": case(
        "glm",
        GLM,
        [u("hi"), a("hello", reasoning_content="greet"), u("go on")],
        [(1, E1214)],
        [u("hi"), a("hello"), u("go on")],
    ),
    "GLM-5": case(
        "glm",
        GLM,
        [u("hi"), a(""), u("go on")],
        [(1, "messages[1]:content和tool_calls 字段不能同时为空")],
        [u("hi"), a("(empty)"), u("go on")],
    ),
    # -- Qwen / DashScope (RULEBOOK §10) --------------------------------------------------------
    **_openai_style_pairing(
        "QW-0",
        "qwen",
        QWEN,
        QW + 'messages with role "tool" must be a response to a preceeding message with '
        '"tool_calls".',
        QW + 'An assistant message with "tool_calls" must be followed by tool messages '
        'responding to each "tool_call_id". The following tool_call_ids did not have response '
        "messages: message[1].role",
        oa_duplicate("call_1", 2, 3),
        call_content="",  # DashScope requires content (QW-4)
    ),
    "QW-3": case(
        "qwen",
        QWEN,
        [s("You are helpful.")],
        [(-1, QW + "The input messages do not contain elements with the role of user")],
        [s("You are helpful."), u("hi")],
    ),
    "QW-4": case(
        "qwen",
        QWEN,
        [u("ls"), calls("call_1", content=None), t("call_1"), u("next")],
        [(1, QW + "The content field is a required field.")],
        [u("ls"), calls("call_1", content=""), t("call_1"), u("next")],
    ),
    "QW-4b": case(
        "qwen",
        QWEN,
        [u("hi"), a("ok", tool_calls=[]), u("go on")],
        [(1, "Empty tool_calls is not supported in message")],
        [u("hi"), a("ok"), u("go on")],
    ),
    "QW-5b": case(
        "qwen",
        QWEN,
        [{"role": "developer", "content": "Be brief."}, u("hi")],
        [
            (
                0,
                "developer is not one of ['system', 'assistant', 'user', 'tool', 'function'] - "
                "'messages.['0].role'",
            )
        ],
        [s("Be brief."), u("hi")],
    ),
    "QW-6": case(
        "qwen",
        QWEN,
        [u("Write a story"), a("Once upon a time")],
        [(1, QW + "The last message must be a user or tool message unless partial mode is on")],
        [u("Write a story"), a("Once upon a time", partial=True)],
    ),
    "QW-6b": case(
        "qwen",
        QWEN_THINKING,
        [u("Write a story"), a("Once upon a time", partial=True)],
        [(1, QW + "Partial mode is not supported by thinking models")],
        [u("Write a story"), a("Once upon a time"), u("Please continue.")],
    ),
    # -- Moonshot / Kimi (RULEBOOK §9) --------------------------------------------------------
    **_openai_style_pairing(
        "KM-0",
        "moonshot",
        KIMI,
        OA_ORPHAN,
        OA_UNANSWERED + "call_1",
        oa_duplicate("call_1", 2, 3),
    ),
    "KM-1": case(
        "moonshot",
        KIMI_THINKING,
        [s(), u("search"), calls("search_web:0", name="search_web"), t("search_web:0"), u("ok")],
        [
            (
                2,
                "thinking is enabled but reasoning_content is missing in assistant tool call "
                "message at index 2",
            )
        ],
        [
            s(),
            u("search"),
            calls("search_web:0", name="search_web", reasoning_content="look it up"),
            t("search_web:0"),
            u("ok"),
        ],
    ),
    "KM-2": case(
        "moonshot",
        KIMI,
        # Kimi via vLLM numbers ids per response, so they repeat across rounds
        [
            u("search"),
            calls("search_web:0", name="search_web"),
            t("search_web:0"),
            calls("search_web:0", name="search_web"),
            t("search_web:0"),
            u("ok"),
        ],
        [(3, "invalid_request_error: tool call id search_web:0 is duplicated")],
        [
            u("search"),
            calls("search_web:0", name="search_web"),
            t("search_web:0"),
            calls("search_web:1", name="search_web"),
            t("search_web:1"),
            u("ok"),
        ],
    ),
    "KM-4": case(
        "moonshot",
        KIMI,
        [u("Write a story"), a("Once upon a time")],
        [(1, "the last message must be a user or tool message unless partial is set")],
        [u("Write a story"), a("Once upon a time", partial=True)],
    ),
    # -- Groq / Cerebras (RULEBOOK §11) --------------------------------------------------------
    **_openai_style_pairing(
        "GQ-0",
        "groq",
        GROQ,
        OA_ORPHAN,
        OA_UNANSWERED + "call_1",
        oa_duplicate("call_1", 2, 3),
    ),
    "GQ-1": case(
        "groq",
        GROQ,
        [u("hi"), a("hello", reasoning_content="greet"), u("go on")],
        [
            (
                1,
                "'messages.1' : for 'role:assistant' the following must be satisfied"
                "[('messages.1' : property 'reasoning_content' is unsupported)]",
            )
        ],
        [u("hi"), a("hello"), u("go on")],
    ),
    "GQ-2": case(
        "groq",
        GROQ,
        [u("hi"), a(None), u("go on")],
        [
            (
                1,
                "'messages.1' : for 'role:assistant' the following must be satisfied"
                "[('messages.1.content' : value must be a string)]",
            )
        ],
        [u("hi"), a(""), u("go on")],
    ),
    # -- vLLM / TGI: the model's Hugging Face chat template (RULEBOOK §8) ---------------------
    "HF-1": case(
        "vllm",
        LLAMA2,
        [u("hi"), u("are you there?")],
        [(1, ALTERNATE)],
        [u("hi\n\nare you there?")],
    ),
    "HF-1b": case(
        "vllm",
        MISTRAL_V03,
        # tool calls and results are skipped by the check: user follows user
        [u("ls"), calls("abcdefghi", content=""), t("abcdefghi"), u("thanks")],
        [(3, ALTERNATE_AFTER_SYSTEM)],
        [u("ls"), calls("abcdefghi", content=""), t("abcdefghi"), a("Ok."), u("thanks")],
    ),
    "HF-1c": case(
        "vllm",
        MISTRAL_V03,
        [s("Be brief."), u("hi"), s("Answer in French.")],
        [
            (
                2,
                "Only user and assistant roles are supported, with the exception of an initial "
                "optional system message!",
            )
        ],
        [s("Be brief.\n\nAnswer in French."), u("hi")],
    ),
    "HF-1d": case(
        "vllm",
        LLAMA2,
        [u("weather?"), calls("abcdefghi", content=""), t("abcdefghi", "sunny"), u("thanks")],
        [(1, ALTERNATE), (2, ALTERNATE)],
        # the calls and results written as text, as flatten_tools does
        [
            u("weather?"),
            a("ls {}"),
            u("[ls result] sunny\n\nthanks"),
        ],
        "HF-1",
    ),
    "HF-1f": case(
        "vllm",
        MISTRAL_V02,
        [s("Be brief."), u("hi"), a("hello"), a("anything else?"), u("no")],
        [(3, ALTERNATE_AFTER_SYSTEM)],
        [s("Be brief."), u("hi"), a("hello\n\nanything else?"), u("no")],
    ),
    "HF-1g": case(
        "vllm",
        MISTRAL_V02,
        # a tool result right after a user message: the alternation check passes there
        [s("Be brief."), u("weather?"), t("abcdefghi", "sunny")],
        [(2, ONLY_USER_AND_ASSISTANT)],
        # the result written as text, as flatten_tools does
        [s("Be brief."), u("weather?\n\n[ls result] sunny")],
    ),
    "HF-1e": case(
        "vllm",
        GEMMA2,
        [s("Be brief."), u("hi")],
        [(0, "System role not supported")],
        [u("Be brief.\n\nhi")],
    ),
    "HF-2": case(
        "vllm",
        QWEN35,
        [s("You are helpful.")],
        [(-1, "No user query found in messages.")],
        [s("You are helpful."), u("hi")],
    ),
    "HF-9": case(
        "vllm",
        LLAMA2,
        [],
        [(-1, "list object has no element 0")],
        [u("hi")],
    ),
    "HF-3": case(
        "vllm",
        MISTRAL_V02,
        [u("hi"), a(None), u("go on")],
        [(1, 'TypeError: can only concatenate str (not "NoneType") to str')],
        [u("hi"), a(""), u("go on")],
    ),
    "HF-3b": case(
        "vllm",
        MISTRAL_V02,
        [u([text("what is this?")])],
        [(0, 'TypeError: can only concatenate str (not "list") to str')],
        [u("what is this?")],
    ),
    "HF-4": case(
        "vllm",
        MISTRAL_V03,
        [u("Write a story"), a("Once upon a time")],
        [
            (
                1,
                "Cannot set `add_generation_prompt` to True when the last message is from the "
                "assistant. Consider using `continue_final_message` instead.",
            )
        ],
        [u("Write a story"), a("Once upon a time"), u("Please continue.")],
    ),
    "HF-6": case(
        "vllm",
        LLAMA31,
        [u("weather?"), calls("c1", "c2", content=""), t("c1"), t("c2"), u("thanks")],
        [(1, "This model only supports single tool-calls at once!")],
        # split into one call per assistant turn, each followed by its result
        [
            u("weather?"),
            calls("c1", content=""),
            t("c1"),
            calls("c2", content=""),
            t("c2"),
            u("thanks"),
        ],
    ),
    "HF-7": case(
        "vllm",
        MISTRAL_V03,
        [u("ls"), calls("call_1", content=""), t("call_1"), a("done"), u("thanks")],
        [(i, "Tool call IDs should be alphanumeric strings with length 9!") for i in (1, 2)],
        [u("ls"), calls("abcdefghi", content=""), t("abcdefghi"), a("done"), u("thanks")],
    ),
    # -- vLLM with the Mistral tokenizer: mistral_common's validator (test_mistral_common) --
    "MT-1": case(
        "vllm",
        DEVSTRAL,
        [s(), u("ls"), calls("abcdefghi", content=""), t("abcdefghi"), s("late"), u("go")],
        [(4, "Unexpected role 'system' after role 'tool'")],
        [s(), s("late"), u("ls"), calls("abcdefghi", content=""), t("abcdefghi"), u("go")],
    ),
    "MT-2": case(
        "vllm",
        DEVSTRAL,
        [t("abcdefghi", "42")],
        [(0, "Conversation must start with a user message or system message")],
        [u("42")],
    ),
    "MT-3": case(
        "vllm",
        DEVSTRAL,
        [u("ls"), calls("abcdefghi", "bcdefghij", content=""), t("abcdefghi"), a("ok"), u("go")],
        [(3, "Not the same number of function calls and responses")],
        [
            u("ls"),
            calls("abcdefghi", "bcdefghij", content=""),
            t("abcdefghi"),
            t("bcdefghij"),
            a("ok"),
            u("go"),
        ],
    ),
    "MT-4": case(
        "vllm",
        DEVSTRAL,
        [u("hi"), a("hello"), t("abcdefghi", "42"), u("go")],
        [(2, "Unexpected tool call id abcdefghi in tool results")],
        [u("hi"), calls("abcdefghi", content=""), t("abcdefghi", "42"), u("go")],
    ),
    "MT-5": case(
        "vllm",
        DEVSTRAL,
        [u("ls"), calls("abcdefghi", content=""), t("abcdefghi", "a"), t("abcdefghi", "b"), u()],
        [(3, "Duplicate tool call id abcdefghi in tool results")],
        [u("ls"), calls("abcdefghi", content=""), t("abcdefghi", "a"), u()],
    ),
    # vLLM keeps the last 9 characters of an id: two ids that end alike become one
    "MT-6": case(
        "vllm",
        DEVSTRAL,
        [u("ls"), calls("xabcdefghi", "yabcdefghi", content=""), t("xabcdefghi"), t("yabcdefghi")],
        [(1, "Duplicate tool call id abcdefghi in assistant message")],
        [u("ls"), calls("abcdefghi", "bcdefghij", content=""), t("abcdefghi"), t("bcdefghij")],
        "MT-5",
    ),
    "MT-7": case(
        "vllm",
        DEVSTRAL,
        [u("ls"), calls("call_1", content=""), t("call_1"), u("thanks")],
        [(i, "Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9.") for i in (1, 2)],
        [u("ls"), calls("call1abcd", content=""), t("call1abcd"), u("thanks")],
    ),
    "MT-8": case(
        "vllm",
        DEVSTRAL,
        [u("ls"), calls("abcdefghi", name="list files", content=""), t("abcdefghi"), u("ok")],
        [
            (
                1,
                "Function name was list files but must be a-z, A-Z, 0-9, or contain underscores "
                "and dashes, with a maximum length of 64.",
            )
        ],
        [u("ls"), calls("abcdefghi", name="list_files", content=""), t("abcdefghi"), u("ok")],
    ),
    "MT-9": case(
        "vllm",
        DEVSTRAL,
        [u("draw"), a([text("here:"), IMAGE]), u("thanks")],
        [(1, "ImageURLChunk cannot be used in assistant message.")],
        [u("draw"), a([text("here:")]), u("thanks")],
    ),
    "MT-9b": case(
        "vllm",
        DEVSTRAL,
        [u("shot"), calls("abcdefghi", content=""), t_parts("abcdefghi", IMAGE), u("ok")],
        [(2, "Unexpected content chunk types in tool message: ['ImageURLChunk']")],
        [u("shot"), calls("abcdefghi", content=""), t_parts("abcdefghi", text("png")), u("ok")],
    ),
    "MT-10": case(
        "vllm",
        DEVSTRAL,
        [u([text("read this"), FILE_PART])],
        [(0, "'file' is not a valid ChunkTypes")],
        [u([text("read this"), IMAGE])],
    ),
    "MT-12": case(
        "vllm",
        DEVSTRAL,
        [u("hi"), a("hello", reasoning_content="greet back"), u("go")],
        [(1, "Unexpected content chunk types in assistant message: ['ThinkChunk']")],
        [u("hi"), a("hello"), u("go")],
    ),
    "MT-13": case(
        "vllm",
        DEVSTRAL,
        [u("ls"), calls("abcdefghi", content=None), t("abcdefghi", None), u("ok")],
        [(2, "Input should be a valid string")],
        # an assistant's content may be null
        [u("ls"), calls("abcdefghi", content=None), t("abcdefghi", ""), u("ok")],
    ),
    "MT-11": case(
        "vllm",
        DEVSTRAL,
        [],
        [(-1, "Conversation must have at least one message")],
        [u("hi")],
    ),
}


# -- the tests ----------------------------------------------------------------------------------


def _violations(
    messages: list[Message],
    provider: str,
    model: str | None,
    tools: list[dict[str, Any]] | None = None,
) -> list[Any]:
    found = validate(messages, provider=provider, model=model, tools=tools)
    assert all(v.provider == provider for v in found)
    return found


def test_every_rule_has_a_case() -> None:
    for name, entry in CATALOG.items():
        ids = [rule.id for rule in entry.rules]
        assert len(ids) == len(set(ids)), f"{name}: a rule id is used twice: {sorted(ids)}"
        covered = {rule_id for rule_id, c in CASES.items() if c.provider == name}
        assert covered == set(ids), f"{name}: cases {sorted(covered)} != rules {sorted(ids)}"


def test_rule_ids_are_unique_across_providers() -> None:
    ids = [rule.id for entry in CATALOG.values() for rule in entry.rules]
    assert len(ids) == len(set(ids))


def _applies(rule_id: str, c: Case) -> bool:
    return rule_id in {r.id for r in applicable_rules(c.provider, c.model)}


@pytest.mark.parametrize("rule_id", sorted(CASES), ids=lambda r: f"{r}-rejected")
def test_rejected(rule_id: str) -> None:
    c = CASES[rule_id]
    assert _applies(rule_id, c), f"{rule_id} does not hold for {c.provider} {c.model}"
    found = _violations(c.rejected, c.provider, c.model, c.tools)
    assert [(v.index, v.error) for v in found if v.rule == rule_id] == c.expected
    assert {v.rule for v in found} == {rule_id} | c.also


@pytest.mark.parametrize("rule_id", sorted(CASES), ids=lambda r: f"{r}-accepted")
def test_accepted(rule_id: str) -> None:
    c = CASES[rule_id]
    assert c.accepted != c.rejected
    assert [str(v) for v in _violations(c.accepted, c.provider, c.model, c.tools)] == []


# -- both sides of each model boundary ----------------------------------------------------------


@dataclass(frozen=True)
class Boundary:
    rule: str
    provider: str
    messages: list[Message]
    rejected_by: tuple[str, ...]
    accepted_by: tuple[str, ...]


PREFILL = [u("Write a story"), a("Once upon a time")]

BOUNDARIES = [
    # Claude 3 era: a leading assistant message was refused; 3.5 and later take it
    Boundary(
        "AN-4",
        "anthropic",
        CASES["AN-4"].rejected,
        ("claude-3-opus-20240229", "claude-3-haiku-20240307", "claude-3-sonnet-20240229"),
        ("claude-3-5-sonnet-20241022", "claude-3-7-sonnet-20250219", "claude-sonnet-4-5"),
    ),
    # prefill: Claude <= 4.5 continue it, 4.6+ and the 5 family refuse it
    Boundary(
        "AN-6",
        "anthropic",
        PREFILL,
        ("claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-5", "claude-fable-5"),
        (
            "claude-3-5-haiku-20241022",
            "claude-3-7-sonnet-20250219",
            "claude-sonnet-4-20250514",
            "claude-opus-4-1",
            "claude-sonnet-4-5-20250929",
        ),
    ),
    # the whitespace rule is the prefill models' (4.6+ refuse the prefill itself: AN-6)
    Boundary(
        "AN-6b",
        "anthropic",
        CASES["AN-6b"].rejected,
        ("claude-3-7-sonnet-20250219", "claude-sonnet-4-5"),
        ("claude-opus-4-6", "claude-sonnet-4-6"),
    ),
    Boundary(
        "GE-6",
        "gemini",
        CASES["GE-6"].rejected,
        ("gemini-3-pro-preview", "gemini-3-flash-preview", "gemini-3.1-pro-preview"),
        ("gemini-2.0-flash", "gemini-2.5-pro", "gemini-2.5-flash"),
    ),
    # a trailing model turn: prefill for 2.x to 3.1, refused by 1.5 and newer ones, and by
    # 1.0 (gemini-pro) in its own words (GE-7b)
    Boundary(
        "GE-7",
        "gemini",
        PREFILL,
        ("gemini-1.5-pro", "gemini-3.5-pro"),
        (
            "gemini-pro",
            "gemini-1.0-pro-001",
            "gemini-2.0-flash",
            "gemini-2.5-pro",
            "gemini-3-pro-preview",
            "gemini-3.1-pro-preview",
        ),
    ),
    Boundary(
        "GE-7b",
        "gemini",
        PREFILL,
        ("gemini-pro", "gemini-1.0-pro-001", "models/gemini-pro-vision"),
        ("gemini-1.5-pro", "gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3.5-pro"),
    ),
    Boundary(
        "BR-7",
        "bedrock",
        PREFILL,
        (BEDROCK_LLAMA, "mistral.mistral-large-2407-v1:0", "anthropic.claude-opus-4-6-v1"),
        (BEDROCK_CLAUDE, "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ),
    Boundary(
        "DS-1",
        "deepseek",
        [u("first"), u("second")],
        ("deepseek-reasoner",),
        ("deepseek-chat",),
    ),
    Boundary(
        "DS-3",
        "deepseek",
        CASES["DS-3"].rejected,
        ("deepseek-reasoner", "deepseek-v4-flash", "deepseek-v4-pro"),
        ("deepseek-chat",),
    ),
    Boundary(
        "KM-1",
        "moonshot",
        CASES["KM-1"].rejected,
        ("kimi-k2-thinking", "kimi-k2-thinking-turbo", "kimi-k2.5"),
        ("kimi-k2-0905-preview", "moonshot-v1-8k"),
    ),
    # partial mode: a flagged prefill for non-thinking models; none at all for thinking ones
    # vLLM: the rules follow the model's chat-template family
    Boundary(
        "HF-1",
        "vllm",
        CASES["HF-1"].rejected,
        (LLAMA2, GEMMA2, GEMMA3),
        (MISTRAL_V02, MISTRAL_V03, LLAMA31, QWEN25, CHATML),
    ),
    # Mistral v0.1/v0.2 spell the alternation error their own way
    Boundary(
        "HF-1f",
        "vllm",
        CASES["HF-1"].rejected,
        (MISTRAL_V02, "mistralai/Mistral-7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
        (LLAMA2, GEMMA2, GEMMA3, MISTRAL_V03, LLAMA31, QWEN25, CHATML),
    ),
    Boundary(
        "HF-1g",
        "vllm",
        CASES["HF-1g"].rejected,
        (MISTRAL_V02, "mistralai/Mixtral-8x7B-Instruct-v0.1"),
        (LLAMA2, GEMMA2, GEMMA3),
    ),
    Boundary(
        "HF-1b",
        "vllm",
        CASES["HF-1b"].rejected,
        (MISTRAL_V03, "mistralai/Mixtral-8x22B-Instruct-v0.1"),
        (MISTRAL_V02, LLAMA31, QWEN25),
    ),
    Boundary(
        "HF-1e",
        "vllm",
        CASES["HF-1e"].rejected,
        (GEMMA2, "google/gemma-7b-it"),
        (GEMMA3, MISTRAL_V03, LLAMA31, QWEN25, CHATML),
    ),
    Boundary(
        "HF-3b",
        "vllm",
        CASES["HF-3b"].rejected,
        (LLAMA2, MISTRAL_V02, MISTRAL_V03, GEMMA2, LLAMA31, QWEN25, CHATML),
        (GEMMA3,),  # its template iterates content parts
    ),
    # no user query: Qwen3.5/3.6 templates raise, the pinned Qwen2.5 and Qwen3 ones render it
    Boundary(
        "HF-2",
        "vllm",
        CASES["HF-2"].rejected,
        (QWEN35, "Qwen/Qwen3.6-35B-A3B", "qwen3.5:9b", "Qwen3_5-4B-GGUF"),
        (QWEN25, "Qwen/Qwen3-8B", "Qwen/Qwen3-4B-Instruct-2507", "Qwen/QwQ-32B", LLAMA31),
    ),
    # an empty list: every pinned template reads messages[0]; an unknown one may not
    Boundary(
        "HF-9",
        "vllm",
        [],
        (LLAMA2, LLAMA31, MISTRAL_V02, MISTRAL_V03, GEMMA2, GEMMA3, QWEN25, "Qwen/Qwen3-8B"),
        (CHATML,),
    ),
    Boundary(
        "HF-4", "vllm", PREFILL, (MISTRAL_V02, MISTRAL_V03, DEVSTRAL), (LLAMA31, QWEN25, GEMMA3)
    ),
    Boundary(
        "HF-6",
        "vllm",
        CASES["HF-6"].rejected,
        (LLAMA31, "meta-llama/Llama-3.3-70B-Instruct"),
        (QWEN25, CHATML),
    ),
    Boundary("HF-7", "vllm", CASES["HF-7"].rejected, (MISTRAL_V03,), (LLAMA31, QWEN25, CHATML)),
    Boundary(
        "QW-6b",
        "qwen",
        CASES["QW-6b"].rejected,
        (QWEN_THINKING, "qwq-32b"),
        ("qwen-plus", "qwen-max", "qwen3-max"),
    ),
]


@pytest.mark.parametrize(
    ("rule_id", "provider", "messages", "model", "rejected"),
    [
        pytest.param(b.rule, b.provider, b.messages, model, rejected, id=f"{b.rule}-{model}")
        for b in BOUNDARIES
        for rejected, models in ((True, b.rejected_by), (False, b.accepted_by))
        for model in models
    ],
)
def test_model_boundary(
    rule_id: str, provider: str, messages: list[Message], model: str, rejected: bool
) -> None:
    found = {v.rule for v in _violations(messages, provider, model)}
    assert (rule_id in found) is rejected
    assert _applies(rule_id, Case(provider, model, [], [], [])) is rejected


# -- regressions: the checks that these tests found flagging accepted lists or missing rejected
# -- ones (RULEBOOK.md decides which) -----------------------------------------------------------

#: RULEBOOK §14b: nanobot's backfill leaves the system message inside the tool block.
#: Anthropic and Bedrock hoist it (valid), OpenAI rejects it.
SYSTEM_IN_TOOL_BLOCK = [
    u("ls and pwd"),
    calls("toolu_a", "toolu_b"),
    t("toolu_b", "[Tool result unavailable — call was interrupted or lost]"),
    s("Skill injected"),
    t("toolu_a", "a.txt"),
]
TOOL_THEN_USER = [u("ls"), calls("tooluse_1"), t("tooluse_1", "a.txt"), u("thanks")]

REGRESSIONS = [
    pytest.param(
        "anthropic", SONNET_45, SYSTEM_IN_TOOL_BLOCK, [], id="anthropic-system-in-tool-block"
    ),
    pytest.param(
        "bedrock", BEDROCK_CLAUDE, SYSTEM_IN_TOOL_BLOCK, [], id="bedrock-system-in-tool-block"
    ),
    pytest.param(
        "openai",
        GPT,
        SYSTEM_IN_TOOL_BLOCK,
        [("OA-1", 4, OA_ORPHAN), ("OA-2", 1, OA_UNANSWERED + "toolu_a")],
        id="openai-system-in-tool-block",
    ),
    # RULEBOOK §0: `user` right after `tool` is merged into the tool-result turn
    pytest.param("gemini", GEMINI_25, TOOL_THEN_USER, [], id="gemini-user-after-tool"),
    pytest.param("bedrock", BEDROCK_CLAUDE, TOOL_THEN_USER, [], id="bedrock-user-after-tool"),
    pytest.param(
        "bedrock",
        BEDROCK_CLAUDE,
        [*TOOL_THEN_USER, u("and pwd?")],
        [
            (
                "BR-2",
                4,
                "A conversation must alternate between user and assistant roles. Make sure the "
                "conversation alternates between user and assistant roles and try again.",
            )
        ],
        id="bedrock-two-users-after-tool",
    ),
    # RULEBOOK §0 and MI-6: Mistral takes a leading assistant; only a lone message must be user
    pytest.param(
        "mistral",
        MISTRAL,
        [s(), a("Hi! How can I help?"), u("summarise")],
        [],
        id="mistral-leading-assistant",
    ),
    pytest.param(
        "mistral",
        MISTRAL,
        [u("hi"), s("Be brief.")],
        [("MI-3", 1, MI_LAST + "system")],
        id="mistral-trailing-system",
    ),
    pytest.param(
        "mistral",
        MISTRAL,
        [u("ls"), calls("abcdefghi"), t("abcdefghi"), s("Skill injected"), a("Done.")],
        [
            ("MI-2", 3, "Unexpected role 'system' after role 'tool'"),
            ("MI-3", 4, MI_LAST + "assistant"),
        ],
        id="mistral-system-after-tool",
    ),
    # AN-3: the count is the number of tool_use blocks to answer
    pytest.param(
        "anthropic",
        SONNET_45,
        [u("ls"), calls("toolu_1", "toolu_2"), u("hidden ones too"), t("toolu_1"), t("toolu_2")],
        [
            (
                "AN-1",
                1,
                "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
                "after: toolu_1, toolu_2. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message.",
            ),
            *[
                (
                    "AN-2",
                    i,
                    f"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: toolu_{i - 2}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message.",
                )
                for i in (3, 4)
            ],
            (
                "AN-3",
                2,
                "messages.2: Did not find 2 `tool_result` block(s) at the beginning of this "
                "message. Messages following `tool_use` blocks must begin with a matching number "
                "of `tool_result` blocks.",
            ),
        ],
        id="anthropic-interjection-two-calls",
    ),
    # AN-6b: a prefill given as content parts
    pytest.param(
        "anthropic",
        SONNET_45,
        [u("Write a story"), a([text("Once upon a time ")])],
        [("AN-6b", 1, "messages: final assistant content cannot end with trailing whitespace")],
        id="anthropic-prefill-parts-whitespace",
    ),
    # AN-10: the error quotes the total, at each message past the limit
    pytest.param(
        "anthropic",
        SONNET_45,
        [u([text(f"q{i}", **CC)]) for i in range(6)],
        [
            ("AN-10", i, "A maximum of 4 blocks with cache_control may be provided. Found 6.")
            for i in (4, 5)
        ],
        id="anthropic-six-cache-marks",
    ),
    # GQ-1: the role in the text is the message's
    pytest.param(
        "groq",
        GROQ,
        [u("hi", metadata={"ts": 1})],
        [
            (
                "GQ-1",
                0,
                "'messages.0' : for 'role:user' the following must be satisfied"
                "[('messages.0' : property 'metadata' is unsupported)]",
            )
        ],
        id="groq-user-metadata",
    ),
]


#: Blank content after a system message and a tool round: the providers count their own
#: turns (system lifted out, the call and its result one turn each), not the input's messages.
BLANK_AFTER_TOOLS = [s(), u("ls"), calls("toolu_1"), t("toolu_1"), a(" "), u("ok")]
REGRESSIONS += [
    pytest.param(
        "anthropic",
        SONNET_45,
        BLANK_AFTER_TOOLS,
        [
            (
                "AN-7",
                4,
                "messages.3: all messages must have non-empty content except for the optional "
                "final assistant message",
            )
        ],
        id="anthropic-blank-after-tools",
    ),
    pytest.param(
        "bedrock",
        BEDROCK_CLAUDE,
        BLANK_AFTER_TOOLS,
        [
            (
                "BR-5",
                4,
                "The text field in the ContentBlock object at messages.3.content.0 is blank. Add "
                "text to the text field, and try again.",
            )
        ],
        id="bedrock-blank-after-tools",
    ),
    pytest.param(
        "gemini",
        GEMINI_25,
        BLANK_AFTER_TOOLS,
        [
            (
                "GE-5b",
                4,
                "* GenerateContentRequest.contents[3].parts: contents.parts must not be empty.",
            )
        ],
        id="gemini-blank-after-tools",
    ),
]


# OA-7b: the text names the call inside the message
REGRESSIONS.append(
    pytest.param(
        "openai",
        GPT,
        [
            u("ls and pwd"),
            {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2", "fs.pwd")]},
            t("c1"),
            t("c2"),
        ],
        [
            (
                "OA-7b",
                1,
                "Invalid 'messages[1].tool_calls[1].function.name': string does not match "
                "pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
            )
        ],
        id="openai-second-call-name",
    )
)


@pytest.mark.parametrize(("provider", "model", "messages", "expected"), REGRESSIONS)
def test_regression(
    provider: str, model: str, messages: list[Message], expected: list[tuple[str, int, str]]
) -> None:
    found = _violations(messages, provider, model)
    assert sorted((v.rule, v.index, v.error) for v in found) == sorted(expected)


# -- vLLM: the real chat templates agree with the rules ------------------------------------------

#: Rules whose rejection comes from vLLM itself (HF-4: mistral tokenizer mode) or from a
#: template that is not pinned (HF-2: Qwen3.5/3.6; the pinned Qwen2.5/Qwen3 ones render
#: a list without a user message: test_pinned_qwen_templates_need_no_user_query).
NOT_FROM_THE_TEMPLATE = {"HF-2", "HF-4"}
#: The vLLM rules of template families (the Mistral tokenizer has none: test_mistral_common).
VLLM_CASES = sorted(
    rule_id
    for rule_id, c in CASES.items()
    if c.provider == "vllm" and template_family(Target("vllm", c.model or "")) in FAMILIES
)


def _template(c: Case) -> str:
    family = template_family(Target("vllm", c.model or ""))
    assert family in FAMILIES, f"no pinned template for {family}"
    return family


def _render_error(family: str, messages: list[Message]) -> str | None:
    try:
        render(family, messages)
    except TemplateError as exc:  # the template's raise_exception
        return str(exc)
    except (TypeError, AttributeError) as exc:  # e.g. None + str inside the template
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.mark.parametrize(
    "rule_id",
    [r for r in VLLM_CASES if r not in NOT_FROM_THE_TEMPLATE],
    ids=lambda r: f"{r}-rejected",
)
def test_template_rejects_with_the_rules_text(rule_id: str) -> None:
    c = CASES[rule_id]
    assert _render_error(_template(c), c.rejected) in {error for _, error in c.expected}


@pytest.mark.parametrize("rule_id", VLLM_CASES, ids=lambda r: f"{r}-accepted")
def test_template_renders_the_accepted_list(rule_id: str) -> None:
    c = CASES[rule_id]
    assert _render_error(_template(c), c.accepted) is None


#: Mistral v0.1/v0.2: what the template raises at its first objection, and every violation.
MISTRAL_V02_LISTS = [
    pytest.param(
        [u("hi"), u("are you there?")],
        [("HF-1f", 1, ALTERNATE_AFTER_SYSTEM)],
        id="two-users",
    ),
    # a tool result after its call sits at an even position: the alternation check raises
    pytest.param(
        [u("weather?"), calls("abcdefghi", content=""), t("abcdefghi", "sunny"), u("thanks")],
        [("HF-1f", 2, ALTERNATE_AFTER_SYSTEM)],
        id="tool-result-after-call",
    ),
    # at an odd position the check passes and the role branch raises
    pytest.param(
        [u("weather?"), t("abcdefghi", "sunny")],
        [("HF-1g", 1, ONLY_USER_AND_ASSISTANT)],
        id="tool-result-after-user",
    ),
    pytest.param(
        [s("Be brief."), u("hi"), s("Answer in French.")],
        [("HF-1g", 2, ONLY_USER_AND_ASSISTANT)],
        id="second-system-odd",
    ),
    pytest.param(
        [s("Be brief."), u("hi"), a("hello"), s("Answer in French."), u("ok")],
        [("HF-1f", 3, ALTERNATE_AFTER_SYSTEM)],
        id="second-system-even",
    ),
]


@pytest.mark.parametrize(("messages", "expected"), MISTRAL_V02_LISTS)
def test_mistral_v02_texts_are_the_templates(
    messages: list[Message], expected: list[tuple[str, int, str]]
) -> None:
    found = _violations(messages, "vllm", MISTRAL_V02)
    assert [(v.rule, v.index, v.error) for v in found] == expected
    assert _render_error("mistral_v02", messages) == expected[0][2]


@pytest.mark.parametrize("family", ["qwen", "qwen3", "qwen3_2507"])
@pytest.mark.parametrize(
    "messages",
    [[s("You are helpful.")], [s("You are helpful."), a("Hi! How can I help?")]],
    ids=["system-only", "system-assistant"],
)
def test_pinned_qwen_templates_need_no_user_query(family: str, messages: list[Message]) -> None:
    """HF-2 is Qwen3.5/3.6's: the Qwen2.5 and Qwen3 templates render without a user."""
    assert _render_error(family, messages) is None
    for model in (QWEN25, "Qwen/Qwen3-8B", "Qwen/Qwen3-4B-Instruct-2507"):
        assert "HF-2" not in {v.rule for v in _violations(messages, "vllm", model)}
    assert "HF-2" in {v.rule for v in _violations(messages, "vllm", QWEN35)}


#: The rule that flags an empty list, per provider (a representative model for vLLM).
EMPTY_LIST_RULES = {
    ("openai", GPT): "OA-6b",
    ("anthropic", SONNET_45): "AN-13",
    ("gemini", GEMINI_25): "GE-5",
    ("bedrock", BEDROCK_CLAUDE): "BR-1b",
    ("glm", GLM): "GLM-2",
    ("qwen", QWEN): "QW-3",
    ("vllm", LLAMA2): "HF-9",
}
#: No error text for an empty list in RULEBOOK.md: listed as not checked instead.
EMPTY_LIST_NOT_CHECKED = ("mistral", "deepseek", "moonshot", "groq")


def test_an_empty_list_is_flagged_or_listed_as_not_checked() -> None:
    for (provider, model), rule_id in EMPTY_LIST_RULES.items():
        assert rule_id in {v.rule for v in _violations([], provider, model)}
    for provider in EMPTY_LIST_NOT_CHECKED:
        assert _violations([], provider, None) == []
        assert f"{CATALOG[provider].rules[0].id.split('-')[0]}-empty" in dict(
            CATALOG[provider].not_checked
        )


def test_openai_call_names_are_reported_not_renamed() -> None:
    """OA-7b has no repair: a renamed call would no longer match its tool definition."""
    from context_governor import govern

    messages = CASES["OA-7b"].rejected
    result = govern(messages, profile="openai", model=GPT)
    assert result.messages[1]["tool_calls"][0]["function"]["name"] == "get weather"
    assert [(v["rule"], v["index"]) for v in result.report.violations] == [("OA-7b", 1)]
    assert any(n.startswith("rule not met: OA-7b at message 1") for n in result.report.notes)
