"""Zhipu GLM / Z.ai: error 1214 covers every sequence problem."""

from __future__ import annotations

from ..targets.policy import Policy
from . import checks
from .openai import pairing_rules
from .rules import Rule

__all__ = ["E1214", "NOT_CHECKED", "POLICY", "RULES"]

E1214 = "The messages parameter is illegal. Please check the documentation. (1214)"

RULES: tuple[Rule, ...] = (
    *pairing_rules("GLM-0", only_after=E1214, followed=E1214, duplicate=E1214),
    Rule(
        "GLM-1",
        "no assistant message before the first user message (system -> assistant)",
        E1214,
        "insert a user message before it",
        checks.first_is_not_user(),
    ),
    Rule("GLM-2", "not only system messages", E1214, "add a user message", checks.only_system),
    Rule(
        "GLM-3",
        "tool call ids are unique across the history",
        E1214,
        "rename the repeated id (on its result too)",
        checks.duplicate_call_ids,
    ),
    Rule(
        "GLM-4",
        "no non-standard message keys (reasoning_content, extra_content, ...)",
        E1214,
        "strip the key",
        checks.unknown_keys(frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})),
        verbatim=False,
    ),
    Rule(
        "GLM-5",
        "no empty content",
        "messages[{index}]:content和tool_calls 字段不能同时为空",
        "use a placeholder, or null content with tool calls",
        checks.blank_content(),
    ),
)

NOT_CHECKED: tuple[tuple[str, str], ...] = ()

POLICY = Policy(
    user_before_tool_call_opening=True,
    needs_user=True,
    empty="blocks",
    allowed_keys=frozenset({"role", "content", "name", "tool_calls", "tool_call_id"}),
    prefill=lambda target: True,
)
