"""The agent runner: a tool loop that governs its context before every model call."""

from .loop import AgentRunner
from .progress import ProgressPrinter
from .tool_calls import clip
from .types import (
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
