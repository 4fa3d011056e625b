"""The agent runner: a tool loop that governs its context before every model call."""

from ._loop import AgentRunner
from ._progress import ProgressPrinter
from ._tool_calls import clip
from ._types import (
    ModelCall,
    RunHooks,
    RunLimits,
    RunResult,
    StopReason,
    ToolEvent,
    ToolResultLike,
    ToolRunner,
)

__all__ = [
    "AgentRunner",
    "ModelCall",
    "ProgressPrinter",
    "RunHooks",
    "RunLimits",
    "RunResult",
    "StopReason",
    "ToolEvent",
    "ToolResultLike",
    "ToolRunner",
    "clip",
]
