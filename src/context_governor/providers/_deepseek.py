"""DeepSeek: OpenAI-style pairing, and thinking mode's reasoning_content."""

from __future__ import annotations

from dataclasses import replace

from ..targets import CachePrice, Policy, ReasoningPolicy, Target
from . import _checks as checks
from ._openai import pairing_rules, pairing_sources
from ._rules import Rule
from ._sources import GH
from ._vendor import NotChecked, Sources, Vendor

__all__ = [
    "DEEPSEEK",
    "FAMILY_WINDOWS",
    "NOT_CHECKED",
    "POLICY",
    "RULES",
    "SOURCES",
    "VENDOR",
    "WINDOWS",
    "deepseek_thinking",
    "policy",
]


def deepseek_thinking(target: Target) -> bool:
    """deepseek-reasoner and the V4 family run in thinking mode and need reasoning_content back."""
    model = target.lowered
    return "reasoner" in model or "deepseek-v4" in model or "thinking" in model


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

NOT_CHECKED: NotChecked = (
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


SOURCES: Sources = {
    **pairing_sources(
        "DS-0",
        (GH + "qwersyk/Newelle/issues/425",),
        (GH + "langgenius/dify/issues/32222",),
    ),
    "DS-1": (GH + "deepseek-ai/DeepSeek-R1/issues/21",),
    "DS-2": (
        "https://api-docs.deepseek.com/guides/chat_prefix_completion",
        GH + "gptme/gptme/issues/467",
    ),
    "DS-6": (GH + "decolua/9router/pull/1011",),
    "DS-3": (
        "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
        GH + "langchain-ai/langchain/issues/37713",
    ),
}

#: api-docs.deepseek.com/quick_start/pricing ("Context length: 128K").
WINDOWS: dict[str, int] = {
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # api-docs.deepseek.com: 64K was the API's window before V3.1 made it 128K; the
    # smaller for names the table does not know.
    (r"deepseek", 64_000),
)

DEEPSEEK = CachePrice("DeepSeek", "deepseek-chat, deepseek-reasoner", "automatic", 0.1)

VENDOR = Vendor(
    "deepseek",
    "DeepSeek",
    RULES,
    NOT_CHECKED,
    policy,
    sources=SOURCES,
    windows=WINDOWS,
    family_windows=FAMILY_WINDOWS,
    prices={"deepseek": DEEPSEEK},
    price_families=((r"deepseek-(?:chat|reasoner)", DEEPSEEK),),
    aliases=("deepseek",),
    model_hints=("deepseek",),
)
