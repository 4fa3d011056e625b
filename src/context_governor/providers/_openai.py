"""OpenAI Chat Completions and the OpenAI-style pairing rules others reuse.

Also the windows of the model families of OpenAI-compatible APIs that have no module of
their own (xAI's Grok, Cohere's Command R): the ``openai`` profile governs them.
"""

from __future__ import annotations

from ..targets import DATED, CachePrice, Policy
from . import _checks as checks
from ._rules import Rule
from ._sources import GH
from ._vendor import NotChecked, Sources, Vendor

__all__ = [
    "DUPLICATE",
    "DUPLICATE_SOURCES",
    "FAMILY_WINDOWS",
    "MUST_BE_FOLLOWED",
    "NOT_CHECKED",
    "ONLY_AFTER_CALLS",
    "OPENAI_4O",
    "OPENAI_5",
    "OPENAI_41",
    "ORPHAN_SOURCES",
    "POLICY",
    "RULES",
    "SOURCES",
    "UNANSWERED_SOURCES",
    "VENDOR",
    "WINDOWS",
    "pairing_rules",
    "pairing_sources",
]

ONLY_AFTER_CALLS = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
    "with 'tool_calls'."
)
MUST_BE_FOLLOWED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
DUPLICATE = (
    "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{first}] and "
    "messages[{index}]."
)


def pairing_rules(
    prefix: str,
    *,
    only_after: str = ONLY_AFTER_CALLS,
    followed: str = MUST_BE_FOLLOWED,
    duplicate: str = DUPLICATE,
) -> tuple[Rule, ...]:
    """The tool-pairing rules every OpenAI-compatible API enforces, under a provider's ids."""
    return (
        Rule(
            f"{prefix}-1",
            "a tool message must answer a call of the assistant message right before its block",
            only_after,
            "drop the orphan result or move it after its call",
            checks.result_without_call_before,
        ),
        Rule(
            f"{prefix}-2",
            "every tool call must be answered by the tool messages right after it",
            followed,
            "add the missing results right after the call; move interjected messages after them",
            checks.calls_without_results_after,
        ),
        Rule(
            f"{prefix}-4",
            "no second result for one tool_call_id",
            duplicate,
            "keep the first result, drop the others",
            checks.duplicate_results,
        ),
    )


RULES: tuple[Rule, ...] = (
    *pairing_rules("OA"),
    Rule(
        "OA-5",
        "content may be null only on an assistant message with tool_calls",
        "Invalid value for 'content': expected a string, got null.",
        "use an empty string",
        checks.null_content_without_calls,
    ),
    Rule(
        "OA-6",
        "tool_calls must not be an empty array",
        "Invalid 'messages[{index}].tool_calls': empty array. Expected an array with minimum "
        "length 1, but got an empty array instead.",
        "remove the key",
        checks.empty_tool_calls,
    ),
    Rule(
        "OA-6b",
        "messages must not be empty",
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
        "empty array instead.",
        "send at least one message",
        checks.empty_request,
    ),
    Rule(
        "OA-7",
        "name must match ^[a-zA-Z0-9_-]+$ (at most 64)",
        "Invalid 'messages[{index}].name': string does not match pattern. Expected a string "
        "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        "replace other characters by '_' or drop the name",
        checks.name_pattern(r"[a-zA-Z0-9_-]{1,64}"),
    ),
    Rule(
        "OA-7b",
        "tool call function names match ^[a-zA-Z0-9_-]+$ (at most 64)",
        "Invalid 'messages[{index}].tool_calls[{call}].function.name': string does not match "
        "pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        "rename the function in the tool definitions and in the history alike; govern does "
        "not (a renamed call would no longer match its tool) and reports the violation",
        checks.call_name_pattern(r"[a-zA-Z0-9_-]{1,64}"),
    ),
    Rule(
        "OA-8",
        "tool call ids are at most 40 characters",
        "Invalid 'messages[{index}].{path}': string too long. Expected a string with "
        "maximum length 40, but got a string with length {length} instead.",
        "shorten the id (on the call and its result alike)",
        checks.call_id_format(r"(?s).{1,40}"),
    ),
)

NOT_CHECKED: NotChecked = (
    (
        "OA-3",
        "same condition as OA-1 (a result whose id is not in the previous message's calls); "
        "reported as OA-1",
    ),
    ("OA-9", "lists what OpenAI accepts; nothing to check"),
)

POLICY = Policy(
    id_style="openai", empty="openai", names="pattern", developer_role=True, legacy_functions=True
)

#: The pairing rules' sources: OpenAI's reports, which providers without their own cite.
ORPHAN_SOURCES = (
    GH + "smarter-sh/smarter/issues/264",
    GH + "FoundationAgents/OpenManus/issues/744",
)
UNANSWERED_SOURCES = (GH + "BerriAI/litellm/issues/10083", GH + "sdcb/chats/pull/132")
DUPLICATE_SOURCES = (GH + "agno-agi/agno/issues/5116",)


def pairing_sources(
    prefix: str, orphan: tuple[str, ...], unanswered: tuple[str, ...]
) -> dict[str, tuple[str, ...]]:
    """The sources of ``pairing_rules(prefix)``: the provider's own reports where one
    exists, else OpenAI's."""
    return {
        f"{prefix}-1": orphan,
        f"{prefix}-2": unanswered,
        f"{prefix}-4": DUPLICATE_SOURCES,
    }


SOURCES: Sources = {
    "OA-1": ORPHAN_SOURCES,
    "OA-2": UNANSWERED_SOURCES,
    "OA-4": DUPLICATE_SOURCES,
    "OA-5": (GH + "docker/docker-agent/issues/63", GH + "vercel/ai/pull/14950"),
    "OA-6": (GH + "openai/openai-python/issues/2061",),
    "OA-6b": (GH + "CopilotKit/CopilotKit/issues/529",),
    "OA-7": (GH + "FlowiseAI/Flowise/issues/2948",),
    "OA-7b": (GH + "mcp-use/mcp-use/issues/90",),
    "OA-8": (GH + "Portkey-AI/gateway/issues/1062", GH + "BerriAI/litellm/issues/17343"),
}

#: platform.openai.com/docs/models (each model's page, "Context window").
WINDOWS: dict[str, int] = {
    # gpt-4 (0613) is an 8,192 model and gpt-4-32k a 32,768 one; the 1106/0125 previews
    # and gpt-4.5-preview are 128,000 (listed so the gpt-4 entry does not shrink them).
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-1106": 128_000,
    "gpt-4-0125": 128_000,
    "gpt-4.5": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,  # also gpt-4.1-mini and gpt-4.1-nano
    # gpt-5 (and -mini, -nano): 400,000 in all, but the input is capped at 272,000 (the
    # rest is kept for the answer; OpenAI's GPT-5 launch post): the prompt's bound is
    # what the budget needs. gpt-5-chat-latest is a 128,000 model.
    "gpt-5": 272_000,
    "gpt-5-chat": 128_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,  # also o3-mini
    "o4-mini": 200_000,
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # platform.openai.com/docs/models: 128,000 is the smallest window of the current GPT
    # models (gpt-4o, gpt-4-turbo, gpt-5-chat, gpt-oss 131,072); the reasoning models
    # (o1-mini, o1-preview) start at 128,000 too.
    (r"gpt-", 128_000),
    (r"chatgpt-", 128_000),
    (r"o[1-9]", 128_000),
    # xAI, docs.x.ai/docs/models: Grok 2 and 3 131,072 (Grok 4 256,000).
    (r"grok-", 131_072),
    # Cohere, docs.cohere.com/docs/models: Command R and R+ 128K.
    (r"command-r", 128_000),
)

OPENAI_4O = CachePrice("OpenAI gpt-4o", "gpt-4o, gpt-4o-mini", "automatic", 0.5)
OPENAI_41 = CachePrice("OpenAI gpt-4.1", "gpt-4.1, gpt-4.1-mini, gpt-4.1-nano", "automatic", 0.25)
OPENAI_5 = CachePrice("OpenAI gpt-5", "gpt-5, gpt-5-mini, gpt-5-nano", "automatic", 0.1)

VENDOR = Vendor(
    "openai",
    "OpenAI Chat Completions",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    windows=WINDOWS,
    family_windows=FAMILY_WINDOWS,
    prices={"openai-4o": OPENAI_4O, "openai-4.1": OPENAI_41, "openai-5": OPENAI_5},
    price_families=(
        (rf"gpt-4o(?:-mini)?{DATED}", OPENAI_4O),
        (rf"gpt-4\.1(?:-mini|-nano)?{DATED}", OPENAI_41),
        (rf"gpt-5(?:-mini|-nano)?{DATED}", OPENAI_5),
    ),
    aliases=("openai", "azure", "azure_ai", "azure_openai", "text-completion-openai"),
)
