"""What a provider charges for its prompt cache: the type of the cache-price tables.

Prices are multiples of the provider's uncached input price (no currency, no tier):
``read`` is what a cached input token costs, ``write`` what a token costs the request
that puts it into the cache. Two caching models exist:

* **breakpoint** (Anthropic): the client marks the end of what to cache; a request
  writes the prefix up to its last mark that it did not read, at ``write``.
* **automatic** (OpenAI, Gemini implicit caching, DeepSeek): every request is cached
  at no extra charge; a later request reads its longest cached prefix at ``read``.

Either way a prefix shorter than ``min_cached`` tokens is neither written nor read.
The prices themselves are the vendors' (each vendor module in providers/), looked up
by ``providers.prices.cache_price``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DATED", "CachePrice", "CachingModel"]

CachingModel = Literal["breakpoint", "automatic"]

#: A dated snapshot's suffix (``-2024-08-06``, ``-20250929``): a price family's pattern
#: ends with it, so that a dated snapshot of a family is the family.
DATED = r"(?:-\d{4}-\d{2}-\d{2}|-\d{8})?"


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
