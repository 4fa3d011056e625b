"""The catalogue: every table of provider facts, built from the list of vendor modules.

``VENDORS`` lists one module per provider (``providers/<name>.py``, each with its
``VENDOR``: see vendor.py). Everything the package knows about providers is read from
there: ``PROVIDERS`` and ``CATALOG`` (the rules, with their sources, and the repair
policy of each), the windows table and the model-family windows (windows.py looks
them up), the cache prices (prices.py), the names frameworks give a provider (the
adapters'), and the media rule each provider's images are counted by. A new provider
is one module and its entry in ``VENDORS``; no other table names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..errors import ConfigError
from ..targets import CachePrice, MediaRule, Policy, Target
from . import (
    _anthropic as anthropic,
)
from . import (
    _bedrock as bedrock,
)
from . import (
    _deepseek as deepseek,
)
from . import (
    _gemini as gemini,
)
from . import (
    _glm as glm,
)
from . import (
    _groq as groq,
)
from . import (
    _mistral as mistral,
)
from . import (
    _moonshot as moonshot,
)
from . import (
    _ollama as ollama,
)
from . import (
    _openai as openai,
)
from . import (
    _qwen as qwen,
)
from . import (
    _vllm as vllm,
)
from ._rules import Rule
from ._vendor import NotChecked, Sources, Vendor, VendorModule

__all__ = [
    "ALIASES",
    "CATALOG",
    "FAMILY_WINDOWS",
    "KNOWN_WINDOWS",
    "MEDIA_RULES",
    "MODEL_HINTS",
    "MODEL_PREFIXES",
    "PRICES",
    "PRICE_FAMILIES",
    "PROVIDERS",
    "SOURCES",
    "VENDORS",
    "Provider",
    "check_provider",
]

#: One module per provider, in the order providers are listed (``PROVIDERS``, the
#: profiles, docs/providers.md, ``lint --list-rules``).
VENDORS: tuple[VendorModule, ...] = (
    openai, anthropic, gemini, bedrock, mistral, deepseek, glm, qwen, moonshot, groq,
    ollama, vllm,
)  # fmt: skip

_VENDORS: tuple[Vendor, ...] = tuple(module.VENDOR for module in VENDORS)

PROVIDERS: tuple[str, ...] = tuple(vendor.name for vendor in _VENDORS)


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    title: str
    rules: tuple[Rule, ...]
    not_checked: NotChecked
    policy: Callable[[Target], Policy]


#: Every rule's public sources, by rule id.
SOURCES: Sources = {rule: urls for vendor in _VENDORS for rule, urls in vendor.sources.items()}


def _fixed(policy: Policy) -> Callable[[Target], Policy]:
    return lambda target: policy


def _entry(vendor: Vendor) -> Provider:
    policy = vendor.policy
    return Provider(
        vendor.name,
        vendor.title,
        # the rules with their public sources attached
        tuple(replace(rule, source=SOURCES.get(rule.id, ())) for rule in vendor.rules),
        vendor.not_checked,
        _fixed(policy) if isinstance(policy, Policy) else policy,
    )


CATALOG: dict[str, Provider] = {vendor.name: _entry(vendor) for vendor in _VENDORS}

#: The published context windows of well-known models, by model name prefix.
KNOWN_WINDOWS: dict[str, int] = {
    prefix: window for vendor in _VENDORS for prefix, window in vendor.windows.items()
}
#: Windows of model families for names the table does not know: (pattern matched at the
#: start of the name, window), the first that matches wins. No name matches the patterns
#: of two vendors, so their order only matters within a vendor's.
FAMILY_WINDOWS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(pattern), window)
    for vendor in _VENDORS
    for pattern, window in vendor.family_windows
)
#: Prefixes a provider puts before other vendors' model names (Bedrock's ``anthropic.``).
MODEL_PREFIXES: tuple[str, ...] = tuple(
    prefix for vendor in _VENDORS for prefix in vendor.model_prefixes
)

#: Every cache pricing known, by a short key: the breakpoint pricings first (the ones the
#: client writes), then the automatic ones, each in the vendors' order.
PRICES: dict[str, CachePrice] = dict(
    sorted(
        ((key, price) for vendor in _VENDORS for key, price in vendor.prices.items()),
        key=lambda item: item[1].caching != "breakpoint",
    )
)
#: Provider -> (model pattern, prices): the model name lowered, any "vendor/" prefix
#: dropped, matched whole.
PRICE_FAMILIES: dict[str, tuple[tuple[re.Pattern[str], CachePrice], ...]] = {
    vendor.name: tuple((re.compile(pattern), price) for pattern, price in vendor.price_families)
    for vendor in _VENDORS
}

#: Provider names as the frameworks spell them -> our provider (and profile) names: one
#: table for every adapter (pydantic-ai's and the OpenAI Agents SDK's providers and model
#: prefixes, LiteLLM's routes, LangChain's ``ls_provider``). A gateway that routes to many
#: providers (OpenRouter) is not here: its model name says more.
ALIASES: dict[str, str] = {alias: vendor.name for vendor in _VENDORS for alias in vendor.aliases}
#: Words in a model's name -> our provider names (the first that the name contains wins).
MODEL_HINTS: tuple[tuple[str, str], ...] = tuple(
    (hint, vendor.name) for vendor in _VENDORS for hint in vendor.model_hints
)
#: Provider names (ours, and the other names media_rule_for takes) -> the media billing
#: rule their images, documents and audio are counted by.
MEDIA_RULES: dict[str, MediaRule] = {
    name: vendor.media for vendor in _VENDORS for name in (vendor.name, *vendor.media_aliases)
}


def check_provider(provider: object) -> str:
    if not isinstance(provider, str) or provider not in PROVIDERS:
        raise ConfigError(f"unknown provider {provider!r}; known providers: {', '.join(PROVIDERS)}")
    return provider
