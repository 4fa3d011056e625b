"""Model clients for the agent runner: OpenAI-compatible HTTP (Chat Completions), the
native Anthropic Messages and OpenAI Responses APIs, and a scripted offline model."""

from .anthropic_client import MIN_THINKING_BUDGET, AnthropicClient
from .base import (
    ModelClient,
    ModelResponse,
    NativeModelClient,
    TextCallback,
    Usage,
    assistant_message,
)
from .errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
)
from .openai_compat import OpenAICompatClient
from .responses_client import ResponsesClient
from .retry import NO_RETRY, RetryPolicy
from .scripted import ScriptedModel, ScriptedRequest, ScriptItem, tool_call
from .streaming import SSEDecoder, StreamAssembler

__all__ = [
    "MIN_THINKING_BUDGET",
    "NO_RETRY",
    "AnthropicClient",
    "ModelClient",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponse",
    "ModelResponseError",
    "ModelTimeoutError",
    "NativeModelClient",
    "OpenAICompatClient",
    "ResponsesClient",
    "RetryPolicy",
    "SSEDecoder",
    "ScriptItem",
    "ScriptedModel",
    "ScriptedRequest",
    "StreamAssembler",
    "TextCallback",
    "Usage",
    "assistant_message",
    "tool_call",
]
