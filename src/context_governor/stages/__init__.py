"""The pipeline's stages: each a pure function ``(messages, ctx) -> messages``."""

from . import _compact as compact
from . import _provider_fixes as provider_fixes
from ._alternation import enforce_alternation, enforce_alternation_seed
from ._backfill import backfill_seed, backfill_strict
from ._base import Context, MessageCheck, Stage, check_for, message_check
from ._cap import cap_tool_results
from ._compact import compaction_cost, output_replay, would_compact
from ._microcompact import microcompact
from ._orphans import drop_orphans_seed, drop_orphans_strict
from ._repair import repair_messages
from ._replay import Clearing, Replay
from ._shrink import (
    MEMO_MAX_CHARS,
    MEMO_MIN_CHARS,
    Shrunk,
    shrink,
    shrink_forms,
    shrink_policy,
    shrink_text,
    shrunk_form,
)
from ._shrink import STAGE as SHRINK_STAGE
from ._snip import SAFETY_BUFFER, snip
from ._tool_budget import apply_tool_result_budget

__all__ = [
    "MEMO_MAX_CHARS",
    "MEMO_MIN_CHARS",
    "SAFETY_BUFFER",
    "SHRINK_STAGE",
    "Clearing",
    "Context",
    "MessageCheck",
    "Replay",
    "Shrunk",
    "Stage",
    "apply_tool_result_budget",
    "backfill_seed",
    "backfill_strict",
    "cap_tool_results",
    "check_for",
    "compact",
    "compaction_cost",
    "drop_orphans_seed",
    "drop_orphans_strict",
    "enforce_alternation",
    "enforce_alternation_seed",
    "message_check",
    "microcompact",
    "output_replay",
    "provider_fixes",
    "repair_messages",
    "shrink",
    "shrink_forms",
    "shrink_policy",
    "shrink_text",
    "shrunk_form",
    "snip",
    "would_compact",
]
