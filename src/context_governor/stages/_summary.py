"""Summaries where the cache policy cuts: the text that takes the cut note's place.

The cache policy (compact.py) decides the cut from the history alone; this module
only decides what is said there. The summary of a cut covers everything the cut
removed so far, and is keyed by the digest of exactly those messages and of the
summarizer's settings (Summaries.key), so:

* it is made once, when the cut is first needed, and read back from the store
  byte for byte on every later request: between two compactions requests only
  append, as without summaries;
* the same history with the same store gives the same request in any process;
* it nests: the summary of a later cut is made from the previous cut's stored
  summary plus the turns newly cut (or, when that summary is not in the store,
  from everything cut, governed to the summarizer's budget).

A store that fails, a summarizer that fails or times out: the plain cut note is
used and the report says why (a "fallback" action of stage "summary"). A failed
summary is not asked again by the same Summaries object.

The cut is planned as if the summary took ``max_tokens`` (plus the frame around
it), so the request fits whatever the summarizer writes; a longer summary is
shortened to that room.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..messages import Message
from ..report import Note
from ..summary import public
from ._base import Context

if TYPE_CHECKING:
    from ..summary import Summaries
    from ._replay import CutNote, Plan

__all__ = [
    "MAX_FAILED",
    "PREVIOUS_HEAD",
    "SHORTENED",
    "STAGE",
    "SUMMARY_HEAD",
    "SUMMARY_SLACK",
    "SUMMARY_TAIL",
    "summary_note",
    "summary_room",
]

STAGE = "summary"
#: Tokens of slack between the planned room and a summary's count in the request
#: (the frame and the summary are counted apart when planning).
SUMMARY_SLACK = 8
SUMMARY_HEAD = (
    "[Summary of {messages} earlier messages of this conversation ({turns} assistant "
    "turns, {user_messages} user messages), which were removed here to fit the "
    "context window:]\n"
)
SUMMARY_TAIL = "\n[End of summary.]"
#: How the previous summary leads the summarizer's input when summaries nest.
PREVIOUS_HEAD = "[Summary of the conversation before the messages below]\n"
SHORTENED = " [...summary shortened]"


def _frame(note: CutNote, summary: str) -> str:
    head = SUMMARY_HEAD.format(
        messages=note.messages, turns=note.turns, user_messages=note.user_messages
    )
    return head + summary + SUMMARY_TAIL


def summary_room(note: CutNote, cfg: Summaries) -> str:
    """The frame of a summary with no summary in it (the cut is planned with it plus
    ``cfg.max_tokens``)."""
    return _frame(note, "")


def _removed(messages: list[Message], head: int, cut: int, pin: int | None) -> list[int]:
    """The indices a cut at ``cut`` (``pin`` kept) removes: as replay.Plan.kept says."""
    return [i for i in range(head, cut) if i != pin and messages[i].get("role") != "system"]


def summary_note(
    messages: list[Message], plan: Plan, note: CutNote, cfg: Summaries, ctx: Context
) -> str | None:
    """The text to put where the history was cut, or None (then the plain note): the
    stored summary of the cut, made now if it is not stored yet.

    ``messages`` are what the plan was made on: for a one-call-per-turn model, the split
    turns (stages/_single_call.py), more than the caller's messages. The summary reads
    them; how many messages it stands for is the note's count, the caller's messages the
    cut removed, as the cut note and the report count them."""
    summary = _summary(messages, plan, cfg, ctx, note.messages)
    if summary is None:
        return None
    return _frame(note, _shorten(summary, cfg.max_tokens, ctx))


def _fallback(ctx: Context, at: int, why: str) -> None:
    ctx.record(STAGE, "fallback", at, f"{why}; the plain cut note is used")
    ctx.notes.append(f"summary: {why}; the plain cut note is used")


class _Chain:
    """The cuts of a plan and their store keys, computed newest first and only as far
    back as needed (each message is serialized at most once)."""

    def __init__(self, messages: list[Message], plan: Plan, cfg: Summaries) -> None:
        self.m, self.plan, self.cfg = messages, plan, cfg
        self._digests: dict[int, str] = {}
        self._keys: dict[int, str] = {}

    def removed(self, k: int) -> list[int]:
        cut, pin = self.plan.cuts[k]
        return _removed(self.m, self.plan.head, cut, pin)

    def key(self, k: int) -> str:
        if k not in self._keys:
            digests = []
            for i in self.removed(k):
                if i not in self._digests:
                    self._digests[i] = self.cfg.digest(self.m[i])
                digests.append(self._digests[i])
            self._keys[k] = self.cfg.key_of(digests)
        return self._keys[k]


def _summary(
    messages: list[Message], plan: Plan, cfg: Summaries, ctx: Context, n: int
) -> str | None:
    """The summary of the newest cut (``n``: the caller's messages it removed, for the
    notes): from the store, else made now. A summary nests the one before it, so missing
    ones are made oldest first (each stored): the same history gives the same summaries
    whether a process saw every cut happen or only the last."""
    if not plan.cuts:
        return None
    store = cfg.store
    assert store is not None  # Summaries.__post_init__ gives one
    chain = _Chain(messages, plan, cfg)
    newest = len(plan.cuts) - 1
    cut = plan.cuts[newest][0]
    # walk back to the newest cut whose summary is stored (or to before the first cut)
    k, found = newest, None
    try:
        while k >= 0:
            found = store.get(chain.key(k))
            if found is not None:
                break
            if chain.key(k) in cfg.failed:
                if k == newest:
                    _fallback(ctx, cut, f"no summary for this cut: {cfg.failed[chain.key(k)]}")
                    return None
                break  # an older summary failed: summarize everything cut from scratch
            k -= 1
    except Exception as exc:
        _fallback(ctx, cut, f"summary store failed on read ({exc!r})")
        return None
    if k == newest:
        ctx.notes.append(
            Note(f"cache policy: the summary of {n} cut messages is the stored one", "cache")
        )
        return found
    deadline = time.monotonic() + cfg.timeout
    made = 0
    for j in range(k + 1, newest + 1):
        key = chain.key(j)
        new = chain.removed(j)
        if found is not None:
            old = set(chain.removed(j - 1))
            lead: Message = {"role": "user", "content": PREVIOUS_HEAD + found}
            inputs = [lead, *(public(messages[i]) for i in new if i not in old)]
        else:
            inputs = [public(messages[i]) for i in new]
        found = _make(inputs, key, cfg, ctx, cut, deadline)
        if found is None:
            # this cut's block has failed: not asked again until the next cut
            _remember(cfg, chain.key(newest), cfg.failed.get(key, "an earlier summary failed"))
            return None
        made += 1
    ctx.notes.append(
        Note(
            f"cache policy: summarized {n} cut messages ({made} summary call(s), stored for reuse)",
            "cache",
        )
    )
    return found


#: Failed keys remembered per Summaries object (the oldest are forgotten first).
MAX_FAILED = 10_000


def _remember(cfg: Summaries, key: str, why: str) -> None:
    """Remember that ``key`` has no summary in this process (bounded: a long-lived proxy
    must not grow without end)."""
    cfg.failed[key] = why
    while len(cfg.failed) > MAX_FAILED:
        try:
            del cfg.failed[next(iter(cfg.failed))]
        except (KeyError, RuntimeError, StopIteration):  # another thread got there first
            break


def _make(
    inputs: list[Message], key: str, cfg: Summaries, ctx: Context, at: int, deadline: float
) -> str | None:
    """One summary, made and stored; None (reported, remembered) when it cannot be had."""
    from ..summary import SummarizerError, call_summarizer

    store = cfg.store
    assert store is not None
    try:
        governed = _governed(inputs, cfg, ctx)
        left = deadline - time.monotonic()
        if left <= 0:
            raise SummarizerError(f"no answer within {cfg.timeout:g}s")
        text = call_summarizer(cfg.summarizer, governed, left, cfg.timeout)
    except SummarizerError as exc:
        _remember(cfg, key, f"the summarizer gave none: {exc}")
        _fallback(ctx, at, cfg.failed[key])
        return None
    try:
        store.put(key, text)
        stored = store.get(key)  # the first writer wins: send what every process sends
    except Exception as exc:
        # Not stored: a summary used now would differ from the next request's, so none.
        _remember(cfg, key, f"summary store failed on write ({exc!r})")
        _fallback(ctx, at, cfg.failed[key])
        return None
    return stored if stored is not None else text


def _governed(inputs: list[Message], cfg: Summaries, ctx: Context) -> list[Message]:
    """The summarizer's input inside its own budget (``cfg.input_tokens``): it is a
    governed call like any other, made by the function the pipeline put in the context
    (``Context.fit_summary_input``: a stage never calls the pipeline). A failure here is
    the summarizer's failure."""
    from ..summary import SummarizerError

    fit = ctx.fit_summary_input
    if fit is None:
        raise SummarizerError("its input could not be governed (no pipeline to fit it)")
    try:
        messages, report = fit(inputs, cfg.input_tokens)
    except Exception as exc:
        raise SummarizerError(f"its input could not be governed ({exc!r})") from None
    if report.tokens_before > cfg.input_tokens:
        ctx.notes.append(
            Note(
                f"cache policy: the summarizer's input was governed to its budget of "
                f"{cfg.input_tokens} tokens ({report.tokens_before} -> {report.tokens_after})",
                "cache",
            )
        )
    return list(messages)


def _tokens(text: str, ctx: Context) -> int:
    empty = ctx.counter.message_tokens({"role": "user", "content": ""})
    return ctx.counter.message_tokens({"role": "user", "content": text}) - empty


def _shorten(text: str, max_tokens: int, ctx: Context) -> str:
    """``text`` within ``max_tokens`` (deterministic: the same text, the same result)."""
    n = _tokens(text, ctx)
    goal = max_tokens - _tokens(SHORTENED, ctx) - 1
    tries = 0
    while n > max_tokens and tries < 8 and text:
        text = text[: max(0, int(len(text) * goal / n) - 1)]
        n = _tokens(text + SHORTENED, ctx)
        tries += 1
        if n <= max_tokens:
            return text + SHORTENED
    return text
