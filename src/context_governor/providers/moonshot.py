"""Moonshot / Kimi."""

from __future__ import annotations

from ..targets.policy import Policy, ReasoningPolicy
from ..targets.target import Target, moonshot_thinking
from . import checks
from .openai import pairing_rules
from .rules import Rule

__all__ = ["NOT_CHECKED", "POLICY", "RULES"]


def _reasoning(target: Target) -> ReasoningPolicy:
    return "require_tool_calls" if moonshot_thinking(target) else "keep"


RULES: tuple[Rule, ...] = (
    *pairing_rules("KM-0"),
    Rule(
        "KM-1",
        "thinking mode: tool-call messages carry reasoning_content",
        "thinking is enabled but reasoning_content is missing in assistant tool call message "
        "at index {index}",
        "add reasoning_content",
        checks.reasoning_missing(tool_call_turns_only=True),
        applies=moonshot_thinking,
    ),
    Rule(
        "KM-2",
        "tool call ids are unique",
        "invalid_request_error: tool call id {id} is duplicated",
        "rename the repeated id (on its result too)",
        checks.duplicate_call_ids,
        verbatim=False,
    ),
    Rule(
        "KM-4",
        "a trailing assistant message needs partial: true",
        "the last message must be a user or tool message unless partial is set",
        "drop the trailing assistant message or mark it partial: true",
        lambda ms: (f for f in checks.ends_with_assistant(ms) if not ms[-1].get("partial")),
        verbatim=False,
    ),
)

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    ("KM-3", "reasoning_effort with thinking is a request parameter, not a message"),
    (
        "KM-empty",
        "an empty message list: no published Moonshot error text for it was found, so it is not "
        "flagged; send at least one message",
    ),
)

POLICY = Policy(reasoning=_reasoning, prefill=lambda target: True, prefill_flag="partial")
