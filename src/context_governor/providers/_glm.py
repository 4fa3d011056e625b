"""Zhipu GLM / Z.ai: error 1214 covers every sequence problem."""

from __future__ import annotations

from ..targets import Policy
from . import _checks as checks
from ._openai import pairing_rules, pairing_sources
from ._rules import Rule
from ._sources import GH, NANOBOT
from ._vendor import NotChecked, Sources, Vendor

__all__ = [
    "E1214", "FAMILY_WINDOWS", "NOT_CHECKED", "POLICY", "RULES", "SOURCES", "VENDOR", "WINDOWS",
]  # fmt: skip

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

NOT_CHECKED: NotChecked = ()

POLICY = Policy(
    user_before_tool_call_opening=True,
    needs_user=True,
    empty="blocks",
    allowed_keys=frozenset({"role", "content", "name", "tool_calls", "tool_call_id"}),
    prefill=lambda target: True,
)

#: Error 1214 for every cause: the causes come from reports and fixes.
_E1214_REPORTS = (
    GH + "MetaGLM/zhipuai-sdk-python-v4/issues/14",
    GH + "continuedev/continue/issues/13259",
)

SOURCES: Sources = {
    **pairing_sources("GLM-0", _E1214_REPORTS, _E1214_REPORTS),
    "GLM-0-4": (NANOBOT + "commit/d6d0a2b70",),
    "GLM-1": (NANOBOT + "commit/44b526c4e", *_E1214_REPORTS),
    "GLM-2": (NANOBOT + "commit/ac714803f",),
    "GLM-3": (GH + "MetaGLM/zhipuai-sdk-python-v4/issues/14", GH + "VicBilibily/GCMP/pull/120"),
    "GLM-4": (NANOBOT + "commit/222770ff3",),
    "GLM-5": (GH + "songquanpeng/one-api/issues/1153", GH + "earendil-works/pi/pull/3309"),
}

#: docs.z.ai ("Context Length"): GLM-4.5 and -4.5-Air 128K, GLM-4.5V 64K, GLM-4.6 200K
#: (Z.ai's Anthropic-compatible endpoint serves these names too).
WINDOWS: dict[str, int] = {
    "glm-4.5": 128_000,
    "glm-4.5v": 64_000,
    "glm-4.6": 200_000,
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # docs.z.ai ("Context Length"): GLM-4.5 and GLM-4 128K; -4.5V 64K (in the table).
    (r"glm-", 128_000),
)

VENDOR = Vendor(
    "glm",
    "Zhipu GLM / Z.ai",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    windows=WINDOWS,
    family_windows=FAMILY_WINDOWS,
    # "glm" itself is not one: a framework's "glm" goes by the model's name
    aliases=("zai", "zhipu", "zhipuai"),
    model_hints=("glm",),
)
