"""Moonshot / Kimi."""

from __future__ import annotations

from ..targets import Policy, ReasoningPolicy, Target
from . import _checks as checks
from ._openai import (
    ORPHAN_SOURCES,
    UNANSWERED_SOURCES,
    pairing_rules,
    pairing_sources,
)
from ._rules import Rule
from ._sources import GH, NANOBOT
from ._vendor import NotChecked, Sources, Vendor

__all__ = [
    "FAMILY_WINDOWS",
    "NOT_CHECKED",
    "POLICY",
    "RULES",
    "SOURCES",
    "VENDOR",
    "WINDOWS",
    "moonshot_thinking",
]


def moonshot_thinking(target: Target) -> bool:
    return "thinking" in target.lowered or "kimi-k2.5" in target.lowered


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

NOT_CHECKED: NotChecked = (
    ("KM-3", "reasoning_effort with thinking is a request parameter, not a message"),
    (
        "KM-empty",
        "an empty message list: no published Moonshot error text for it was found, so it is not "
        "flagged; send at least one message",
    ),
)

POLICY = Policy(reasoning=_reasoning, prefill=lambda target: True, prefill_flag="partial")

SOURCES: Sources = {
    **pairing_sources("KM-0", ORPHAN_SOURCES, UNANSWERED_SOURCES),
    "KM-1": (GH + "continuedev/continue/issues/11600", GH + "mastra-ai/mastra/issues/12592"),
    "KM-2": (NANOBOT + "commit/90d725097", GH + "open-webui/open-webui/issues/28570"),
    "KM-4": (GH + "SillyTavern/SillyTavern/issues/4326",),
}

#: platform.moonshot.ai ("context length"): kimi-k2-0711 128K; the 0905 and later K2
#: models (turbo, thinking) 256K; moonshot-v1 by its name. Moonshot's Anthropic-
#: compatible endpoint serves these names too.
WINDOWS: dict[str, int] = {
    "kimi-k2": 131_072,
    "kimi-k2-0905": 262_144,
    "kimi-k2-turbo": 262_144,
    "kimi-k2-thinking": 262_144,
    "kimi-latest": 131_072,
    "moonshot-v1-8k": 8_192,
    "moonshot-v1-32k": 32_768,
    "moonshot-v1-128k": 131_072,
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # platform.moonshot.ai: kimi-k2-0711 and kimi-latest 128K (131,072); moonshot-v1's
    # smallest is 8K.
    (r"kimi-", 131_072),
    (r"moonshot-", 8_192),
)

VENDOR = Vendor(
    "moonshot",
    "Moonshot / Kimi",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    windows=WINDOWS,
    family_windows=FAMILY_WINDOWS,
    aliases=("moonshot", "moonshotai"),
    model_hints=("kimi", "moonshot"),
)
