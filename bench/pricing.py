"""Prompt-cache pricing per provider: the one place bench/ takes prices from.

Prices are multiples of the provider's uncached input price (so no currency and no
model tier is needed): ``read`` is what a cached input token costs, ``write`` what a
token costs the request that puts it into the cache. Two caching models exist:

* **breakpoint** (Anthropic): the client marks the end of what to cache; the request
  writes the prefix up to its last breakpoint that it did not read, at ``write``.
  bench/ assumes the breakpoint on the request's last message (what Claude Code and our
  own placement do), so every uncached token of a request is written.
* **automatic** (OpenAI, Gemini implicit caching, DeepSeek): every request is cached
  for free; a later request reads its longest cached prefix at ``read``.

Either way a prefix shorter than ``min_cached`` tokens is neither written nor read
(the providers' minimum cacheable prompt: 1,024 tokens, 2,048 for Gemini 2.5 Pro).

Taken on 2026-12-03 from the provider price table that LiteLLM 1.110.2 ships
(``model_prices_and_context_window_backup.json``: the ratio of
``cache_read_input_token_cost`` and ``cache_creation_input_token_cost`` to
``input_cost_per_token``), which agrees with the providers' published pages for these
models. Provider prices change; docs/benchmarks.md restates this table with its date.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CachingModel = Literal["breakpoint", "automatic"]
PRICES_TAKEN = "2026-12-03"


@dataclass(frozen=True, slots=True)
class CachePricing:
    """One provider's cache prices, in multiples of its uncached input price."""

    name: str
    models: str
    caching: CachingModel
    read: float
    write: float = 1.0
    min_cached: int = 1024

    def request_cost(self, tokens: int, cached: int) -> float:
        """Input cost of one request of ``tokens`` tokens whose first ``cached`` tokens
        are a prefix the previous request cached, in uncached-token units."""
        if cached < self.min_cached:
            cached = 0
        uncached = tokens - cached
        written = uncached if self.caching == "breakpoint" and tokens >= self.min_cached else 0
        return (uncached - written) + self.write * written + self.read * cached


#: The flat model bench/ used before prices were per provider: cached input at a tenth,
#: no write surcharge, no minimum. Kept so the older tables stay comparable.
FLAT = CachePricing("flat 0.1 (legacy)", "any", "automatic", read=0.1, min_cached=0)

ANTHROPIC = CachePricing(
    "Anthropic", "Claude Sonnet 4.5 / Haiku 4.5, 5-minute TTL", "breakpoint", 0.1, 1.25
)
ANTHROPIC_1H = CachePricing(
    "Anthropic, 1-hour TTL", "Claude Sonnet 4.5 / Haiku 4.5", "breakpoint", 0.1, 2.0
)
OPENAI_4O = CachePricing("OpenAI gpt-4o", "gpt-4o", "automatic", 0.5)
OPENAI_41 = CachePricing("OpenAI gpt-4.1", "gpt-4.1", "automatic", 0.25)
OPENAI_5 = CachePricing("OpenAI gpt-5", "gpt-5, gpt-5-mini", "automatic", 0.1)
GEMINI_25 = CachePricing(
    "Gemini 2.5 Pro (implicit)", "gemini-2.5-pro, up to 200k tokens", "automatic", 0.1, 1.0, 2048
)
DEEPSEEK = CachePricing("DeepSeek", "deepseek-chat, deepseek-reasoner", "automatic", 0.1)

#: Every pricing bench/ knows, by a short key.
PRICES: dict[str, CachePricing] = {
    "anthropic": ANTHROPIC,
    "anthropic-1h": ANTHROPIC_1H,
    "openai-4o": OPENAI_4O,
    "openai-4.1": OPENAI_41,
    "openai-5": OPENAI_5,
    "gemini-2.5": GEMINI_25,
    "deepseek": DEEPSEEK,
}
