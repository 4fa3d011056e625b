"""Google Gemini, native generateContent or its OpenAI-compatible endpoint."""

from __future__ import annotations

from ..targets.policy import Policy
from ..targets.target import Target, gemini_accepts_prefill, gemini_needs_thought_signatures
from . import checks
from .rules import Rule

__all__ = ["NOT_CHECKED", "POLICY", "RULES"]


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

NOT_CHECKED: tuple[tuple[str, str], ...] = (
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
