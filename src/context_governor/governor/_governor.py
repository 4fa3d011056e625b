"""Governor: one object per conversation, governing before every model call.

A Governor holds the settings of one conversation (profile, model, window,
output reserve, tools) so that callers pass only the messages on each step. Its
output is always what the stateless ``govern()`` returns for the same input and
settings: whatever it remembers between calls is a cache, never a decision.

What it remembers, and why that is enough to make a step cost what is new:

* a frozen copy of the last history (dicts and lists copied, strings shared), so
  that any edit of an earlier message, in place or by replacement, is seen (with
  ``immutable_messages=True`` the caller promises never to edit a message in place,
  so the messages themselves stand in for the copies: the old part is checked by
  identity, and only a message that is not the same object is compared deeply);
* the token count of each message, so that an unchanged message is never
  tokenized again;
* the last result and the cache policy's replay. When the new history is the old
  one plus new messages, the replay continues over the new requests only; if none
  of them compacts, the new messages need no repair (checked by governing the
  newest turn and the new messages alone), and the old result ended with the old
  history's newest turn untouched, then the stateless result is the old result
  with the new messages appended, and that is what is returned.

Anything else (an edit, a truncation, a compaction, a repair, the seed policy,
the nanobot profile) runs the whole pipeline, still with the cached counts.

A step over the cache policy's trigger is still a plain append where the verbatim floor
(``CompactionPolicy.floor``) raises every new request's trigger above it: the replay of
the history and that of the output (which pipeline._fit asks about) say so on exact
counts (``Replay.quiet``); the output's replay is made on the first step that needs it.

An appending step does not tokenize its new messages on the critical path when the
counter is an exact byte-level BPE one: it decides from their UTF-8 size, an upper
bound on their tokens (counting.message_bound), whenever that bound keeps the step
under the cache policy's trigger (every count-dependent decision of the pipeline
acts only above a threshold, so a decision that holds for the bound holds for the
exact count). The exact counts are computed by a worker thread while the caller
makes its model call; the returned report waits for them (briefly, if at all) when
it is first read, and the next step folds them into the cache before it decides
anything. A step the bound cannot decide counts exactly, as before.

The appending step walks its new messages once (probe.plain_facts: the window's shape,
their bounds and call ids), resuming after the old turn when the last window was plain,
and runs the per-message rule checks on the new messages only (docs/governor-speed.md).

The first call (nothing cached) does the same with the whole request: when the UTF-8
bounds of every message and of the tool definitions, and the totals of the pipeline run
on those bounds (its repairs included), stay under the cache policy's trigger, no
count-dependent decision acts, so the run on bounds returns exactly the messages of the
run on exact counts. Its messages are returned at once; the exact run (which builds the
encoding, 50-70 ms of CPU for o200k_base) is left to a thread of its own, started as the
call returns, and the report is made from it when first read. Constructing a Governor
builds no encoding either (the counter builds it on its first count). The exact run also
checks the argument: if its messages differ from those returned (it cannot happen; a bug
if it does), reading that report raises RuntimeError, and so does the next call if the
report was never read (an exact run that fails raises its error the same way); the
Governor then forgets its state and counts first calls exactly from then on. A first
call the bounds cannot decide counts exactly, on the critical path (e.g. a resumed long
session near or over the trigger).

With a count store (``count_store=``, counting/store.py), a first call or a full run first
reads the counts its counter's memo lacks from the store, in one batch (a resumed session
then tokenizes only what is new), and the counts it had to make are written back off the
critical path: by the worker thread, or by the first call's own thread; each appending
step's new counts are written by the worker too. A store that fails is a note in that
call's report, never an error; without a store an appending step is unchanged.

The results whose report is made later, and the first call's thread, are in late.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..counting import (
    ExactCounter,
    Known,
    TokenCounter,
    count_in_background,
    message_bound,
    tools_bound,
)
from ..counting import KnownCounts as _KnownCounts
from ..counting.pool import precount as _precount
from ..counting.store import CountLink, CountStore, Loaded, count_link
from ..errors import ConfigError, InputError, brief
from ..messages import Message
from ..messages.inputs import check_messages, check_tools
from ..messages.roles import Developers, first_edge
from ..pipeline import GovernResult, Settings, govern, resolve_settings, run, with_developers
from ..policies import Compaction, CompactionPolicy
from ..profiles import STRICT_STAGES, Profile
from ..report import Action, Report, moved_messages, note_kind
from ..stages import (
    SHRINK_STAGE,
    Context,
    Replay,
    output_replay,
    shrink,
    shrink_forms,
    shrink_policy,
    shrunk_form,
)
from ._late import MISMATCH, Bounds, CountedLater, Exact, ExactLater, FirstJob, Relabelled
from ._probe import Resume, leaves_alone, plain_facts

__all__ = ["Governor"]

_ANCHOR: Message = {"role": "user", "content": "(continued)"}
#: Notes a result extended by appending may carry: the cache policy's account of itself
#: and the count store's (any other note says something the next call must redo).
_EXTENDABLE_NOTES = frozenset({"cache", "store"})


def _same(value: Any) -> Any:
    """The message itself: under the caller's promise it never changes in place."""
    return value


def _freeze(value: Any) -> Any:
    """A copy of the containers of a message (strings and numbers are shared)."""
    if type(value) is dict:
        return {k: _freeze(v) for k, v in value.items()}
    if type(value) is list:
        return [_freeze(v) for v in value]
    return value


@dataclass(slots=True)
class _Pending:
    """A step accepted on bounds whose exact counts are still being computed."""

    history: list[Message]  # that step's history (the replay continues over it)
    result: CountedLater
    sent: list[Message]  # that step's output (the output's replay continues over it)


@dataclass(slots=True)
class _State:
    history: list[Message]  # the last history (its message objects)
    frozen: list[Any]  # their frozen copies
    #: their token counts as the stages after the shrink see them (a shrunk result's is
    #: its shrunk form's: ``shrunk`` has the form and the count of the result as it came)
    tokens: list[int]
    result: GovernResult
    #: the result's messages, copied: the result may be the caller's own list, which
    #: grows in place as the conversation goes on
    sent: list[Message]
    replay: Replay | None
    call_ids: set[str]
    #: the newest model turn starts here in the history, and the result ends with
    #: history[turn:] untouched; None when the result cannot be extended
    turn: int | None
    #: the last step, if it was accepted on bounds: its counts are not in ``tokens`` yet
    pending: _Pending | None = None
    #: where probe.plain_window's walk stands after the next window's old part (the
    #: anchor and history[turn:]), when the last step's window was plain: that part is
    #: then the end of a plain window, and the next walk starts after it
    resume: Resume | None = None
    #: the first call, if it was decided on bounds: tokens, replay and turn are not set yet
    first: ExactLater | None = None
    #: the cache policy's replay of ``sent`` (what pipeline._fit replays to tell whether
    #: governing the output again would compact it): a step over the trigger that the
    #: verbatim floor holds needs it. Kept from the last full run when that run made one,
    #: else made on first need from ``out_base``; once made, it continues every step
    out_replay: Replay | None = None
    #: for that: the counts of the last full run's output and the history's length then
    #: (every later step appends the same messages to both, counted in ``tokens``)
    out_base: tuple[list[int], int] | None = None
    #: the results of the history the lossless shrink changes (stages/_shrink.py): index
    #: -> (the shrunk form the output carries, the count of the result as it came)
    shrunk: dict[int, tuple[Message, int]] = field(default_factory=dict)


class Governor:
    """Governs one conversation's context before each model call.

    >>> gov = Governor(profile="openai", context_window=32_000)
    >>> result = gov.govern(history)          # doctest: +SKIP
    >>> send(result.messages)                 # doctest: +SKIP

    Settings are checked once, here, so a misconfigured Governor fails at
    construction rather than on the first model call. A Governor is not
    thread-safe: use one per conversation (that is what it is for). Treat the histories you pass
    as values: a Governor notices edits of earlier messages (it compares against
    its frozen copy), so appending, editing and truncating are all fine.

    ``immutable_messages=True`` is a promise by the caller: a message (or anything
    inside it: its content parts, tool calls, arguments) is never edited in place
    after it was passed in. Replacing, inserting or dropping messages (new objects)
    is still fine. With it the Governor keeps no copies: it sees that the old part
    of the history is unchanged by comparing message objects by identity (a pointer
    compare each; only a message that is not the same object is compared deeply),
    and its worker counts the caller's own messages. If the promise is broken (a
    dict already passed in is edited in place), the edit may go unseen: the output
    can differ from what ``govern()`` returns for the same history, and a report's
    counts can be stale. Leave it off (the default) when any code that can reach
    the messages might edit them.

    ``count_store`` (a URL such as ``sqlite:///counts.db`` or ``redis://host:6379/0``, or
    a store object; see counting/store.py) keeps exact token counts between processes: a
    Governor resuming a long session in a new process reads its history's counts instead
    of tokenizing it again. It never changes an answer; a failing store is reported in
    the report's notes and counted around.
    """

    def __init__(
        self,
        *,
        profile: str | Profile = "openai",
        model: str | None = None,
        context_window: int | None = None,
        max_output: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        max_tool_result_chars: int | None = None,
        prefill: bool = False,
        compaction: str | Compaction | None = None,
        count_tokens: Callable[[str], int] | None = None,
        immutable_messages: bool = False,
        count_store: str | CountStore | CountLink | None = None,
    ) -> None:
        if type(immutable_messages) is not bool:
            raise ConfigError(
                f"immutable_messages must be True or False, got {brief(immutable_messages)}"
            )
        #: the caller's promise (see the class docstring): messages stand in for copies
        self.immutable_messages = immutable_messages
        self._copy: Callable[[Any], Any] = _same if immutable_messages else _freeze
        self._kwargs: dict[str, Any] = {
            "count_tokens": count_tokens,
            "profile": profile,
            "model": model,
            "context_window": context_window,
            "max_output": max_output,
            "max_tool_result_chars": max_tool_result_chars,
            "prefill": prefill,
            "compaction": compaction,
            # one link (and connection) for this Governor and its stateless fallbacks
            "count_store": count_link(count_store),
        }
        # A private copy: the caller may change its list; our counts must not go stale.
        # Checked first: a copy of tools nested too deeply (or cyclic) would recurse forever.
        check_tools(tools)
        private_tools = None if tools is None else _freeze(tools)
        self.settings: Settings = resolve_settings(tools=private_tools, **self._kwargs)
        #: where exact counts persist between processes (counting/store.py), or None
        self._store = self.settings.count_store
        #: the tools' count, made on first need when counting them would build the
        #: encoding; now otherwise (a count_tokens hook that fails on them fails here)
        self._tools_counted: tuple[Sequence[Any] | None, int] | None = None
        counter = self.settings.counter
        if not isinstance(counter, ExactCounter) or counter.loaded:
            self._tools_counted = self._tools_count
        #: whether a first call may be decided on bounds (off after a mismatch)
        self._first_on_bounds = True
        self._state: _State | None = None
        #: the developer messages' system-role copies, once one was seen (messages/roles.py)
        self._developers: Developers | None = None
        self._anchor_tokens: int | None = None  # the probe window's anchor, counted once
        #: the policy and counter, and the replay's placeholder counts kept for them
        #: (_placeholder_counts)
        self._placeholders: tuple[Compaction, TokenCounter, Known] | None = None
        budget = self.settings.budget
        #: the cache policy's trigger: a step whose output crosses it is never a plain append
        self._trigger = budget
        compaction = self.settings.compaction
        if budget is not None and budget > 0 and isinstance(compaction, CompactionPolicy):
            self._trigger = compaction.thresholds(budget)[0]
        #: the cache policy's settings when its profile shrinks tool results losslessly
        #: before any stage that changes a message's content (an appending step then
        #: appends each new result in its shrunk form), else None (a step meeting a result
        #: to shrink runs the whole pipeline)
        self._shrinking = (
            shrink_policy(compaction) if _shrinks_first(self.settings.profile) else None
        )

    def _placeholder_counts(self, messages: int, edited: bool) -> Known:
        """The replay's placeholder counts kept from one whole run to the next (by the
        message each stands for, kept alive with it): a compaction's replay weighs every
        cleared result again. Made anew when the history was not only appended to (a
        message edited in place keeps its identity, not its placeholder), when the policy
        or the counter changed, or when it holds far more than the history."""
        held = self._placeholders
        settings = self.settings
        if (
            edited
            or held is None
            or held[0] is not settings.compaction
            or held[1] is not settings.counter
            or len(held[2]) > 4 * messages
        ):
            held = self._placeholders = (settings.compaction, settings.counter, Known())
        return held[2]

    @property
    def _tools_count(self) -> tuple[Sequence[Any] | None, int]:
        """The tools (the Governor's own copy) and their exact count."""
        if self._tools_counted is None:
            tools = self.settings.tools
            self._tools_counted = (tools, self.settings.counter.prompt_tokens([], tools))
        return self._tools_counted

    # The settings, for callers (the runner reads max_output and the profile).
    @property
    def profile(self) -> Profile:
        return self.settings.profile

    @property
    def model(self) -> str | None:
        return self.settings.model

    @property
    def context_window(self) -> int | None:
        return self.settings.window

    @property
    def max_output(self) -> int:
        return self.settings.max_output

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        tools = self.settings.tools
        return None if tools is None else list(tools)

    @property
    def compaction(self) -> Compaction:
        return self.settings.compaction

    @property
    def count_tokens(self) -> Callable[[str], int] | None:
        """The token-count hook given at construction (the runner passes it on when it
        governs a native request body)."""
        hook: Callable[[str], int] | None = self._kwargs["count_tokens"]
        return hook

    def reset(self) -> None:
        """Forget everything cached (the next call costs what a stateless one does)."""
        self._state = None
        self._developers = None
        self._placeholders = None

    def govern(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None
    ) -> GovernResult:
        """Govern ``messages`` with this conversation's settings.

        ``tools`` overrides the tools given at construction for this call only
        (agents sometimes change their tool set mid-conversation); such a call is
        governed statelessly.
        """
        if tools is not None and tools != self.settings.tools:
            return govern(messages, tools=tools, **self._kwargs)
        if self._developers is not None:
            return self._govern_developers(messages)
        return self._govern(messages)

    # -- internals ------------------------------------------------------------------

    def _govern(self, messages: list[Message]) -> GovernResult:
        """govern() for a history that holds no developer message (messages/roles.py)."""
        state = self._state
        if (
            state is not None
            and type(messages) is list
            and first_edge(messages, len(state.history)) is None
        ):
            fast = self._extend(state, messages)  # it checks the old part is unchanged
            if fast is not None:
                return fast
        check_messages(messages, legacy=True)
        if first_edge(messages) is not None:
            # From now on the stages get system-role copies of developer messages.
            self.reset()
            self._developers = Developers()
            return self._govern_developers(messages)
        if not self._incremental():
            return run(messages, self.settings)[0]
        if self._state is None:
            first = self._first(messages)
            if first is not None:
                return first
        return self._full(messages)

    def _govern_developers(self, messages: list[Message]) -> GovernResult:
        """govern() once a developer message was seen: the same Governor on the history
        with its developer messages as system-role copies, made once per message (so
        this Governor's identity checks hold from call to call), the output relabelled
        (pipeline.with_developers)."""
        developers = self._developers
        assert developers is not None
        if type(messages) is not list:
            check_messages(messages)  # raises: the error names the caller's input
        return with_developers(messages, self.settings, self._govern, developers, Relabelled)

    def _incremental(self) -> bool:
        """Only additive counters (the exact one) and the cache policy are incremental;
        the nanobot profile reproduces the seed, whose counts do not add up."""
        return self.settings.profile.provider is not None

    def _full(self, messages: list[Message]) -> GovernResult:
        state = self._state
        if state is not None:
            self._settle(state)
        known = Known()
        same = 0  # messages[:same] equal the last history: their copies and counts hold
        if state is not None:
            for i, (old, new) in enumerate(zip(state.frozen, messages, strict=False)):
                if old is not new and old != new:
                    break
                same = i + 1
            known.add_all(messages[:same], _as_they_came(state))
        loaded = None
        unseen = messages[same:]
        if self._store is not None:
            # before the tools' count: the store may have it too
            loaded = self._store.read(self.settings.counter, unseen, self.settings.tools)
            if loaded is not None:
                known.merge(loaded.known)
        _precount(self.settings.counter, unseen, known)
        counter = _KnownCounts(self.settings.counter, known, self._tools_count)
        edited = state is None or same < len(state.frozen)  # not only appended to
        counter.placeholders = self._placeholder_counts(len(messages), edited)
        result, ctx = run(messages, self.settings, counter)
        tokens = [counter.message_tokens(m) for m in messages]
        if loaded is not None:
            self._stored(loaded, counter, result)
        replay = ctx.replay
        sent = list(result.messages)
        shrunk = self._shrunk(messages, result.report, tokens, counter)
        turn = None if shrunk is None else self._extendable(messages, result, replay, shrunk)
        out_replay, out_base = None, None
        if turn is not None and self._floors(self.settings.compaction):
            out_replay, out_base = self._out_replay(ctx, result, sent, len(messages))
        self._state = _State(
            history=list(messages),
            frozen=[
                *(state.frozen[:same] if state is not None else ()),
                *(self._copy(m) for m in messages[same:]),
            ],
            tokens=tokens,
            result=result,
            sent=sent,
            replay=replay,
            call_ids={str(c.get("id")) for m in messages for c in _calls(m)},
            turn=turn,
            out_replay=out_replay,
            out_base=out_base,
            shrunk=shrunk or {},
        )
        return result

    def _shrunk(
        self, messages: list[Message], report: Report, tokens: list[int], counter: Any
    ) -> dict[int, tuple[Message, int]] | None:
        """After a full run: the results of ``messages`` its shrink changed (see
        ``_State.shrunk``; the run's report names them), their counts in ``tokens``
        (those of the messages as they came) made those of their shrunk forms. None when
        a reported result is not the history's (the stages before it moved something):
        then the result is not extended."""
        if self._shrinking is None:
            # a profile whose shrink is not first: its results are not followed here
            return None if any(a.stage == SHRINK_STAGE for a in report.actions) else {}
        forms: dict[int, Message] = {}
        for action in report.actions:
            if action.stage != SHRINK_STAGE:
                continue
            i = action.index
            if not 0 <= i < len(messages):
                return None
            call_id = messages[i].get("tool_call_id")
            form = shrunk_form(messages[i])
            if form is None or (None if call_id is None else str(call_id)) != action.tool_call_id:
                return None
            forms[i] = form
        shrunk: dict[int, tuple[Message, int]] = {}
        for i, form in forms.items():
            shrunk[i] = (form, tokens[i])
            tokens[i] = counter.message_tokens(form)
        return shrunk

    def _out_replay(
        self, ctx: Context, result: GovernResult, sent: list[Message], n: int
    ) -> tuple[Replay | None, tuple[list[int], int] | None]:
        """What a full run leaves for the replay of its output (``sent``, from a history
        of ``n`` messages), under a policy with a floor: the replay itself when
        pipeline._fit made it (the output is over the trigger), else the output's
        counts (from the run's counter: no count is made), for ``_output`` to make it
        from if a later step needs it. Steps under the trigger never do."""
        found = ctx.output_replay
        if found is not None and found.m is result.messages:
            found.m = sent  # our own copy: the result's list may be the caller's
            return found, None
        try:
            return None, ([ctx.tokens(m) for m in sent], n)
        except Exception:  # a count hook that fails: no floor on the fast path, that is all
            return None, None

    def _output(self, state: _State) -> Replay | None:
        """The replay of the output (``_State.out_replay``), made now from ``out_base``
        if it was not made yet; None when there is none (or it compacts somewhere)."""
        if state.out_replay is not None or state.out_base is None:
            return state.out_replay
        counts, n = state.out_base
        state.out_base = None
        budget = self.settings.budget
        tokens = [*counts, *state.tokens[n:]]
        if budget is None or len(tokens) != len(state.sent):
            return None
        counter = _KnownCounts(self.settings.counter, None, self._tools_count)
        ctx = Context(
            counter=counter, tools=self.settings.tools, compaction=self.settings.compaction
        )
        try:
            made = output_replay(state.sent, tokens, ctx, budget)
        except Exception:  # a count hook that fails: no floor on the fast path, that is all
            return None
        plan = made.plan
        if plan.cleared or plan.cut != plan.head:
            return None  # cannot be: the output was left alone by its run (then a yes)
        state.out_replay = made
        return made

    def _first(self, messages: list[Message]) -> GovernResult | None:
        """A first call decided on byte bounds (see the module docstring), or None when
        the bounds cannot decide it."""
        settings = self.settings
        budget = settings.budget
        if (
            not self._first_on_bounds
            or not isinstance(settings.compaction, CompactionPolicy)
            or budget is None
            or budget <= 0
            or self._trigger is None
        ):
            return None
        limit = min(self._trigger, budget)
        counter = settings.counter
        tools = tools_bound(counter, settings.tools)
        if tools is None:
            return None
        bounds = self._bounds(messages, limit - tools)
        if bounds is None:
            return None
        known = Known()
        known.add_all(messages, bounds, strict=True)
        try:
            result, ctx = run(messages, settings, Bounds(counter, known, (settings.tools, tools)))
        except Exception:
            return None  # the exact run raises the right error
        if not _undecided(result.report, ctx.replay, limit):
            return None
        return self._start_exact(messages, result)

    def _start_exact(self, messages: list[Message], bounded: GovernResult) -> GovernResult:
        """Return the run on bounds' messages, with the state to continue from, and leave
        the exact run to a thread."""
        history = list(messages)  # the caller's list grows in place: keep our own
        frozen = [self._copy(m) for m in messages]
        sent = list(bounded.messages)
        # what the exact run (over the frozen copies) must return: the copy of each input
        # message, and of each message the run made (it may share containers with one)
        where = {id(m): i for i, m in enumerate(messages)}
        expected = [
            frozen[where[id(m)]] if id(m) in where and messages[where[id(m)]] is m else _freeze(m)
            for m in sent
        ]
        settings = self.settings

        store = self._store

        def work() -> Exact:
            loaded = None if store is None else store.read(settings.counter, frozen, settings.tools)
            known = Known() if loaded is None else loaded.known
            _precount(settings.counter, frozen, known)
            counter = _KnownCounts(settings.counter, known, self._tools_count)
            result, ctx = run(frozen, settings, counter)
            if loaded is not None:
                self._stored(loaded, counter, result, later=False)  # this thread is off the path
            return Exact(
                result=result,
                tokens=[counter.message_tokens(m) for m in frozen],
                replay=ctx.replay,
                same=result.messages == expected,
            )

        job = FirstJob(work)
        result = ExactLater(bounded.messages, job)
        self._state = _State(
            history=history,
            frozen=frozen,
            tokens=[],
            result=result,
            sent=sent,
            replay=None,
            call_ids=set(),
            turn=None,
            first=result,
        )
        job.start()
        return result

    def _stored(
        self, loaded: Loaded, counter: _KnownCounts, result: GovernResult, later: bool = True
    ) -> None:
        """After a run that read the store: write back the counts it made (in the worker
        thread when ``later``, else now) and report a failed read in the notes."""
        store = self._store
        assert store is not None
        if later:
            store.write_later(counter.inner, loaded, counter.known)
        else:
            store.write(counter.inner, loaded, counter.known)
        if loaded.note is not None:
            result.report.notes.append(loaded.note)

    def _extendable(
        self,
        messages: list[Message],
        result: GovernResult,
        replay: Replay | None,
        shrunk: dict[int, tuple[Message, int]],
    ) -> int | None:
        """Where the newest model turn starts, if the result can be extended by appending:
        the result ends with that turn as the stages got it (``shrunk``: its results in
        their shrunk form) and nothing asks for a whole run."""
        report = result.report
        if (
            not isinstance(self.settings.compaction, CompactionPolicy)
            or report.violations
            or any(note_kind(note) not in _EXTENDABLE_NOTES for note in report.notes)
            or any(moved_messages(a) for a in report.actions)
            or not report.within_budget
        ):
            return None
        if any(a.stage == "opening" for a in report.actions) and not any(
            m.get("role") == "user" for m in messages
        ):
            return None  # a user added because there was none: a later one changes that
        if self.settings.budget is not None and replay is None:
            return None  # nothing to continue: the cache policy never ran (e.g. no messages)
        if replay is not None and replay.force_final:
            # compacted at this request for the repairs' sake (pipeline._fit): a later
            # replay does not know those repairs, so it will not see that compaction
            return None
        turn = _last_assistant(messages, 0, None)
        if turn is None:
            return None
        tail = messages[turn:]
        out = result.messages
        if len(out) < len(tail):
            return None
        for i, (a, b) in enumerate(zip(out[-len(tail) :], tail, strict=True), turn):
            if a is not b and (i not in shrunk or a != shrunk[i][0]):
                return None
        return turn

    def _settle(self, state: _State) -> None:
        """Fold the exact counts of a step accepted on bounds into the cache (waiting for
        the worker if it has not finished: in an agent loop it had a model call's time)."""
        if state.first is not None:
            self._settle_first(state, state.first)
        pending = state.pending
        if pending is None:
            return
        state.pending = None
        counts = pending.result.counts()
        state.tokens.extend(counts)
        pending.result.report  # noqa: B018 - made now, from the exact counts
        if state.replay is not None and not self._continue(state.replay, pending.history, counts):
            # cannot happen (the replay accepted a bound on these counts); if it did, the
            # next call runs the whole pipeline rather than trust the replay
            state.turn = None
        if state.out_replay is not None and not state.out_replay.extend(pending.sent, counts):
            state.out_replay = None  # cannot happen either (the output was under the trigger)

    def _settle_first(self, state: _State, first: ExactLater) -> None:
        """Fill in the state a first call decided on bounds left (waiting for its exact
        run if it must). On a mismatch (see the module docstring) the state is dropped."""
        state.first = None
        error: Exception | None = None
        try:
            exact = first.exact()
            if not exact.same:
                error = RuntimeError(MISMATCH)
        except Exception as exc:  # the exact run failed where the run on bounds did not
            error = exc
        if error is not None:
            self._state, state.turn = None, None
            self._first_on_bounds = False
            if not first.read:
                raise error  # else the report raised it already
            return
        history = state.history
        state.tokens = exact.tokens
        state.replay = exact.replay
        state.call_ids = {str(c.get("id")) for m in history for c in _calls(m)}
        shown = GovernResult(messages=state.sent, report=exact.result.report)
        shrunk = self._shrunk(history, shown.report, state.tokens, self.settings.counter)
        state.shrunk = shrunk or {}
        if shrunk is not None:
            state.turn = self._extendable(history, shown, exact.replay, shrunk)
        else:
            state.turn = None

    def _continue(self, replay: Replay, history: list[Message], counts: list[int]) -> bool:
        """Continue the history's replay over the last ``len(counts)`` messages of
        ``history``: given the whole history, or, where results are shrunk, the new
        messages alone (the replay keeps its own view of the old part: see Replay.append)."""
        if self._shrinking is None:
            return replay.extend(history, counts)
        return replay.append(history[len(history) - len(counts) :], counts)

    def _extend(self, state: _State, messages: list[Message]) -> GovernResult | None:
        """The stateless result when ``messages`` only appends to the last history and
        nothing about the old part changes; None when that cannot be shown cheaply."""
        self._settle(state)
        n = len(state.history)
        if state.turn is None or len(messages) <= n:
            return None
        # With the promise, state.frozen holds the caller's own message objects: the list
        # comparison skips each identical pair with a pointer compare and compares deeply
        # only the messages that were replaced. Without it, every message deeply.
        if messages[:n] != state.frozen:
            return None
        came = messages[n:]
        old = self._old_turn(state, state.turn)
        staged = self._staged(old, came)  # the new results in their shrunk form
        if staged is None:
            return None
        new, shrunk = staged
        # the probe window (a placeholder user message, the newest turn and the new
        # messages), built once for every question below and both tries of _accept
        window = [_ANCHOR, *old, *new]
        # One pass over the window: in one of the plain shapes (probe.py), the new messages
        # pass the input checks and carry no cache breakpoint, and the pass also gives
        # their byte bounds and call ids
        clean = len(window) - len(new)
        facts = plain_facts(window, self.settings, clean, state.resume)
        if facts is None:
            try:
                check_messages(came)  # the old part passed when it was new
            except InputError:
                return None  # the full run reports it, with the message's real index
            if any(_has_cache_control(m) for m in new):
                return None  # limits on breakpoints count the whole list
            ids = [str(c.get("id")) for m in new for c in _calls(m)]
            bounds = self._bounds(new)
        else:
            bounds, ids = facts
            if not self._byte_bounds():
                bounds = None
        if shrunk:
            bounds = None  # a shrunk result's report needs both its counts: made now
        if not state.call_ids.isdisjoint(ids):
            return None  # an id the old part uses: provider id repairs would see it
        plain = facts is not None
        if bounds is not None:
            accepted = self._accept(state, messages, window, new, ids, bounds, plain)
            if accepted is not None:
                return accepted
        return self._accept(state, messages, window, new, ids, None, plain, shrunk)

    @staticmethod
    def _old_turn(state: _State, turn: int) -> list[Message]:
        """``history[turn:]`` as the stages got it (results in their shrunk form)."""
        old = state.history[turn:]
        if state.shrunk:
            old = [state.shrunk[i][0] if i in state.shrunk else m for i, m in enumerate(old, turn)]
        return old

    def _staged(
        self, old: list[Message], came: list[Message]
    ) -> tuple[list[Message], dict[int, str]] | None:
        """The new messages ``came`` as the stages after the shrink get them (``came``
        itself when nothing shrinks), with what the report says of each shrunk one, by
        its position in ``came``; None when a result to shrink answers a call before
        ``old`` (the newest turn), which only a whole run looks up."""
        if self._shrinking is None:
            return came, {}
        forms = shrink_forms([*old, *came], self._shrinking, len(old))
        if not forms:
            return came, {}
        if not all(form.called for form in forms):
            return None
        staged = list(came)
        for form in forms:
            staged[form.index - len(old)] = form.message
        return staged, {form.index - len(old): form.detail for form in forms}

    @staticmethod
    def _floors(policy: Compaction) -> bool:
        """Whether ``policy`` can hold a request over its trigger without compacting: a
        verbatim floor (CompactionPolicy.floor), or, under mask_first, a clearing that
        waits for what it is worth (CompactionPolicy.clear_room)."""
        if not isinstance(policy, CompactionPolicy):
            return False
        if policy.mask_first:
            return True
        return policy.verbatim_floor and policy.adaptive_target and policy.dear_reads()

    def _floor_possible(self, state: _State) -> bool:
        """Whether the verbatim floor could hold a step over the trigger (the history's
        replay and what the output's is made from are at hand, which _full keeps only
        under a policy with a floor): else the step is not worth counting exactly."""
        return state.replay is not None and (
            state.out_replay is not None or state.out_base is not None
        )

    def _held(self, state: _State, new: list[Message], tokens: list[int], after: int) -> bool:
        """Whether a step whose output (``after`` tokens) is over the trigger still
        leaves the old result alone: within the budget, and no request among ``new``
        (``tokens`` their exact counts) compacts in the replay of the history or in that
        of the output (``Replay.quiet``: each held by the verbatim floor)."""
        replay, budget = state.replay, self.settings.budget
        if replay is None or budget is None or after > budget or not replay.quiet(new, tokens):
            return False
        out = self._output(state)
        return out is not None and out.quiet(new, tokens)

    def _byte_bounds(self) -> bool:
        """Whether the counter is one counting.message_bound bounds (ExactCounter.byte_bounded:
        known without building the encoding, so a step never builds it to ask)."""
        counter = self.settings.counter
        return isinstance(counter, ExactCounter) and counter.byte_bounded

    def _bounds(self, messages: list[Message], limit: int | None = None) -> list[int] | None:
        """Upper bounds on the messages' counts, if the counter has them; None as soon as
        their sum passes ``limit`` (a first call stops early on a long history)."""
        counter = self.settings.counter
        bounds: list[int] = []
        total = 0
        for message in messages:
            try:
                bound = message_bound(counter, message)
            except Exception:  # e.g. arguments JSON cannot carry: the exact path says so
                return None
            if bound is None:
                return None
            total += bound
            if limit is not None and total > limit:
                return None
            bounds.append(bound)
        return bounds

    def _anchor(self) -> int:
        """The probe window's anchor's count (counted once per Governor)."""
        if self._anchor_tokens is None:
            self._anchor_tokens = self.settings.counter.message_tokens(_ANCHOR)
        return self._anchor_tokens

    def _window_counter(
        self,
        old: list[Message],
        old_tokens: list[int],
        new: list[Message],
        bounds: list[int] | None,
    ) -> _KnownCounts:
        """A counter that knows the probe window's counts: the anchor's (counted once per
        Governor), the old turn's and, with ``bounds``, those bounds for the new messages."""
        known = Known()
        known.add(_ANCHOR, self._anchor())
        known.add_all(old, old_tokens)
        if bounds is not None:
            known.add_all(new, bounds, strict=True)
        return _KnownCounts(self.settings.counter, known, self._tools_count)

    def _accept(
        self,
        state: _State,
        messages: list[Message],
        window: list[Message],
        new: list[Message],
        ids: list[str],
        bounds: list[int] | None,
        plain: bool = False,
        shrunk: dict[int, str] | None = None,
    ) -> GovernResult | None:
        """Probe the newest turn with the new messages, check the thresholds and, if the
        step is a plain append, grow the state and return the result. With ``bounds`` the
        decisions are taken on those upper bounds (see the module docstring) and the exact
        counts are left to the worker thread. ``window`` is the anchor, the newest turn
        and ``new``; ``ids`` the new messages' call ids; ``plain``: the window is plain;
        ``shrunk``: the new results sent shrunk, by position, with their reports' words."""
        turn = state.turn
        assert turn is not None
        clean = len(window) - len(new)
        old_tokens = state.tokens[turn:]
        counted = self._probe_counts(window, clean, old_tokens, new, bounds, plain)
        if counted is None:
            return None  # a count hook that fails: the full run gives the right error
        counter, new_tokens, total = counted
        if not self._probe_quiet(window, counter, clean, old_tokens, new, bounds, plain, total):
            return None
        added = sum(new_tokens)
        if self._over_trigger(state, new, added):
            held = self._held_exactly(state, new, new_tokens, bounds, added)
            if held is None:
                return None
            new_tokens, added = held
            bounds = None  # decided on exact counts (already so when there were no bounds)
        return self._grow(state, messages, new, ids, bounds, new_tokens, added, plain, shrunk)

    def _probe_counts(
        self,
        window: list[Message],
        clean: int,
        old_tokens: list[int],
        new: list[Message],
        bounds: list[int] | None,
        plain: bool,
    ) -> tuple[_KnownCounts | None, list[int], int] | None:
        """The probe window's counter (None where a plain window with bounds needs none),
        the new messages' counts (``bounds``, or counted) and the window's total as the
        counter adds it up (KnownCounts.prompt_tokens); None when a count fails."""
        counter: _KnownCounts | None = None
        try:
            new_tokens = bounds
            if bounds is None or not plain:  # a plain window with bounds needs no counter
                counter = self._window_counter(window[1:clean], old_tokens, new, bounds)
                if new_tokens is None:
                    new_tokens = [counter.message_tokens(m) for m in new]
            assert new_tokens is not None
            # the window's total as the counter adds it up (KnownCounts.prompt_tokens)
            total = self._anchor() + sum(old_tokens) + sum(new_tokens) + self._tools_count[1]
        except Exception:
            return None  # a count hook that fails: the full run gives the right error
        return counter, new_tokens, total

    def _probe_quiet(
        self,
        window: list[Message],
        counter: _KnownCounts | None,
        clean: int,
        old_tokens: list[int],
        new: list[Message],
        bounds: list[int] | None,
        plain: bool,
        total: int,
    ) -> bool:
        """Whether the pipeline leaves the probe window alone: shown cheaply
        (probe.leaves_alone) or, failing that, by running the whole pipeline on it."""
        # the anchor and the old turn (window[:clean]) passed the input repair unchanged
        # (the old result ends with the turn untouched and has no repair action)
        # the old turn passed every per-message rule in an earlier list (a window or the
        # full run's output, neither with a violation): only the anchor and new are checked
        checked = range(1, clean)
        if leaves_alone(
            window, self.settings, counter, clean=clean, plain=plain, total=total, checked=checked
        ):
            return True
        # not shown cheaply: ask the whole pipeline (e.g. a window over the trigger)
        if counter is None:
            counter = self._window_counter(window[1:clean], old_tokens, new, bounds)
        try:
            probe, _ = run(window, self.settings, counter)
        except Exception:
            return False  # the full run gives the right error, with the right path
        report = probe.report
        return not (
            probe.messages is not window or report.actions or report.notes or report.violations
        )

    def _over_trigger(self, state: _State, new: list[Message], added: int) -> bool:
        """Whether appending ``new`` (``added`` tokens) takes the request over the trigger,
        or is a step the history's replay does not accept as it stands."""
        replay = state.replay
        old = state.result.report
        return (self._trigger is not None and old.tokens_after + added > self._trigger) or (
            replay is not None and not replay.accepts(new, added)
        )

    def _held_exactly(
        self,
        state: _State,
        new: list[Message],
        new_tokens: list[int],
        bounds: list[int] | None,
        added: int,
    ) -> tuple[list[int], int] | None:
        """A step over the trigger: only the verbatim floor can hold every request (no
        compaction, in the replay of the history nor in that of the output, which
        pipeline._fit asks about), and it is decided on exact counts (a request's raised
        trigger depends on them, not only above a threshold). The new messages' exact
        counts and their sum when it holds, else None."""
        if bounds is not None:
            if not self._floor_possible(state):
                return None
            try:
                new_tokens = [self.settings.counter.message_tokens(m) for m in new]
            except Exception:
                return None
            added = sum(new_tokens)
        if not self._held(state, new, new_tokens, state.result.report.tokens_after + added):
            if self._store is not None:
                # counted exactly here, so the full run finds them in the memo and
                # would not write them back: store them now
                known = new_tokens
                frozen = [self._copy(m) for m in new]
                self._store.write_counts_later(self.settings.counter, frozen, lambda: known)
            return None
        return new_tokens, added

    def _shrink_actions(
        self, start: int, came: list[Message], tokens: list[int], shrunk: dict[int, str] | None
    ) -> tuple[list[Action], list[int]]:
        """The shrink's actions on the new messages ``came`` (sent counted ``tokens``; the
        first at ``start`` in the history; ``shrunk``: see _accept), as a whole run
        records them, and the counts of the messages as they came."""
        if not shrunk:
            return [], tokens
        actions: list[Action] = []
        as_came = list(tokens)
        for k, detail in shrunk.items():
            as_came[k] = self.settings.counter.message_tokens(came[k])
            call_id = came[k].get("tool_call_id")
            actions.append(
                Action(
                    SHRINK_STAGE,
                    "replace",
                    start + k,
                    detail,
                    None if call_id is None else str(call_id),
                    as_came[k] - tokens[k],
                )
            )
        return actions, as_came

    def _grow(
        self,
        state: _State,
        messages: list[Message],
        new: list[Message],
        ids: list[str],
        bounds: list[int] | None,
        new_tokens: list[int],
        added: int,
        plain: bool,
        shrunk: dict[int, str] | None = None,
    ) -> GovernResult:
        """The accepted step: the state grows in place (one copy of the history per step,
        not one per field) and the result is made, its counts exact now (``bounds`` None)
        or left to the worker thread (never with ``shrunk`` results: see _accept)."""
        turn = state.turn
        assert turn is not None
        old = state.result.report
        replay = state.replay
        history = list(messages)  # the caller's list grows in place: keep our own
        start = len(state.history)
        came = history[start:]  # ``new`` but the results in ``shrunk``
        state.sent.extend(new)
        frozen = [self._copy(m) for m in came]
        sent = list(state.sent)  # the caller may append to the list it gets
        finish = _finisher(old, len(messages), len(new))
        result: GovernResult
        if bounds is None:
            actions, as_came = self._shrink_actions(start, came, new_tokens, shrunk)
            if actions:
                finish = _finisher(old, len(messages), len(new), actions, sum(as_came) - added)
            result = GovernResult(messages=sent, report=finish(added))
            if replay is not None:
                self._continue(replay, history, new_tokens)
            if state.out_replay is not None and not state.out_replay.extend(state.sent, new_tokens):
                state.out_replay = None  # cannot happen: _held or the trigger said quiet
            state.tokens.extend(new_tokens)
            for k in shrunk or ():
                state.shrunk[start + k] = (new[k], as_came[k])
            if self._store is not None:
                self._store.write_counts_later(self.settings.counter, frozen, lambda: as_came)
        else:
            # the worker counts the frozen copies: the caller may edit its dicts meanwhile
            # (under the promise, the messages themselves)
            counts = count_in_background(self.settings.counter, frozen)
            result = CountedLater(sent, counts, finish)
            state.pending = _Pending(history, result, state.sent)
            if self._store is not None:
                self._store.write_counts_later(self.settings.counter, frozen, counts.result)
        state.history = history
        state.frozen.extend(frozen)
        state.result = result
        state.call_ids.update(ids)
        new_turn = _last_assistant(messages, start, turn)
        state.turn, state.resume = new_turn, None
        if plain and new_turn is not None:
            state.resume = _resume(history[new_turn], new[-1])
        return result


def _undecided(report: Report, replay: Replay | None, limit: int) -> bool:
    """Whether a run on bounds took no count-dependent decision: the request stayed under
    ``limit`` (the trigger, and the budget) before and after the repairs, and the cache
    policy's replay compacted nowhere. Then a run on smaller counts (the exact ones)
    decides the same: every such decision acts only above a threshold."""
    if replay is None:
        return False  # the cache policy did not run: nothing to continue from
    plan = replay.plan
    return (
        report.tokens_before <= limit
        and report.tokens_after <= limit
        and not replay.force_final
        and not plan.compactions
        and not plan.cleared
        and plan.cut == plan.head
        and not any(a.stage == "pipeline" for a in report.actions)
    )


def _finisher(
    old: Report,
    messages_before: int,
    new: int,
    shrunk: Sequence[Action] = (),
    more_before: int = 0,
) -> Callable[[int], Report]:
    """The report of a step that appended ``new`` messages of ``added`` tokens to the
    history whose report was ``old`` (made when the exact ``added`` is known); with the
    actions of the new results ``shrunk`` (after the shrink's earlier ones, where a run
    records them: nothing before the shrink acts on a result that is extended), which
    came ``more_before`` tokens larger than they are sent."""

    def finish(added: int) -> Report:
        actions = list(old.actions)
        if shrunk:
            at = max((k + 1 for k, a in enumerate(actions) if a.stage == SHRINK_STAGE), default=0)
            actions[at:at] = shrunk
        return replace(
            old,
            tokens_before=old.tokens_before + added + more_before,
            tokens_after=old.tokens_after + added,
            messages_before=messages_before,
            messages_after=old.messages_after + new,
            actions=actions,
            # a failed store read is reported by the call that read, not by each step after
            notes=[note for note in old.notes if note_kind(note) != "store"],
            violations=[],
            compaction_cost=None,  # an appending step compacts nothing
        )

    return finish


def _shrinks_first(profile: Profile) -> bool:
    """Whether ``profile``'s stages before the shrink are the provider profiles' own (they
    drop, insert or move messages, never change a result's content), so that a result
    the Governor shrinks as it appends is the one the shrink stage would get."""
    stages = profile.stages
    if shrink not in stages:
        return False
    return stages[: stages.index(shrink)] == STRICT_STAGES[: STRICT_STAGES.index(shrink)]


def _as_they_came(state: _State) -> list[int]:
    """The counts of the last history's messages as they came (``_State.tokens`` has
    those of the shrunk results' forms)."""
    if not state.shrunk:
        return state.tokens
    return [state.shrunk[i][1] if i in state.shrunk else t for i, t in enumerate(state.tokens)]


def _resume(turn: Message, last: Message) -> Resume:
    """Where the plain walk stands after the next window's old part: a plain window's
    newest model turn ``turn`` (the only assistant message of that part: the turn is the
    last one) through its last message ``last``. Only call for messages of a plain window
    (plain calls, string ids)."""
    return Resume(last["role"], frozenset(call["id"] for call in turn.get("tool_calls") or ()))


def _last_assistant(messages: list[Message], start: int, default: int | None) -> int | None:
    """Index of the last assistant message at or after ``start``."""
    for i in range(len(messages) - 1, start - 1, -1):
        if messages[i].get("role") == "assistant":
            return i
    return default


def _calls(message: Message) -> list[dict[str, Any]]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _has_cache_control(message: Message) -> bool:
    if "cache_control" in message:
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and "cache_control" in p for p in content
    )
