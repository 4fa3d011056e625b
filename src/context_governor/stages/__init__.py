"""The pipeline's stages: each a pure function ``(messages, ctx) -> messages``."""

from . import compact, provider_fixes
from .alternation import enforce_alternation, enforce_alternation_seed
from .backfill import backfill_seed, backfill_strict
from .base import Context, MessageCheck, Stage, check_for, message_check
from .cap import cap_tool_results
from .compact import output_replay, would_compact
from .microcompact import microcompact
from .orphans import drop_orphans_seed, drop_orphans_strict
from .repair import repair_messages
from .replay import Replay
from .snip import SAFETY_BUFFER, snip
from .tool_budget import apply_tool_result_budget

__all__ = [
    "SAFETY_BUFFER",
    "Context",
    "MessageCheck",
    "Replay",
    "Stage",
    "apply_tool_result_budget",
    "backfill_seed",
    "backfill_strict",
    "cap_tool_results",
    "check_for",
    "compact",
    "drop_orphans_seed",
    "drop_orphans_strict",
    "enforce_alternation",
    "enforce_alternation_seed",
    "message_check",
    "microcompact",
    "output_replay",
    "provider_fixes",
    "repair_messages",
    "snip",
    "would_compact",
]
