"""Anthropic Messages API, as reached from OpenAI-format messages.

System messages become the top-level ``system``; tool results become ``tool_result``
blocks of a user turn; tool calls become ``tool_use`` blocks. Hence the pairing checks
run on the list without its system messages, and the errors' ``messages.N`` count turns.
"""

from __future__ import annotations

from ..targets.policy import Policy
from ..targets.target import Target, claude_accepts_prefill, claude_version
from . import checks
from .rules import Rule

__all__ = ["NOT_CHECKED", "POLICY", "RULES"]


def _prefill_rejected(target: Target) -> bool:
    return not claude_accepts_prefill(target)


RULES: tuple[Rule, ...] = (
    Rule(
        "AN-1",
        "each tool_use needs a tool_result in the very next message",
        "messages.{turn}: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in "
        "the next message.",
        "add the missing results right after the call",
        checks.hoisted(checks.calls_without_results_after),
    ),
    Rule(
        "AN-2",
        "a tool_result must reference a tool_use of the previous message",
        "messages.{turn}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
        "{id}. Each `tool_result` block must have a corresponding `tool_use` block in the "
        "previous message.",
        "drop the orphan result",
        checks.hoisted(checks.result_without_call_before),
    ),
    Rule(
        "AN-3",
        "tool_result blocks come first in the turn after tool_use (no text before them)",
        "messages.{turn}: Did not find {count} `tool_result` block(s) at the beginning of this "
        "message. Messages following `tool_use` blocks must begin with a matching number of "
        "`tool_result` blocks.",
        "move the interjected message after the tool results",
        checks.hoisted(checks.interjection_in_tool_block),
    ),
    Rule(
        "AN-4",
        "the first message must be a user message (Claude 3 era)",
        'messages: first message must use the "user" role',
        "insert a user message before it",
        checks.first_is_not_user(),
        applies=lambda t: (claude_version(t) or (9, 9)) < (3, 5),
    ),
    Rule(
        "AN-6",
        "no trailing assistant message (prefill) on Claude 4.6+ and 5",
        "This model does not support assistant message prefill. The conversation must end "
        "with a user message.",
        "drop the trailing assistant message",
        checks.ends_with_assistant,
        applies=_prefill_rejected,
    ),
    Rule(
        "AN-6b",
        "a prefill must not end in whitespace",
        "messages: final assistant content cannot end with trailing whitespace",
        "strip the trailing whitespace",
        checks.prefill_with_trailing_whitespace,
        applies=claude_accepts_prefill,
    ),
    Rule(
        "AN-7",
        "text content must be non-empty and not only whitespace",
        "messages.{turn}: all messages must have non-empty content except for the optional "
        "final assistant message",
        "use a placeholder such as '(empty)'",
        checks.hoisted(checks.blank_content(except_last_assistant=True)),
    ),
    Rule(
        "AN-7b",
        "text blocks must contain non-whitespace text",
        "messages: text content blocks must contain non-whitespace text",
        "drop the blank text block",
        checks.whitespace_text_parts,
    ),
    Rule(
        "AN-7c",
        "text blocks must be non-empty",
        "messages: text content blocks must be non-empty",
        "drop the empty text block",
        checks.empty_text_parts,
    ),
    Rule(
        "AN-8",
        "tool_use ids are unique within a request",
        "messages.{turn}.content.1: `tool_use` ids must be unique",
        "rename the repeated id (on its result too)",
        checks.hoisted(checks.duplicate_call_ids),
    ),
    Rule(
        "AN-8b",
        "tool_use ids match ^[a-zA-Z0-9_-]+$",
        "messages.{turn}.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        "replace other characters (on the call and its result alike)",
        checks.hoisted(checks.call_id_format(r"[a-zA-Z0-9_-]+")),
    ),
    Rule(
        "AN-10",
        "at most 4 cache_control breakpoints",
        "A maximum of 4 blocks with cache_control may be provided. Found {found}.",
        "keep the 4 newest breakpoints",
        checks.cache_control_count(4),
    ),
    Rule(
        "AN-11",
        "content blocks need a type",
        "content.0.type: Field required",
        "give the block a type",
        checks.untyped_parts,
        verbatim=False,
    ),
)

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    (
        "AN-5",
        "consecutive same-role turns are combined by the API since 2025; we merge them "
        "anyway, so a merged list is what AN-1/AN-3 are checked on",
    ),
    ("AN-9", "thinking blocks and signatures do not exist in OpenAI-format messages"),
    (
        "AN-empty",
        "an empty message list: no published Anthropic error text for it was found, so it is not "
        "flagged; send at least one message",
    ),
)

POLICY = Policy(
    id_style="anthropic",
    system="merge_front",
    needs_user=True,
    empty="blocks",
    reasoning=lambda target: "strip",
    prefill=claude_accepts_prefill,
    rstrip_prefill=True,
    max_cache_control=4,
)
