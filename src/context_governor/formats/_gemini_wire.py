"""Gemini ``generateContent`` as a :class:`~.wire.WireFormat` (``api="gemini"``): its
request module (its reserve is ``generationConfig.maxOutputTokens``, which the
request module reads itself), its answers' ``usageMetadata``, its stream's end (a
candidate's ``finishReason``), Google's error shape, the key in ``x-goog-api-key``,
and the proxy's two routes (the model in the path; streaming chosen by the path, a
JSON array unless ``?alt=sse``). Registered in ``registry.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..messages import Message
from . import _gemini as gemini
from ._gemini_request import govern_gemini, validate_gemini
from ._gemini_stream import ArrayStream
from ._wire import Route, Usage, WireFormat, count, counts_sum, first_user, json_or_none

__all__ = ["WIRE", "google_error"]

#: Google's canonical status names for the HTTP statuses the proxy answers with itself
#: (google.rpc.Code's HTTP mapping). A body over the limit is INVALID_ARGUMENT, as
#: Gemini's own "Request payload size exceeds the limit" error is; so is a body that is
#: not JSON (415); a Host not served (421, which the mapping does not name) is refused
#: as PERMISSION_DENIED, as a page's origin is (403).
_GOOGLE_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                  404: "NOT_FOUND", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT",
                  421: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 502: "UNAVAILABLE",
                  503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}  # fmt: skip
#: The google-genai SDK calls /v1/models/... (its default API version), others /v1beta/.
_VERSIONS = ("v1beta", "v1")


def google_error(message: str, status: int) -> dict[str, Any]:
    """Google's error body: ``{"error": {"code", "message", "status"}}`` (what the
    google-genai SDK reads into its ClientError / ServerError)."""
    name = _GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
    return {"error": {"code": status, "message": message, "status": name}}


def _error_body(
    message: str, kind: str, param: str | None, code: str | None, status: int
) -> dict[str, Any]:
    return google_error(message, status)


def _stream_error(message: str) -> tuple[str | None, dict[str, Any]]:
    # the SDK raises a chunk that is {"error": ...} as a ServerError
    return None, google_error(message, 502)


def _messages(data: dict[str, Any]) -> list[Message]:
    return list(gemini.decode(data).messages)


def _fixed_parts(data: dict[str, Any]) -> tuple[Any, Any]:
    return data.get("systemInstruction"), first_user(data.get("contents"))


def _session(data: dict[str, Any]) -> str | None:
    return None


def _usage(data: dict[str, Any]) -> Usage | None:
    """``usageMetadata.promptTokenCount`` (cached content included; streamed, every
    element carries the running figure); read: ``cachedContentTokenCount``."""
    usage = data.get("usageMetadata")
    total = counts_sum(usage, "promptTokenCount")
    if total is None:
        return None
    assert isinstance(usage, dict)
    read = count(usage.get("cachedContentTokenCount")) or 0
    return Usage(total, count(usage.get("candidatesTokenCount")), min(read, total))


def _ends(element: Any) -> bool:
    if not isinstance(element, dict):
        return False
    if "error" in element:
        return True
    candidates = element.get("candidates")
    return isinstance(candidates, list) and any(
        isinstance(c, dict) and c.get("finishReason") for c in candidates
    )


def _stream_end(name: str | None, data: bytes) -> bool:
    """An element (an event's data, or one of the JSON array's) whose candidate has a
    ``finishReason``, or an ``error`` element."""
    mark = b"finishReason" in data or b'"error"' in data
    return mark and _ends(json_or_none(data))


def _framing(
    media: str, streams: bool, error: Callable[[str], dict[str, Any]]
) -> ArrayStream | None:
    """The JSON array the streaming route sends unless asked for server-sent events."""
    return ArrayStream(error) if streams and media == "application/json" else None


def _passthrough(path: str, version: str) -> bool:
    """Anything under /v1beta/, and a ``models/{model}:action`` path."""
    first, _, rest = path.partition("/")
    return version != "v1" or (first == "models" and ":" in rest)


WIRE = WireFormat(
    api="gemini",
    govern=govern_gemini,
    validate=validate_gemini,
    reserve_fields=(),
    reserve_thinking=False,
    messages=_messages,
    fixed_parts=_fixed_parts,
    session=_session,
    usage=_usage,
    usage_mark=b'"promptTokenCount"',
    stream_end=_stream_end,
    output_event=None,
    error_body=_error_body,
    stream_error=_stream_error,
    key_header="x-goog-api-key",
    required="contents",
    routes=(
        Route("models/{model}:generateContent", _VERSIONS),
        Route("models/{model}:streamGenerateContent", _VERSIONS, streams=True),
    ),
    passthrough=_passthrough,
    stream_by_path=True,
    stream_framing=_framing,
    trace_operation="generate_content",
    trace_provider="gcp.gemini",
)
