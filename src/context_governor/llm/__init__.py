"""Model clients for the agent runner: OpenAI-compatible HTTP, and a scripted offline model."""

from .base import ModelClient, ModelResponse, TextCallback, Usage, assistant_message
from .errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
)
from .openai_compat import OpenAICompatClient
from .retry import NO_RETRY, RetryPolicy
from .scripted import ScriptedModel, ScriptedRequest, tool_call
from .streaming import SSEDecoder, StreamAssembler

__all__ = [
    "NO_RETRY",
    "ModelClient",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponse",
    "ModelResponseError",
    "ModelTimeoutError",
    "OpenAICompatClient",
    "RetryPolicy",
    "SSEDecoder",
    "ScriptedModel",
    "ScriptedRequest",
    "StreamAssembler",
    "TextCallback",
    "Usage",
    "assistant_message",
    "tool_call",
]
