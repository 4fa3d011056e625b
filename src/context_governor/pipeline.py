"""govern(): run a profile's stages over a history and report what changed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from .counting import (
    ExactCounter,
    Known,
    KnownCounts,
    TokenCounter,
    custom_counter,
    media_note,
    media_rule_for,
)
from .counting.pool import precount
from .counting.store import CountLink, CountStore, Loaded, count_link
from .errors import ConfigError, InputError, brief
from .messages import Message
from .messages.inputs import check_messages, check_tools, unserializable_path
from .messages.legacy import first_legacy, refusal
from .messages.roles import Developers, first_edge, with_entries
from .policies import Compaction, CompactionPolicy, get_policy
from .profiles import Profile, get_profile
from .providers import Provider, find_violations, resolve
from .providers.windows import WindowSource, resolve_window
from .report import Action, Note, Report, moves_messages
from .stages import SAFETY_BUFFER, Context, Stage, compaction_cost, would_compact
from .targets import Policy, Target

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "MAX_RESNIPS",
    "MIN_TOOL_RESULT_CHARS",
    "GovernResult",
    "Settings",
    "call_counter",
    "context",
    "fit_summary_input",
    "govern",
    "resolve_settings",
    "run",
    "run_checked",
    "store_counts",
    "with_developers",
]

DEFAULT_MAX_OUTPUT = 4096
#: Below this, a truncation marker would not fit inside the cap.
MIN_TOOL_RESULT_CHARS = 100


@dataclass(frozen=True, slots=True)
class GovernResult:
    """The model-facing copy and the report of how it was made.

    ``messages`` is the input list itself when nothing changed; otherwise a new
    list whose unchanged messages are the input's own dicts. Treat it as
    read-only, like the history it came from.
    """

    messages: list[Message]
    report: Report


def _resolve_max_output(value: Any, profile: Profile) -> int:
    if profile.lenient_max_output:
        # The seed: an int (bools included) is used as given, anything else means 4096.
        return value if isinstance(value, int) else DEFAULT_MAX_OUTPUT
    if value is None:
        return DEFAULT_MAX_OUTPUT
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"max_output must be a non-negative integer, got {brief(value)}")
    return value


def _check_window(context_window: Any, profile: Profile) -> int | None:
    if context_window is None:
        return None
    if profile.zero_window_is_none and context_window == 0 and type(context_window) is int:
        return None  # the seed: a window of 0 means "no window", so nothing is snipped
    if (
        isinstance(context_window, bool)
        or not isinstance(context_window, int)
        or context_window <= 0
    ):
        raise ConfigError(f"context_window must be a positive integer, got {brief(context_window)}")
    return context_window


def _check_cap(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_TOOL_RESULT_CHARS:
        raise ConfigError(
            f"max_tool_result_chars must be an integer >= {MIN_TOOL_RESULT_CHARS}, "
            f"got {brief(value)}"
        )
    return value


def _run(stages: Sequence[Stage], messages: list[Message], ctx: Context) -> list[Message]:
    for stage in stages:
        messages = stage(messages, ctx)
    return messages


def _governed(
    profile: Profile, messages: list[Message], ctx: Context
) -> tuple[list[Message], list[Message]]:
    """The profile's stages, with the seed's fallback (minimal repair, then the input as
    is), then its finishing stages. Returns the list before and after finishing."""
    prepared = _run(profile.prepare, messages, ctx)
    mark = len(ctx.actions)
    try:
        out = _run(profile.stages, prepared, ctx)
    except Exception as exc:  # a bug must not cost the caller its model call
        del ctx.actions[mark:]
        ctx.record(PIPELINE, "fallback", 0, f"governance failed ({exc!r}); minimal repair used")
        try:
            out = _run(profile.fallback, prepared, ctx)
        except Exception as exc2:
            ctx.record(PIPELINE, "fallback", 0, f"minimal repair failed too ({exc2!r}); sent as is")
            out = prepared
    mark = len(ctx.actions)
    try:
        return out, _run(profile.finish, out, ctx)
    except Exception as exc:
        del ctx.actions[mark:]
        ctx.record(PIPELINE, "fallback", 0, f"final pass failed ({exc!r}); skipped")
        return out, out


#: The pipeline's own actions (a fallback when governance fails: the list is repaired
#: minimally, so positions move).
PIPELINE = moves_messages("pipeline")
#: How often snip is rerun with a smaller budget when provider repairs outgrow it.
MAX_RESNIPS = 3


def _fit(
    profile: Profile, messages: list[Message], ctx: Context, budget: int | None
) -> tuple[list[Message], Context]:
    """Govern; if the cache policy would compact the output when it is governed again
    (it sees the finishing repairs: ids, placeholders, bridges), compact now; if those
    repairs push a list that met the budget over it, snip again with the overshoot taken
    off the budget. Both keep the output a fixed point of govern()."""
    governed_before, governed = _governed(profile, messages, ctx)
    if profile.provider is None or budget is None or budget <= 0:
        return governed, ctx
    counter, tools, target_budget = ctx.counter, ctx.tools, budget

    def sizes() -> tuple[int, int]:
        """Tokens of the list before and after the finishing repairs (counted once per
        governed pass, for both the trigger check and the resnip loop)."""
        return counter.prompt_tokens(governed_before, tools), counter.prompt_tokens(governed, tools)

    before, after = sizes()
    if _compacts_again(ctx, governed, budget):
        # Governing the output again would compact it (the repairs carry it over the
        # trigger, or past the budget, where the minimum savings no longer hold it back):
        # compact now, so that the output is a fixed point.
        ctx = ctx.fresh(compact_final=True)
        governed_before, governed = _governed(profile, messages, ctx)
        ctx.notes.append(
            Note(
                f"cache policy: compacted at this request because the provider repairs "
                f"({after - before:+} tokens) carry it where the next request would compact",
                "cache",
            )
        )
        before, after = sizes()
    for _ in range(MAX_RESNIPS):
        if after <= budget or before > target_budget:
            break
        # the kept list must shrink by the overshoot: from what it is (``before``, often
        # under the target), not from the target, which a list of whole messages may
        # already undercut by more than the overshoot (then nothing would change)
        target_budget = min(target_budget, before) - (after - budget)
        retry = replace(ctx, budget=target_budget, actions=[], notes=[])
        governed_before, governed = _governed(profile, messages, retry)
        retry.notes.append(
            f"snipped to {target_budget} tokens to leave room for the provider repairs"
        )
        ctx = retry
        before, after = sizes()
    ctx.budget = budget
    return governed, ctx


def _compacts_again(ctx: Context, governed: list[Message], budget: int) -> bool:
    """Whether the cache policy would compact ``governed`` (this pass's output) when it is
    governed again, although this pass did not compact at this request: the replay of the
    output counts the finishing repairs (ids, placeholders, bridges), this pass's did not."""
    replay = ctx.replay
    if replay is None or replay.compacted_now():
        return False  # the cache policy did not run, or compacted at this request already
    return would_compact(governed, ctx, budget)


def govern(
    messages: list[Message],
    *,
    tools: list[dict[str, Any]] | None = None,
    profile: str | Profile = "openai",
    model: str | None = None,
    context_window: int | None = None,
    max_output: int | None = None,
    max_tool_result_chars: int | None = None,
    prefill: bool = False,
    compaction: str | Compaction | None = None,
    count_tokens: Callable[[str], int] | None = None,
    count_store: str | CountStore | CountLink | None = None,
) -> GovernResult:
    """Return a model-facing copy of ``messages`` that is legal and inside the budget.

    The budget is ``context_window - max_output - 1024`` (the seed's safety
    buffer). ``context_window=None`` means the model's published window when
    ``model`` is a well-known one (see providers/windows.py), else no window: nothing is cut
    and ``report.window_source`` is "none" (the nanobot profile reads 0 so too, as
    the seed does). ``messages`` and the dicts in it are never modified.

    ``profile`` is a provider name (openai, anthropic, gemini, bedrock, mistral,
    deepseek, glm, qwen, moonshot, groq, ollama, vllm) or ``nanobot``; ``model``
    selects the tokenizer and the model-specific rules. ``prefill=True`` keeps a
    trailing assistant message as a prefill where the model accepts one.

    ``compaction`` is how the budget is spent by the provider profiles: "cache"
    (default: compact rarely and in big steps, so the provider's prompt cache keeps
    hitting), "seed" (Nanobot's microcompact + snip on every call) or a
    CompactionPolicy with your own trigger, target, placeholder, offload directory...
    The nanobot profile always uses the seed's.

    ``count_tokens`` is a provider's own counter (``text -> tokens``) to use instead
    of the offline tiktoken encodings (see counting.custom_counter).

    ``count_store`` keeps exact token counts between processes (a URL such as
    ``sqlite:///counts.db`` or ``redis://host:6379/0``, or a store object; see
    counting/store.py): counts it has are not made again, counts it lacks are written
    back off the call's path. It never changes a count; a failing store is reported
    in the notes and counting goes on without it.

    Raises InputError for input no repair can fix (not a list, a message that is
    not an object, an unknown role, ...) and ConfigError for unusable settings.
    """
    settings = resolve_settings(
        profile=profile,
        tools=tools,
        model=model,
        context_window=context_window,
        max_output=max_output,
        max_tool_result_chars=max_tool_result_chars,
        prefill=prefill,
        compaction=compaction,
        count_tokens=count_tokens,
        count_store=count_store,
    )
    check_messages(messages, legacy=True)
    return run_checked(messages, settings)


def run_checked(messages: list[Message], settings: Settings) -> GovernResult:
    """Govern checked ``messages`` as govern() does, the edge for developer messages
    included (messages/roles.py): every caller that holds a checked message list and resolved
    settings (govern(), govern_request's Chat Completions edge) goes through here."""
    if first_edge(messages) is not None:
        return with_developers(messages, settings, lambda decoded: run(decoded, settings)[0])
    return run(messages, settings)[0]


def with_developers(
    messages: list[Message],
    s: Settings,
    govern_decoded: Callable[[list[Message]], GovernResult],
    developers: Developers | None = None,
    relabel: Callable[[GovernResult, list[Message], list[Action]], GovernResult] | None = None,
) -> GovernResult:
    """Govern a history that holds developer messages: the stages get system-role copies,
    and the output sends them as they came where the provider takes the role (messages/roles.py).
    ``developers`` keeps the copies across calls (a Governor's); ``relabel`` makes the
    result from the inner one, the list to send and the edge's report entries (a
    Governor's results may make their report later; by default it is made now)."""
    developers = Developers() if developers is None else developers
    if not s.policy.legacy_functions:  # where the form is taken, the edge finds it alone
        legacy = first_legacy(messages)
        if legacy is not None:
            raise refusal(legacy, s.provider.name)
    decoded, positions = developers.decode(messages)
    result = govern_decoded(decoded)
    accepted = s.profile.provider is None or s.policy.developer_role
    sent, actions = developers.encode(
        result.messages, messages, decoded, positions, accepted, s.provider.name
    )
    if sent is result.messages and not actions:
        return result
    if relabel is None:
        return GovernResult(sent, with_entries(result.report, actions))
    return relabel(result, sent, actions)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything govern() resolves from its arguments, once (a Governor keeps it)."""

    profile: Profile
    tools: Sequence[dict[str, Any]] | None
    model: str | None
    window: int | None
    max_output: int
    cap: int | None
    compaction: Compaction
    budget: int | None
    prefill: bool
    provider: Provider
    target: Target
    policy: Policy
    counter: TokenCounter
    #: "given", "model" (the model's known window) or "none"
    window_source: WindowSource = "given"
    #: where exact counts persist between processes (counting/store.py), or None
    count_store: CountLink | None = None


def resolve_settings(
    *,
    profile: str | Profile = "openai",
    tools: list[dict[str, Any]] | None = None,
    model: str | None = None,
    context_window: int | None = None,
    max_output: int | None = None,
    max_tool_result_chars: int | None = None,
    prefill: bool = False,
    compaction: str | Compaction | None = None,
    count_tokens: Callable[[str], int] | None = None,
    count_store: str | CountStore | CountLink | None = None,
) -> Settings:
    """Check and resolve govern()'s settings; ConfigError/InputError on unusable ones."""
    prof = get_profile(profile)
    checked_tools = check_tools(tools)
    checked_window = _check_window(context_window, prof)
    window: int | None
    window_source: WindowSource
    if checked_window is None and context_window is not None:
        window, window_source = None, "none"  # nanobot's 0: explicitly no window
    else:
        window, window_source = resolve_window(checked_window, model)
    out_tokens = _resolve_max_output(max_output, prof)
    cap = _check_cap(max_tool_result_chars)
    compaction_policy = get_policy(compaction)
    budget = None if window is None else window - out_tokens - SAFETY_BUFFER
    # govern() is given the request's tools: None is a request that declares none.
    has_tools = bool(checked_tools)
    entry, target = resolve(prof.provider or "openai", model, prefill=prefill, has_tools=has_tools)
    # the cache prices of the target tune the trigger (policies.price_scale)
    if isinstance(compaction_policy, CompactionPolicy):
        compaction_policy = compaction_policy.priced(target.provider, target.model)
    return Settings(
        profile=prof,
        tools=checked_tools,
        model=model,
        window=window,
        max_output=out_tokens,
        cap=cap,
        compaction=compaction_policy,
        budget=budget,
        prefill=prefill,
        provider=entry,
        target=target,
        policy=entry.policy(target),
        counter=_counter(prof, model, count_tokens),
        window_source=window_source,
        count_store=count_link(count_store),
    )


def _counter(
    profile: Profile, model: str | None, count_tokens: Callable[[str], int] | None
) -> TokenCounter:
    if count_tokens is None:
        return profile.counter(model)
    if not callable(count_tokens):
        raise ConfigError(f"count_tokens must be a callable text -> int, got {count_tokens!r}")
    return custom_counter(count_tokens, media=media_rule_for(profile.provider), model=model)


def context(s: Settings, counter: TokenCounter) -> Context:
    """The Context a call with these settings starts from (run() and probe.leaves_alone)."""
    return Context(
        counter=counter,
        tools=s.tools,
        budget=s.budget,
        max_tool_result_chars=s.cap,
        target=s.target,
        policy=s.policy,
        keep_prefill=s.prefill and s.policy.prefill(s.target),
        compaction=s.compaction,
        fit_summary_input=fit_summary_input,
    )


#: How a summarizer's input is fitted to its budget: nothing is compacted before the
#: input is over the budget, and then only down to it (the summary covers the rest).
_SUMMARY_INPUT_POLICY = CompactionPolicy(trigger=1.0, target=1.0, min_savings=0)


def fit_summary_input(messages: list[Message], tokens: int) -> tuple[list[Message], Report]:
    """A summarizer's input governed to its own budget of ``tokens`` (a governed call
    like any other, Chat Completions rules, no output reserve): the fitted messages and
    that call's report. The summary stage gets it through Context.fit_summary_input."""
    result = govern(
        messages,
        profile="openai",
        context_window=tokens + SAFETY_BUFFER,
        max_output=0,
        compaction=_SUMMARY_INPUT_POLICY,
    )
    return result.messages, result.report


def call_counter(s: Settings, messages: Sequence[Message]) -> tuple[TokenCounter, Loaded | None]:
    """The counter one call counts with, and what it read from the count store.

    An exact counter is wrapped to count each message object once per call (the stages
    ask many times), seeded with the counts the store has for ``messages`` (then only
    what is new is tokenized) and, on a big history, with counts made over worker
    processes (counting/pool.py). Other counters are the settings' own. The wire-format
    edges wrap the result with what they carry (formats/_request.py)."""
    counter = s.counter
    if not isinstance(counter, ExactCounter):
        return counter, None
    loaded = None if s.count_store is None else s.count_store.read(counter, messages, s.tools)
    known = Known() if loaded is None else loaded.known
    precount(counter, messages, known)  # a big history: spread over other cores
    return KnownCounts(counter, known), loaded


def store_counts(s: Settings, counter: TokenCounter, loaded: Loaded | None, report: Report) -> None:
    """After a call that read the count store (``counter`` and ``loaded`` from
    call_counter): write the counts it made back, off the call's path, and report a
    failed read in the notes. Nothing when nothing was read."""
    if loaded is None or s.count_store is None or not isinstance(counter, KnownCounts):
        return
    s.count_store.write_later(counter.inner, loaded, counter.known)
    if loaded.note is not None:
        report.notes.append(loaded.note)


def _media_note(counter: TokenCounter, messages: list[Message]) -> str | None:
    """The report's line on the media sent, when the counter counts media by a rule (our
    exact counters, however wrapped; the seed's counts it as text, as the seed does)."""
    inner: Any = counter
    while not isinstance(inner, ExactCounter) and hasattr(inner, "inner"):
        inner = inner.inner
    if not isinstance(inner, ExactCounter):
        return None
    return media_note(messages, inner.media, inner.model)


def run(
    messages: list[Message], s: Settings, counter: TokenCounter | None = None
) -> tuple[GovernResult, Context]:
    """Govern checked ``messages`` with resolved settings; also return the final Context
    (what the stages left there, e.g. the compaction replay, is what a Governor reuses).
    ``counter`` overrides the settings' counter (a Governor's per-message cache)."""
    loaded: Loaded | None = None
    if counter is None:
        counter, loaded = call_counter(s, messages)
    entry = s.provider
    ctx = context(s, counter)
    try:
        tokens_before = counter.prompt_tokens(messages, s.tools)
        governed, ctx = _fit(s.profile, messages, ctx, s.budget)
    except (TypeError, ValueError) as exc:
        # Only values JSON cannot carry get here (bytes, sets, objects): say where.
        where = unserializable_path(messages, "messages") or unserializable_path(s.tools, "tools")
        if where is None:
            raise
        raise InputError(where, f"not JSON-serializable ({exc})") from None

    budget = s.budget
    report = Report(
        profile=s.profile.name,
        counter=counter.name,
        context_window=s.window,
        window_source=s.window_source,
        max_output=s.max_output,
        budget=budget,
        tokens_before=tokens_before,
        tokens_after=counter.prompt_tokens(governed, s.tools),
        messages_before=len(messages),
        messages_after=len(governed),
        actions=ctx.actions,
        notes=ctx.notes,
        provider=entry.name,
        model=s.model,
    )
    report.compaction_cost = compaction_cost(ctx.replay, governed, ctx.tokens)
    if s.profile.provider is not None:
        report.violations = [asdict(v) for v in find_violations(entry.rules, governed, s.target)]
        report.notes += [
            Note(
                f"rule not met: {v['rule']} at message {v['index']} of the output: {v['error']}",
                "rule",
            )
            for v in report.violations
        ]
    media = _media_note(counter, governed)
    if media is not None:
        report.notes.append(media)
    if messages and not governed:
        report.notes.append(
            "nothing left to send: no message of this history can be sent on its own "
            "(e.g. tool results whose calls are not in it)"
        )
    store_counts(s, counter, loaded, report)
    if s.prefill and not ctx.keep_prefill:
        report.notes.append(
            f"prefill asked for, but {entry.name} {s.model or ''} does not accept one"
        )
    if budget is not None and budget <= 0:
        report.notes.append(
            f"budget is {budget} (context window {s.window} - max output {s.max_output} - "
            f"{SAFETY_BUFFER} safety buffer): nothing can fit, so nothing was snipped"
        )
    elif budget is not None and report.tokens_after > budget:
        report.notes.append(
            f"over budget by {report.tokens_after - budget} tokens "
            f"({report.tokens_after} > {budget})"
        )
    return GovernResult(messages=governed, report=report), ctx
