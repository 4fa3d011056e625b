"""``python -m bench.step [STEPS] [REPEATS]``: the speed section's in-process replay alone.

The per-step target (a Governor's appending step at most 0.1x ``json.dumps`` of the
request) is read on the replay bench/speed.py runs with every contender interleaved step
by step; the whole benchmark (``python -m bench.run``) takes many minutes more for its
other sections. This runs that replay the same way (the same warm-up, sessions and
contenders, LangChain when installed) and prints, for the Governor's rows, the median
over steady steps of each row's time over the step's ``json.dumps`` (as bench.run's
Targets row computes it) and the median time. Run it before and after a change, in the
same sitting: the machine's load moves both sides.
"""

from __future__ import annotations

import statistics
import sys

from .sessions import SEED, coding_session
from .speed import across_repeats, interleaved_repeat, langchain_available, steady_start

WINDOW = 128_000
DUMPS = "json.dumps (sent body)"


def main(argv: list[str]) -> list[str]:
    steps = int(argv[0]) if argv else 300
    repeats = int(argv[1]) if len(argv) > 1 else 3
    langchain = langchain_available()
    warm = coding_session(min(steps, 30), seed=SEED + 1)
    n = len(warm.steps)
    interleaved_repeat(
        warm,
        coding_session(n, seed=SEED + 2),
        WINDOW,
        langchain=langchain,
        other=coding_session(n, seed=SEED + 3),
        priced=coding_session(n, seed=SEED + 4),
    )
    runs: dict[str, list[list[int]]] = {}
    for r in range(repeats):
        out = interleaved_repeat(
            coding_session(steps, variant=r),
            coding_session(steps, variant=repeats + r),
            WINDOW,
            langchain=langchain,
            other=coding_session(steps, variant=2 * repeats + r),
            priced=coding_session(steps, variant=3 * repeats + r),
        )
        for label, times in out.items():
            runs.setdefault(label, []).append(times)
    start = steady_start(steps)
    dumps = across_repeats(runs[DUMPS])[start:]
    lines = []
    for label, repeated in runs.items():
        if not label.startswith("Governor"):
            continue
        per_step = across_repeats(repeated)[start:]
        ratio = statistics.median(a / b for a, b in zip(per_step, dumps, strict=True))
        median_us = statistics.median(per_step) / 1000
        lines.append(f"{ratio:6.3f}x  {median_us:8.1f} µs  {label}")
    return lines


if __name__ == "__main__":
    print("\n".join(main(sys.argv[1:])))
