"""govern_request() and validate_request(): a whole request body, in its own wire format.

One pipeline for every format: the edge decodes the body into the chat messages
the stages govern (carrying what they need not understand), the profile's
stages run as for govern(), and the edge encodes the result back into a body of
the same format. The request's own settings drive the run: ``max_tokens`` is the
output reserve, ``model`` the target, a trailing assistant message a prefill,
and (Anthropic) ``thinking`` selects the thinking-mode rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any, Literal

from ..errors import ConfigError, InputError
from ..inputs import check_messages
from ..messages import Message
from ..pipeline import resolve_settings, run
from ..policies import CompactionPolicy
from ..profiles import Profile, get_profile
from ..providers import resolve
from ..providers.policy import Policy
from ..providers.rules import Violation, find_violations
from ..report import Report
from ..tokens import TokenCounter
from . import anthropic as an
from . import anthropic_rules as rules

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
    messages = check_messages(body.get("messages"))
    output = body.get("max_completion_tokens", body.get("max_tokens"))
    if output is not None and (
        isinstance(output, bool) or not isinstance(output, int) or output < 0
    ):
        raise InputError(
            "max_completion_tokens", f"expected a non-negative integer, got {output!r}"
        )
    return messages, body.get("tools"), body.get("model"), output


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
    result, _ = run(messages, settings)
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
    limit (whoever serves it), less the tools' breakpoints; and no chat-level key
    filter (it is about the Chat Completions wire; the edge writes only Messages
    fields, and the filter would strip what each message carries)."""
    room = max(0, rules.MAX_BREAKPOINTS - rules.tool_breakpoints(decoded.body))
    return replace(policy, max_cache_control=room, allowed_keys=None)


def _govern_anthropic(
    body: Any, profile: str | Profile, model: str | None, **kw: Any
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
    counter = _CarryCounter(settings.counter, decoded.extra)
    result, ctx = run(decoded.messages, settings, counter)
    updates: dict[str, Any] = {}
    if ctx.scratch.get("disable_thinking"):
        updates["thinking"] = {"type": "disabled"}
    if rules.tool_breakpoints(decoded.body) > rules.MAX_BREAKPOINTS and decoded.tools:
        updates["tools"] = _tools_within_limit(
            decoded.tools,
            lambda n: ctx.record(
                "cache", "repair", -1, f"cache_control breakpoint of tools[{n}] dropped (at most 4)"
            ),
        )
    out = an.encode(result.messages, decoded, updates)
    report = result.report
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
    carried through untouched and counted; a body that needs nothing comes back
    equal (the same object). The input body is never modified.
    """
    checked = _check_api(api)
    settings: dict[str, Any] = {
        "context_window": context_window,
        "max_tool_result_chars": max_tool_result_chars,
        "compaction": compaction,
        "count_tokens": count_tokens,
    }
    chosen = _DEFAULT_PROFILE[checked] if profile is None else profile
    if checked == "anthropic":
        return _govern_anthropic(body, chosen, model, **settings)
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
        return list(find_violations(entry.rules, messages, target))
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
