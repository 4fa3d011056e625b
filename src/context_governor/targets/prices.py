"""Prompt-cache prices per provider and model family: what the cache policy tunes for.

Prices are multiples of the provider's uncached input price (no currency, no tier):
``read`` is what a cached input token costs, ``write`` what a token costs the request
that puts it into the cache. Two caching models exist:

* **breakpoint** (Anthropic): the client marks the end of what to cache; a request
  writes the prefix up to its last mark that it did not read, at ``write``.
* **automatic** (OpenAI, Gemini implicit caching, DeepSeek): every request is cached
  at no extra charge; a later request reads its longest cached prefix at ``read``.

Either way a prefix shorter than ``min_cached`` tokens is neither written nor read.

Source: the provider price table that LiteLLM 1.110.2 ships
(``model_prices_and_context_window_backup.json``; the ratio of
``cache_read_input_token_cost`` and ``cache_creation_input_token_cost`` to
``input_cost_per_token``), taken on ``PRICES_TAKEN``; it agrees with the providers'
published pages for these models. Only the families listed in ``cache_price`` are
recognised; any other model gets None, and the cache policy then keeps its fixed
defaults. Provider prices change: check them before relying on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_1H",
    "DEEPSEEK",
    "GEMINI_25",
    "GEMINI_25_FLASH",
    "OPENAI_4O",
    "OPENAI_5",
    "OPENAI_41",
    "PRICES",
    "PRICES_TAKEN",
    "CachePrice",
    "CachingModel",
    "cache_price",
]

CachingModel = Literal["breakpoint", "automatic"]
PRICES_TAKEN = "2026-12-03"


@dataclass(frozen=True, slots=True)
class CachePrice:
    """One provider's cache prices, in multiples of its uncached input price."""

    name: str
    models: str
    caching: CachingModel
    read: float
    write: float = 1.0
    min_cached: int = 1024

    @property
    def miss(self) -> float:
        """What a token the cache did not hold costs: the write price where the client
        writes the cache (breakpoint caching), the plain input price otherwise."""
        return self.write if self.caching == "breakpoint" else 1.0

    def request_cost(self, tokens: int, cached: int) -> float:
        """Input cost of one request of ``tokens`` tokens whose first ``cached`` tokens
        are a prefix the previous request cached, in uncached-token units (a breakpoint
        on the request's last message: every token not read is written)."""
        if cached < self.min_cached:
            cached = 0
        uncached = tokens - cached
        written = uncached if self.caching == "breakpoint" and tokens >= self.min_cached else 0
        return (uncached - written) + self.write * written + self.read * cached


ANTHROPIC = CachePrice(
    "Anthropic", "Claude Sonnet 4.5 / Haiku 4.5 / Opus 4.5, 5-minute TTL", "breakpoint", 0.1, 1.25
)
ANTHROPIC_1H = CachePrice(
    "Anthropic, 1-hour TTL", "Claude Sonnet 4.5 / Haiku 4.5 / Opus 4.5", "breakpoint", 0.1, 2.0
)
OPENAI_4O = CachePrice("OpenAI gpt-4o", "gpt-4o, gpt-4o-mini", "automatic", 0.5)
OPENAI_41 = CachePrice("OpenAI gpt-4.1", "gpt-4.1, gpt-4.1-mini, gpt-4.1-nano", "automatic", 0.25)
OPENAI_5 = CachePrice("OpenAI gpt-5", "gpt-5, gpt-5-mini, gpt-5-nano", "automatic", 0.1)
GEMINI_25 = CachePrice(
    "Gemini 2.5 Pro (implicit)", "gemini-2.5-pro, up to 200k tokens", "automatic", 0.1, 1.0, 2048
)
GEMINI_25_FLASH = CachePrice(
    "Gemini 2.5 Flash (implicit)", "gemini-2.5-flash", "automatic", 0.1, 1.0, 1024
)
DEEPSEEK = CachePrice("DeepSeek", "deepseek-chat, deepseek-reasoner", "automatic", 0.1)

#: Every pricing known, by a short key.
PRICES: dict[str, CachePrice] = {
    "anthropic": ANTHROPIC,
    "anthropic-1h": ANTHROPIC_1H,
    "openai-4o": OPENAI_4O,
    "openai-4.1": OPENAI_41,
    "openai-5": OPENAI_5,
    "gemini-2.5": GEMINI_25,
    "gemini-2.5-flash": GEMINI_25_FLASH,
    "deepseek": DEEPSEEK,
}

_DATED = r"(?:-\d{4}-\d{2}-\d{2}|-\d{8})?"
#: (provider, model pattern, prices): the model name lowered, any "vendor/" prefix
#: dropped, matched whole. A dated snapshot of a family is the family.
_FAMILIES: tuple[tuple[str, re.Pattern[str], CachePrice], ...] = (
    ("openai", re.compile(rf"gpt-4o(?:-mini)?{_DATED}"), OPENAI_4O),
    ("openai", re.compile(rf"gpt-4\.1(?:-mini|-nano)?{_DATED}"), OPENAI_41),
    ("openai", re.compile(rf"gpt-5(?:-mini|-nano)?{_DATED}"), OPENAI_5),
    ("anthropic", re.compile(rf"claude-(?:sonnet|haiku|opus)-4-5{_DATED}"), ANTHROPIC),
    ("gemini", re.compile(r"gemini-2\.5-pro"), GEMINI_25),
    ("gemini", re.compile(r"gemini-2\.5-flash"), GEMINI_25_FLASH),
    ("deepseek", re.compile(r"deepseek-(?:chat|reasoner)"), DEEPSEEK),
)


def cache_price(provider: str | None, model: str | None) -> CachePrice | None:
    """The cache prices of ``model`` at ``provider``; None when either is unknown.

    The provider matters: the same model name served elsewhere (a vLLM server, a
    gateway with its own prices) is not priced like the provider's own API."""
    if not provider or not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    for family_provider, pattern, price in _FAMILIES:
        if provider == family_provider and pattern.fullmatch(name):
            return price
    return None
