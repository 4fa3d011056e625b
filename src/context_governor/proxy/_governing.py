"""Turn a client's request body (Chat Completions, Messages, Responses, Gemini) into
the governed body to forward: every route through ``govern_request``, with the config's
settings.

Pure and synchronous (the app runs it off the event loop, in a thread or a worker
process, see executor.py, so a long history does not stall other requests). The
output depends on the body and the config only: two replicas given the same
request send the same bytes upstream, which is what lets the proxy scale out
with no shared state and keeps the provider's prompt cache warm whichever
replica answers.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

from ..counting import set_bulk_loading, warm_up
from ..errors import ContextGovernorError, InputError
from ..formats import govern_request, scaled_estimate
from ..policies import Compaction, CompactionPolicy
from ..report import Note, Report
from ._apis import BY_API, CHAT, ApiRoute
from ._client_compaction import ClientCompaction, client_compaction
from ._config import ProxyConfig
from ._conversation import from_body
from ._learning import Hints, Window, request_window
from ._summaries import compaction_for, count_store_for


class BadRequest(Exception):
    """The client's body cannot be governed; answered with a 400 in the API's error shape."""

    def __init__(self, message: str, param: str | None = None) -> None:
        # Both in args: the exception crosses a process boundary by pickling them.
        super().__init__(message, param)
        self.message = message
        self.param = param


@dataclass(frozen=True, slots=True)
class Governed:
    """The bytes to forward, and what governance did to get them."""

    body: bytes
    report: Report
    model: str | None
    stream: bool
    #: what the request continues server-side, which governance could not see
    #: (Responses: ``previous_response_id=...``, ``conversation=...``); empty if none
    ungoverned: tuple[str, ...] = ()
    #: the conversation the body names or its fixed parts' digest (conversation.py)
    conversation: str | None = None
    #: the client whose own compaction request this is (client_compaction.py), or None
    client_compaction: str | None = None
    #: the window the body was governed to, where it came from, the learned ratio
    window: Window | None = None


#: ``json.dumps(value, separators=(",", ":"))`` without making an encoder per call.
_DUMPS = json.JSONEncoder(separators=(",", ":")).encode


def encode(body: Any) -> bytes:
    """One canonical serialization, so equal bodies are equal bytes:
    ``json.dumps(body, separators=(",", ":"))``, byte for byte.

    ASCII escapes keep lone surrogates (legal in JSON, not in UTF-8) from failing.
    A body is serialized a top-level value at a time, and a list (the messages) an
    item at a time: the serializer is one C call that holds the GIL until it returns,
    and on a 40 MB body that was 150 to 200 ms in which the event loop could not run
    (``/healthz`` waited as long). Now the longest hold is one message's.
    """
    if not isinstance(body, dict) or not all(type(key) is str for key in body):
        return _DUMPS(body).encode("ascii")
    parts = [_DUMPS(key) + ":" + _encoded(value) for key, value in body.items()]
    return ("{" + ",".join(parts) + "}").encode("ascii")


def _encoded(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + ",".join([_DUMPS(item) for item in value]) + "]"
    return _DUMPS(value)


def preload(config: ProxyConfig) -> None:
    """Load the encodings of the default and every configured model before serving.

    Encodings are built once, under the tokenizer's own lock (tokens.warm_up), so N
    concurrent first requests for a model that was not preloaded wait for one build
    instead of making N. No call loads the bulk counter here (counting.set_bulk_loading):
    its load holds the GIL for half a second, every other request with it.
    """
    set_bulk_loading(False)  # one big first call must not hold the other requests
    warm_up((None, *config.model_windows))


def _no_constant(name: str) -> Any:
    raise BadRequest(f"request body is not valid JSON: {name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: valid JSON, but would be forwarded as Infinity
        raise BadRequest(f"request body has a number out of range: {text[:40]}")
    return value


def parse(raw: bytes) -> Any:
    """The body as JSON, strictly: NaN/Infinity literals and numbers that overflow
    a float are refused (they are not JSON, and json.dumps would forward them)."""
    try:
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except ValueError as exc:  # UnicodeDecodeError included
        raise BadRequest(f"request body is not valid JSON: {exc}") from None


def govern_body(
    raw: bytes,
    config: ProxyConfig,
    api: str = CHAT.api,
    ratio: float | None = None,
    model: str | None = None,
    hints: Hints | None = None,
) -> Governed:
    """Parse, govern and re-serialize ``raw`` (a body of ``api``, see apis.py);
    BadRequest says what the client got wrong. ``ratio`` (Messages only) scales the
    Claude estimate, as calibrated by the upstream's count_tokens (count_tokens.py).
    ``model`` is the target named by the path (Gemini's ``models/{model}:...``),
    which wins over the body's. ``hints``: what was learned from the upstream and the
    request's ``anthropic-beta`` values (learning.request_window).

    A body nested deeper than Python's recursion limit (in the parser, governance
    or the serializer) is a client error, not a crash.
    """
    route = BY_API[api]
    try:
        data = parse(raw)
        if not isinstance(data, dict):
            raise BadRequest(f"request body must be a JSON object, got {type(data).__name__}")
        if route.required is not None and route.required not in data:
            raise BadRequest(f"'{route.required}' is a required property", route.required)
        return _govern(data, config, route, ratio, model, hints)
    except RecursionError:
        raise BadRequest("request body is nested too deeply") from None


def _streams(data: dict[str, Any], route: ApiRoute) -> bool:
    """Whether the upstream streams its answer: the body's ``stream`` when it is a
    boolean, else the wire format's default (Ollama's native API streams unless told
    not to)."""
    stream = data.get("stream")
    return stream if isinstance(stream, bool) else route.wire.stream_default


def _model(data: dict[str, Any]) -> str | None:
    return data.get("model") if isinstance(data.get("model"), str) else None


def _govern(
    data: dict[str, Any],
    config: ProxyConfig,
    route: ApiRoute,
    ratio: float | None = None,
    path_model: str | None = None,
    hints: Hints | None = None,
) -> Governed:
    """A body governed in its own format by govern_request: the reserve is the body's
    own (``max_completion_tokens``/``max_tokens``, ``max_output_tokens``,
    ``generationConfig.maxOutputTokens``), else the config's ``max_output``; the
    target's rules are the configured profile's, else the API's own provider's."""
    model = path_model or _model(data)
    window = request_window(config.window_for(model), model, hints)
    compacting = client_compaction(data)
    try:
        result = govern_request(
            data,
            api=route.api,
            profile=config.profile,
            model=model,
            context_window=window.governed,
            max_output=config.max_output,
            compaction=_policy(config, compacting),
            count_tokens=None if ratio is None else scaled_estimate(ratio),
            count_store=count_store_for(config),
            compacted=config.compacted,
            cache_breakpoints=config.cache_breakpoints,
        )
    except InputError as exc:
        raise BadRequest(str(exc), exc.path.split(".")[0].split("[")[0] or None) from None
    except ContextGovernorError as exc:
        raise BadRequest(str(exc)) from None
    _say_window(result.report, window)
    if compacting is not None:
        result.report.notes.append(Note(compacting.note()))
    _something_left(result.report, route.required)
    return Governed(
        encode(result.body),
        result.report,
        model,
        _streams(data, route),
        result.ungoverned,
        from_body(route.api, data, model),
        None if compacting is None else compacting.client,
        window,
    )


def _something_left(report: Report, param: str | None) -> None:
    """BadRequest when governance left no message of a request that had some (a lone
    orphan tool result): the provider refuses an empty conversation, so the client is
    told why here rather than sent the provider's bare "empty array"."""
    if report.messages_after or not report.messages_before:
        return
    why = "; ".join(f"message {a.index}: {a.detail}" for a in report.actions if a.index >= 0)
    raise BadRequest(
        f"nothing is left to send: {why or 'every message was removed'}. The provider "
        "refuses an empty conversation: send the call a tool result answers, or a user message",
        param,
    )


def _policy(config: ProxyConfig, compacting: ClientCompaction | None) -> str | Compaction:
    """The configured compaction; for a client's own compaction request, the cache
    policy set for a summary instead.

    A summary request is made once, at the end of what the session can hold: keeping
    the cache warm does not matter there, keeping what the summary must say does. So
    nothing is cleared below the budget itself (``trigger=1.0``, not moved by cache
    prices), old tool output is masked before any turn is cut (``mask_first``), and no
    model summary of our own is written into the client's (``summary=None``). The seed
    policy, asked for by name, is left as it is.
    """
    configured = compaction_for(config)
    if compacting is None:
        return configured
    if configured == "cache":
        configured = CompactionPolicy()
    if not isinstance(configured, CompactionPolicy):
        return configured
    return replace(configured, trigger=1.0, price_aware=False, mask_first=True, summary=None)


def _say_window(report: Report, window: Window) -> None:
    """Where the window came from, in the report (it was passed as given)."""
    if window.governed is not None:
        report.window_source = window.source
    if window.note:
        report.notes.append(window.note)
