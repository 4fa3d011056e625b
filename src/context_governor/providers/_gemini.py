"""Google Gemini, native generateContent or its OpenAI-compatible endpoint.

Also Gemini's model facts (its version, prefill, thought signatures), and the windows
and cache prices of Google's models (Gemma's too).
"""

from __future__ import annotations

import re

from ..targets import CachePrice, Policy, Target
from . import _checks as checks
from ._rules import Rule
from ._sources import GH
from ._vendor import NotChecked, Sources, Vendor

__all__ = [
    "FAMILY_WINDOWS",
    "GEMINI_25",
    "GEMINI_25_FLASH",
    "NOT_CHECKED",
    "POLICY",
    "RULES",
    "SOURCES",
    "VENDOR",
    "WINDOWS",
    "gemini_accepts_prefill",
    "gemini_needs_thought_signatures",
    "gemini_version",
]


def gemini_version(target: Target) -> tuple[int, int] | None:
    """'gemini-2.5-flash' -> (2, 5); 'gemini-3-pro' -> (3, 0); None without a number."""
    match = re.search(r"gemini[-_a-z]*?-(\d+)(?:[-.](\d)(?!\d))?", target.lowered)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def gemini_accepts_prefill(target: Target) -> bool:
    """Gemini 2.x to 3.1 continue a trailing model turn; newer ones and gemini-pro (1.0) don't."""
    version = gemini_version(target)
    return version is not None and (2, 0) <= version <= (3, 1)


def gemini_needs_thought_signatures(target: Target) -> bool:
    version = gemini_version(target)
    return version is not None and version >= (3, 0)


def _gemini_1_0(target: Target) -> bool:
    """gemini-pro (and gemini-pro-vision), i.e. gemini-1.0-pro: the 2023 API and its texts."""
    return "gemini-pro" in target.lowered or "gemini-1.0" in target.lowered


def _trailing_model_turn_rejected(target: Target) -> bool:
    return not gemini_accepts_prefill(target) and not _gemini_1_0(target)


RULES: tuple[Rule, ...] = (
    Rule(
        "GE-1",
        "a function-call turn comes right after a user or function-response turn",
        "Please ensure that function call turn comes immediately after a user turn or after a "
        "function response turn.",
        "insert a user message before it",
        checks.first_is_function_call,
    ),
    Rule(
        "GE-2",
        "a function-response turn comes right after a function-call turn",
        "Please ensure that function response turn comes immediately after a function call turn.",
        "drop the orphan result",
        checks.result_without_call_before,
    ),
    Rule(
        "GE-3",
        "as many function responses as function calls",
        "Please ensure that the number of function response parts is equal to the number of "
        "function call parts of the function call turn.",
        "add the missing results right after the call",
        checks.result_count_mismatch,
    ),
    Rule(
        "GE-4",
        "contents alternate between user and model",
        "Please ensure that multiturn requests alternate between user and model",
        "merge consecutive messages of one role",
        checks.turn_alternation,
    ),
    Rule(
        "GE-5",
        "contents must not be empty",
        "* GenerateContentRequest.contents: contents is not specified",
        "add a user message",
        checks.only_system,
    ),
    Rule(
        "GE-5b",
        "every content needs at least one part",
        "* GenerateContentRequest.contents[{turn}].parts: contents.parts must not be empty.",
        "use a placeholder text",
        # system messages go to systemInstruction; tool results (and the user text right
        # after them) are one user content
        checks.hoisted(checks.blank_content()),
    ),
    Rule(
        "GE-6",
        "Gemini 3 function calls carry the thought_signature the model returned",
        "Function call is missing a thought_signature in functionCall parts. This is required "
        "for tools to work correctly, and missing thought_signature may lead to degraded model "
        "performance. Additional data, function call `default_api:{name}` , position "
        "{index}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for "
        "more details.",
        "add extra_content.google.thought_signature (the validator-skip value if lost)",
        checks.missing_thought_signature,
        applies=gemini_needs_thought_signatures,
    ),
    Rule(
        "GE-7",
        "no trailing model turn (except Gemini 2.x-3.1 prefill; gemini-pro 1.0: GE-7b)",
        "Requests ending with a model turn are not supported.",
        "drop the trailing assistant message",
        checks.ends_with_assistant,
        applies=_trailing_model_turn_rejected,
    ),
    Rule(
        "GE-7b",
        "gemini-pro (1.0): the last turn is a user turn or a function response",
        "Please ensure that multiturn requests ends with a user role or a function response.",
        "drop the trailing assistant message",
        checks.ends_with_assistant,
        applies=_gemini_1_0,
    ),
)

NOT_CHECKED: NotChecked = (
    (
        "GE-8",
        "roles other than user/model: the adapter maps OpenAI roles; our input check "
        "already refuses unknown roles",
    ),
)

POLICY = Policy(
    # converters that emit tool results and the next user text as two user turns exist
    bridge_user_after_tool=True,
    system="merge_front",
    user_before_tool_call_opening=True,
    needs_user=True,
    empty="blocks",
    reasoning=lambda target: "strip",
    prefill=gemini_accepts_prefill,
    thought_signatures=gemini_needs_thought_signatures,
)

SOURCES: Sources = {
    "GE-1": (
        GH + "google-gemini/gemini-cli/issues/11814",
        GH + "lbjlaq/Antigravity-Manager/pull/3396",
    ),
    "GE-2": (GH + "lobehub/lobehub/issues/7298", GH + "langchain-ai/langchain/issues/27799"),
    "GE-3": (GH + "microsoft/vscode/issues/299295", GH + "google-gemini/gemini-cli/issues/16415"),
    "GE-4": (GH + "NousResearch/hermes-agent/pull/55623", GH + "Portkey-AI/gateway/pull/246"),
    "GE-5": (GH + "langchain-ai/langchain-google/pull/1298",),
    "GE-5b": (GH + "langchain-ai/langchain-google/issues/691",),
    "GE-6": (
        "https://ai.google.dev/gemini-api/docs/thought-signatures",
        GH + "nanbingxyz/5ire/issues/405",
    ),
    "GE-7": (GH + "pipecat-ai/pipecat/pull/5821",),
    "GE-7b": (GH + "songquanpeng/one-api/issues/836",),
}

#: ai.google.dev/gemini-api/docs/models ("Input token limit").
WINDOWS: dict[str, int] = {
    "gemini-1.5-flash": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # ai.google.dev/gemini-api/docs/models ("Input token limit"): 1,048,576 for every
    # Gemini 2.x and 3.x model; Gemini 1.0 Pro took 30,720.
    (r"gemini-[2-9]", 1_048_576),
    (r"gemini-", 30_720),
    # ai.google.dev/gemma/docs: Gemma 3 128K (131,072), Gemma 1 and 2 8,192.
    (r"gemma-?3", 131_072),
    (r"gemma", 8_192),
)

GEMINI_25 = CachePrice(
    "Gemini 2.5 Pro (implicit)", "gemini-2.5-pro, up to 200k tokens", "automatic", 0.1, 1.0, 2048
)
GEMINI_25_FLASH = CachePrice(
    "Gemini 2.5 Flash (implicit)", "gemini-2.5-flash", "automatic", 0.1, 1.0, 1024
)

VENDOR = Vendor(
    "gemini",
    "Google Gemini",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    windows=WINDOWS,
    family_windows=FAMILY_WINDOWS,
    prices={"gemini-2.5": GEMINI_25, "gemini-2.5-flash": GEMINI_25_FLASH},
    price_families=((r"gemini-2\.5-pro", GEMINI_25), (r"gemini-2\.5-flash", GEMINI_25_FLASH)),
    aliases=(
        "gemini",
        "google",
        "google-gla",
        "google-vertex",
        "google_genai",
        "google_vertexai",
        "vertex_ai",
        "vertex_ai_beta",
    ),
    model_hints=("gemini", "gemma"),
    media="gemini",
    media_aliases=("google", "vertex", "vertex_ai", "google_genai"),
)
