"""The pipeline's stages: each a pure function ``(messages, ctx) -> messages``."""

from .alternation import enforce_alternation, enforce_alternation_seed
from .backfill import backfill_seed, backfill_strict
from .base import Context, Stage
from .cap import cap_tool_results
from .microcompact import microcompact
from .orphans import drop_orphans_seed, drop_orphans_strict
from .snip import snip

__all__ = [
    "Context",
    "Stage",
    "backfill_seed",
    "backfill_strict",
    "cap_tool_results",
    "drop_orphans_seed",
    "drop_orphans_strict",
    "enforce_alternation",
    "enforce_alternation_seed",
    "microcompact",
    "snip",
]
