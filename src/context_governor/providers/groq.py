"""Groq (and Cerebras): a strict schema that rejects unknown message keys."""

from __future__ import annotations

from ..targets.policy import Policy
from . import checks
from .openai import pairing_rules
from .rules import Rule

__all__ = ["ALLOWED", "NOT_CHECKED", "POLICY", "RULES"]

ALLOWED = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})

RULES: tuple[Rule, ...] = (
    *pairing_rules("GQ-0"),
    Rule(
        "GQ-1",
        "no keys outside the schema (reasoning_content, reasoning, metadata, ...)",
        "'messages.{index}' : for 'role:{role}' the following must be satisfied"
        "[('messages.{index}' : property '{key}' is unsupported)]",
        "strip the key",
        checks.unknown_keys(ALLOWED),
    ),
    Rule(
        "GQ-2",
        "content may be null only with tool_calls",
        "'messages.{index}' : for 'role:{role}' the following must be satisfied"
        "[('messages.{index}.content' : value must be a string)]",
        "use an empty string",
        checks.null_content_without_calls,
        verbatim=False,
    ),
)

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    (
        "GQ-empty",
        "an empty message list: no published Groq/Cerebras error text for it was found, so it is "
        "not flagged; send at least one message",
    ),
)

POLICY = Policy(allowed_keys=ALLOWED, empty="openai", reasoning=lambda target: "strip")
