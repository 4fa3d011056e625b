"""What the runner needs from a model: one async call in, one assistant message out.

The protocol is deliberately small (``complete``) so that any client — our HTTP
client, the scripted one, a user's own wrapper around an SDK — plugs into the
runner without adapters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..messages import Message, content_text

__all__ = [
    "ModelClient",
    "ModelResponse",
    "NativeModelClient",
    "TextCallback",
    "Usage",
    "assistant_message",
    "normalize_tool_call",
]

TextCallback = Callable[[str], None]
"""Receives each piece of answer text as it streams in."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens billed for model calls, as the server reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: prompt tokens the server served from its prompt cache
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    @classmethod
    def from_openai(cls, data: Any) -> Usage:
        """Read an OpenAI ``usage`` object; anything missing or malformed counts as 0."""
        if not isinstance(data, Mapping):
            return cls()
        details = data.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
        return cls(
            _int(data.get("prompt_tokens")), _int(data.get("completion_tokens")), _int(cached)
        )


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One model answer: an assistant message ready to append to the history."""

    message: Message
    usage: Usage = field(default_factory=Usage)
    #: "stop", "tool_calls", "length", ... as the server said (None if it did not)
    finish_reason: str | None = None
    model: str | None = None

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        calls = self.message.get("tool_calls")
        return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []

    @property
    def text(self) -> str:
        return content_text(self.message.get("content"))


@runtime_checkable
class ModelClient(Protocol):
    """A chat model the runner can call."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        """Answer ``messages``; stream answer text to ``on_text`` when given.

        Must not modify ``messages`` (they may be the caller's persisted history).
        Raises ModelError (or a subclass) when the call fails.
        """
        ...


@runtime_checkable
class NativeModelClient(ModelClient, Protocol):
    """A client whose wire format is not Chat Completions (Anthropic Messages, Responses).

    The runner's history stays chat messages, with the native parts a model
    returned riding along (thinking blocks in the content, reasoning items under
    the client's carry key). Such a client splits ``complete`` in two so that the
    runner can govern the request *in its own format*, with ``govern_request``:
    ``request_body`` builds the native body for a history, through the format's
    edge and without governing it; ``send`` sends a body as it is. ``complete``
    is the two in a row, for callers that govern (or not) themselves.
    """

    #: the body's format, as ``govern_request(api=...)`` names it
    api: str

    def request_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        """The native request body for a chat history (chat-format tool schemas)."""
        ...

    async def send(
        self, body: dict[str, Any], *, on_text: TextCallback | None = None
    ) -> ModelResponse:
        """Send ``body`` as it is; raises ModelError when the call fails."""
        ...


def _arguments(value: Any) -> str:
    # Some servers (Ollama's native mode, some proxies) return arguments as an
    # object; the chat-completions format, and our history, hold a JSON string.
    if isinstance(value, str):
        return value
    if value is None:
        return "{}"
    return json.dumps(value, ensure_ascii=False)


def normalize_tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call in the exact chat-completions shape, whatever the server's variant."""
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    name = function.get("name")
    return {
        "id": call.get("id") if isinstance(call.get("id"), str) else "",
        "type": "function",
        "function": {
            "name": name if isinstance(name, str) else "",
            "arguments": _arguments(function.get("arguments")),
        },
    }


def assistant_message(
    content: Any, tool_calls: Sequence[Mapping[str, Any]] = (), reasoning: Any = None
) -> Message:
    """The assistant message to persist, with only the keys a request may carry back.

    Server-only fields (refusal, annotations, audio, logprobs) are left out: the
    history must stay valid input for the next request.
    """
    message: Message = {
        "role": "assistant",
        "content": content if isinstance(content, str | list) or content is None else str(content),
    }
    if tool_calls:
        message["tool_calls"] = [normalize_tool_call(c) for c in tool_calls]
        if message["content"] == "":
            message["content"] = None
    if isinstance(reasoning, str) and reasoning:
        message["reasoning_content"] = reasoning
    return message
