"""Chat Completions as a :class:`~.wire.WireFormat` (``api="openai"``): its request
module, its reserve fields, its answers' usage, its stream's end (``data: [DONE]``),
OpenAI's error shape, and the proxy's route. Registered in ``registry.py``; also the
fallback shape (``registry.FALLBACK``) of what no other API claims.
"""

from __future__ import annotations

from typing import Any

from ..messages import Message
from . import _chat as chat
from ._chat_request import govern_chat, validate_chat
from ._wire import Route, Usage, WireFormat, count, count_detail, counts_sum, first_user

__all__ = ["WIRE", "openai_error"]


def openai_error(
    message: str, kind: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """OpenAI's error body (Chat Completions, Responses, and any other OpenAI path)."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _error_body(
    message: str, kind: str, param: str | None, code: str | None, status: int
) -> dict[str, Any]:
    return openai_error(message, kind, param, code)


def _stream_error(message: str) -> tuple[str | None, dict[str, Any]]:
    return None, openai_error(message, "upstream_error")


def _messages(data: dict[str, Any]) -> list[Message]:
    found = data.get("messages")
    return [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []


def _fixed_parts(data: dict[str, Any]) -> tuple[Any, Any]:
    messages = data.get("messages")
    if not isinstance(messages, list):
        return None, None
    system = [
        m for m in messages
        if isinstance(m, dict) and m.get("role") in ("system", "developer")
    ][:1]  # fmt: skip
    return system, first_user(messages)


def _session(data: dict[str, Any]) -> str | None:
    return None


def _usage(data: dict[str, Any]) -> Usage | None:
    """``usage.prompt_tokens`` (streamed: the last chunk, when the client asked for
    ``stream_options.include_usage``); read from the cache:
    ``prompt_tokens_details.cached_tokens``."""
    usage = data.get("usage")
    total = counts_sum(usage, "prompt_tokens")
    if total is None:
        return None
    assert isinstance(usage, dict)
    read = count_detail(usage, "prompt_tokens_details", "cached_tokens")
    return Usage(total, count(usage.get("completion_tokens")), min(read, total))


def _stream_end(name: str | None, data: bytes) -> bool:
    return data.strip() == b"[DONE]"


WIRE = WireFormat(
    api="openai",
    govern=govern_chat,
    validate=validate_chat,
    reserve_fields=chat.RESERVE,
    reserve_thinking=False,
    messages=_messages,
    fixed_parts=_fixed_parts,
    session=_session,
    usage=_usage,
    usage_mark=b'"prompt_tokens"',
    stream_end=_stream_end,
    output_event=None,
    error_body=_error_body,
    stream_error=_stream_error,
    key_header="authorization",
    required="messages",
    routes=(Route("chat/completions"),),
    trace_operation="chat",
    trace_provider="openai",
)
