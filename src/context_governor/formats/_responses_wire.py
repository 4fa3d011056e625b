"""OpenAI Responses as a :class:`~.wire.WireFormat` (``api="responses"``): its request
module, its reserve (``max_output_tokens``), Codex's ``prompt_cache_key`` as the
conversation, its answers' usage, its stream's end (``response.completed`` and the
other endings), its error event, OpenAI's error shape, and the proxy's route (a body
may hold no history: a stored prompt; the proxy mints compactions for it).
Registered in ``registry.py``.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message
from . import _responses as responses
from ._chat_wire import openai_error
from ._responses_request import govern_responses, validate_responses
from ._wire import (
    Route,
    Usage,
    WireFormat,
    count,
    count_detail,
    counts_sum,
    first_user,
    json_or_none,
)

__all__ = ["WIRE"]

_RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")
#: the events that end a stream: a response's endings, or the API's error event
_STREAM_ENDS = frozenset({*_RESPONSE_ENDS, "error"})


def _error_body(
    message: str, kind: str, param: str | None, code: str | None, status: int
) -> dict[str, Any]:
    return openai_error(message, kind, param, code)


def _stream_error(message: str) -> tuple[str | None, dict[str, Any]]:
    # The Responses API's own error event (what its SDKs yield as an ErrorEvent).
    return "error", {"type": "error", "code": "upstream_error", "message": message, "param": None}


def _messages(data: dict[str, Any]) -> list[Message]:
    return list(responses.decode(data).messages)


def _fixed_parts(data: dict[str, Any]) -> tuple[Any, Any]:
    return data.get("instructions"), first_user(data.get("input"))


def _session(data: dict[str, Any]) -> str | None:
    """``prompt_cache_key`` (Codex sets it to its conversation id)."""
    key = data.get("prompt_cache_key")
    return key if isinstance(key, str) else None


def _usage(data: dict[str, Any]) -> Usage | None:
    """``usage.input_tokens`` of the response (streamed: ``response.completed``,
    ``response.incomplete``, ``response.failed``); read:
    ``input_tokens_details.cached_tokens``."""
    response = data.get("response") if data.get("type") in _RESPONSE_ENDS else data
    usage = response.get("usage") if isinstance(response, dict) else None
    total = counts_sum(usage, "input_tokens")
    if total is None:
        return None
    assert isinstance(usage, dict)
    read = count_detail(usage, "input_tokens_details", "cached_tokens")
    return Usage(total, count(usage.get("output_tokens")), min(read, total))


def _type(data: bytes) -> Any:
    parsed = json_or_none(data)
    return parsed.get("type") if isinstance(parsed, dict) else None


def _stream_end(name: str | None, data: bytes) -> bool:
    return name in _STREAM_ENDS or (
        name is None and b"response." in data and _type(data) in _STREAM_ENDS
    )


WIRE = WireFormat(
    api="responses",
    govern=govern_responses,
    validate=validate_responses,
    reserve_fields=("max_output_tokens",),
    reserve_thinking=False,
    messages=_messages,
    fixed_parts=_fixed_parts,
    session=_session,
    usage=_usage,
    usage_mark=b'"input_tokens"',
    stream_end=_stream_end,
    output_event=None,
    error_body=_error_body,
    stream_error=_stream_error,
    key_header="authorization",
    required=None,
    routes=(Route("responses"),),
    compacts=True,
    upstream_of="openai",
    trace_operation="chat",
    trace_provider="openai",
)
