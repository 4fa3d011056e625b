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

The walk costs O(n) integer work over cached per-message token counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..messages import Message, text_parts
from ..policies import CACHE, OFFLOAD_PLACEHOLDER, CompactionPolicy
from .base import Context
from .microcompact import microcompact
from .offload import offload as _offload
from .snip import snip

STAGE = "compact"


def _policy(ctx: Context) -> CompactionPolicy:
    return ctx.compaction if ctx.compaction is not None else CACHE


def clear_stage(messages: list[Message], ctx: Context) -> list[Message]:
    """Where the seed microcompacts (before the size cap): the seed policy does it here."""
    if _policy(ctx).kind == "seed":
        return microcompact(messages, ctx)
    return messages


def fit_stage(messages: list[Message], ctx: Context) -> list[Message]:
    """Where the seed snips: the cache policy compacts first, then snip is the safety net."""
    if _policy(ctx).kind == "cache":
        messages = compact(messages, ctx)
    return snip(messages, ctx)


def _chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(str(p.get("text", ""))) for p in text_parts(content) if isinstance(p, dict))


def _head_end(messages: list[Message]) -> int:
    """The head kept whatever happens: leading system messages and the task's first user
    message right after them."""
    h = 0
    while h < len(messages) and messages[h].get("role") == "system":
        h += 1
    if h < len(messages) and messages[h].get("role") == "user":
        h += 1
    return h


@dataclass(slots=True)
class Plan:
    """What the replay decided: the cut, the cleared results, and when it happened."""

    cut: int
    head: int
    #: tool result index -> the message index of the request that cleared it
    cleared: dict[int, int] = field(default_factory=dict)
    #: message index of the request of each compaction
    compactions: list[int] = field(default_factory=list)
    #: user messages kept although the cut passed them: the newest one at each compaction
    pinned: set[int] = field(default_factory=set)

    def kept(self, index: int, message: Message) -> bool:
        return (
            index < self.head
            or index >= self.cut
            or index in self.pinned
            or message.get("role") == "system"
        )


class Replay:
    """The walk over the history's requests; see the module docstring."""

    def __init__(
        self,
        messages: list[Message],
        tokens: list[int],
        placeholder_tokens: Any,
        fixed: int,
        budget: int,
        policy: CompactionPolicy,
    ) -> None:
        self.m, self.t, self.ph = messages, tokens, placeholder_tokens
        self.budget, self.policy = budget, policy
        self.plan = Plan(cut=_head_end(messages), head=_head_end(messages))
        self.total = fixed  # tokens of the request up to self.j, as compacted so far
        self.j = 0
        self.results: list[int] = []  # tool result indices < j
        self.clear_ptr = 0  # into results: everything before it is cleared, cut or kept
        self.last_user = -1
        self.last_assistant = -1

    def cost(self, i: int) -> int:
        return self.ph(i) if i in self.plan.cleared else self.t[i]

    def advance(self, j: int) -> None:
        while self.j < j:
            i = self.j
            role = self.m[i].get("role")
            self.total += self.t[i]
            if role == "tool":
                self.results.append(i)
            elif role == "user":
                self.last_user = i
            elif role == "assistant":
                self.last_assistant = i
            self.j += 1

    def extend(self, messages: list[Message], tokens: list[int]) -> bool:
        """Continue the replay over messages appended to the history, if no request
        among them would compact; False (and nothing changed) otherwise.

        ``messages`` is the whole new history, ``tokens`` the counts of the new part.
        """
        n = self.j
        compacted_at_end = bool(self.plan.compactions) and self.plan.compactions[-1] == n
        if compacted_at_end and n < len(messages) and messages[n].get("role") != "assistant":
            return False  # the compaction at the old end was for a request never made
        trigger = self.policy.thresholds(self.budget)[0]
        total = self.total
        for k, count in enumerate(tokens):
            j = n + k
            if j > n and messages[j].get("role") == "assistant" and total > trigger:
                return False
            total += count
        if total > trigger:
            return False
        self.m = messages
        self.t.extend(tokens)
        self.advance(len(messages))
        return True

    def clearable(self, i: int) -> bool:
        m = self.m[i]
        return (
            i >= self.plan.cut
            and m.get("name") not in self.policy.exclude_tools
            and _chars(m.get("content")) >= self.policy.min_chars
        )

    def clear_candidates(self, goal: int) -> tuple[list[int], int]:
        """Oldest clearable results outside the kept recent ones, until ``goal`` is met."""
        eligible = len(self.results) - self.policy.keep_recent
        chosen: list[int] = []
        total = self.total
        k = self.clear_ptr
        while k < eligible and total > goal:
            i = self.results[k]
            if i not in self.plan.cleared and self.clearable(i):
                saving = self.t[i] - self.ph(i)
                if saving > 0:
                    chosen.append(i)
                    total -= saving
            k += 1
        return chosen, total

    def _pinned(self, i: int) -> bool:
        """Kept even when the cut passes it."""
        return self.m[i].get("role") == "system" or i == self.last_user or i in self.plan.pinned

    def max_cut(self) -> int:
        """The furthest the cut may go: the newest model turn stays (and the newest user
        message is pinned, see cut_to)."""
        return max(self.last_assistant, self.plan.cut)

    def cut_to(self, total: int, goal: int, cleared: set[int]) -> tuple[int, int]:
        """Smallest turn start (an assistant message) that brings ``total`` down to
        ``goal``; the furthest allowed one if none does. The newest user message and
        system messages are never cut."""
        limit = self.max_cut()
        c = best = self.plan.cut
        best_total = total
        while c < limit:
            if not self._pinned(c):
                total -= self.ph(c) if c in cleared else self.t[c]
            c += 1
            if c == limit or self.m[c].get("role") == "assistant":
                best, best_total = c, total
                if total <= goal:
                    break
        return best, best_total

    def request(self, j: int) -> None:
        """The request made with the history up to ``j``: compact if it is over the trigger."""
        self.advance(j)
        policy, budget = self.policy, self.budget
        trigger, goal = policy.thresholds(budget)
        if self.total <= trigger:
            return
        chosen, total = self.clear_candidates(goal)
        cleared_now = set(self.plan.cleared) | set(chosen)
        cut, after = self.plan.cut, total
        if total > goal:
            cut, after = self.cut_to(total, goal, cleared_now)
            # results before the cut are gone: clearing them saved nothing
            chosen = [i for i in chosen if i >= cut]
            after = self._total_with(chosen, cut)
        if self.total - after < policy.min_savings and self.total <= budget:
            return  # not worth a cache rewrite, and the request fits anyway
        if not chosen and cut == self.plan.cut:
            return
        for i in chosen:
            self.plan.cleared[i] = j
        if self.plan.head <= self.last_user < cut:
            self.plan.pinned.add(self.last_user)
        self.plan.cut = cut
        self.total = after
        self.plan.compactions.append(j)
        while self.clear_ptr < len(self.results) and (
            self.results[self.clear_ptr] in self.plan.cleared
            or self.results[self.clear_ptr] < cut
            or not self.clearable(self.results[self.clear_ptr])
        ):
            self.clear_ptr += 1

    def _total_with(self, chosen: list[int], cut: int) -> int:
        """Exact request size after clearing ``chosen`` and cutting at ``cut``."""
        total = self.total
        for i in chosen:
            total -= self.t[i] - self.ph(i)
        for i in range(self.plan.cut, cut):
            if self._pinned(i):
                continue
            total -= self.ph(i) if (i in self.plan.cleared or i in chosen) else self.t[i]
        return total


def replay_history(
    messages: list[Message],
    tokens: list[int],
    placeholder_tokens: Any,
    fixed: int,
    budget: int,
    policy: CompactionPolicy,
) -> Replay:
    """Replay the history's requests; the result stands at the last one (``.plan``)."""
    replay = Replay(messages, tokens, placeholder_tokens, fixed, budget, policy)
    for j, message in enumerate(messages):
        if j and message.get("role") == "assistant":
            replay.request(j)
    replay.request(len(messages))
    return replay


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def placeholder_for(message: Message, policy: CompactionPolicy, path: str | None = None) -> Message:
    """The cleared form of a tool result: same role, id and name; content says what
    was removed and how to get it back."""
    name = str(message.get("name") or "the tool")
    template = OFFLOAD_PLACEHOLDER if path is not None else policy.placeholder
    fields = _Fields(name=name, chars=_chars(message.get("content")), path=path or "")
    return {**message, "content": template.format_map(fields)}


def compact(messages: list[Message], ctx: Context) -> list[Message]:
    """Apply the cache policy's plan: cut the oldest turns after the head and replace
    the cleared results by placeholders. Everything done is an action in the report."""
    policy, budget = _policy(ctx), ctx.budget
    if budget is None or budget <= 0 or not messages:
        return messages
    tokens = [ctx.tokens(m) for m in messages]
    placeholders: dict[int, Message] = {}

    def placeholder_tokens(i: int) -> int:
        if i not in placeholders:
            placeholders[i] = placeholder_for(messages[i], policy)
        return ctx.tokens(placeholders[i])

    fixed = ctx.counter.prompt_tokens([], ctx.tools)
    replay = replay_history(messages, tokens, placeholder_tokens, fixed, budget, policy)
    ctx.scratch["replay"] = replay
    plan = replay.plan
    if not plan.cleared and plan.cut == plan.head:
        return messages
    out: list[Message] = []
    cleared_calls: set[str] = set()
    for i, message in enumerate(messages):
        if not plan.kept(i, message):
            ctx.record(
                STAGE,
                "drop",
                i,
                f"old turn cut (compaction at message {_when(plan, i)})",
                tool_call_id=message.get("tool_call_id"),
                tokens_saved=tokens[i],
            )
            continue
        if i in plan.cleared:
            replaced = _cleared(message, policy, ctx)
            cleared_calls.add(str(message.get("tool_call_id")))
            ctx.record(
                STAGE,
                "replace",
                i,
                f"old {message.get('name') or 'tool'} result "
                f"({_chars(message.get('content'))} chars) cleared "
                f"(compaction at message {plan.cleared[i]})",
                tool_call_id=message.get("tool_call_id"),
                tokens_saved=tokens[i] - ctx.tokens(replaced),
            )
            message = replaced
        out.append(message)
    if policy.clear_arguments and cleared_calls:
        out = _clear_arguments(out, cleared_calls, ctx)
    ctx.notes.append(
        f"cache policy: {len(plan.compactions)} compaction(s), the last at message "
        f"{plan.compactions[-1]}; {sum(1 for i in plan.cleared if i >= plan.cut)} tool results "
        "cleared, "
        f"{sum(1 for i in range(plan.head, plan.cut) if not plan.kept(i, messages[i]))} "
        "messages cut"
    )
    return out


def _when(plan: Plan, index: int) -> int:
    """The compaction whose cut removed ``index``: the first one cutting past it."""
    return next((j for j in plan.compactions if j > index), plan.compactions[-1])


def _cleared(message: Message, policy: CompactionPolicy, ctx: Context) -> Message:
    if policy.offload_dir is None:
        return placeholder_for(message, policy)
    try:
        return placeholder_for(message, policy, _offload(policy.offload_dir, message))
    except OSError as exc:
        ctx.notes.append(f"offload to {policy.offload_dir} failed ({exc}); output only cleared")
        return placeholder_for(message, policy)


def _clear_arguments(messages: list[Message], call_ids: set[str], ctx: Context) -> list[Message]:
    """Empty the arguments of calls whose results were cleared (Anthropic's clear_tool_inputs)."""
    out = list(messages)
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not isinstance(calls, list) or not any(
            isinstance(c, dict) and str(c.get("id")) in call_ids for c in calls
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
        new = {**message, "tool_calls": new_calls}
        ctx.record(
            STAGE,
            "replace",
            i,
            "arguments of calls whose results were cleared emptied",
            tokens_saved=ctx.tokens(message) - ctx.tokens(new),
        )
        out[i] = new
    return out
