"""Model clients for the agent runner: OpenAI-compatible HTTP (Chat Completions), the
native Anthropic Messages and OpenAI Responses APIs, and a scripted offline model."""

from ._anthropic_client import MIN_THINKING_BUDGET, AnthropicClient
from ._base import (
    ModelClient,
    ModelResponse,
    NativeModelClient,
    TextCallback,
    Usage,
    assistant_message,
)
from ._errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
)
from ._openai_compat import OpenAICompatClient
from ._responses_client import ResponsesClient
from ._retry import NO_RETRY, RetryPolicy
from ._scripted import ScriptedModel, ScriptedRequest, ScriptItem, tool_call
from ._streaming import SSEDecoder, StreamAssembler

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
