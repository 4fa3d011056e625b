"""``python -m bench.floor_step [STEPS] [REPEATS]``: the Governor under the price-aware trigger.

The default cache policy is price-aware (a lower trigger where cached reads are dear, as
for the replays' model gpt-4o) and keeps the verbatim floor (``CompactionPolicy.floor``:
a request whose newest results' turns do not fit under that trigger gets a raised one).
This governs the coding replay (bench/sessions.py) and the session shapes big reads,
bursts and coding (bench/shapes.py) at 128k and 32k with three Governors:

* ``default``: the default policy as gpt-4o gets it, ``immutable_messages=True``;
* ``default, no promise``: the same without the promise;
* ``price_aware=False``: the fixed thresholds (bench.speed's SPEED_POLICY), with the promise.

For each it prints the median step and the total over the steps (medians over the
repeats, each repeat a new Governor on another variant of the session), and how many
steps left the appending fast path, by why: the first call, a step at which the cache
policy compacted, a step over the price-set trigger that did not compact (held by the
floor, or not: a compaction not worth its savings), a step after an answer that cannot
be extended (e.g. pipeline._fit's forced compaction), anything else. The count wraps the
Governor's ``_full`` from outside: the library's step carries no counter. The configs
run interleaved step by step, so load elsewhere hits them alike; run it before and after
a change in the same sitting and note ``uptime``.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from context_governor import CompactionPolicy, Governor

from .sessions import Message, Replay, coding_session
from .shapes import SHAPES
from .speed import MAX_OUTPUT

CONFIGS: tuple[tuple[str, CompactionPolicy | None, bool], ...] = (
    ("default", None, True),
    ("default, no promise", None, False),
    ("price_aware=False", CompactionPolicy(price_aware=False), True),
)
SESSIONS: tuple[tuple[str, Callable[..., Replay], int], ...] = (
    ("coding replay", coding_session, 128_000),
    *(
        (f"{s.label} at {w // 1000}k", s.make, w)
        for s in SHAPES
        if s.key in ("big-reads", "bursts", "coding")
        for w in (128_000, 32_000)
    ),
)


@dataclass
class _Counted:
    """A Governor whose full runs are counted, with the reason each was taken."""

    gov: Governor
    leaves: Counter[str] = field(default_factory=Counter)
    times: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        full = self.gov._full

        def counted(messages: list[Message]) -> Any:
            before = self.gov._state
            n = 0 if before is None else len(before.history)
            stuck = before is not None and before.turn is None
            result = full(messages)
            self.leaves[_why(self.gov, before is None, n, stuck)] += 1
            return result

        self.gov._full = counted  # type: ignore[method-assign]


def _why(gov: Governor, first: bool, n: int, stuck: bool) -> str:
    """Why a step ran the whole pipeline (read from the state it left). ``stuck``: the
    last answer could not be extended (a repair, pipeline._fit's forced compaction)."""
    if first:
        return "first call"
    state = gov._state
    assert state is not None
    replay = state.replay
    if replay is not None and replay.plan.compactions and replay.plan.compactions[-1] > n:
        return "compacted"
    trigger = gov._trigger
    if trigger is not None and state.result.report.tokens_after > trigger and replay is not None:
        policy = replay.policy
        floor = policy.floor(replay.budget, replay._recent_span(), replay._recent_results())
        if floor is None or replay.total > floor[0]:
            return "over the trigger, not compacted, no floor"
        if stuck:
            return "held by the floor, the last answer not extendable"
        return "held by the floor"
    return "the last answer not extendable" if stuck else "other"


def run(replay_of: Callable[..., Replay], window: int, steps: int, variant: int) -> list[_Counted]:
    """One repeat: every config on its own variant of the session, interleaved per step."""
    counted: list[_Counted] = []
    replays = []
    for k, (_, compaction, immutable) in enumerate(CONFIGS):
        replay = replay_of(steps, variant=variant * len(CONFIGS) + k)
        replays.append(replay)
        gov = Governor(
            profile="openai",
            model=replay.model,
            context_window=window,
            max_output=MAX_OUTPUT,
            tools=replay.tools,
            immutable_messages=immutable,
            compaction=compaction,
        )
        counted.append(_Counted(gov))
    histories: list[list[Message]] = [[] for _ in CONFIGS]
    clock = time.perf_counter_ns
    for i in range(steps):
        for c, replay, history in zip(counted, replays, histories, strict=True):
            history.extend(replay.steps[i])
            start = clock()
            result = c.gov.govern(history)
            c.times.append(clock() - start)
            result.report  # noqa: B018 - the caller reads it after its model call
    return counted


def main(argv: list[str]) -> list[str]:
    steps = int(argv[0]) if argv else 300
    repeats = int(argv[1]) if len(argv) > 1 else 2
    lines = [f"{steps} steps, {repeats} repeats; median step / total (median over repeats)"]
    for name, make, window in SESSIONS:
        runs = [run(make, window, steps, r) for r in range(repeats)]
        lines.append(f"{name}:")
        for k, (label, _, _) in enumerate(CONFIGS):
            mine = [r[k] for r in runs]
            median = statistics.median(statistics.median(c.times) for c in mine) / 1000
            total = statistics.median(sum(c.times) for c in mine) / 1e6
            leaves: Counter[str] = Counter()
            for c in mine:
                leaves.update(c.leaves)
            why = ", ".join(f"{v / repeats:g} {k}" for k, v in sorted(leaves.items()))
            lines.append(f"  {label:22} {median:8.1f} µs  {total:8.1f} ms  full runs: {why}")
    return lines


if __name__ == "__main__":
    for line in main(sys.argv[1:]):
        print(line, flush=True)
