"""DeepSeek: OpenAI-style pairing, and thinking mode's reasoning_content."""

from __future__ import annotations

from dataclasses import replace

from ..targets.policy import Policy, ReasoningPolicy
from ..targets.target import Target, deepseek_thinking
from . import checks
from .openai import pairing_rules
from .rules import Rule

__all__ = ["NOT_CHECKED", "POLICY", "RULES", "policy"]

_FOLLOWED = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. (insufficient tool messages following tool_calls message)"
)
_ONLY_AFTER = (
    "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
)


def _reasoning(target: Target) -> ReasoningPolicy:
    return "require_all" if deepseek_thinking(target) else "keep"


RULES: tuple[Rule, ...] = (
    *pairing_rules("DS-0", only_after=_ONLY_AFTER, followed=_FOLLOWED),
    Rule(
        "DS-1",
        "deepseek-reasoner: user and assistant messages interleave",
        "deepseek-reasoner does not support successive user or assistant messages "
        "(messages[{previous}] and messages[{index}] in your input). You should interleave the "
        "user/assistant messages in the message sequence.",
        "merge consecutive messages of one role",
        checks.consecutive_same_role(),
        applies=lambda t: "reasoner" in t.lowered,
    ),
    Rule(
        "DS-2",
        "the last message is a user message (or an assistant with prefix: true)",
        "The last message of deepseek-reasoner must be a user message, or an assistant "
        "message with prefix mode on (refer to "
        "https://api-docs.deepseek.com/guides/chat_prefix_completion).",
        "drop the trailing assistant message or mark it prefix: true",
        lambda ms: (f for f in checks.ends_with_assistant(ms) if not ms[-1].get("prefix")),
    ),
    Rule(
        "DS-3",
        "thinking mode: every assistant message carries reasoning_content",
        "The `reasoning_content` in the thinking mode must be passed back to the API.",
        "add reasoning_content (a single space when it was not kept)",
        checks.reasoning_missing(tool_call_turns_only=False),
        applies=deepseek_thinking,
    ),
    Rule(
        "DS-6",
        "no message of role developer",
        "messages[{index}].role: developer is not a supported role",
        "send it as a system message",
        checks.role_refused("developer"),
        verbatim=False,
    ),
)

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    ("DS-5", "an empty tools array is a request field, not a message"),
    (
        "DS-empty",
        "an empty message list: no published DeepSeek error text for it was found, so it is not "
        "flagged; send at least one message",
    ),
)

POLICY = Policy(
    reasoning=_reasoning,
    prefill=lambda target: True,
    prefill_flag="prefix",
)


def policy(target: Target) -> Policy:
    """deepseek-reasoner rejects user, system, user (DS-1 sees two user messages in a row):
    its system messages go to the front; other models keep them where they are."""
    if "reasoner" in target.lowered:
        return replace(POLICY, system="merge_front")
    return POLICY
