"""Server-sent events and the assembly of streamed chat-completion chunks.

Both are pure state machines fed one line / one chunk at a time, so they are
tested without a network, and the HTTP client only moves bytes into them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._base import ModelResponse, Usage, assistant_message
from ._errors import ModelResponseError

__all__ = ["DONE", "SSEDecoder", "StreamAssembler"]

DONE = "[DONE]"


class SSEDecoder:
    """Turns the lines of an ``text/event-stream`` body into event data strings.

    Follows the SSE rules that matter for chat completions: ``data:`` lines of
    one event are joined with newlines, an empty line ends the event, lines
    starting with ``:`` are comments (keep-alives), other fields are ignored.
    """

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        """Feed one line (without its line break); returns an event's data when one ends."""
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None

    def flush(self) -> str | None:
        """The pending event's data, if any (also called at the end of the body)."""
        if not self._data:
            return None
        data, self._data = "\n".join(self._data), []
        return data


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        return str(error.get("message") or error)
    return str(error)


class StreamAssembler:
    """Rebuilds one assistant message from streamed ``chat.completion.chunk`` objects.

    Tool calls arrive as deltas keyed by ``index``: the id and name usually in
    the first, the JSON arguments spread over many. Servers differ, so this
    also accepts a name repeated in every delta (kept once), calls without an
    ``index`` (told apart by their id), and ``reasoning`` for ``reasoning_content``.
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _PartialCall] = {}
        self._saw_content = False
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.model: str | None = None

    def feed(self, chunk: Any) -> str:
        """Take one chunk; returns the answer text it added ("" if none)."""
        if not isinstance(chunk, Mapping):
            raise ModelResponseError(f"stream chunk is not an object: {chunk!r:.200}")
        if "error" in chunk:
            raise ModelResponseError(f"error in stream: {_error_text(chunk['error'])}")
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        if chunk.get("usage"):
            self.usage = Usage.from_openai(chunk["usage"])
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return ""  # the final usage-only chunk, or a keep-alive
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self.finish_reason = choice["finish_reason"]
        delta = choice.get("delta")
        return self._feed_delta(delta) if isinstance(delta, Mapping) else ""

    def _feed_delta(self, delta: Mapping[str, Any]) -> str:
        for key in ("reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str):
                self._reasoning.append(delta[key])
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, Mapping):
                    self._feed_call(call)
        text = delta.get("content")
        if isinstance(text, str):
            self._saw_content = True
            self._text.append(text)
            return text
        return ""

    def _slot(self, call: Mapping[str, Any]) -> _PartialCall:
        index = call.get("index")
        if not isinstance(index, int):
            # No index: a new id starts a new call, otherwise it continues the last.
            call_id = call.get("id")
            last = max(self._calls, default=-1)
            starts_new = last < 0 or (call_id and call_id != self._calls[last].id)
            index = last + 1 if starts_new else last
        return self._calls.setdefault(index, _PartialCall())

    def _feed_call(self, call: Mapping[str, Any]) -> None:
        slot = self._slot(call)
        if isinstance(call.get("id"), str) and call["id"] and not slot.id:
            slot.id = call["id"]
        function = call.get("function")
        if not isinstance(function, Mapping):
            return
        name = function.get("name")
        if isinstance(name, str) and name and name != slot.name:
            slot.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            slot.arguments.append(arguments)
        elif arguments is not None:
            slot.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def response(self) -> ModelResponse:
        """The assembled answer (call once the stream has ended)."""
        calls = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": "".join(c.arguments) or "{}"},
            }
            for _, c in sorted(self._calls.items())
        ]
        content = "".join(self._text) if self._saw_content else None
        message = assistant_message(content, calls, "".join(self._reasoning))
        return ModelResponse(message, self.usage, self.finish_reason, self.model)
