"""OpenAI Chat Completions and the OpenAI-style pairing rules others reuse."""

from __future__ import annotations

from ..targets.policy import Policy
from . import checks
from .rules import Rule

__all__ = [
    "DUPLICATE",
    "MUST_BE_FOLLOWED",
    "NOT_CHECKED",
    "ONLY_AFTER_CALLS",
    "POLICY",
    "RULES",
    "pairing_rules",
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

NOT_CHECKED: tuple[tuple[str, str], ...] = (
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
