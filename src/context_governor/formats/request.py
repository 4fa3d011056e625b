"""govern_request() and validate_request(): a whole request body, in its own wire format.

One pipeline for every format: the edge decodes the body into the chat messages
the stages govern (carrying what they need not understand), the profile's
stages run as for govern(), and the edge encodes the result back into a body of
the same format. The request's own settings drive the run: ``max_tokens`` is the
output reserve, ``model`` the target, a trailing assistant message a prefill,
and (Anthropic) ``thinking`` selects the thinking-mode rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any, Literal

from ..counting import TokenCounter, claude_counter
from ..counting.store import CountLink, CountStore, count_link
from ..errors import ConfigError, InputError
from ..messages import Message
from ..messages.inputs import check_messages
from ..messages.legacy import rules_view, tools_of
from ..pipeline import call_counter, resolve_settings, run, run_checked, store_counts
from ..policies import CompactionPolicy
from ..profiles import Profile, get_profile
from ..providers import resolve
from ..providers.rules import Violation, find_violations
from ..report import Action, Report
from ..targets.policy import Policy
from ..targets.windows import default_window, known_window, window_table
from . import anthropic as an
from . import anthropic_cache as cache
from . import anthropic_rules as rules
from . import reserve

Api = Literal["anthropic", "openai", "responses", "gemini"]
APIS: tuple[str, ...] = ("anthropic", "openai", "responses", "gemini")
_DEFAULT_PROFILE = {
    "anthropic": "anthropic", "openai": "openai", "responses": "openai", "gemini": "gemini",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class RequestResult:
    """The governed request body (same format as the input) and the report.

    ``body`` is the input body itself when nothing changed; otherwise a new dict
    whose unchanged parts are the input's own objects (treat it as read-only).
    ``messages`` is the governed chat-completions view the report's message
    indices count.
    """

    body: dict[str, Any]
    report: Report
    messages: list[Message]
    #: what the request continues server-side and governance could not see (Responses:
    #: "previous_response_id=resp_1", "conversation=conv_1", item references); empty if none
    ungoverned: tuple[str, ...] = ()


class _CarryCounter:
    """The profile's counter plus what the edge carries opaquely: unknown fields and
    messages of unknown roles are counted (as JSON text) with the message they travel
    with, unknown top-level fields with the request."""

    def __init__(self, inner: TokenCounter, fixed_text: str, key: str = an.CARRY) -> None:
        self.inner = inner
        self.key = key  # the edge's private key for what a message carries
        self.fixed = self._text(fixed_text)
        # Stages count a message several times per call: remember each count by identity
        # (the entry holds the message, so its id cannot be reused while it lives).
        self._known: dict[int, tuple[Message, int]] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def _text(self, text: str) -> int:
        return self.inner.message_tokens({"role": "user", "content": text}) if text else 0

    def message_tokens(self, message: Message) -> int:
        known = self._known.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        tokens = self.inner.message_tokens(message)
        extra = getattr(message.get(self.key), "extra", "")
        if isinstance(extra, str) and extra:
            tokens += self._text(extra)
        self._known[id(message)] = (message, tokens)
        return tokens

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        return (
            sum(self.message_tokens(m) for m in messages)
            + self.inner.prompt_tokens([], tools)
            + self.fixed
        )


def _check_api(api: Any) -> str:
    if api not in APIS:
        raise ConfigError(f"unknown api {api!r}; known: {', '.join(APIS)}")
    return str(api)


# -- the chat completions (identity) edge ------------------------------------------------------


def _chat_settings(body: Any) -> tuple[list[Message], Any, Any, Any]:
    if not isinstance(body, dict):
        raise InputError("body", f"expected a request object, got {type(body).__name__}")
    messages = check_messages(body.get("messages"), legacy=True)
    output = body.get("max_completion_tokens", body.get("max_tokens"))
    if output is not None and (
        isinstance(output, bool) or not isinstance(output, int) or output < 0
    ):
        raise InputError(
            "max_completion_tokens", f"expected a non-negative integer, got {output!r}"
        )
    return messages, tools_of(body), body.get("model"), output


def _govern_chat(body: Any, profile: str | Profile, model: str | None, **kw: Any) -> RequestResult:
    messages, tools, body_model, output = _chat_settings(body)
    settings = resolve_settings(
        profile=profile,
        tools=tools,
        model=model or body_model,
        max_output=output,
        prefill=bool(messages) and messages[-1].get("role") == "assistant",
        **kw,
    )
    result = run_checked(messages, settings)
    out = body if result.messages is messages else {**body, "messages": result.messages}
    return RequestResult(out, result.report, result.messages)


# -- the Anthropic Messages edge ---------------------------------------------------------------


def _tools_within_limit(tools: list[dict[str, Any]], ctx_record: Any) -> list[dict[str, Any]]:
    """Drop the oldest tool breakpoints when tools alone carry more than the limit."""
    excess = rules.tool_breakpoints({"tools": tools}) - rules.MAX_BREAKPOINTS
    out = []
    for n, tool in enumerate(tools):
        if excess > 0 and "cache_control" in tool:
            tool = {k: v for k, v in tool.items() if k != "cache_control"}
            excess -= 1
            ctx_record(n)
        out.append(tool)
    return out


def _native_policy(policy: Policy, decoded: an.Decoded) -> Policy:
    """The target's repair policy, for a Messages body: the Messages API's breakpoint
    limit (whoever serves it), less the tools' breakpoints; a kept prefill without
    trailing whitespace (the Messages API refuses it whoever serves it: AN-6b); and no
    chat-level key filter (it is about the Chat Completions wire; the edge writes only
    Messages fields, and the filter would strip what each message carries)."""
    room = max(0, rules.MAX_BREAKPOINTS - rules.tool_breakpoints(decoded.body))
    return replace(policy, max_cache_control=room, allowed_keys=None, rstrip_prefill=True)


def _govern_anthropic(
    body: Any,
    profile: str | Profile,
    model: str | None,
    *,
    cache_breakpoints: bool = True,
    **kw: Any,
) -> RequestResult:
    decoded = an.decode(body)
    check_messages(decoded.messages)
    mode = rules.thinking_mode(decoded.body)
    prof = get_profile(profile)
    prof = replace(prof, finish=(*prof.finish, partial(rules.repair_thinking, mode=mode)))
    native = decoded.body["messages"]
    last_known = next(
        (
            m
            for m in reversed(native)
            if isinstance(m, dict) and m.get("role") in ("user", "assistant")
        ),
        None,
    )
    settings = resolve_settings(
        profile=prof,
        tools=decoded.tools,
        model=model or decoded.model,
        max_output=decoded.max_output,
        prefill=last_known is not None and last_known.get("role") == "assistant",
        **kw,
    )
    settings = replace(settings, policy=_native_policy(settings.policy, decoded))
    if kw.get("count_tokens") is None:  # no offline Claude tokenizer: an estimate erring high
        settings = replace(settings, counter=claude_counter())
    inner, loaded = call_counter(settings, decoded.messages)
    counter = _CarryCounter(inner, decoded.extra)
    result, ctx = run(decoded.messages, settings, counter)
    store_counts(settings, inner, loaded, result.report)
    updates: dict[str, Any] = {}
    if ctx.disable_thinking:
        updates["thinking"] = {"type": "disabled"}
    if rules.tool_breakpoints(decoded.body) > rules.MAX_BREAKPOINTS and decoded.tools:
        updates["tools"] = _tools_within_limit(
            decoded.tools,
            lambda n: ctx.record(
                "cache", "repair", -1, f"cache_control breakpoint of tools[{n}] dropped (at most 4)"
            ),
        )
    lost: list[str] = []
    out = an.encode(result.messages, decoded, updates, lost=lost)
    report = result.report
    record_lost(report, lost, "user message")
    if cache_breakpoints:
        out = _place_breakpoints(out, report)
    # The report judges what is sent: the output body, decoded again (positions are
    # the output body's messages).
    found = _validate_anthropic(out, settings.model)
    report.violations = [asdict(v) for v in found]
    report.notes = [n for n in report.notes if not n.startswith("rule not met: ")]
    report.notes += [
        f"rule not met: {v.rule} at {'request' if v.index < 0 else f'message {v.index}'} of the "
        f"output body: {v.error}"
        for v in found
    ]
    report.messages_before = len(native)
    report.messages_after = len(out["messages"])
    return RequestResult(out, report, result.messages)


def record_lost(report: Report, lost: Sequence[str], turn: str) -> None:
    """One action per unknown field the encoder could not keep (the edges' ``lost``)."""
    report.actions.extend(
        Action(
            "encode",
            "drop",
            -1,
            f"{place} left out: native messages written as one {turn} held different "
            "values of it, and one field holds one value (the later one was kept)",
        )
        for place in lost
    )


def _place_breakpoints(body: dict[str, Any], report: Report) -> dict[str, Any]:
    """Mark where the stable prefix ends (formats/anthropic_cache.py); one action each."""
    if rules.breakpoints(body) > rules.MAX_BREAKPOINTS:
        return body  # a body the repairs could not bring to 4: reported as AN-10, no more
    out, placed = cache.place(body)
    for spot in placed:
        report.actions.append(
            Action(
                "cache",
                "replace",
                -1,
                f"cache_control breakpoint placed on {spot.label()} ({spot.why}): the prefix "
                "up to it stays the same on the next request",
            )
        )
    return out


def govern_request(
    body: dict[str, Any],
    *,
    api: Api = "anthropic",
    profile: str | Profile | None = None,
    model: str | None = None,
    context_window: int | None = None,
    max_tool_result_chars: int | None = None,
    compaction: str | CompactionPolicy | None = None,
    count_tokens: Callable[[str], int] | None = None,
    cache_breakpoints: bool = True,
    windows: Mapping[str, int] | None = None,
    count_store: str | CountStore | CountLink | None = None,
) -> RequestResult:
    """Govern a whole request body in its own wire format; return a body of the same format.

    ``api`` is the body's format: "anthropic" (Messages API: ``system``, ``messages``
    of content blocks, ``tools``, ``max_tokens``, ``thinking``) or "openai" (Chat
    Completions). ``profile`` is the target's rules (default: the format's own
    provider; e.g. ``profile="glm"`` for an Anthropic-style client in front of GLM).
    ``model`` overrides the body's. The other settings are govern()'s.
    ``api="responses"``: an OpenAI Responses body (see responses_request.py).
    ``api="gemini"``: a Google Gen AI ``generateContent`` body (see gemini_request.py).

    What the pipeline need not understand (thinking blocks and signatures, images,
    documents, citations, server tools, unknown block types, fields and roles) is
    carried through untouched and counted. The input body is never modified.

    ``cache_breakpoints`` (Messages only): mark where the stable prefix ends with
    ``cache_control`` (formats/anthropic_cache.py; the client's own marks are kept
    and win), each mark reported. With it off, a body that needs nothing comes back
    equal (the same object).

    ``windows``: a table of model windows (``windows.window_table(...)``) used instead
    of the built-in one when ``context_window`` is not given. An output reserve
    (``max_tokens``, ``max_completion_tokens``, ``max_output_tokens``) the window
    cannot give beside the prompt is fitted: the prompt's budget keeps a floor for the
    answer, and the body sent asks for what the window leaves after the governed prompt,
    up to what was asked; reported (formats/reserve.py).
    Messages bodies are counted with the Claude estimate (tokens.claude_estimate)
    unless ``count_tokens`` is given.

    ``count_store``: where exact token counts persist between processes, as for
    govern() (count_store.py); used where the counter is an exact tokenizer (an
    estimate is cheaper to make than to look up).
    """
    checked = _check_api(api)
    body_model = model or (body.get("model") if isinstance(body, dict) else None)
    name = body_model if isinstance(body_model, str) else None
    from_table = None
    if context_window is None and windows is not None:
        from_table = known_window(name, window_table(windows))
    planned = reserve.plan(body, checked, _usable(context_window, from_table, name))
    sent = {**body, **planned.before()} if planned is not None else body
    result = _dispatch(
        checked,
        sent,
        profile,
        model,
        context_window if from_table is None else from_table,
        max_tool_result_chars=max_tool_result_chars,
        compaction=compaction,
        count_tokens=count_tokens,
        cache_breakpoints=cache_breakpoints,
        count_store=count_link(count_store),
    )
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
    found = planned.after(result.report.tokens_after)
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


def _dispatch(
    checked: str,
    body: Any,
    profile: str | Profile | None,
    model: str | None,
    context_window: int | None,
    *,
    max_tool_result_chars: int | None,
    compaction: str | CompactionPolicy | None,
    count_tokens: Callable[[str], int] | None,
    cache_breakpoints: bool,
    count_store: CountLink | None,
) -> RequestResult:
    settings: dict[str, Any] = {
        "context_window": context_window,
        "max_tool_result_chars": max_tool_result_chars,
        "compaction": compaction,
        "count_tokens": count_tokens,
        "count_store": count_store,
    }
    chosen = _DEFAULT_PROFILE[checked] if profile is None else profile
    if checked == "anthropic":
        return _govern_anthropic(
            body, chosen, model, cache_breakpoints=cache_breakpoints, **settings
        )
    if checked == "responses":
        from .responses_request import govern_responses  # it imports this module

        return govern_responses(body, chosen, model, **settings)
    if checked == "gemini":
        from .gemini_request import govern_gemini  # it imports this module

        return govern_gemini(body, chosen, model, **settings)
    return _govern_chat(body, chosen, model, **settings)


def validate_request(
    body: dict[str, Any],
    *,
    api: Api = "anthropic",
    provider: str | None = None,
    model: str | None = None,
) -> list[Violation]:
    """Every rule the body breaks, with the provider's error text.

    "openai": the rules of ``provider`` (default "openai") for the body's messages.
    "anthropic": the Messages API's own rules, whoever serves it (a compatible
    provider's Chat Completions rules, such as key filters or ``partial`` flags, are
    about another wire); ``provider`` must be None or "anthropic". These include the
    rules only a native body shows: thinking-mode rules (AN-9) and the breakpoint
    limit over tools, system and messages (AN-10). Indices are positions in the
    body's ``messages`` (-1: the request as a whole, or its ``system``).
    """
    checked = _check_api(api)
    if checked == "openai":
        messages, _, body_model, _ = _chat_settings(body)
        entry, target = resolve(provider or "openai", model or body_model)
        seen = rules_view(messages, entry.policy(target).legacy_functions, entry.name)
        return list(find_violations(entry.rules, seen, target))
    if checked == "responses":
        from .responses_request import validate_responses  # it imports this module

        return validate_responses(body, provider, model)
    if checked == "gemini":
        from .gemini_request import validate_gemini  # it imports this module

        return validate_gemini(body, provider, model)
    if provider not in (None, "anthropic"):
        raise ConfigError(
            f"a Messages body is checked against the Messages API's rules; got provider "
            f"{provider!r} (choose the target's repairs with govern_request(profile=...))"
        )
    return _validate_anthropic(body, model)


def _validate_anthropic(body: Any, model: str | None) -> list[Violation]:
    decoded = an.decode(body)
    check_messages(decoded.messages)
    entry, target = resolve("anthropic", model or decoded.model)
    found = [
        replace(v, index=decoded.native_index(decoded.messages[v.index]) if v.index >= 0 else -1)
        for v in find_violations(entry.rules, decoded.messages, target)
        if v.rule != "AN-10"
    ]
    return found + rules.native_violations(decoded.body, target)
