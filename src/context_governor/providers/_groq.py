"""Groq (and Cerebras): a strict schema that rejects unknown message keys."""

from __future__ import annotations

from ..targets import Policy
from . import _checks as checks
from ._openai import (
    ORPHAN_SOURCES,
    UNANSWERED_SOURCES,
    pairing_rules,
    pairing_sources,
)
from ._rules import Rule
from ._sources import GH
from ._vendor import NotChecked, Sources, Vendor

__all__ = ["ALLOWED", "NOT_CHECKED", "POLICY", "RULES", "SOURCES", "VENDOR"]

ALLOWED = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})

RULES: tuple[Rule, ...] = (
    *pairing_rules("GQ-0"),
    Rule(
        "GQ-1",
        "no keys outside the schema (reasoning_content, reasoning, metadata, ...)",
        "'messages.{index}' : for 'role:{role}' the following must be satisfied"
        "[('messages.{index}' : property '{key}' is unsupported)]",
        "strip the key",
        checks.unknown_keys(ALLOWED),
    ),
    Rule(
        "GQ-2",
        "content may be null only with tool_calls",
        "'messages.{index}' : for 'role:{role}' the following must be satisfied"
        "[('messages.{index}.content' : value must be a string)]",
        "use an empty string",
        checks.null_content_without_calls,
        verbatim=False,
    ),
)

NOT_CHECKED: NotChecked = (
    (
        "GQ-empty",
        "an empty message list: no published Groq/Cerebras error text for it was found, so it is "
        "not flagged; send at least one message",
    ),
)

POLICY = Policy(allowed_keys=ALLOWED, empty="openai", reasoning=lambda target: "strip")

SOURCES: Sources = {
    **pairing_sources("GQ-0", ORPHAN_SOURCES, UNANSWERED_SOURCES),
    "GQ-1": (
        GH + "tashfeenahmed/freellmapi/issues/1070",
        GH + "Kilo-Org/kilocode/issues/10375",
    ),
    "GQ-2": (GH + "run-llama/llama_index/issues/14701",),
}

VENDOR = Vendor(
    "groq",
    "Groq / Cerebras",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    aliases=("groq",),
)
