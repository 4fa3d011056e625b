"""The cache policy's replay: the walk over a history's requests and the plan it makes.

Every assistant message in the history marks a request that was sent (the history up
to it), and the end of the history is the request being made now. Walking those
requests in order with the policy's hysteresis gives the cut, the cleared results and
when each happened (``Plan``), from the history alone (compact.py's docstring says
why). The plan is what compact.py applies; how its decisions read in the request (a
cleared result's placeholder, the note on a cut) is here too, so that the replay
counts exactly what will be sent.

The walk costs O(n) integer work over cached per-message token counts.
"""

from __future__ import annotations

import bisect
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Literal

from ..messages import Message, merge_contents, text_parts
from ..policies import (
    MASK_HEAVY_SHARE,
    MASK_MIN_HEAVY,
    MASK_MIN_RECENT,
    OFFLOAD_PLACEHOLDER,
    CompactionPolicy,
)
from ._digest import MIN_DIGEST_CHARS, digest_text
from ._exact import ExactRules, exact_rules
from ._inserted import is_bridge
from ._media_mask import has_media, masked_media, media_in
from ._offload import output_text
from ._receipt import Ledger

__all__ = [
    "Clearing",
    "CutNote",
    "NoteHow",
    "Plan",
    "Replay",
    "call_of",
    "content_chars",
    "last_user_before",
    "masks_media",
    "note_text",
    "noted",
    "placeholder_for",
    "replay_history",
]


def content_chars(content: Any) -> int:
    """The characters of a message content's text (a tool result's size as the policy
    judges it)."""
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


NoteHow = Literal["prepend", "append", "insert"]


@dataclass(frozen=True, slots=True)
class CutNote:
    """Where the note saying what was cut goes, and what it says.

    ``how`` is "prepend" (into the first user message kept after the head: the one the
    cut starts at, or the kept user message of the turn the cut is inside), "append"
    (into the head's task, when the cut is inside the task's own turn) or "insert" (a
    user message of its own before ``at``: there is no user message to carry it). It
    is fixed when the cut is made, so between two compactions every request carries
    the same note. ``receipt`` is what the removed messages did (stages/_receipt.py:
    files, commands, errors, the user's messages), "" when the policy's receipt is off
    or they did nothing it lists; a function of the removed messages alone."""

    at: int
    how: NoteHow
    messages: int
    turns: int
    user_messages: int
    receipt: str = ""


@dataclass(frozen=True, slots=True)
class Clearing:
    """Where clearing edits the request, as the call ids of tool results: for a prompt
    cache whose entries end at the marks a request carries (Anthropic's).

    ``now``: the oldest result the compaction at this request cleared (None: this request
    cleared none, or it also cut turns, which changes the prefix at the head first).
    ``next``: the oldest result still sent whole that clearing may take (None: none).
    Results are cleared oldest first, so ``next`` stays where it is until a compaction
    clears it, and then it is that compaction's ``now``: a mark before ``next`` on every
    request writes a prefix the compacting request still starts with, and a mark before
    ``now`` on that request reads it back, so the compaction re-sends only what follows
    its first edit."""

    now: str | None = None
    next: str | None = None


@dataclass(slots=True)
class Plan:
    """What the replay decided: the cut, the cleared results, and when it happened."""

    cut: int
    head: int
    #: tool result index -> the message index of the request that cleared it
    cleared: dict[int, int] = field(default_factory=dict)
    #: message index of the request of each compaction
    compactions: list[int] = field(default_factory=list)
    #: the user message of the turn the cut is inside, kept although the cut passed it
    #: (only the newest one: an older pin is released when a later cut passes its turn)
    pinned: int | None = None
    #: the note on the cut (None: nothing cut, or the policy's note is off)
    note: CutNote | None = None
    #: every cut in order, with the user message it pinned: (cut, pinned). A summary
    #: of the newest cut folds in the summary of the one before (stages/_summary.py).
    cuts: list[tuple[int, int | None]] = field(default_factory=list)
    #: the request (message index) of the compaction that made each entry of ``cuts``
    cut_at: list[int] = field(default_factory=list)
    #: cleared results that a newer exact repeat of their call made stale -> that repeat
    superseded: dict[int, int] = field(default_factory=dict)

    def kept(self, index: int, message: Message) -> bool:
        return (
            index < self.head
            or index >= self.cut
            or index == self.pinned
            or message.get("role") == "system"
        )


#: How far before a tool result its call is looked for (messages), for ``supersede``.
SUPERSEDE_LOOKBACK = 64


def _may_read(name: str, arguments: Any, rules: ExactRules) -> bool:
    """A cheap first look: the tool is an exact one by name, or its arguments may hold a
    shell command (``ExactRules`` parses them only then)."""
    if name.lower() in rules.tools:
        return True
    return not isinstance(arguments, str) or '"command"' in arguments or '"cmd"' in arguments


def _canonical(arguments: Any) -> str:
    """A call's arguments as one string: JSON sorted and compact when they parse."""
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return str(arguments)


class _RoleTally:
    """Prefix counts of the non-system, assistant and user messages of a history, so that
    what a cut removes is counted in O(1): the replay asks at each compaction, and a
    walk over [head, cut) each time made a 100,000-message first call quadratic."""

    def __init__(self) -> None:
        self.kept = [0]  # non-system messages in [0, k)
        self.assistants = [0]
        self.users = [0]

    def add(self, role: Any, counted: bool = True) -> None:
        """One more position; ``counted`` False (a split turn that does not complete the
        removal of a history message: see _cut_note) adds nothing to the counts."""
        self.kept.append(self.kept[-1] + (counted and role != "system"))
        self.assistants.append(self.assistants[-1] + (counted and role == "assistant"))
        self.users.append(self.users[-1] + (counted and role == "user"))

    def copy(self) -> _RoleTally:
        twin = _RoleTally()
        twin.kept, twin.assistants, twin.users = (
            list(self.kept), list(self.assistants), list(self.users),
        )  # fmt: skip
        return twin

    def between(self, head: int, cut: int) -> tuple[int, int, int]:
        """(non-system, assistant, user) messages in [head, cut)."""
        return (
            self.kept[cut] - self.kept[head],
            self.assistants[cut] - self.assistants[head],
            self.users[cut] - self.users[head],
        )


class _Costs:
    """What the messages of a range cost as the request sends them, in O(log n): prefix
    sums of the written counts (system messages left out: no cut removes them), and
    prefix sums of what clearing saved, by position. The counts never change; a message
    cleared changes only its own entry. The one sum every question of "what does a cut
    at c remove" is answered from (``_removed``, ``_total_with``)."""

    def __init__(self, messages: list[Message], tokens: list[int]) -> None:
        self.m, self.t = messages, tokens
        self.pre = [0]  # pre[i]: written tokens of the non-system messages before i
        self.cleared: list[int] = []  # cleared positions, ascending
        self.saved = [0]  # saved[k]: what clearing the first k of them saved

    def copy(self, messages: list[Message], tokens: list[int]) -> _Costs:
        """A copy over ``messages`` (this one's, with more after them), its sums its own."""
        twin = _Costs(messages, tokens)
        twin.pre, twin.cleared, twin.saved = list(self.pre), list(self.cleared), list(self.saved)
        return twin

    def _written(self, end: int) -> int:
        pre, m, t = self.pre, self.m, self.t
        for i in range(len(pre) - 1, end):
            pre.append(pre[-1] + (t[i] if m[i].get("role") != "system" else 0))
        return pre[end]

    def clear(self, i: int, saving: int) -> None:
        """Message ``i`` is sent as its placeholder from now on, ``saving`` tokens less."""
        cleared, saved = self.cleared, self.saved
        if not cleared or i > cleared[-1]:
            cleared.append(i)
            saved.append(saved[-1] + saving)
            return
        # a clear behind a newer one (rare): insert it and rebuild the sums after it
        k = bisect.bisect_left(cleared, i)
        own = [saved[n + 1] - saved[n] for n in range(k, len(cleared))]
        cleared.insert(k, i)
        del saved[k + 1 :]
        for value in (saving, *own):
            saved.append(saved[-1] + value)

    def between(self, start: int, end: int) -> int:
        """Tokens the non-system messages in [start, end) cost as sent now."""
        if end <= start:
            return 0
        cleared, saved = self.cleared, self.saved
        written = self._written(end) - self.pre[start]
        a, b = bisect.bisect_left(cleared, start), bisect.bisect_left(cleared, end)
        return written - (saved[b] - saved[a])


def _cut_note(
    messages: list[Message],
    head: int,
    cut: int,
    pin: int | None,
    tally: _RoleTally | None = None,
    counted: list[bool] | None = None,
) -> CutNote:
    """The note for a cut at ``cut``, ``pin`` kept behind it. Counts what the cut removes:
    everything in [head, cut) but system messages and the pin (from ``tally`` when it
    covers [0, cut), else by walking the range). ``counted`` (a replay on split turns)
    says which positions complete the removal of a history message: the last turn of a
    split call, so the note counts the caller's messages, as the report does; the tally
    was built with the same flags."""
    if tally is not None and cut < len(tally.kept):
        removed, turns, users = tally.between(head, cut)
        if pin is not None and head <= pin < cut and (counted is None or counted[pin]):
            role = messages[pin].get("role")
            removed -= role != "system"
            turns -= role == "assistant"
            users -= role == "user"
    else:
        removed = turns = users = 0
        for i in range(head, cut):
            role = messages[i].get("role")
            if role == "system" or i == pin or (counted is not None and not counted[i]):
                continue
            removed += 1
            turns += role == "assistant"
            users += role == "user"
    if pin is not None:  # before the kept prompt: whatever joins the task reads as later
        return CutNote(pin, "prepend", removed, turns, users)
    if messages[cut].get("role") == "user":
        return CutNote(cut, "prepend", removed, turns, users)
    owner = last_user_before(messages, cut)  # in the head: the cut is in the task's turn
    if owner >= 0:
        return CutNote(owner, "append", removed, turns, users)
    return CutNote(cut, "insert", removed, turns, users)


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
        note_tokens: Callable[[CutNote, Message | None], int] | None = None,
        force_final: bool = False,
        counted: list[bool] | None = None,
        placeholder_of: Callable[[list[Message], int], int] | None = None,
    ) -> None:
        self.m, self.t = messages, tokens
        #: placeholder tokens by position, for the messages the replay was made with;
        #: ``placeholder_of`` counts one for a message appended later (a Governor's
        #: trial of new messages asks whether clearing them would save enough)
        self._placeholder, self._placeholder_of = placeholder_tokens, placeholder_of
        self._made_with = len(messages)
        #: ``_read_key`` of the messages the replay was made with, by position
        self._read_keys: dict[int, tuple[tuple[str, str], int] | None] = {}
        #: _recent_results' running sum: (results it covers, the sum, (cleared, cut))
        self._recent: tuple[int, int, tuple[int, int]] = (0, 0, (-1, -1))
        #: tokens the compactions at the final request took off it (see compacted_now)
        self.saved_now = 0
        #: which positions the note counts (None: all; see _cut_note)
        self.counted = counted
        self.budget, self.policy = budget, policy
        #: the policy's trigger and target for this budget (both fixed for the replay's
        #: life: made once here; a Governor asks for the trigger at every appending step)
        self.trigger, self.target = policy.thresholds(budget)
        #: extra tokens the note of a cut adds (None: the policy has no note)
        has_note = policy.cut_note is not None or policy.summary is not None
        self.note_cost = note_tokens if has_note else None
        #: compact at the final request whatever the trigger and the savings say: governing
        #: this pass's output again would compact it (see pipeline._fit)
        self.force_final = force_final
        #: judge cuts as the replay of the output will (see _join_owner): where the
        #: verbatim floor may apply (dear reads), whose spans a second pass must see as
        #: this one does
        self.joins = policy.mask_first or (
            policy.verbatim_floor and policy.adaptive_target and policy.dear_reads()
        )
        #: the user message whose turn joins the task in the output (see _join_owner), and
        #: the index of the next user message, the end of that turn (-1: none yet)
        self.owner: int | None = None
        self.owner_end = -1
        #: system messages after the head (they keep the task and the owner apart), and
        #: user messages (the end of the owner's turn is the first one after it)
        self.systems: list[int] = []
        self.users: list[int] = []
        self.plan = Plan(cut=_head_end(messages), head=_head_end(messages))
        self.total = fixed  # tokens of the request up to self.j, as compacted so far
        self.note_total = 0  # of which the note on the cut
        self.j = 0
        self.results: list[int] = []  # tool result indices < j
        self.clear_ptr = 0  # into results: everything before it is cleared, cut or kept
        self.last_user = -1
        self.last_assistant = -1
        self.first_user = -1  # the first user message after the head
        self.tally = _RoleTally()  # of the messages before self.j
        self.grown = 0  # tokens of the messages after the head, as written (adaptive goal)
        self.results_grown = 0  # of which tool results (a cut at the ceiling: mask_first)
        self.calls = 0  # model turns so far (adaptive goal)
        #: what the messages of a range cost as sent (see _Costs)
        self.costs = _Costs(messages, tokens)
        #: prefix sums of what clearing each result from ``clear_ptr`` on would save (see
        #: masked_total), and the position in ``results`` of the newest user message with
        #: media while it is the newest (it becomes clearable when a newer one comes)
        self._saves = [0]
        self._user_k = -1
        #: the request whose compaction made the newest entry of ``plan.cuts``
        self._cut_at = -1
        #: what the cuts so far removed, for the receipt on the note (None: off)
        self.ledger = Ledger(self.plan.head) if policy.receipt and has_note else None

    def ph(self, i: int) -> int:
        """Tokens of message ``i`` as a placeholder."""
        if i >= self._made_with and self._placeholder_of is not None:
            return self._placeholder_of(self.m, i)
        return int(self._placeholder(i))

    def cost(self, i: int) -> int:
        return self.ph(i) if i in self.plan.cleared else self.t[i]

    def advance(self, j: int) -> None:
        # the walk in locals, written back once: a Governor advances over each step's new
        # messages on its critical path (attribute reads and writes per message add up)
        m, t, counted, head, tally = self.m, self.t, self.counted, self.plan.head, self.tally
        total, grown, calls = self.total, self.grown, self.calls
        for i in range(self.j, j):
            message = m[i]
            role = message.get("role")
            total += t[i]
            tally.add(role, counted is None or counted[i])
            if i >= head:
                grown += t[i]
            if role == "tool":
                self.results.append(i)
                if i >= head:
                    self.results_grown += t[i]
            elif role == "user":
                k = self._user_k - self.clear_ptr  # that message is clearable now
                if 0 <= k < len(self._saves) - 1:
                    del self._saves[k + 1 :]
                self._user_k = -1
                if has_media(message):  # its media is masked as old results are cleared
                    self._user_k = len(self.results)
                    self.results.append(i)
                self.last_user = i
                self.users.append(i)
                if self.first_user < 0 and i >= head:
                    self.first_user = i
                if self.owner is not None and self.owner_end < 0 and i > self.owner:
                    self.owner_end = i
            elif role == "system" and i >= head:
                self.systems.append(i)
            elif role == "assistant" and not is_bridge(message):
                # a bridge the provider repairs put after tool results is not the newest
                # model turn: taking it for one would let a second pass cut the turn
                # before it, which this pass (without the bridge) kept whole
                self.last_assistant = i
                calls += 1
        self.total, self.grown, self.calls = total, grown, calls
        self.j = max(self.j, j)

    def extend(self, messages: list[Message], tokens: list[int]) -> bool:
        """Continue the replay over messages appended to the history, if no request
        among them would compact; False (and nothing changed) otherwise.

        ``messages`` is the whole new history, ``tokens`` the counts of the new part. The
        replay may stand on the history as a one-call-per-turn model gets it (longer than
        the history: see compact()); the new part is then appended to that view (a new part
        with a parallel call to split never gets here: its repair is an action).
        """
        n = self.j
        new = messages[len(messages) - len(tokens) :]
        if not self.quiet(new, tokens):
            return False
        self.m = messages if len(messages) == n + len(new) else [*self.m[:n], *new]
        self.costs.m = self.m
        if self.counted is not None:
            self.counted.extend(True for _ in new)
        self.t.extend(tokens)
        self.advance(len(self.m))
        return True

    def append(self, new: list[Message], tokens: list[int]) -> bool:
        """``extend`` by the new messages alone: the replay keeps its own view of the old
        part, the history as the stages before the compaction left it (results in their
        shrunk form), where the caller has only the history as it came."""
        return self.extend([*self.m[: self.j], *new], tokens)

    def quiet(self, new: list[Message], tokens: list[int]) -> bool:
        """Whether no request among ``new`` (messages appended to the replayed history,
        ``tokens`` their exact counts) would compact: each is under the trigger, or over
        it and held by the verbatim floor (``held``). Changes nothing."""
        compacted_at_end = bool(self.plan.compactions) and self.plan.compactions[-1] == self.j
        if compacted_at_end and new and new[0].get("role") != "assistant":
            return False  # the compaction at the old end was for a request never made
        trigger = self.trigger
        total = self.total
        for k, count in enumerate(tokens):
            if k and new[k].get("role") == "assistant" and total > trigger:
                return self._held_through(new, tokens)
            total += count
        return total <= trigger or self._held_through(new, tokens)

    def _held_through(self, new: list[Message], tokens: list[int]) -> bool:
        """``quiet`` where some request among ``new`` is over the trigger: the same walk
        (``advance``) and the same judgement (``_judged``) over a trial copy of this
        replay, request by request, and whether every request over the trigger is held
        by the verbatim floor (``CompactionPolicy.floor``). The plan does not change
        between these requests (none compacts), so the trial never applies anything."""
        policy = self.policy
        if self.force_final or not (policy.verbatim_floor or policy.mask_first):
            return False
        trial, n = self._trial(new, tokens), self.j
        for k in range(1, len(new) + 1):
            if k < len(new) and new[k].get("role") != "assistant":
                continue
            trial.advance(n + k)
            if trial.total > trial.trigger and trial._compacts():
                return False
        return True

    def _compacts(self) -> bool:
        """Whether the request the replay stands at, over its trigger, would compact
        (``_compact``'s judgement, unforced, applying nothing)."""
        if not self.policy.mask_first:
            return self._judged(forced=False) is not None
        planned = self._masked_plan(False, self.trigger, self.target)
        return planned is not None and self._decide(False, *planned) is not None

    def _trial(self, new: list[Message], tokens: list[int]) -> Replay:
        """A copy of this replay with ``new`` (``tokens`` their counts) appended, not yet
        walked; what ``advance`` and the floor's inputs change is its own (lists copied),
        the plan shared (only a compaction changes it)."""
        trial = copy.copy(self)
        n = self.j
        trial.m = [*self.m[:n], *new]
        trial.t = [*self.t[:n], *tokens]
        if self.counted is not None:
            trial.counted = [*self.counted[:n], *(True for _ in new)]
        trial.results, trial.users, trial.systems = (
            list(self.results), list(self.users), list(self.systems),
        )  # fmt: skip
        trial._saves = list(self._saves)
        trial.tally = self.tally.copy()
        trial.costs = self.costs.copy(trial.m, trial.t)
        return trial

    def accepts(self, new: list[Message], added: int) -> bool:
        """Whether ``extend`` would accept the messages ``new`` whose counts add up to at
        most ``added`` (an upper bound will do: the replay's totals only grow, so the last
        request is the one nearest the trigger, and fewer tokens never compact where more
        did not). Lets a Governor decide before it has the exact counts."""
        n = self.j
        compacted_at_end = bool(self.plan.compactions) and self.plan.compactions[-1] == n
        if compacted_at_end and new and new[0].get("role") != "assistant":
            return False
        return self.total + added <= self.trigger

    def clearable(self, i: int) -> bool:
        m = self.m[i]
        if m.get("role") == "user":  # media the agent has moved past (a newer prompt came)
            return self.plan.cut <= i < self.last_user
        return (
            i >= self.plan.cut
            and m.get("name") not in self.policy.exclude_tools
            and (content_chars(m.get("content")) >= self.policy.min_chars or media_in(m))
        )

    def clear_candidates(self, goal: int, keep: int | None = None) -> tuple[list[int], int]:
        """Oldest clearable results outside the ``keep`` (default ``keep_recent``) newest,
        until ``goal`` is met."""
        eligible = len(self.results) - (self.policy.keep_recent if keep is None else keep)
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
        if self.policy.supersede:
            for i, _ in self._superseded(eligible):
                saving = self.t[i] - self.ph(i)
                if saving > 0:
                    chosen.append(i)
                    total -= saving
        return chosen, total

    def _superseded(self, start: int) -> list[tuple[int, int]]:
        """(result, newer), oldest first, for the clearable results from position ``start``
        of ``results`` on (the newest, kept whole otherwise) that a newer result repeats:
        the same exact read (``CompactionPolicy.supersede``) made again, with the same
        arguments, in a later model turn. They are cleared with the older results, and
        the report says why."""
        policy = self.policy
        if self.counted is not None:
            # a one-call-per-turn model's view (stages/_single_call.py): its parallel calls
            # are split into turns, so a duplicate in one turn looks like a later repeat
            return []
        rules = exact_rules(policy.exact_tools, policy.exact_commands, ())
        start = max(start, 0)  # fewer results than are kept whole: all of them
        #: per read, the newest result seen so far and the model turn that called it
        seen: dict[tuple[str, str], tuple[int, int]] = {}
        out: list[tuple[int, int]] = []
        for k in range(len(self.results) - 1, start - 1, -1):
            i = self.results[k]
            found = self._read_key(i, rules)
            if found is None:
                continue
            key, turn = found
            newer = seen.get(key)
            if newer is None or newer[1] > turn:  # a repeat in the same turn is no newer
                seen[key] = (i, turn)
            if newer is None or newer[1] <= turn:
                continue
            if i not in self.plan.cleared and self.clearable(i):
                out.append((i, newer[0]))
        out.reverse()
        return out

    def _read_key(self, i: int, rules: ExactRules) -> tuple[tuple[str, str], int] | None:
        """((tool, arguments), the assistant message that made it) of the call tool result
        ``i`` answers, when that call is an exact read (``ExactRules``); None otherwise or
        when the call is not found near.
        Worked out once per message the replay was made with (a first call on a long
        history asks at every compaction)."""
        if i >= self._made_with:
            return self._find_read_key(i, rules)
        if i not in self._read_keys:
            self._read_keys[i] = self._find_read_key(i, rules)
        return self._read_keys[i]

    def _find_read_key(self, i: int, rules: ExactRules) -> tuple[tuple[str, str], int] | None:
        if self.m[i].get("role") != "tool":
            return None
        found = _calling(self.m, i)
        if found is None:
            return None
        a, name, arguments = found
        if not isinstance(name, str) or not _may_read(name, arguments, rules):
            return None
        if not rules.exact(name, arguments, ""):
            return None
        return (name, _canonical(arguments)), a

    def masked_total(self, keep: int | None = None) -> int:
        """The request's total with every clearable result but the ``keep`` newest
        cleared: ``clear_candidates(-1, keep)``'s total, from prefix sums made on first
        need (results are only appended between compactions; a compaction starts them
        again from ``clear_ptr``)."""
        eligible = len(self.results) - (self.policy.keep_recent if keep is None else keep)
        saves, base = self._saves, self.clear_ptr
        for k in range(base + len(saves) - 1, eligible):
            i = self.results[k]
            saving = 0
            if i not in self.plan.cleared and self.clearable(i):
                saving = max(0, self.t[i] - self.ph(i))
            saves.append(saves[-1] + saving)
        return self.total - (saves[eligible - base] if eligible > base else 0)

    def compacted_now(self) -> bool:
        """Whether the request the replay stands at (the last one) compacted."""
        return bool(self.plan.compactions) and self.plan.compactions[-1] == self.j

    def clearing(self) -> Clearing:
        """Where clearing edits the request the replay stands at (see ``Clearing``)."""
        j, plan = self.j, self.plan
        now = None
        if self.compacted_now() and not (plan.cut_at and plan.cut_at[-1] == j):
            first = min((i for i, at in plan.cleared.items() if at == j), default=None)
            now = None if first is None else self._call_id(first)
        waiting = (
            i
            for i in islice(self.results, self.clear_ptr, None)
            if i not in plan.cleared and self.clearable(i) and self.m[i].get("role") == "tool"
        )
        return Clearing(now, self._call_id(next(waiting, None)))

    def _call_id(self, i: int | None) -> str | None:
        found = None if i is None else self.m[i].get("tool_call_id")
        return found if isinstance(found, str) and found else None

    def max_cut(self) -> int:
        """The furthest the cut may go: the newest model turn stays whole when its user
        message can stay too; otherwise the newest user message starts the kept part."""
        lu, la = self.last_user, self.last_assistant
        far = la if la >= 0 and self._turn_kept(la) else lu
        return max(self.plan.cut, far)

    def _turn_kept(self, c: int) -> bool:
        """Whether the user message of the turn of ``c`` survives a cut at ``c``: it is
        the newest one (pinned, or in the head), the task's (no user message after the
        head comes before ``c``) or, judged as the output will be, the one that joins the
        task there (``owner``, pinned: see _join_owner)."""
        return (
            c > self.last_user
            or self.first_user < 0
            or c < self.first_user
            or (self.owner is not None and self.owner < c < self.owner_end)
        )  # (owner_end < 0: the owner is the newest user message, covered above)

    def _legal_cut(self, c: int) -> bool:
        """A cut starts at a user message (a turn start) or, inside a turn whose user
        message is kept (the newest turn or the task's), at an assistant message: never
        between a call and its results, never stranding an answer from its request."""
        role = self.m[c].get("role")
        return role == "user" or (role == "assistant" and self._turn_kept(c))

    def _pin_for(self, cut: int) -> int | None:
        """The user message kept although ``cut`` passes it: the newest turn's, when the
        cut is inside that turn and the message is not in the head; judged as the output
        will be, the ``owner``'s, when the cut is inside its turn (see _join_owner)."""
        lu = self.last_user
        if self.plan.head <= lu < cut:
            return lu
        owner = self.owner
        return owner if owner is not None and owner < cut < self.owner_end else None

    def _removes_any(self, cut: int) -> bool:
        """Whether moving the cut to ``cut`` removes a message (system messages and the
        pin stay; releasing an old pin removes it). A cut that removes nothing would
        only add a note, and governing the output again would add another."""
        pin = self._pin_for(cut)
        return self._released(cut) > 0 or any(
            self.m[i].get("role") != "system" and i != pin for i in range(self.plan.cut, cut)
        )

    def _released(self, cut: int) -> int:
        """Tokens of the old pin that moving the cut to ``cut`` lets go."""
        old = self.plan.pinned
        return self.t[old] if old is not None and old != self._pin_for(cut) else 0

    def cut_to(self, total: int, goal: int, chosen: set[int]) -> tuple[int, int]:
        """Smallest legal cut (see _legal_cut) that brings ``total`` down to ``goal``
        (``chosen``: results being cleared with it, which cost their placeholder); the
        furthest one if none does. System messages and the newest user message are
        never cut."""
        cleared = self.plan.cleared
        limit = self.max_cut()
        c = best = self.plan.cut
        best_total = total
        removed = 0
        owner = self.owner  # removed only by a cut past its turn (see _pin_for)
        while c < limit:
            if self.m[c].get("role") != "system" and c != self.last_user and c != owner:
                removed += self.ph(c) if c in cleared or c in chosen else self.t[c]
            c += 1
            if c == limit or self._legal_cut(c):
                gone = removed + self._released(c)
                if owner is not None and self.plan.cut <= owner < c and self._pin_for(c) != owner:
                    gone += self.t[owner]  # the cut passed the owner's turn: it goes too
                best, best_total = c, total - gone
                if best_total <= goal:
                    break
        return best, best_total

    def request(self, j: int, final: bool = False) -> None:
        """The request made with the history up to ``j``: compact if it is over the trigger.
        The final request (the one being made now) compacts whatever the trigger says
        when ``force_final`` is set: governing the output again would compact it.

        At the final request a compaction is checked again as the replay of its output
        will check it, and compacts further while that would: under the verbatim floor
        the goal is the span of the newest results' turns, and clearing the older
        results inside that span shrinks it, so the request compacted may stand over the
        trigger its own span raises (a burst of results after a long turn). Elsewhere a
        compaction goes under the trigger it was judged by, and the check is a no-op."""
        self.advance(j)
        forced = final and self.force_final
        while self._compact(j, forced) and final:
            forced = False

    def _compact(self, j: int, forced: bool) -> bool:
        """One compaction of the request at ``j`` (the replay stands there), if its
        trigger, floor and minimum savings call for one (``forced``: whatever they say);
        whether it compacted."""
        policy = self.policy
        trigger, goal = self.trigger, self.target
        if self.total <= trigger and not forced:
            return False
        if policy.mask_first:
            # no verbatim floor under mask_first (CompactionPolicy.floor); the span (a walk
            # over the kept turns) is taken only once the request is known to compact
            return self._masked(j, forced, trigger, goal)
        judged = self._judged(forced)
        return judged is not None and self._apply(j, forced, judged, policy.keep_recent)

    def _judged(self, forced: bool) -> int | None:
        """Without ``mask_first``: the goal of a compaction of the request the replay
        stands at, over its trigger, or None where the verbatim floor holds it (its
        trigger raised to keep the newest results' turns: ``CompactionPolicy.floor``)."""
        policy, trigger, goal = self.policy, self.trigger, self.target
        span = self._recent_span() if policy.verbatim_floor or policy.adaptive_target else 0
        floor = (
            policy.floor(self.budget, span, self._recent_results())
            if policy.verbatim_floor
            else None
        )
        if floor is not None:
            trigger, goal = floor
            return None if self.total <= trigger and not forced else goal
        if policy.adaptive_target:
            return policy.adaptive_goal(trigger, goal, span, self._growth())
        return goal

    def _adapted(self, trigger: int, goal: int) -> int:
        """The target's goal of a compaction at the request the replay stands at."""
        policy = self.policy
        if not policy.adaptive_target:
            return goal
        span = self._recent_span()
        return policy.adaptive_goal(trigger, goal, span, self._growth())

    def _masked(self, j: int, forced: bool, trigger: int, target: int) -> bool:
        """``_compact`` under ``mask_first``: clear old results before cutting turns."""
        planned = self._masked_plan(forced, trigger, target)
        return planned is not None and self._apply(j, forced, *planned)

    def _masked_plan(self, forced: bool, trigger: int, target: int) -> tuple[int, int] | None:
        """Under ``mask_first``, the (goal, results kept) of a compaction of the request
        the replay stands at, over its trigger; None while it waits. Changes nothing.

        Below the ceiling only old results are cleared, all of them but the newest, and
        only once they add up to ``CompactionPolicy.clear_room`` (or the request nears
        the ceiling): each clearing makes the provider write again what follows its
        first edit, so it comes rarely and clears much. Past the ceiling turns are cut
        (the newest results masked first)."""
        policy, budget = self.policy, self.budget
        keep, limit, cut_room = policy.keep_recent, trigger, 0
        masked = self.masked_total()
        chunk = policy.clear_chunk(trigger)
        ceiling = policy.cut_ceiling(budget)
        below = self.total <= ceiling and not forced
        waited = below and self.total + chunk <= ceiling
        if waited:
            room = policy.clear_room(trigger, self._recent_results())
            if self.total - masked < room:
                return None  # too little to clear yet for the rewrite it costs
        if masked > trigger - chunk:
            # the masked trail does not fit under the trigger: turns are cut only past
            # the ceiling (CompactionPolicy.cut_ceiling); below it, old results are
            # cleared and every turn stays: all of them once they were worth waiting
            # for, else (near the ceiling) in chunks
            if waited:
                return masked, keep
            if below and self.total - masked < chunk:
                return None
            if not below:
                limit = ceiling  # turns are cut: the goal is judged against the ceiling
                keep = self._kept_at_ceiling(keep)  # mask the newest results first
                masked = self.masked_total(keep)
                cut_room = policy.cut_room(ceiling, self.grown / max(1, self.calls))
        goal = masked if below and masked > trigger - chunk else self._adapted(trigger, target)
        near = limit > trigger
        trail = max(0, masked - self._recent_results()) / max(1, self.calls)
        prose = near and self.results_grown * 2 < self.grown
        return policy.masked_goal(goal, limit, masked, trail, prose, cut_room), keep

    def _kept_at_ceiling(self, keep: int) -> int:
        """How many of the newest results stay whole when turns must be cut at the
        ceiling: ``MASK_MIN_RECENT``, or ``MASK_MIN_HEAVY`` where those take more than
        ``MASK_HEAVY_SHARE`` of the budget (turns would go to keep a few huge results)."""
        keep = min(keep, MASK_MIN_RECENT)
        heavy = sum(self.cost(i) for i in self.results[-keep:]) if keep > 0 else 0
        if heavy > MASK_HEAVY_SHARE * self.budget:
            keep = min(keep, MASK_MIN_HEAVY)
        return keep

    def _decide(
        self, forced: bool, goal: int, keep: int
    ) -> tuple[list[int], int, CutNote | None, int] | None:
        """(results to clear, cut, note, total after) of a compaction of the request the
        replay stands at down to ``goal``, or None when it would not happen (it saves
        under ``min_savings`` and the request fits, or it changes nothing). Pure."""
        policy, budget = self.policy, self.budget
        chosen, cut = self._clear_and_cut(goal, keep)
        note = self._note(cut)
        after = self._total_with(chosen, cut, note)
        if self.total - after < policy.min_savings and self.total <= budget and not forced:
            return None  # not worth a cache rewrite, and the request fits anyway
        if not chosen and cut == self.plan.cut:
            return None
        return chosen, cut, note, after

    def _apply(self, j: int, forced: bool, goal: int, keep: int) -> bool:
        """Clear and cut the request at ``j`` down to ``goal`` (the newest ``keep``
        results kept), if it saves enough or must; whether it compacted."""
        decided = self._decide(forced, goal, keep)
        if decided is None:
            return False
        chosen, cut, note, after = decided
        if j >= len(self.m):
            self.saved_now += self.total - after
        again = self.compacted_now()  # a further compaction of this request: one of it
        stale = dict(self._superseded(len(self.results) - keep)) if self.policy.supersede else {}
        for i in chosen:
            self.plan.cleared[i] = j
            if i in stale:
                self.plan.superseded[i] = stale[i]
            self.costs.clear(i, self.t[i] - self.ph(i))
        if cut != self.plan.cut:
            self.plan.pinned = self._pin_for(cut)
            if again and self._cut_at == j:
                self.plan.cuts[-1] = (cut, self.plan.pinned)  # one cut for one request
            else:
                self.plan.cuts.append((cut, self.plan.pinned))
                self.plan.cut_at.append(j)
                self._cut_at = j
            self.plan.note = note
            self.note_total = self._note_tokens(note)
            if self.ledger is not None:
                self.ledger.add(self.m, cut)
        self.plan.cut = cut
        self.total = after
        if not again:
            self.plan.compactions.append(j)
        if self.joins:
            self._join_owner()
        while self.clear_ptr < len(self.results) and (
            self.results[self.clear_ptr] in self.plan.cleared
            or self.results[self.clear_ptr] < cut
            or not self.clearable(self.results[self.clear_ptr])
        ):
            self.clear_ptr += 1
        self._saves = [0]  # (made again from clear_ptr on first need)
        return True

    def _clear_and_cut(self, goal: int, keep: int) -> tuple[list[int], int]:
        """The results to clear (oldest first, all but the newest ``keep``) and the cut
        that bring the request to ``goal``: cutting only what clearing cannot reach."""
        chosen, total = self.clear_candidates(goal, keep)
        cut = self.plan.cut
        if total > goal:
            cut, _ = self.cut_to(total, goal, set(chosen))
            if not self._removes_any(cut):
                cut = self.plan.cut  # past system messages only: a note on nothing removed
            # results before the cut are gone: clearing them saved nothing
            chosen = [i for i in chosen if i >= cut]
        return chosen, cut

    def _growth(self) -> float:
        """Mean tokens the history gained per model call so far (the prefix's own)."""
        return self.grown / max(1, self.calls)

    def _recent_results(self) -> int:
        """Tokens of the newest ``keep_recent`` tool results themselves, as sent now.
        Kept as a running sum between compactions (a request over the trigger asks,
        and under mask_first most are), made again after one."""
        keep = self.policy.keep_recent
        if keep <= 0:
            return 0
        results, plan = self.results, self.plan
        version = (len(plan.cleared), plan.cut)
        n, total, seen = self._recent
        if seen != version or n > len(results):
            n, total = len(results), sum(self.cost(i) for i in results[-keep:])
        for k in range(n, len(results)):
            total += self.cost(results[k])
            if k >= keep:
                total -= self.cost(results[k - keep])
        self._recent = (len(results), total, version)
        return total

    def _recent_span(self) -> int:
        """Tokens the request keeps if it keeps the turns of its newest ``keep_recent``
        tool results: the total less what a cut at the newest legal cut before the oldest
        of them removes (counted as cut_to counts it, so that cut_to stops there)."""
        keep = self.policy.keep_recent
        if keep <= 0 or len(self.results) < keep:
            return self.total
        start = self.results[-keep]
        while start > self.plan.cut and not self._legal_cut(start):
            start -= 1
        return self.total - self._removed(start)

    def _removed(self, cut: int) -> int:
        """What moving the cut to ``cut`` takes off the request's messages (system
        messages, the newest user message and the pin of a cut there stay)."""
        first, lu, pin = self.plan.cut, self.last_user, self._pin_for(cut)
        removed = self.costs.between(first, cut)
        if first <= lu < cut:
            removed -= self.cost(lu)
        if pin is not None and pin != lu and first <= pin < cut:
            removed -= self.cost(pin)
        return removed

    def _join_owner(self) -> None:
        """Judge cuts as the replay of the output will: set ``owner`` from the plan.

        In the output, the messages between the head and the cut are gone, so the user
        message of the first kept turn (the pin, or the user message the cut starts at)
        follows the task and joins it (alternation merges two user messages in a row),
        or is the task itself when the head has none. The output's replay then takes
        that turn for the task's: its assistant messages are legal cuts there, that user
        message kept. Judged otherwise here, the output's span of the newest results
        was smaller than the history's, and where the verbatim floor
        (CompactionPolicy.floor) held a request the output's replay compacted it. With
        ``owner`` set those cuts are legal here too (the owner pinned: see _pin_for).
        Made after each compaction where ``joins`` (elsewhere the span does not move a
        trigger); no owner when a system message kept between the task and that user
        message keeps them apart."""
        plan, m = self.plan, self.m
        head, owner = plan.head, plan.pinned
        if owner is None and head < plan.cut < self.j and m[plan.cut].get("role") == "user":
            owner = plan.cut
        self.owner, self.owner_end = None, -1
        if owner is None:
            return
        task = head > 0 and m[head - 1].get("role") == "user"
        systems = self.systems  # kept between the task and the owner: no join
        if task and bisect.bisect_left(systems, owner) > bisect.bisect_left(systems, head):
            return
        self.owner = owner
        users = self.users  # after it, if any; else its turn is the newest (see advance)
        k = bisect.bisect_right(users, owner)
        self.owner_end = users[k] if k < len(users) else -1

    def _note(self, cut: int) -> CutNote | None:
        if cut == self.plan.cut:
            return self.plan.note
        if self.note_cost is None:
            return None
        pin = self._pin_for(cut)
        note = _cut_note(self.m, self.plan.head, cut, pin, self.tally, self.counted)
        if self.ledger is None:
            return note
        return replace(note, receipt=self.ledger.text(self.m, cut, pin))

    def _note_tokens(self, note: CutNote | None) -> int:
        if note is None or self.note_cost is None:
            return 0
        return self.note_cost(note, None if note.how == "insert" else self.m[note.at])

    def _total_with(self, chosen: list[int], cut: int, note: CutNote | None) -> int:
        """Exact request size after clearing ``chosen`` and cutting at ``cut``, with the
        note on that cut."""
        total = self.total
        for i in chosen:
            total -= self.t[i] - self.ph(i)
        if cut == self.plan.cut:
            return total
        pin = self._pin_for(cut)
        removed = self.costs.between(self.plan.cut, cut)
        if pin is not None and self.plan.cut <= pin < cut:
            removed -= self.cost(pin)
        for i in chosen:  # (none before a cut that moved: see _clear_and_cut)
            if self.plan.cut <= i < cut and i != pin and i not in self.plan.cleared:
                removed -= self.t[i] - self.ph(i)
        return total - removed - self._released(cut) - self.note_total + self._note_tokens(note)


def replay_history(
    messages: list[Message],
    tokens: list[int],
    placeholder_tokens: Any,
    fixed: int,
    budget: int,
    policy: CompactionPolicy,
    note_tokens: Callable[[CutNote, Message | None], int] | None = None,
    force_final: bool = False,
    counted: list[bool] | None = None,
    placeholder_of: Callable[[list[Message], int], int] | None = None,
) -> Replay:
    """Replay the history's requests; the result stands at the last one (``.plan``)."""
    replay = Replay(
        messages,
        tokens,
        placeholder_tokens,
        fixed,
        budget,
        policy,
        note_tokens,
        force_final,
        counted,
        placeholder_of,
    )
    for j, message in enumerate(messages):
        if j and message.get("role") == "assistant":
            replay.request(j)
    replay.request(len(messages), final=True)
    return replay


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def masks_media(message: Message, policy: CompactionPolicy) -> bool:
    """Whether clearing ``message`` masks its media and keeps its text (stages/_media_mask.py):
    a user message with media, or a tool result whose text is under ``min_chars`` beside
    its media (a screenshot read); a tool result with long text is cleared whole."""
    if not media_in(message):
        return False
    return message.get("role") == "user" or content_chars(message.get("content")) < policy.min_chars


def _calling(messages: list[Message], i: int) -> tuple[int, Any, Any] | None:
    """(the assistant message, name, arguments) of the call tool result ``i`` answers,
    found within ``SUPERSEDE_LOOKBACK`` messages before it; None when not found."""
    call_id = messages[i].get("tool_call_id")
    if not call_id:
        return None
    for a in range(i - 1, max(-1, i - SUPERSEDE_LOOKBACK), -1):
        message = messages[a]
        if message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and call.get("id") == call_id:
                function = call.get("function")
                function = function if isinstance(function, dict) else {}
                return a, function.get("name"), function.get("arguments")
    return None


def call_of(messages: list[Message], i: int, policy: CompactionPolicy) -> tuple[Any, Any]:
    """(name, arguments) of the call tool result ``i`` answers, where ``policy`` digests
    (only a digest needs it: exact text is never digested); (None, None) otherwise or
    when not found."""
    found = _calling(messages, i) if policy.digest else None
    return (None, None) if found is None else (found[1], found[2])


def placeholder_for(
    message: Message,
    policy: CompactionPolicy,
    path: str | None = None,
    digest: bool = True,
    call: tuple[Any, Any] = (None, None),
) -> Message:
    """The cleared form of a tool result: same role, id and name; content says what
    was removed and how to get it back (under ``policy.digest``, and unless ``digest``
    is false, a log's or a JSON array's digest where one is much smaller:
    stages/_digest.py; ``call``, the call's name and arguments from ``call_of``, tells
    exact text, never digested). A user message keeps its text, its media masked
    (stages/_media_mask.py)."""
    if masks_media(message, policy):
        return masked_media(message, None)[0]
    name = str(message.get("name") or "the tool")
    if digest and policy.digest:
        made = _digested(message, policy, name, path, call)
        if made is not None:
            return {**message, "content": made}
    template = OFFLOAD_PLACEHOLDER if path is not None else policy.placeholder
    fields = _Fields(name=name, chars=content_chars(message.get("content")), path=path or "")
    return {**message, "content": template.format_map(fields)}


def _digested(
    message: Message, policy: CompactionPolicy, name: str, path: str | None, call: tuple[Any, Any]
) -> str | None:
    """The digest of a tool result's text (None: media, exact text, or nothing worth it)."""
    content = message.get("content")
    if isinstance(content, list) and any(
        not isinstance(p, dict) or p.get("type") not in ("text", "input_text", "output_text")
        for p in content
    ):
        return None
    text = output_text(message)
    if len(text) < MIN_DIGEST_CHARS:
        return None
    rules = exact_rules(policy.exact_tools, policy.exact_commands, policy.exact_content)
    if rules.exact(name, call[1], text) or (call[0] is not None and rules.exact(call[0], None, "")):
        return None
    back = (
        f"The full output is in the file {path}; read it with read_file if you need it."
        if path is not None
        else f"Call {name} again if you need all of it."
    )
    return digest_text(text, name, back)


def note_text(note: CutNote, policy: CompactionPolicy) -> str:
    """The policy's note for ``note``: its text depends on the cut only (cache-stable)."""
    template = policy.cut_note or ""
    fields = _Fields(messages=note.messages, turns=note.turns, user_messages=note.user_messages)
    return template.format_map(fields)


def noted(
    note: CutNote, policy: CompactionPolicy, message: Message | None, text: str | None = None
) -> Message:
    """The message carrying the note: ``message`` with the note folded in, or (``insert``)
    a user message of its own. ``text`` replaces the policy's note (a summary); the
    note's receipt follows either."""
    if text is None:
        text = note_text(note, policy)
    if note.receipt:
        text = f"{text}\n{note.receipt}"
    if message is None or note.how == "insert":
        return {"role": "user", "content": text}
    content = message.get("content")
    if note.how == "prepend":
        return {**message, "content": merge_contents(text, content)}
    return {**message, "content": merge_contents(content, text)}


def last_user_before(messages: list[Message], end: int) -> int:
    """The index of the last user message before ``end``, or -1."""
    return next((i for i in range(end - 1, -1, -1) if messages[i].get("role") == "user"), -1)
