"""Ollama and llama.cpp: Go templates that do not raise, so no rule to check."""

from __future__ import annotations

from ..targets import Policy
from ._rules import Rule
from ._vendor import NotChecked, Vendor

__all__ = ["NOT_CHECKED", "POLICY", "RULES", "VENDOR"]

RULES: tuple[Rule, ...] = ()

NOT_CHECKED: NotChecked = (
    (
        "HF-5",
        "Ollama and llama.cpp render Go templates that do not raise on role order and "
        "continue a trailing assistant message: nothing to check",
    ),
)

POLICY = Policy(empty="template", prefill=lambda target: True)

VENDOR = Vendor(
    "ollama",
    "Ollama / llama.cpp",
    RULES,
    NOT_CHECKED,
    POLICY,
    aliases=("ollama", "ollama_chat", "chat-ollama"),
)
