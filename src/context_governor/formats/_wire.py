"""What one wire format is, whole: :class:`WireFormat`, one object per API.

Everything that differs between the APIs (Chat Completions, Anthropic Messages, OpenAI
Responses, Gemini ``generateContent``) is a field of its ``WireFormat``: how a body is
governed and checked, which field is its output reserve, how the page reads its
messages, what a conversation is keyed by, how its answers count tokens, how its
streams end, how its errors look (as JSON and as a streamed event), where its key
goes, which paths the proxy serves it under, and how traces name it. Each API's
object lives in its own module (``chat_wire.py``, ``anthropic_wire.py``,
``responses_wire.py``, ``gemini_wire.py``) and is registered once, in
``registry.py``; every caller looks an API up there instead of branching on its name.

This module is the type and the small helpers more than one format uses; it imports
none of the formats (they import it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..messages import Message
from ..providers import Violation
from ._base import Api, Governs

__all__ = [
    "ErrorBody",
    "Route",
    "StreamFraming",
    "Usage",
    "Validates",
    "WireFormat",
    "count",
    "count_detail",
    "counts_sum",
    "first_user",
    "json_or_none",
]

#: A rules check: (body, provider, model) -> violations (what ``request.VALIDATE`` maps to).
Validates = Callable[[Any, str | None, str | None], list[Violation]]
#: An error body in the API's shape: (message, kind, param, code, HTTP status) -> JSON.
ErrorBody = Callable[[str, str, str | None, str | None, int], dict[str, Any]]
#: How the proxy relays a streamed answer that is not server-sent events: given its media
#: type (``application/json``...), whether the route streams by its path, and what makes
#: the error element that ends a broken stream, a framing (proxy/_sse.py's ``Framing``:
#: whole pieces relayed, an honest end, the pieces a watch reads), or None: relayed raw.
StreamFraming = Callable[[str, bool, Callable[[str], dict[str, Any]]], Any]


@dataclass(frozen=True, slots=True)
class Usage:
    """What the upstream counted: ``input_tokens`` is the whole prompt (cached parts
    included), ``output_tokens`` the answer (None when not said yet); of the prompt,
    ``cache_read_tokens`` were read from the provider's prompt cache and
    ``cache_write_tokens`` written to it (the provider's own figures, the ones it bills)."""

    input_tokens: int
    output_tokens: int | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: input the provider read in further sampling steps of the same request and bills
    #: on top of the prompt (Anthropic's server-side compaction: the answer is sampled
    #: again from the summary, ``usage.iterations``); its cache figures are in the two above
    extra_input_tokens: int = 0

    @property
    def billed_input_tokens(self) -> int:
        """Every input token the request is billed for (the prompt and any further step)."""
        return self.input_tokens + self.extra_input_tokens

    @property
    def uncached_tokens(self) -> int:
        """The input tokens billed at the plain input price."""
        return max(0, self.billed_input_tokens - self.cache_read_tokens - self.cache_write_tokens)


@dataclass(frozen=True, slots=True)
class Route:
    """One path the proxy governs an API's bodies under (below a version prefix)."""

    #: below /<version>/, on the proxy and on the upstream (a Starlette path template)
    path: str
    #: the version prefixes it is served under (each maps to the upstream's base)
    versions: tuple[str, ...] = ("v1",)
    #: streaming is chosen by the path (Gemini's :streamGenerateContent), not the body
    streams: bool = False


@dataclass(frozen=True, slots=True)
class WireFormat:
    """One API's wire format: every fact the library, the proxy and the page need of it.

    The functions are pure; the ones that read a body or an answer take it parsed."""

    #: govern_request's name of the format (base.APIS)
    api: Api

    # -- the library (formats/_request.py, formats/_reserve.py) ---------------------------
    #: govern_request's request function (``request.GOVERN``)
    govern: Governs
    #: validate_request's rules check (``request.VALIDATE``)
    validate: Validates
    #: the body fields holding the output reserve, the first one set is the reserve;
    #: () when the reserve is not a top-level field (Gemini's is in generationConfig)
    reserve_fields: tuple[str, ...]
    #: the body's ``thinking`` budget must stay below the reserve (Messages)
    reserve_thinking: bool

    # -- the page (observe/_views.py) -----------------------------------------------------
    #: the pipeline's message view of a parsed body (may raise on a body it cannot read)
    messages: Callable[[dict[str, Any]], list[Message]]

    # -- conversations (proxy/_conversation.py) -------------------------------------------
    #: (system, first user message) of a parsed body: what stays fixed for a conversation
    fixed_parts: Callable[[dict[str, Any]], tuple[Any, Any]]
    #: the conversation id the body itself names (not yet cleaned), or None
    session: Callable[[dict[str, Any]], str | None]

    # -- answers (proxy/_usage.py, proxy/_watch.py) ---------------------------------------
    #: the upstream's count in one parsed answer or streamed event, or None
    usage: Callable[[dict[str, Any]], Usage | None]
    #: a substring without which an answer or event cannot carry the input count
    usage_mark: bytes
    #: whether a streamed event (its name, its data) is the one that ends the answer
    stream_end: Callable[[str | None, bytes], bool]
    #: the event that carries the answer's final count apart from the input's, if any
    output_event: str | None

    # -- errors and the proxy (proxy/_apis.py) --------------------------------------------
    #: the error body in the API's own shape
    error_body: ErrorBody
    #: the streamed event that says an answer broke off: (event name or None, data); on
    #: a route that streams a JSON array, ``data`` is the array's last element
    stream_error: Callable[[str], tuple[str | None, dict[str, Any]]]
    #: the header a configured key goes in when the client sent none
    key_header: str
    #: the body's field that must be present (a 400 in the API's shape otherwise); None
    #: when a body may have no history of its own (a stored prompt)
    required: str | None
    #: the paths the proxy governs the API under
    routes: tuple[Route, ...]
    #: whether a passed-through (path below the version, version) gets this API's error
    #: shape; None: only as the fallback's (registry.FALLBACK)
    passthrough: Callable[[str, str], bool] | None = None
    #: whether an answer streams is the route's choice (``Route.streams``), not the body's
    stream_by_path: bool = False
    #: whether the upstream streams the answer to a body that does not say ``stream``
    #: (a boolean), as Ollama's native API does; else only ``"stream": true`` streams
    stream_default: bool = False
    #: how its streamed answers that are not server-sent events are relayed (Gemini's
    #: JSON array); None: such a stream is relayed raw
    stream_framing: StreamFraming | None = None
    #: the ``anthropic-beta`` header may change the model's window (learning.py)
    reads_betas: bool = False
    #: the upstream's count_tokens can calibrate the count (--count-tokens-upstream)
    counts_upstream: bool = False
    #: the proxy mints compactions for it (proxy/_side.py, ``responses/compact``)
    compacts: bool = False

    # -- traces (proxy/_tracing.py: OpenTelemetry's GenAI names) --------------------------
    trace_operation: str = "chat"
    trace_provider: str = "openai"

    # -- the proxy's upstream ------------------------------------------------------------------
    #: the API whose upstream this one's requests go to unless it is given its own
    #: (Responses: OpenAI's, the same provider)
    upstream_of: str | None = None


def json_or_none(data: bytes) -> Any:
    """``data`` parsed, or None when it is not JSON."""
    try:
        return json.loads(data)
    except ValueError:
        return None


def first_user(items: Any, role_key: str = "role") -> Any:
    """The first element of ``items`` whose role is user (Gemini's contents too)."""
    if isinstance(items, str):  # a Responses input given as one string
        return items
    if not isinstance(items, list):
        return None
    return next(
        (i for i in items if isinstance(i, dict) and i.get(role_key, "user") == "user"), None
    )


def count(value: Any) -> int | None:
    """``value`` as a token count (a non-negative int), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def counts_sum(usage: Any, *names: str) -> int | None:
    """The sum of the named counts of ``usage``; None without the first."""
    if not isinstance(usage, dict):
        return None
    first = count(usage.get(names[0]))
    if first is None:
        return None
    return first + sum(count(usage.get(name)) or 0 for name in names[1:])


def count_detail(usage: dict[str, Any], details: str, name: str) -> int:
    """``usage[details][name]`` as a count (0 when absent or not a count)."""
    found = usage.get(details)
    return (count(found.get(name)) or 0) if isinstance(found, dict) else 0
