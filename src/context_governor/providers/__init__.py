"""Provider rules as code: what each provider rejects, and how to govern for it.

``validate(messages, provider=..., model=...)`` lists the violations with the
provider's own error text; each provider's Policy drives the repairs that
``govern(profile=<provider>)`` applies after the seed pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..messages import Message
from ..messages.inputs import check_messages, check_tools
from ..messages.legacy import rules_view
from ..targets.policy import Policy
from ..targets.target import PROVIDERS, Target, check_provider
from . import (
    anthropic,
    bedrock,
    deepseek,
    gemini,
    glm,
    groq,
    local,
    mistral,
    moonshot,
    openai,
    qwen,
)
from .rules import Rule, Violation, find_violations
from .sources import SOURCES


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    title: str
    rules: tuple[Rule, ...]
    not_checked: tuple[tuple[str, str], ...]
    policy: Callable[[Target], Policy]


def _fixed(policy: Policy) -> Callable[[Target], Policy]:
    return lambda target: policy


def _sourced(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """The rules with their public sources (providers/sources.py) attached."""
    return tuple(replace(rule, source=SOURCES.get(rule.id, ())) for rule in rules)


CATALOG: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider(
            "openai",
            "OpenAI Chat Completions",
            _sourced(openai.RULES),
            openai.NOT_CHECKED,
            _fixed(openai.POLICY),
        ),
        Provider(
            "anthropic",
            "Anthropic Messages",
            _sourced(anthropic.RULES),
            anthropic.NOT_CHECKED,
            _fixed(anthropic.POLICY),
        ),
        Provider(
            "gemini",
            "Google Gemini",
            _sourced(gemini.RULES),
            gemini.NOT_CHECKED,
            _fixed(gemini.POLICY),
        ),
        Provider(
            "bedrock",
            "AWS Bedrock Converse",
            _sourced(bedrock.RULES),
            bedrock.NOT_CHECKED,
            _fixed(bedrock.POLICY),
        ),
        Provider(
            "mistral",
            "Mistral",
            _sourced(mistral.RULES),
            mistral.NOT_CHECKED,
            _fixed(mistral.POLICY),
        ),
        Provider(
            "deepseek", "DeepSeek", _sourced(deepseek.RULES), deepseek.NOT_CHECKED, deepseek.policy
        ),
        Provider(
            "glm", "Zhipu GLM / Z.ai", _sourced(glm.RULES), glm.NOT_CHECKED, _fixed(glm.POLICY)
        ),
        Provider(
            "qwen", "Qwen (DashScope)", _sourced(qwen.RULES), qwen.NOT_CHECKED, _fixed(qwen.POLICY)
        ),
        Provider(
            "moonshot",
            "Moonshot / Kimi",
            _sourced(moonshot.RULES),
            moonshot.NOT_CHECKED,
            _fixed(moonshot.POLICY),
        ),
        Provider(
            "groq", "Groq / Cerebras", _sourced(groq.RULES), groq.NOT_CHECKED, _fixed(groq.POLICY)
        ),
        Provider(
            "ollama",
            "Ollama / llama.cpp",
            _sourced(local.OLLAMA_RULES),
            local.OLLAMA_NOT_CHECKED,
            _fixed(local.OLLAMA_POLICY),
        ),
        Provider(
            "vllm",
            "vLLM / TGI (Hugging Face chat templates, or the Mistral tokenizer)",
            _sourced(local.VLLM_RULES),
            local.NOT_CHECKED,
            local.vllm_policy,
        ),
    )
}
assert tuple(CATALOG) == PROVIDERS


def resolve(
    provider: Any, model: Any = None, *, prefill: bool = False, has_tools: bool | None = None
) -> tuple[Provider, Target]:
    from ..errors import ConfigError

    if model is not None and not isinstance(model, str):
        raise ConfigError(f"model must be a string, got {type(model).__name__}")
    entry = CATALOG[check_provider(provider)]
    return entry, Target(entry.name, model or "", prefill, has_tools)


def applicable_rules(provider: str, model: str | None = None) -> list[Rule]:
    """The rules that hold for this provider and model (what validate() checks)."""
    entry, target = resolve(provider, model)
    return [rule for rule in entry.rules if rule.applies(target)]


def validate(
    messages: list[Message],
    *,
    provider: str = "openai",
    model: str | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> list[Violation]:
    """Every rule of ``provider`` (for ``model``) that ``messages`` breaks, in rule order.

    ``tools`` are the request's tool definitions: ``[]`` for a request that declares
    none. Left out (None), the rules that depend on them are not checked (Bedrock's
    BR-4: a history with tool use needs a ``toolConfig``), since validate() cannot tell
    "no tools" from "not said".

    Raises InputError for input that is not a message list at all (the same
    checks as govern()) or tools that are not a list of objects, ConfigError for an
    unknown provider.
    """
    checked = check_tools(tools)
    has_tools = None if checked is None else bool(checked)
    entry, target = resolve(provider, model, has_tools=has_tools)
    check_messages(messages, legacy=True)
    seen = rules_view(messages, entry.policy(target).legacy_functions, entry.name)
    return list(find_violations(entry.rules, seen, target))


__all__ = [
    "CATALOG",
    "PROVIDERS",
    "Policy",
    "Provider",
    "Rule",
    "Target",
    "Violation",
    "applicable_rules",
    "resolve",
    "validate",
]
