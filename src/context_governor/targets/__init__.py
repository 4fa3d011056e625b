"""The types of what is known about the model a request is for, which every layer reads.

* ``target``: who the request is for (``Target``: provider, model, prefill, tools) and
  the names of the media billing rules (``MediaRule``);
* ``policy``: how a provider's list is repaired (``Policy``, read by the repair stages);
* ``cache_price``: what a provider's prompt cache costs (``CachePrice``).

The facts themselves (each provider's rules, model facts, windows, prices) are in one
module per vendor in providers/, which builds its catalogue from them. Nothing here
imports anything above ``errors``, and no table here is keyed by a provider.
"""

from ._cache_price import DATED, CachePrice, CachingModel
from ._policy import IdStyle, Policy, ReasoningPolicy
from ._target import MediaRule, Target

__all__ = [
    "DATED",
    "CachePrice",
    "CachingModel",
    "IdStyle",
    "MediaRule",
    "Policy",
    "ReasoningPolicy",
    "Target",
]
