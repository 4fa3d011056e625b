"""Prompt-cache pricing per provider, for bench/: the library's table (providers/prices.py).

The prices, their date and their source live in ``context_governor.providers.prices`` (the cache
policy tunes its trigger from them); this module re-exports them under the names bench/
uses and adds the flat model of the older tables. bench/ prices a request with
``CachePricing.request_cost``: a breakpoint on the request's last message (what Claude
Code and our own placement do), so under breakpoint caching every uncached token of a
request is written. docs/benchmarks.md restates the table with its date.
"""

from __future__ import annotations

from context_governor.providers.prices import (
    ANTHROPIC,
    ANTHROPIC_1H,
    DEEPSEEK,
    GEMINI_25,
    OPENAI_4O,
    OPENAI_5,
    OPENAI_41,
    PRICES_TAKEN,
    CachePrice,
    CachingModel,
)
from context_governor.providers.prices import PRICES as LIBRARY_PRICES

CachePricing = CachePrice

#: The flat model bench/ used before prices were per provider: cached input at a tenth,
#: no write surcharge, no minimum. Kept so the older tables stay comparable.
FLAT = CachePricing("flat 0.1 (legacy)", "any", "automatic", read=0.1, min_cached=0)

#: Every pricing bench/ reports, by a short key: the library's table without Gemini 2.5
#: Flash (the same read price as 2.5 Pro; bench's tables show one Gemini row).
PRICES: dict[str, CachePricing] = {
    k: v for k, v in LIBRARY_PRICES.items() if k != "gemini-2.5-flash"
}

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_1H",
    "DEEPSEEK",
    "FLAT",
    "GEMINI_25",
    "OPENAI_4O",
    "OPENAI_5",
    "OPENAI_41",
    "PRICES",
    "PRICES_TAKEN",
    "CachePricing",
    "CachingModel",
]
