"""Mistral la Plateforme (vLLM with the Mistral tokenizer: vllm_mistral.py)."""

from __future__ import annotations

from ..targets import Policy
from . import _checks as checks
from ._openai import pairing_rules, pairing_sources
from ._rules import Rule
from ._sources import GH, MISTRAL_COMMON, NANOBOT
from ._vendor import NotChecked, Sources, Vendor

__all__ = ["FAMILY_WINDOWS", "NEXT_ROLES", "NOT_CHECKED", "POLICY", "RULES", "SOURCES", "VENDOR"]

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

NOT_CHECKED: NotChecked = (
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

SOURCES: Sources = {
    **pairing_sources("MI-0", (MISTRAL_COMMON,), (GH + "NousResearch/hermes-agent/pull/11722",)),
    "MI-0-4": (MISTRAL_COMMON,),
    "MI-1": (GH + "anomalyco/opencode/issues/1680", GH + "nearai/ironclaw/issues/1241"),
    "MI-2": (GH + "datapizza-labs/datapizza-ai/issues/98", GH + "charmbracelet/crush/issues/279"),
    "MI-3": (GH + "0xPlaygrounds/rig/issues/708",),
    "MI-4": (MISTRAL_COMMON,),
    "MI-5": (GH + "BerriAI/litellm/blob/main/litellm/llms/mistral/chat/transformation.py",),
    "MI-5b": (NANOBOT + "commit/d5f5eb43e",),
    "MI-6": (MISTRAL_COMMON,),
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # docs.mistral.ai/getting-started/models: 32K for Mistral 7B, Mixtral 8x7B, Codestral
    # 22.05 and the older Small/Medium; newer ones have 128K-256K.
    (r"(?:open-)?(?:mistral|mixtral|codestral|magistral|devstral|ministral|pixtral)", 32_768),
)

VENDOR = Vendor(
    "mistral",
    "Mistral",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    family_windows=FAMILY_WINDOWS,
    aliases=("mistral", "mistralai", "codestral"),
    model_hints=("mistral", "magistral", "codestral", "devstral"),
)
