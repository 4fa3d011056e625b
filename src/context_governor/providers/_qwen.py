"""Qwen on DashScope, OpenAI-compatible mode."""

from __future__ import annotations

from ..targets import Policy, Target
from . import _checks as checks
from ._openai import pairing_rules, pairing_sources
from ._rules import Rule
from ._sources import GH
from ._vendor import NotChecked, Sources, Vendor

__all__ = ["FAMILY_WINDOWS", "NOT_CHECKED", "POLICY", "RULES", "SOURCES", "VENDOR", "qwen_thinking"]


def qwen_thinking(target: Target) -> bool:
    model = target.lowered
    return "thinking" in model or model.startswith(("qwq", "qvq"))


_P = "<400> InternalError.Algo.InvalidParameter: "


def _partial_ok(target: Target) -> bool:
    return not qwen_thinking(target)


RULES: tuple[Rule, ...] = (
    *pairing_rules(
        "QW-0",
        only_after=_P + 'messages with role "tool" must be a response to a preceeding message '
        'with "tool_calls".',
        followed=_P + 'An assistant message with "tool_calls" must be followed by tool messages '
        'responding to each "tool_call_id". The following tool_call_ids did not have response '
        "messages: message[{index}].role",
    ),
    Rule(
        "QW-3",
        "at least one user message",
        _P + "The input messages do not contain elements with the role of user",
        "add a user message",
        checks.no_user_message,
    ),
    Rule(
        "QW-4",
        "content is required",
        _P + "The content field is a required field.",
        "use an empty string",
        checks.null_content,
    ),
    Rule(
        "QW-4b",
        "tool_calls must not be empty",
        "Empty tool_calls is not supported in message",
        "remove the key",
        checks.empty_tool_calls,
    ),
    Rule(
        "QW-5b",
        "no message of role developer",
        "developer is not one of ['system', 'assistant', 'user', 'tool', 'function'] - "
        "'messages.['{index}].role'",
        "send it as a system message",
        checks.role_refused("developer"),
    ),
    Rule(
        "QW-6",
        "a trailing assistant message needs partial: true (non-thinking models only)",
        _P + "The last message must be a user or tool message unless partial mode is on",
        "drop the trailing assistant message or mark it partial: true",
        lambda ms: (f for f in checks.ends_with_assistant(ms) if not ms[-1].get("partial")),
        applies=_partial_ok,
        verbatim=False,
    ),
    Rule(
        "QW-6b",
        "thinking models have no partial mode: no trailing assistant message",
        _P + "Partial mode is not supported by thinking models",
        "drop the trailing assistant message",
        checks.ends_with_assistant,
        applies=qwen_thinking,
        verbatim=False,
    ),
)

NOT_CHECKED: NotChecked = (
    ("QW-5", "strict alternation was the 2023 API; the current compatible mode accepts it"),
)

POLICY = Policy(
    needs_user=True,
    empty="required",
    prefill=_partial_ok,
    prefill_flag="partial",
)

SOURCES: Sources = {
    **pairing_sources(
        "QW-0",
        (GH + "QwenLM/qwen-code/issues/2360",),
        (GH + "QwenLM/qwen-code/issues/606",),
    ),
    "QW-3": (GH + "agentscope-ai/agentscope-java/issues/613",),
    "QW-4": (GH + "QwenLM/qwen-code/issues/5265",),
    "QW-4b": (GH + "smallmain/vscode-unify-chat-provider/pull/65",),
    "QW-5b": (GH + "DayuanJiang/next-ai-draw-io/issues/304",),
    "QW-6": ("https://help.aliyun.com/en/model-studio/partial-mode",),
    "QW-6b": ("https://help.aliyun.com/en/model-studio/partial-mode",),
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # The Qwen2.5 and Qwen3 model cards (huggingface.co/Qwen): 32,768 native context
    # (131,072 only with YaRN scaling turned on by the server).
    (r"qwen", 32_768),
    (r"qwq", 32_768),
)

VENDOR = Vendor(
    "qwen",
    "Qwen (DashScope)",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    family_windows=FAMILY_WINDOWS,
    aliases=("qwen", "dashscope", "tongyi"),
    model_hints=("qwen",),
)
