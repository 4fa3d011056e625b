"""Provider rules as code: what each provider rejects, and how to govern for it.

One module per provider (``openai.py``, ``anthropic.py``...) holds everything known
about it: its rules, the model facts they depend on, its repair Policy, the windows and
cache prices of its models, the sources of its rules and the names frameworks give it.
``catalog.py`` builds every table from the list of those modules; ``windows.py`` and
``prices.py`` look models up in them.

``validate(messages, provider=..., model=...)`` lists the violations with the
provider's own error text; each provider's Policy drives the repairs that
``govern(profile=<provider>)`` applies after the seed pipeline (stages/_provider_fixes.py).
"""

from __future__ import annotations

from typing import Any

from ..messages import Message
from ..messages.inputs import check_messages, check_tools
from ..messages.legacy import rules_view
from ..targets import Policy, Target
from . import _checks as checks
from ._anthropic import claude_keeps_thinking, claude_version
from ._catalog import (
    ALIASES,
    CATALOG,
    MEDIA_RULES,
    MODEL_HINTS,
    PROVIDERS,
    SOURCES,
    Provider,
    check_provider,
)
from ._gemini import POLICY as GEMINI_POLICY
from ._gemini import RULES as GEMINI_RULES
from ._gemini import gemini_version
from ._rules import Check, Rule, Violation, find_violations


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
    "ALIASES",
    "CATALOG",
    "GEMINI_POLICY",
    "GEMINI_RULES",
    "MEDIA_RULES",
    "MODEL_HINTS",
    "PROVIDERS",
    "SOURCES",
    "Check",
    "Policy",
    "Provider",
    "Rule",
    "Target",
    "Violation",
    "applicable_rules",
    "checks",
    "claude_keeps_thinking",
    "claude_version",
    "find_violations",
    "gemini_version",
    "resolve",
    "validate",
]
