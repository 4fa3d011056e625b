"""A model that replays a script: offline demos and tests without a server.

Each call takes the next item of the script:

* a str: a text answer (no tool calls);
* a dict: the assistant message to return (``content``, ``tool_calls``; build
  calls with :func:`tool_call`; missing call ids are numbered ``call_1``, ...);
* a :class:`ModelResponse`: returned as is;
* an exception instance: raised (e.g. ``ModelHTTPError(..., status=503)``);
* a callable: called with the messages the model was sent, and its return
  value (any of the above) is used — for answers that depend on what the
  governed context still holds.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..counting import exact_counter
from ..messages import Message
from ._base import ModelResponse, TextCallback, Usage, assistant_message
from ._errors import ModelError

__all__ = ["STREAM_PIECE", "ScriptItem", "ScriptedModel", "ScriptedRequest", "tool_call"]

ScriptItem: TypeAlias = (
    "str | Mapping[str, Any] | ModelResponse | BaseException"
    " | Callable[[list[Message]], ScriptItem]"
)

#: Streamed text is cut into pieces of about this many characters.
STREAM_PIECE = 12


def tool_call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str = ""
) -> dict[str, Any]:
    """A chat-completions tool call, for scripts: ``tool_call("read_file", {"path": "a.py"})``."""
    args = arguments if isinstance(arguments, str) else json.dumps(dict(arguments or {}))
    return {"id": id, "type": "function", "function": {"name": name, "arguments": args}}


@dataclass(frozen=True, slots=True)
class ScriptedRequest:
    """What the scripted model was sent on one call (deep copies, safe to inspect)."""

    messages: list[Message]
    tools: list[dict[str, Any]] | None
    max_tokens: int | None


class ScriptedModel:
    """Replays ``script`` one item per call, and records every request it receives.

    Usage is estimated with the exact token counter of ``model`` (the script has
    no server to report it). Running out of script raises ModelError, which the
    runner reports as a stop reason, so a script that is too short fails loudly.
    """

    def __init__(self, script: Iterable[ScriptItem], *, model: str | None = None) -> None:
        self._script = list(script)
        self._next = 0
        self._ids = 0
        self.model = model
        self._counter = exact_counter(model)
        self.requests: list[ScriptedRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._script) - self._next

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        sent = copy.deepcopy(list(messages))
        self.requests.append(
            ScriptedRequest(sent, copy.deepcopy(list(tools)) if tools else None, max_tokens)
        )
        if self._next >= len(self._script):
            raise ModelError(f"the scripted model has no response left for call {self._next + 1}")
        item = self._script[self._next]
        self._next += 1
        while callable(item) and not isinstance(item, BaseException | ModelResponse):
            item = item(copy.deepcopy(sent))
        if isinstance(item, BaseException):
            raise item
        response = item if isinstance(item, ModelResponse) else self._response(item)
        response = self._with_usage(response, sent, tools)
        if on_text is not None:
            for piece in _pieces(response.text):
                on_text(piece)
        return response

    def _response(self, item: str | Mapping[str, Any]) -> ModelResponse:
        if isinstance(item, str):
            return ModelResponse(assistant_message(item), finish_reason="stop")
        calls = [dict(c) for c in item.get("tool_calls") or ()]
        for call in calls:
            if not call.get("id"):
                self._ids += 1
                call["id"] = f"call_{self._ids}"
        message = assistant_message(item.get("content"), calls, item.get("reasoning_content"))
        return ModelResponse(message, finish_reason="tool_calls" if calls else "stop")

    def _with_usage(
        self, response: ModelResponse, sent: list[Message], tools: Sequence[dict[str, Any]] | None
    ) -> ModelResponse:
        if response.usage.total_tokens:
            return response
        usage = Usage(
            self._counter.prompt_tokens(sent, tools),
            self._counter.message_tokens(response.message),
        )
        return ModelResponse(response.message, usage, response.finish_reason, self.model)


def _pieces(text: str) -> list[str]:
    return [text[i : i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)]
