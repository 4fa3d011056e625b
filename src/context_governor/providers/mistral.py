"""Mistral la Plateforme (vLLM with the Mistral tokenizer: vllm_mistral.py)."""

from __future__ import annotations

from ..targets.policy import Policy
from . import checks
from .openai import pairing_rules
from .rules import Rule

__all__ = ["NEXT_ROLES", "NOT_CHECKED", "POLICY", "RULES"]

#: mistral_common's validator: the roles allowed right after a role. 1.4.4's set after
#: ``tool`` (the hosted API still rejects user after tool); nothing stated after assistant.
NEXT_ROLES: dict[str, frozenset[str]] = {
    "system": frozenset({"system", "user", "assistant"}),
    "user": frozenset({"user", "system", "assistant"}),
    "tool": frozenset({"tool", "assistant"}),
}

RULES: tuple[Rule, ...] = (
    *pairing_rules(
        "MI-0",
        only_after="Unexpected tool call id {id} in tool results",
        followed="Not the same number of function calls and responses",
        duplicate="Duplicate tool call id {id} in tool results",
    ),
    Rule(
        "MI-1",
        "tool call ids are exactly 9 letters or digits",
        "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
        "rewrite the id (on the call and its result alike)",
        checks.call_id_format(r"[a-zA-Z0-9]{9}"),
    ),
    Rule(
        "MI-2",
        "role order: only assistant or tool after tool (no user), no tool after user or system",
        "Unexpected role '{role}' after role '{previous}'",
        "insert an assistant message between a tool result and a user message",
        checks.role_order(NEXT_ROLES),
    ),
    Rule(
        "MI-3",
        "the last message is user or tool (or an assistant with prefix: true)",
        "Expected last role User or Tool (or Assistant with prefix True) for serving but got "
        "{role}",
        "drop the trailing assistant message or mark it prefix: true",
        checks.last_role_not_in(("user", "tool"), assistant_flag="prefix"),
    ),
    Rule(
        "MI-4",
        "tool call ids are unique",
        "Duplicate tool call id {id} in assistant message",
        "rename the repeated id (on its result too)",
        checks.duplicate_call_ids,
    ),
    Rule(
        "MI-5",
        "name only on tool messages",
        "Extra inputs are not permitted",
        "drop the name",
        checks.name_outside_tool,
        verbatim=False,
    ),
    Rule(
        "MI-5b",
        "no reasoning_content in history",
        "reasoning_content is not permitted in messages",
        "strip it",
        checks.key_present("reasoning_content"),
        verbatim=False,
    ),
    Rule(
        "MI-6",
        "a one-message conversation is a user or system message",
        "Conversation must start with a user message or system message",
        "insert a user message",
        checks.lone_message_not_in(("user", "system")),
    ),
)

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    (
        "MI-5c",
        "'content or tool_calls, but not both' holds only for old models "
        "(_allow_tool_call_and_content=False); current models accept both",
    ),
    (
        "MI-empty",
        "an empty message list: no published Mistral error text for it was found, so it is not "
        "flagged; send at least one message",
    ),
)

POLICY = Policy(
    id_style="mistral",
    # a system message may not come last (MI-3) nor right after a tool result (MI-2)
    system="merge_front",
    user_before_tool_call_opening=True,
    needs_user=True,
    bridge_user_after_tool=True,
    empty="required",
    reasoning=lambda target: "strip",
    names="tool_only",
    prefill=lambda target: True,
    prefill_flag="prefix",
)
