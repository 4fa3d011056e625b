"""What reading a native answer shares (Messages, Responses): the checks on the JSON a
server sends back, and the tools sent with a request.

Both APIs answer with a JSON object (or a stream of JSON event objects), name the
model, count tokens as integers that may be missing, describe an error by an object
with a ``message``, and take the runner's chat-format function tools in their own
shape: one set of checks, so that both clients word a bad answer the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._errors import ModelResponseError


def count(value: Any) -> int:
    """A token count from an answer: an integer, else 0 (missing, null, a bool...)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def error_text(error: Any, kind_key: str) -> str:
    """An API error object's words: its ``message``, else its ``kind_key`` (``type``,
    ``code``), else the whole object."""
    if isinstance(error, Mapping):
        return str(error.get("message") or error.get(kind_key) or error)
    return str(error)


def answer_object(data: Any) -> Mapping[str, Any]:
    """A whole answer, which must be a JSON object."""
    if not isinstance(data, Mapping):
        raise ModelResponseError(f"expected a JSON object, got {type(data).__name__}")
    return data


def event_object(event: Any) -> Mapping[str, Any]:
    """One stream event, which must be a JSON object."""
    if not isinstance(event, Mapping):
        raise ModelResponseError(f"stream event is not an object: {event!r:.200}")
    return event


def model_of(data: Mapping[str, Any]) -> str | None:
    """The model an answer names (None if it names none, or not as a string)."""
    model = data.get("model")
    return model if isinstance(model, str) else None


def native_tools(
    schemas: Sequence[Mapping[str, Any]], convert: Callable[[Mapping[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Chat-format function tools in an API's own shape (``convert`` takes the
    ``function`` object); a tool already in another shape (the API's own, a hosted or
    server tool) is sent as it is."""
    out: list[dict[str, Any]] = []
    for schema in schemas:
        function = schema.get("function")
        if schema.get("type") != "function" or not isinstance(function, Mapping):
            out.append(dict(schema))
        else:
            out.append(convert(function))
    return out
