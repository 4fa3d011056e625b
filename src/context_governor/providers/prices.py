"""Prompt-cache prices per provider and model family: what the cache policy tunes for.

Prices are multiples of the provider's uncached input price (no currency, no tier):
``read`` is what a cached input token costs, ``write`` what a token costs the request
that puts it into the cache. Two caching models exist:

* **breakpoint** (Anthropic): the client marks the end of what to cache; a request
  writes the prefix up to its last mark that it did not read, at ``write``.
* **automatic** (OpenAI, Gemini implicit caching, DeepSeek): every request is cached
  at no extra charge; a later request reads its longest cached prefix at ``read``.

Either way a prefix shorter than ``min_cached`` tokens is neither written nor read.

The prices are the vendors' (each vendor module's ``VENDOR.prices`` and
``price_families``); ``PRICES`` is the catalogue's table of them (providers/_catalog.py).
Source: the provider price table that LiteLLM 1.110.2 ships
(``model_prices_and_context_window_backup.json``; the ratio of
``cache_read_input_token_cost`` and ``cache_creation_input_token_cost`` to
``input_cost_per_token``), taken on ``PRICES_TAKEN``; it agrees with the providers'
published pages for these models. Only the families the vendors list are recognised;
any other model gets None, and the cache policy then keeps its fixed defaults.
Provider prices change: check them before relying on them.
"""

from __future__ import annotations

from ..targets import CachePrice, CachingModel
from ._anthropic import ANTHROPIC, ANTHROPIC_1H
from ._catalog import PRICE_FAMILIES, PRICES
from ._deepseek import DEEPSEEK
from ._gemini import GEMINI_25, GEMINI_25_FLASH
from ._openai import OPENAI_4O, OPENAI_5, OPENAI_41

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

PRICES_TAKEN = "2026-12-03"


def cache_price(provider: str | None, model: str | None) -> CachePrice | None:
    """The cache prices of ``model`` at ``provider``; None when either is unknown.

    The provider matters: the same model name served elsewhere (a vLLM server, a
    gateway with its own prices) is not priced like the provider's own API."""
    if not provider or not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    for pattern, price in PRICE_FAMILIES.get(provider, ()):
        if pattern.fullmatch(name):
            return price
    return None
