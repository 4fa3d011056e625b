"""Anthropic Messages as a :class:`~.wire.WireFormat` (``api="anthropic"``): its request
module, its reserve (``max_tokens``, with the thinking budget below it), Claude Code's
session in ``metadata.user_id``, its answers' usage (cache reads and writes), its
stream's end (``message_stop``), Anthropic's error shape, and the proxy's route.
Registered in ``registry.py``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..messages import Message
from . import _anthropic as anthropic
from ._anthropic_request import govern_anthropic, validate_anthropic
from ._wire import Route, Usage, WireFormat, count, counts_sum, first_user, json_or_none

__all__ = ["WIRE", "anthropic_error"]

#: Anthropic names errors by kind, not by code; ours map onto its kinds.
_ANTHROPIC_KINDS = {
    "invalid_request_error": "invalid_request_error",
    "request_too_large": "request_too_large",
    "upstream_error": "api_error",
    # the proxy's own refusals (guard.py), named as Anthropic names them
    "authentication_error": "authentication_error",
    "permission_error": "permission_error",
    "rate_limit_error": "rate_limit_error",
}
_SESSION_IN_USER_ID = re.compile(r"session_([0-9A-Za-z-]{8,64})")


def anthropic_error(message: str, kind: str) -> dict[str, Any]:
    """Anthropic's error body: ``{"type": "error", "error": {"type", "message"}}``."""
    error = {"type": _ANTHROPIC_KINDS.get(kind, "api_error"), "message": message}
    return {"type": "error", "error": error}


def _error_body(
    message: str, kind: str, param: str | None, code: str | None, status: int
) -> dict[str, Any]:
    # one kind, no code: a code Anthropic names as a kind wins
    return anthropic_error(message, code if code in _ANTHROPIC_KINDS else kind)


def _stream_error(message: str) -> tuple[str | None, dict[str, Any]]:
    return "error", anthropic_error(message, "upstream_error")


def _messages(data: dict[str, Any]) -> list[Message]:
    return list(anthropic.decode(data).messages)


def _fixed_parts(data: dict[str, Any]) -> tuple[Any, Any]:
    return data.get("system"), first_user(data.get("messages"))


def _session(data: dict[str, Any]) -> str | None:
    """Claude Code's session id inside ``metadata.user_id`` (either of its spellings:
    ``user_<hash>_account_<uuid>_session_<uuid>``, or a JSON object with ``session_id``)."""
    metadata = data.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str):
        return None
    if user_id.lstrip().startswith("{"):
        try:
            parsed = json.loads(user_id)
        except ValueError:
            parsed = None
        session = parsed.get("session_id") if isinstance(parsed, dict) else None
        return session if isinstance(session, str) else None
    found = _SESSION_IN_USER_ID.search(user_id)
    return found.group(1) if found else None


_PROMPT_COUNTS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _usage(data: dict[str, Any]) -> Usage | None:
    """``usage.input_tokens`` plus ``cache_read_input_tokens`` and
    ``cache_creation_input_tokens``; streamed, in ``message_start``'s message (and
    ``message_delta`` when it carries ``input_tokens``). With ``usage.iterations`` (the
    server compacted in this request), see :func:`_iterated`."""
    message = data.get("message") if data.get("type") == "message_start" else data
    usage = message.get("usage") if isinstance(message, dict) else None
    total = counts_sum(usage, *_PROMPT_COUNTS)
    if total is None:
        return None
    assert isinstance(usage, dict)
    steps = usage.get("iterations")
    if isinstance(steps, list):
        iterated = _iterated([s for s in steps if isinstance(s, dict)])
        if iterated is not None:
            return iterated
    return Usage(
        total,
        count(usage.get("output_tokens")),
        count(usage.get("cache_read_input_tokens")) or 0,
        count(usage.get("cache_creation_input_tokens")) or 0,
    )


def _iterated(steps: list[dict[str, Any]]) -> Usage | None:
    """The figures of a request the server compacted (``compact_20260112``): its top-level
    ``usage`` is the last step's alone, the answer sampled from the summary, while the
    first step (``"type": "compaction"``) read the prompt we sent. That step's input is
    the prompt's count (what calibration compares with ours); the later steps' input is
    billed on top (``extra_input_tokens``); cache figures and output are summed over all
    steps, as Anthropic bills them. None when no step is a compaction."""
    totals = [counts_sum(step, *_PROMPT_COUNTS) for step in steps]
    if not steps or steps[0].get("type") != "compaction" or None in totals:
        return None
    prompt, *later = [t or 0 for t in totals]
    outputs = [count(step.get("output_tokens")) for step in steps]
    return Usage(
        prompt,
        None if None in outputs else sum(o or 0 for o in outputs),
        sum(count(step.get("cache_read_input_tokens")) or 0 for step in steps),
        sum(count(step.get("cache_creation_input_tokens")) or 0 for step in steps),
        extra_input_tokens=sum(later),
    )


def _type(data: bytes) -> Any:
    parsed = json_or_none(data)
    return parsed.get("type") if isinstance(parsed, dict) else None


def _stream_end(name: str | None, data: bytes) -> bool:
    """``message_stop``, or an ``error`` event (the API's own way to fail)."""
    return name in ("message_stop", "error") or (
        name is None and b"message_stop" in data and _type(data) == "message_stop"
    )


def _passthrough(path: str, version: str) -> bool:
    """``messages/...`` under /v1/ (count_tokens, batches)."""
    return version == "v1" and path.partition("/")[0] == "messages"


WIRE = WireFormat(
    api="anthropic",
    govern=govern_anthropic,
    validate=validate_anthropic,
    reserve_fields=("max_tokens",),
    reserve_thinking=True,
    messages=_messages,
    fixed_parts=_fixed_parts,
    session=_session,
    usage=_usage,
    usage_mark=b'"input_tokens"',
    stream_end=_stream_end,
    output_event="message_delta",
    error_body=_error_body,
    stream_error=_stream_error,
    key_header="x-api-key",
    required="messages",
    routes=(Route("messages"),),
    passthrough=_passthrough,
    reads_betas=True,
    counts_upstream=True,
    trace_operation="chat",
    trace_provider="anthropic",
)
