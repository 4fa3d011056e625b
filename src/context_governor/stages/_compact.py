"""Cache-stable compaction: clear old tool results and cut old turns rarely, in big steps.

The decision is replayed from the history itself. Every assistant message in the
history marks a request that was sent (the history up to it), and the end of the
history is the request being made now. Walking those requests in order with the
policy's hysteresis (nothing happens under ``trigger`` × budget; above it,
compact down to ``target`` × budget) gives the same cut and the same cleared
results that a long-lived process would have reached, with no state kept
anywhere: the same history always gives the same request, and between two
compactions each request only appends to the previous one, which is what the
provider's prompt cache rewards.

What the model sees of a cut: it starts at a user message, so every kept answer
keeps the request it answers (GLM also rejects system→assistant); only a turn too
long to keep whole is cut inside it, after its user message, at an assistant
message (never between a call and its results). That user message is the one
pinned message behind the cut; an older pin is released when a later cut passes
its turn, so old prompts do not pile up in the head. Where the verbatim floor may
apply (dear cached reads), cuts are judged as the replay of the output will judge
them: there the first kept turn's user message joins the task's, so that turn may
be cut inside too, its user message pinned (Replay._join_owner). One note, whose
text depends on the cut alone, says where and how much was removed; it rides in a
user message (see CutNote) and its tokens are part of the replayed totals.

A model that takes one tool call per turn (Llama 3.x) gets each parallel call as
single-call turns; the plan is made on those turns (stages/_single_call.py), as a
second pass over the output would see them, so a cut inside a long turn may fall
between two calls of one message. compact() maps it back: the calls before the cut
leave their message with their results, and the report names the caller's indices.

The walk costs O(n) integer work over cached per-message token counts.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import replace

from ..counting import is_media_part
from ..messages import Message
from ..policies import CompactionPolicy, SeedPolicy, settings_of
from ..report import CompactionCost, Note
from ._base import Context
from ._cap import capped
from ._media_mask import masked_media
from ._microcompact import microcompact
from ._offload import offload as _offload
from ._replay import (
    CutNote,
    Plan,
    Replay,
    call_of,
    content_chars,
    last_user_before,
    masks_media,
    noted,
    placeholder_for,
    replay_history,
)
from ._single_call import keep_from, sent_view
from ._snip import snip
from ._squeeze import overflow_note, squeeze
from ._summary import SUMMARY_SLACK, summary_note, summary_room

__all__ = [
    "STAGE",
    "clear_stage",
    "compact",
    "compaction_cost",
    "fit_stage",
    "output_replay",
    "plan_replay",
    "would_compact",
]

STAGE = "compact"


def _policy(ctx: Context) -> CompactionPolicy:
    return settings_of(ctx.compaction)


def _seed(ctx: Context) -> bool:
    return isinstance(ctx.compaction, SeedPolicy)


def clear_stage(messages: list[Message], ctx: Context) -> list[Message]:
    """Where the seed microcompacts (before the size cap): the seed policy does it here."""
    if _seed(ctx):
        return microcompact(messages, ctx, repaired_names=True)
    return messages


def fit_stage(messages: list[Message], ctx: Context) -> list[Message]:
    """Where the seed snips: the cache policy compacts first; a request still over its
    budget is squeezed (results of the newest turn cleared, then truncated), then snip
    is the safety net, and what keeps it over after all that is named."""
    if _seed(ctx):
        return snip(messages, ctx)
    messages = snip(squeeze(compact(messages, ctx), ctx), ctx)
    overflow_note(messages, ctx)
    return messages


def plan_replay(
    messages: list[Message],
    tokens: list[int],
    ctx: Context,
    budget: int,
    counted: list[bool] | None = None,
) -> Replay:
    """The cache policy's replay over ``messages`` (``tokens``: their counts) with the
    context's settings: what compact() applies, and what pipeline._fit asks of a
    governed output to tell whether a second pass would compact it. ``counted``: see
    _cut_note."""
    policy = _policy(ctx)
    placeholders: dict[int, int] = {}  # the replay asks for some many times
    # a Governor's, kept across its runs: a placeholder depends on its message alone
    # (and the policy, the Governor's own), unless a digest may read the call too
    kept = None if policy.digest else getattr(ctx.counter, "placeholders", None)

    def placeholder_tokens(i: int) -> int:
        count = placeholders.get(i)
        if count is None:
            source = messages[i]
            count = None if kept is None else kept.get(id(source))
            if count is None:
                count = ctx.made_tokens(_placeholder(messages, i, policy))
                if kept is not None:
                    kept.add(source, count)
            placeholders[i] = count
        return count

    notes: dict[CutNote, int] = {}  # the replay weighs each note twice

    def note_tokens(note: CutNote, message: Message | None) -> int:
        # ``message`` is the one at ``note.at`` (None for an inserted note): the note says it
        count = notes.get(note)
        if count is not None:
            return count
        text = None if policy.summary is None else summary_room(note, policy.summary)
        extra = ctx.made_tokens(noted(note, policy, message, text))
        if policy.summary is not None:
            extra += policy.summary.max_tokens + SUMMARY_SLACK
        count = notes[note] = extra if message is None else extra - ctx.tokens(message)
        return count

    return replay_history(
        messages,
        tokens,
        placeholder_tokens,
        ctx.counter.prompt_tokens([], ctx.tools),
        budget,
        policy,
        note_tokens,
        ctx.compact_final,
        counted,
        lambda m, i: ctx.made_tokens(_placeholder(m, i, policy)),
    )


def _placeholder(messages: list[Message], i: int, policy: CompactionPolicy) -> Message:
    """The cleared form of ``messages[i]`` as the replay counts it."""
    return placeholder_for(messages[i], policy, call=call_of(messages, i, policy))


def would_compact(messages: list[Message], ctx: Context, budget: int) -> bool:
    """Whether compact() would change ``messages`` (a governed output) with this budget.
    Cheap when it would not: no request of the history is over the trigger when the
    whole history is not."""
    policy = _policy(ctx)
    if _seed(ctx) or budget <= 0 or not messages:
        return False
    tokens = [ctx.tokens(m) for m in messages]
    fixed = ctx.counter.prompt_tokens([], ctx.tools)
    if fixed + sum(tokens) <= policy.thresholds(budget)[0]:
        return False
    replay = output_replay(messages, tokens, ctx, budget)
    plan = replay.plan
    if plan.cleared or plan.cut != plan.head:
        return True
    # the replay of the output, for a Governor: where the floor holds a request over the
    # trigger, its next steps must show that this replay does not compact either
    ctx.output_replay = replay
    return False


def output_replay(messages: list[Message], tokens: list[int], ctx: Context, budget: int) -> Replay:
    """The replay ``would_compact`` makes of a governed output (``tokens``: its counts):
    the context's counter, tools and policy, nothing else of the context."""
    plain = Context(counter=ctx.counter, tools=ctx.tools, budget=budget, compaction=_policy(ctx))
    return plan_replay(messages, tokens, plain, budget)


def _one_call_per_turn(ctx: Context) -> bool:
    return ctx.policy is not None and ctx.policy.single_tool_call


def compact(messages: list[Message], ctx: Context) -> list[Message]:
    """Apply the cache policy's plan: cut the oldest turns after the head, say so where
    the history was cut, and replace the cleared results by placeholders. Everything
    done is an action in the report.

    For a model that takes one call per turn, the plan is made on the history as that
    model gets it (stages.single_call: each parallel call split into single-call turns),
    since that is what a second pass sees: a turn too long to keep whole can then be cut
    between its calls. The cut is applied to ``messages`` themselves (the calls before it
    leave their message with their results) and reported at their own indices."""
    policy, budget = _policy(ctx), ctx.budget
    if budget is None or budget <= 0 or not messages:
        return messages
    view = sent_view(messages) if _one_call_per_turn(ctx) else None
    seen = messages if view is None else view.messages
    tokens = [ctx.tokens(m) for m in seen]
    replay = plan_replay(seen, tokens, ctx, budget, None if view is None else view.counted())
    ctx.replay = replay
    plan = replay.plan
    if not plan.cleared and plan.cut == plan.head:
        return messages
    at: Callable[[int], int] = (lambda v: v) if view is None else view.at
    out: list[Message] = []
    #: per message of ``out``: the caller's index it comes from (None: an inserted note)
    sources: list[int | None] = []
    cleared_calls: set[str] = set()
    note = plan.note
    text = None
    if note is not None and policy.summary is not None:
        mark = len(ctx.actions)
        text = summary_note(seen, plan, note, policy.summary, ctx)
        # its actions name positions of what it read: the caller's indices, as ours do
        ctx.actions[mark:] = [replace(a, index=at(a.index)) for a in ctx.actions[mark:]]
        if text is None and policy.cut_note is None:
            note = None  # no summary to be had, and the plain note is off
    cut_count = 0
    starts = [c for c, _ in plan.cuts]  # what _when searches, made once for every cut message
    for i, message in enumerate(messages):
        turns = [i] if view is None else view.where[i]
        kept = [v for v in turns if plan.kept(v, seen[v])]
        if not kept:
            cut_count += 1
            ctx.record(
                STAGE,
                "drop",
                i,
                f"old turn cut (compaction at message {at(_when(plan, turns[-1], starts))})",
                tool_call_id=message.get("tool_call_id"),
                tokens_saved=ctx.tokens(message),
            )
            continue
        if note is not None and note.at == kept[0]:
            message = _place_note(note, i, message, policy, plan, ctx, out, text, at)
            sources += [None] * (len(out) - len(sources))  # the note's own message, if any
        if len(kept) < len(turns) and view is not None:
            message = _cut_calls(i, message, view.turn[kept[0]], plan, ctx, at)
        v = kept[0]
        if v in plan.cleared and masks_media(message, policy):
            message = _masked(i, message, policy, ctx, at(plan.cleared[v]))
        elif v in plan.cleared:
            replaced = _cleared(message, policy, ctx, seen, v)
            if view is None and message is seen[v] and policy.offload_dir is None:
                # the very message the replay weighed as this placeholder: its count
                ctx.know(replaced, replay.ph(v))
            cleared_calls.add(str(message.get("tool_call_id")))
            newer = plan.superseded.get(v)
            stale = "" if newer is None else f": the same call is repeated at message {at(newer)}"
            ctx.record(
                STAGE,
                "replace",
                i,
                f"old {message.get('name') or 'tool'} result "
                f"({content_chars(message.get('content'))} chars) cleared{stale} "
                f"(compaction at message {at(plan.cleared[v])})",
                tool_call_id=message.get("tool_call_id"),
                tokens_saved=ctx.tokens(message) - ctx.tokens(replaced),
            )
            message = replaced
        out.append(message)
        sources.append(i)
    if policy.clear_arguments and cleared_calls:
        out = _clear_arguments(out, sources, cleared_calls, ctx)
    if plan.head < plan.cut < len(seen) and seen[plan.cut].get("role") != "user":
        owner = plan.pinned if plan.pinned is not None else last_user_before(seen, plan.head)
        kept_text = (
            f"its user message (message {at(owner)}) is kept"
            if owner >= 0
            else "no user message precedes it, so the note on the cut is one"
        )
        ctx.notes.append(
            Note(
                f"cache policy: one turn was too long to keep whole, so the cut is inside it: "
                f"{kept_text} and the turn resumes at message {at(plan.cut)}",
                "cache",
            )
        )
    cleared = [i for i in plan.cleared if i >= plan.cut]
    masked = sum(1 for i in cleared if masks_media(seen[i], policy))
    media = f", media of {masked} messages masked" if masked else ""
    ctx.notes.append(
        Note(
            f"cache policy: {len(plan.compactions)} compaction(s), the last at message "
            f"{at(plan.compactions[-1])}; {len(cleared) - masked} tool results cleared{media}, "
            f"{cut_count} messages cut",
            "cache",
        )
    )
    return out


def compaction_cost(
    replay: Replay | None, governed: list[Message], tokens: Callable[[Message], int]
) -> CompactionCost | None:
    """What the compaction at the request ``replay`` stands at costs and gains (None: it
    made none): ``governed`` is the output, ``tokens`` counts one of its messages. The
    first edit is the call of the oldest result it cleared (clearing may empty the
    call's arguments too), or, when it cut turns, the first message after the head."""
    if replay is None or not replay.compacted_now():
        return None
    now = replay.clearing().now
    first = None
    if now is not None:
        first = next(
            (
                k
                for k, message in enumerate(governed)
                if message.get("role") == "assistant"
                and any(
                    isinstance(call, dict) and call.get("id") == now
                    for call in message.get("tool_calls") or ()
                )
            ),
            None,
        )
    if first is None:
        first = min(replay.plan.head, len(governed))
    rewritten = sum(tokens(message) for message in governed[first:])
    return CompactionCost(first, rewritten, replay.saved_now)


def _cut_calls(
    index: int,
    message: Message,
    first: int,
    plan: Plan,
    ctx: Context,
    at: Callable[[int], int],
) -> Message:
    """``message`` (a parallel call the cut is inside) without its calls before ``first``,
    whose results the cut removes too. Reported as a replacement at ``index``."""
    trimmed = keep_from(message, first)
    ctx.record(
        STAGE,
        "replace",
        index,
        f"the cut is inside this parallel call (sent one call per turn): its first {first} "
        f"of {len(message['tool_calls'])} calls cut with their results, the rest kept "
        f"(compaction at message {at(_when(plan, plan.cut - 1))})",
        tokens_saved=ctx.tokens(message) - ctx.tokens(trimmed),
    )
    return trimmed


def _place_note(
    note: CutNote,
    index: int,
    message: Message,
    policy: CompactionPolicy,
    plan: Plan,
    ctx: Context,
    out: list[Message],
    text: str | None = None,
    at: Callable[[int], int] = lambda v: v,
) -> Message:
    """Put the note on the cut (or the summary ``text`` in its place): as its own user
    message before ``message`` (appended to ``out``), or folded into ``message``, which
    is returned. Reported either way, at ``index`` (``message``'s own)."""
    when = at(_when(plan, plan.cut - 1))
    what = "note" if text is None else "summary"
    if note.receipt:
        _report_receipt(note, when, ctx)
    if note.how == "insert":
        inserted = noted(note, policy, None, text)
        out.append(inserted)
        ctx.record(
            STAGE,
            "insert",
            index,
            f"{what} where older history was cut: {note.messages} messages removed "
            f"(compaction at message {when})",
            tokens_saved=-ctx.tokens(inserted),
        )
        return message
    folded = noted(note, policy, message, text)
    where = "before" if note.how == "prepend" else "after"
    ctx.record(
        STAGE,
        "replace",
        index,
        f"{what} on the cut added {where} this user message's text: {note.messages} "
        f"older messages removed (compaction at message {when})",
        tokens_saved=ctx.tokens(message) - ctx.tokens(folded),
    )
    return folded


def _report_receipt(note: CutNote, when: int, ctx: Context) -> None:
    """Say that the note carries a receipt (stages/_receipt.py) and its size: it is part of
    the request the budget pays for, and the user may want to know what it lists."""
    lines = note.receipt.count("\n") - 1  # its head and tail are frame
    tokens = ctx.made_tokens({"role": "user", "content": note.receipt})
    ctx.notes.append(
        Note(
            f"cache policy: the note on the cut (compaction at message {when}) carries a "
            f"receipt of what was removed: {lines} lines, {len(note.receipt)} characters, "
            f"about {tokens} tokens; written when that cut was made, unchanged until the next",
            "cache",
        )
    )


def _when(plan: Plan, index: int, starts: list[int] | None = None) -> int:
    """The compaction whose cut removed ``index``: the first cut past it that does not
    keep it as its pin (cuts only move forward: a binary search, as every cut message
    asks, and a scan made a 100,000-message first call spend ~3 s here). A compaction
    that only cleared results cuts nothing, so the first compaction after a message
    is not always the one that cut it. ``starts``: each cut's position (``plan.cuts``'
    first items), when the caller asks for many messages."""
    cuts = plan.cuts
    if starts is None:
        k = bisect.bisect_right(cuts, index, key=lambda entry: entry[0])
    else:
        k = bisect.bisect_right(starts, index)
    while k < len(cuts) and cuts[k][1] == index:
        k += 1  # pinned by that cut: removed by a later one
    if k < len(cuts):
        return plan.cut_at[k]
    return plan.cut_at[-1] if plan.cut_at else plan.compactions[-1]


def _masked(
    index: int, message: Message, policy: CompactionPolicy, ctx: Context, when: int
) -> Message:
    """A user message whose media the agent has moved past, with its media masked
    (stages/_media_mask.py: stored in offload_dir when set); reported at ``index``."""
    masked, failed = masked_media(message, policy.offload_dir)
    if message.get("role") == "tool":  # the placeholder's text within the cap too
        masked = capped(masked, ctx.max_tool_result_chars)
    ctx.notes.extend(failed)
    content = message.get("content")
    parts = sum(1 for p in content if is_media_part(p)) if isinstance(content, list) else 0
    whose = "user message" if message.get("role") == "user" else "tool result"
    ctx.record(
        STAGE,
        "replace",
        index,
        f"{parts} older media part{'s' if parts != 1 else ''} of this {whose} masked, "
        f"its text kept (compaction at message {when})",
        tool_call_id=message.get("tool_call_id"),
        tokens_saved=ctx.tokens(message) - ctx.tokens(masked),
    )
    return masked


def _cleared(
    message: Message, policy: CompactionPolicy, ctx: Context, seen: list[Message], v: int
) -> Message:
    """``message`` (``seen[v]``) cleared: its placeholder or digest, offloaded where set."""
    call = call_of(seen, v, policy)
    if policy.offload_dir is None:
        return placeholder_for(message, policy, call=call)
    try:
        path = _offload(policy.offload_dir, message)
        return placeholder_for(message, policy, path, call=call)
    except OSError as exc:
        ctx.notes.append(f"offload to {policy.offload_dir} failed ({exc}); output only cleared")
        return placeholder_for(message, policy, call=call)


def _clear_arguments(
    messages: list[Message],
    sources: list[int | None],
    call_ids: set[str],
    ctx: Context,
) -> list[Message]:
    """Empty the arguments of calls whose results were cleared (Anthropic's clear_tool_inputs).

    ``messages`` is the compaction's output, in which cut messages are gone and a note
    may stand on its own; ``sources[k]`` is the caller's index of ``messages[k]``, which
    is what the report names (an index into the output would point at another message
    of the caller's list as soon as anything before it was cut)."""
    out = list(messages)
    for k, (message, i) in enumerate(zip(messages, sources, strict=True)):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if (
            i is None
            or not isinstance(calls, list)
            or not any(isinstance(c, dict) and str(c.get("id")) in call_ids for c in calls)
        ):
            continue
        new_calls = [
            {**c, "function": {**c.get("function", {}), "arguments": "{}"}}
            if isinstance(c, dict)
            and str(c.get("id")) in call_ids
            and isinstance(c.get("function"), dict)
            else c
            for c in calls
        ]
        if new_calls == calls:
            continue  # their arguments were empty already: nothing changed to report
        new = {**message, "tool_calls": new_calls}
        ctx.record(
            STAGE,
            "replace",
            i,
            "arguments of calls whose results were cleared emptied",
            tokens_saved=ctx.tokens(message) - ctx.tokens(new),
        )
        out[k] = new
    return out
