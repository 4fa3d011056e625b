"""What one vendor module declares: its ``VENDOR``, everything known about one provider.

Each provider has one module in providers/ (``openai.py``, ``anthropic.py``...) with its
``RULES``, ``NOT_CHECKED`` and ``POLICY`` and the model facts they depend on, and a
``VENDOR`` that names them together with the rest of what is known about the provider:
the public sources of its rules, the windows and cache prices of its models, and the
names frameworks give it. ``providers/_catalog.py`` builds every table the package reads
(``CATALOG``, ``PROVIDERS``, the windows, the prices, the sources, the aliases) from
its list of vendor modules, so a new provider is one module and one entry in that list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ..targets import CachePrice, MediaRule, Policy, Target
from ._rules import Rule

__all__ = ["NotChecked", "Sources", "Vendor", "VendorModule"]

#: Rules of the provider that are not checked, each with why: (rule id, reason).
NotChecked = tuple[tuple[str, str], ...]
#: Rule id -> the public pages that show the provider rejecting the shape (URLs).
Sources = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Vendor:
    """Everything known about one provider, as its module declares it."""

    #: the provider's name: its profile's, ``validate(provider=...)``'s; the module's name
    name: str
    #: how docs/providers.md and ``lint --list-rules`` title it
    title: str
    rules: tuple[Rule, ...]
    not_checked: NotChecked
    #: how its lists are repaired: one Policy, or a function of the Target giving one
    policy: Policy | Callable[[Target], Policy]
    #: the public sources of its rules, by rule id (every rule has one)
    sources: Sources = field(default_factory=dict)
    #: the published context windows of its models, by model name prefix
    windows: Mapping[str, int] = field(default_factory=dict)
    #: windows of its model families for names ``windows`` does not know: (pattern
    #: matched at the start of the name, window), the specific ones first
    family_windows: tuple[tuple[str, int], ...] = ()
    #: its cache prices by a short key (``providers.prices.PRICES``)...
    prices: Mapping[str, CachePrice] = field(default_factory=dict)
    #: ...and the model families they hold for: (pattern matched against the whole model
    #: name, lowered and without its "vendor/" prefix; price)
    price_families: tuple[tuple[str, CachePrice], ...] = ()
    #: names frameworks give the provider (pydantic-ai's, LiteLLM's routes, LangChain's
    #: ``ls_provider``...): the adapters govern a request named so with its profile
    aliases: tuple[str, ...] = ()
    #: words in a model's name that say the provider's profile governs it, where the
    #: framework names no provider the adapters know ("claude" -> anthropic)
    model_hints: tuple[str, ...] = ()
    #: prefixes the provider puts before other vendors' model names, dropped when a
    #: window is looked up (Bedrock's ``us.anthropic.claude-...``)
    model_prefixes: tuple[str, ...] = ()
    #: the media billing rule its images, documents and audio are counted by
    #: (counting/_media.py), and other names ``media_rule_for`` takes for it
    media: MediaRule = "openai"
    media_aliases: tuple[str, ...] = ()


class VendorModule(Protocol):
    """A vendor module as the catalogue reads it (mypy checks each one in ``VENDORS``)."""

    @property
    def VENDOR(self) -> Vendor: ...
