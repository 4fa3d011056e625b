"""govern_request() and validate_request(): a whole request body, in its own wire format.

One pipeline for every format: the edge decodes the body into the chat messages
the stages govern (carrying what they need not understand), the profile's
stages run as for govern(), and the edge encodes the result back into a body of
the same format. The request's own settings drive the run: ``max_tokens`` is the
output reserve, ``model`` the target, a trailing assistant message a prefill,
and (Anthropic) ``thinking`` selects the thinking-mode rules.

This module reads each API's request module from the registry (registry.py; GOVERN
and VALIDATE are its view by name) and holds what every API shares around it: the
checks of ``api``, the window table and the output reserve fitted to the window
(reserve.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..counting.store import CountLink, CountStore, count_link
from ..policies import Compaction
from ..profiles import Profile
from ..providers import Violation
from ..providers.windows import default_window, known_window, window_table
from . import _reserve as reserve
from ._base import (
    APIS,
    DEFAULT_PROFILES,
    Api,
    Compacted,
    Governs,
    Options,
    RequestResult,
    check_api,
    check_compacted,
)
from ._registry import WIRE_FORMATS
from ._wire import Validates

__all__ = ["APIS", "Api", "RequestResult", "govern_request", "validate_request"]

#: Each API's request function (its module: formats/<api>_request.py), as registered
#: (registry.py).
GOVERN: dict[Api, Governs] = {api: wire.govern for api, wire in WIRE_FORMATS.items()}
#: Each API's rules check: (body, provider, model) -> violations.
VALIDATE: dict[Api, Validates] = {api: wire.validate for api, wire in WIRE_FORMATS.items()}


def govern_request(
    body: dict[str, Any],
    *,
    api: Api | None = None,
    profile: str | Profile | None = None,
    model: str | None = None,
    context_window: int | None = None,
    max_output: int | None = None,
    max_tool_result_chars: int | None = None,
    compaction: str | Compaction | None = None,
    count_tokens: Callable[[str], int] | None = None,
    cache_breakpoints: bool = True,
    windows: Mapping[str, int] | None = None,
    count_store: str | CountStore | CountLink | None = None,
    compacted: Compacted = "keep",
) -> RequestResult:
    """Govern a whole request body in its own wire format; return a body of the same format.

    ``api`` (required; without it, ConfigError names the choices) is the body's
    format: "openai" (Chat Completions: ``messages``, ``tools``,
    ``max_completion_tokens``/``max_tokens``; see chat_request.py), "anthropic"
    (Messages API: ``system``, ``messages`` of content blocks, ``tools``,
    ``max_tokens``, ``thinking``; see anthropic_request.py), "responses" (OpenAI
    Responses; see responses_request.py) or "gemini" (Google Gen AI
    ``generateContent``; see gemini_request.py).
    ``profile`` is the target's rules (default: the format's own provider; e.g.
    ``profile="glm"`` for an Anthropic-style client in front of GLM). ``model``
    overrides the body's. ``max_output`` is the output reserve of a body that names
    none (default 4096). The other settings are govern()'s.

    What the pipeline need not understand (thinking blocks and signatures, images,
    documents, citations, server tools, unknown block types, fields and roles) is
    carried through untouched and counted. The input body is never modified.

    ``cache_breakpoints`` (Messages only): mark where the stable prefix ends with
    ``cache_control`` (formats/_anthropic_cache.py; the client's own marks are kept
    and win), each mark reported. With it off, a body that needs nothing comes back
    equal (the same object).

    ``windows``: a table of model windows (``windows.window_table(...)``) used instead
    of the built-in one when ``context_window`` is not given. An output reserve
    (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``) the window
    cannot give beside the prompt is fitted: the prompt's budget keeps a floor for the
    answer, and the body sent asks for what the window leaves after the governed prompt,
    up to what was asked; reported (formats/_reserve.py).
    Messages bodies are counted with the Claude estimate (tokens.claude_estimate)
    unless ``count_tokens`` is given.

    ``count_store``: where exact token counts persist between processes, as for
    govern() (counting/store.py); used where the counter is an exact tokenizer (an
    estimate is cheaper to make than to look up).

    ``compacted`` (Messages and Responses): what precedes the newest server-side
    compaction block or item, which the model does not read and which is never counted
    or governed: "keep" (default) sends it as it came, "drop" leaves it out, reported
    (both providers document that it may be dropped; never with a
    ``previous_response_id``). docs/native-compaction.md.
    """
    checked = check_api(api, "govern_request")
    body_model = model or (body.get("model") if isinstance(body, dict) else None)
    name = body_model if isinstance(body_model, str) else None
    from_table = None
    if context_window is None and windows is not None:
        from_table = known_window(name, window_table(windows))
    wire = WIRE_FORMATS[checked]
    window = _usable(context_window, from_table, name)
    planned = reserve.plan(body, wire.reserve_fields, wire.reserve_thinking, window)
    sent = {**body, **planned.before()} if planned is not None else body
    options = Options(
        context_window=context_window if from_table is None else from_table,
        max_output=max_output,
        max_tool_result_chars=max_tool_result_chars,
        compaction=compaction,
        count_tokens=count_tokens,
        count_store=count_link(count_store),
        cache_breakpoints=cache_breakpoints,
        compacted=check_compacted(compacted),
    )
    chosen = DEFAULT_PROFILES[checked] if profile is None else profile
    result = wire.govern(sent, chosen, model, options)
    if from_table is not None:
        result.report.window_source = "model"
    if planned is None:
        return result
    return _with_reserve(body, sent, result, planned)


def _with_reserve(
    body: dict[str, Any], sent: dict[str, Any], result: RequestResult, planned: reserve.Reserve
) -> RequestResult:
    """``result`` (governed from ``sent``, whose reserve was the floor) with the reserve
    the window leaves after its prompt, reported; the input body itself when that is
    what the client asked and governance changed nothing else."""
    governed = result.body.get("thinking") if isinstance(result.body, dict) else None
    found = planned.after(result.report.tokens_after, governed)
    reserve.record(result.report, found)
    if result.body is sent and not found.details:
        return replace(result, body=body)
    return replace(result, body={**result.body, **found.updates})


def _usable(given: Any, from_table: int | None, model: str | None) -> int | None:
    """The window the output reserve is checked against: the given one if it is usable
    (a bad one is the pipeline's to report), else the table's, else the family's."""
    if given is not None:
        ok = isinstance(given, int) and not isinstance(given, bool) and given > 0
        return given if ok else None
    return from_table if from_table is not None else default_window(model)[0]


def validate_request(
    body: dict[str, Any],
    *,
    api: Api | None = None,
    provider: str | None = None,
    model: str | None = None,
) -> list[Violation]:
    """Every rule the body breaks, with the provider's error text.

    ``api`` (required) as for govern_request. "openai": the rules of ``provider``
    (default "openai") for the body's messages. "anthropic": the Messages API's own
    rules, whoever serves it (a compatible provider's Chat Completions rules, such as
    key filters or ``partial`` flags, are about another wire); ``provider`` must be
    None or "anthropic". These include the rules only a native body shows:
    thinking-mode rules (AN-9) and the breakpoint limit over tools, system and
    messages (AN-10). Indices are positions in the body's ``messages`` (-1: the
    request as a whole, or its ``system``). "responses" and "gemini": that API's own
    rules (``provider`` None, or "openai" / "gemini").
    """
    checked = check_api(api, "validate_request")
    return WIRE_FORMATS[checked].validate(body, provider, model)
