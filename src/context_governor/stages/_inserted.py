"""The messages the stages insert where a list needs one, and how to recognise them."""

from __future__ import annotations

from ..messages import Message, has_tool_calls

__all__ = ["BRIDGE_CONTENT", "SYNTHETIC_USER", "is_bridge"]

SYNTHETIC_USER = "(conversation continued)"
#: The assistant message put between tool results and a user message for providers that
#: reject user right after tool (provider_fixes.bridge_user_after_tool).
BRIDGE_CONTENT = "(tool results received)"


def is_bridge(message: Message) -> bool:
    """Whether ``message`` is such a bridge: part of the model turn before it, not a
    model turn of its own (see stages/_compact.py)."""
    return (
        message.get("role") == "assistant"
        and message.get("content") == BRIDGE_CONTENT
        and not has_tool_calls(message)
    )
