"""The first call on a long history: work that must stay linear in its length.

A first call governs a whole history nobody has seen: the cache policy replays every
request of it (one per assistant message) and compacts many times on the way. Each
compaction's note counts what the cut removes; counting that by walking [head, cut)
at every compaction made a 100,000-message first call quadratic (575 compactions,
about 23 s of the 27 s it took). The replay now keeps prefix counts of the roles.
Then each message a compaction cut looked for the compaction that cut it by scanning
them all (about 3 s more); that is now a binary search.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from long_sessions import long_session

from context_governor.policies import CompactionPolicy
from context_governor.stages._compact import _when
from context_governor.stages._replay import Plan, _Costs, _cut_note, _RoleTally, replay_history

Message = dict[str, Any]


class CountingList(list[Message]):
    """A list that counts how often an item is read by index."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountingList.reads += 1
        return super().__getitem__(index)


def _replay_reads(messages: list[Message]) -> tuple[int, int]:
    """Index reads of the history by one replay with a small trigger (many compactions),
    and how many compactions it made."""
    tokens = [len(str(m.get("content") or "")) // 4 + 4 for m in messages]
    policy = CompactionPolicy(trigger=4_000, target=1_000, min_savings=100)
    counted = CountingList(messages)
    CountingList.reads = 0
    replay = replay_history(
        counted, tokens, lambda i: 20, 0, 100_000, policy, note_tokens=lambda note, m: 10
    )
    return CountingList.reads, len(replay.plan.compactions)


def test_replay_reads_the_history_a_bounded_number_of_times_per_message() -> None:
    """Linear: doubling the history doubles the reads (quadratic before: each of the
    ~n/40 compactions walked everything between the head and its cut)."""
    rng = random.Random(7)
    short = long_session(rng, 1_500, prompt="go on")
    reads, compactions = _replay_reads(short)
    assert compactions > 50  # the walk this guards against ran once per compaction
    assert reads <= 12 * len(short), (reads, len(short), compactions)


class CountingTokens(list[int]):
    """A list of token counts that counts how often an item is read by index."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountingTokens.reads += 1
        return super().__getitem__(index)


def _default_replay_work(messages: list[Message]) -> tuple[int, int]:
    """Work of one replay under the default (cache) policy: mask first, the adaptive
    target, a note on each cut; with a budget that keeps it compacting all the way.
    Reads of the history and of its counts, and placeholder counts asked for."""
    placeholders = 0

    def placeholder(i: int) -> int:
        nonlocal placeholders
        placeholders += 1
        return 20

    counts = CountingTokens(len(str(m.get("content") or "")) // 4 + 4 for m in messages)
    counted = CountingList(messages)
    CountingList.reads = CountingTokens.reads = 0
    replay = replay_history(
        counted, counts, placeholder, 0, 24_000, CompactionPolicy(),
        note_tokens=lambda note, m: 10,
    )  # fmt: skip
    assert len(replay.plan.compactions) > len(messages) // 200  # it kept compacting
    return CountingList.reads + CountingTokens.reads, placeholders


def test_the_default_policy_replays_in_linear_work() -> None:
    """Mask-first keeps every turn, so every request of a long history is over the
    trigger: each one summed the span of the kept turns (the range from the cut to the
    newest results) and walked every result not yet cleared, which made the first call
    quadratic (20,000 messages: 2.8 million reads, 21 s). Now each is answered from
    prefix sums: doubling the history at most doubles the work (plus slack)."""
    rng = random.Random(11)
    short = long_session(rng, 2_000, prompt="go on")
    long = long_session(random.Random(11), 4_000, prompt="go on")
    (reads_s, ph_s), (reads_l, ph_l) = _default_replay_work(short), _default_replay_work(long)
    assert reads_s <= 15 * len(short), (reads_s, len(short))
    assert reads_l <= 2.3 * reads_s, (reads_s, reads_l)
    assert ph_l <= 2.3 * max(ph_s, 1) + 100, (ph_s, ph_l)


@given(st.data())
def test_role_tally_gives_the_note_the_walk_gives(data: st.DataObject) -> None:
    """Differential: the note from the prefix counts equals the note from walking the
    range, for any head, cut and pin (any roles, system messages anywhere)."""
    roles = data.draw(
        st.lists(st.sampled_from(["system", "user", "assistant", "tool"]), min_size=2, max_size=40)
    )
    messages: list[Message] = [{"role": r, "content": str(i)} for i, r in enumerate(roles)]
    head = data.draw(st.integers(0, len(messages) - 1))
    cut = data.draw(st.integers(head, len(messages) - 1))
    pin = data.draw(st.none() | st.integers(head, max(head, cut - 1)))
    if pin is not None and not head <= pin < cut:
        pin = None
    tally = _RoleTally()
    for m in messages:
        tally.add(m["role"])
    assert _cut_note(messages, head, cut, pin, tally) == _cut_note(messages, head, cut, pin)


class CountingCompactions(list[int]):
    """A list of compaction indices that counts the items read from it."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountingCompactions.reads += 1
        return super().__getitem__(index)

    def __iter__(self) -> Iterator[int]:
        for item in super().__iter__():
            CountingCompactions.reads += 1
            yield item


class CountingCuts(list[tuple[int, int | None]]):
    """A list of cuts that counts the items read from it."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountingCuts.reads += 1
        return super().__getitem__(index)


def _linear_when(plan: Plan, index: int) -> int:
    """The compaction whose cut removed ``index``, by a scan: the first cut past it that
    does not keep it as its pin (a compaction may only clear, so the first compaction
    after a message is not always the one that cut it)."""
    found = next(
        (at for (cut, pin), at in zip(plan.cuts, plan.cut_at, strict=True)
         if cut > index and pin != index),
        None,
    )  # fmt: skip
    if found is not None:
        return found
    return plan.cut_at[-1] if plan.cut_at else plan.compactions[-1]


@given(
    st.lists(st.integers(1, 500), min_size=1, max_size=60, unique=True),
    st.data(),
    st.integers(-1, 520),
)
def test_when_finds_the_compaction_whose_cut_passed_the_index(
    positions: list[int], data: st.DataObject, index: int
) -> None:
    """Differential: the binary search gives what the scan gives, pins included."""
    positions.sort()
    pins = [data.draw(st.none() | st.integers(0, cut - 1)) for cut in positions]
    requests = sorted(data.draw(st.lists(st.integers(0, 600), min_size=len(positions),
                                         max_size=len(positions))))  # fmt: skip
    plan = Plan(cut=positions[-1], head=0, compactions=sorted(set(requests)),
                cuts=list(zip(positions, pins, strict=True)), cut_at=requests)  # fmt: skip
    assert _when(plan, index) == _linear_when(plan, index)
    # as compact() asks for every cut message: the cuts' positions made once
    assert _when(plan, index, [c for c, _ in plan.cuts]) == _linear_when(plan, index)


def test_when_reads_a_logarithmic_number_of_compactions() -> None:
    """Every message a compaction cut asks which compaction cut it: a scan of the
    cuts per message made that quadratic in the history (about 3 s at 100,000
    messages and 575 compactions); a binary search reads ~log2(575) of them."""
    cuts = CountingCompactions(range(100, 57_600, 100))
    plan = Plan(cut=57_500, head=0, compactions=list(range(101, 57_601, 100)),
                cuts=[(c, None) for c in cuts], cut_at=list(range(101, 57_601, 100)))  # fmt: skip
    plan.cuts = CountingCuts(plan.cuts)
    CountingCuts.reads = 0
    for index in range(0, 57_500, 7):
        _when(plan, index)
    asked = len(range(0, 57_500, 7))
    assert 0 < CountingCuts.reads <= 15 * asked, (CountingCuts.reads, asked)


@given(st.data())
def test_range_costs_equal_the_walk_they_replace(data: st.DataObject) -> None:
    """Differential: what a range of messages costs as sent, from the prefix sums with
    clears in any order (a clear behind a newer one included), equals summing it message
    by message (system messages left out, a cleared message at its placeholder)."""
    roles = data.draw(st.lists(st.sampled_from(["system", "user", "assistant", "tool"]),
                               min_size=1, max_size=40))  # fmt: skip
    messages: list[Message] = [{"role": r, "content": str(i)} for i, r in enumerate(roles)]
    tokens = data.draw(st.lists(st.integers(1, 500), min_size=len(roles), max_size=len(roles)))
    costs = _Costs(messages, tokens)
    cleared: dict[int, int] = {}
    candidates = [i for i, r in enumerate(roles) if r != "system"]
    for i in data.draw(st.lists(st.sampled_from(candidates), unique=True) if candidates
                       else st.just([])):  # fmt: skip
        placeholder = data.draw(st.integers(0, tokens[i]))
        cleared[i] = placeholder
        costs.clear(i, tokens[i] - placeholder)
        start = data.draw(st.integers(0, len(roles)))
        end = data.draw(st.integers(0, len(roles)))
        walked = sum(
            cleared.get(k, tokens[k]) for k in range(start, end) if roles[k] != "system"
        )
        assert costs.between(start, end) == walked
