"""Tools for an agent loop: plain functions with schemas, and the seed's built-in tools.

Usage::

    from context_governor.tools import ToolRegistry, builtin_tools

    registry = builtin_tools("path/to/project")      # read_file, list_dir, grep, find_files, exec

    @registry.tool
    async def weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        ...

    request["tools"] = registry.schemas()
    outcome = await registry.call(call["function"]["name"], call["function"]["arguments"])
    messages.append({"role": "tool", "tool_call_id": call["id"], "content": outcome.content})
"""

from ._builtin import builtin_tools
from ._registry import (
    Tool,
    ToolDefinitionError,
    ToolError,
    ToolOutcome,
    ToolRegistry,
    make_tool,
    tool,
)

__all__ = [
    "Tool",
    "ToolDefinitionError",
    "ToolError",
    "ToolOutcome",
    "ToolRegistry",
    "builtin_tools",
    "make_tool",
    "tool",
]
