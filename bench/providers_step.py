"""``python -m bench.providers_step [STEPS] [REPEATS]``: the median appending step per
provider profile, as a fraction of ``json.dumps`` of the body sent.

The speed section's per-step target is read on the OpenAI profile; each provider runs its
own rules on every step, so this replays the same coding session under each profile
(``Governor(immutable_messages=True)``, the cache policy with the replay's fixed
thresholds, bench.speed.SPEED_POLICY) and prints the median over steady steps of each
step's ``govern()`` time over ``json.dumps`` of its output. The report is read after each
step, standing for the model call (the worker counts meanwhile). Compare profiles within
one run: the machine's load moves them all.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from context_governor import Governor

from .sessions import coding_session
from .speed import SPEED_POLICY, steady_start

PROFILES = ("openai", "anthropic", "gemini", "bedrock")
WINDOW = 128_000


def median_ratio(profile: str, steps: int, repeats: int) -> float:
    """The median over steady steps and repeats of govern() time / json.dumps time."""
    ratios: list[float] = []
    for variant in range(repeats):
        replay = coding_session(steps, variant=variant)
        gov = Governor(
            profile=profile,
            context_window=WINDOW,
            max_output=4096,
            tools=replay.tools,
            immutable_messages=True,
            compaction=SPEED_POLICY,
        )
        history: list[dict[str, object]] = []
        for i, step in enumerate(replay.steps):
            history.extend(step)
            start = time.perf_counter_ns()
            result = gov.govern(history)
            took = time.perf_counter_ns() - start
            result.report  # noqa: B018 - the model call's time: the worker counts
            start = time.perf_counter_ns()
            json.dumps({"messages": result.messages})
            dumps = time.perf_counter_ns() - start
            if i >= steady_start(steps):
                ratios.append(took / dumps)
    return statistics.median(ratios)


def main(argv: list[str]) -> list[str]:
    steps = int(argv[0]) if argv else 300
    repeats = int(argv[1]) if len(argv) > 1 else 2
    return [f"{median_ratio(p, steps, repeats):6.3f}x  {p}" for p in PROFILES]


if __name__ == "__main__":
    for line in main(sys.argv[1:]):
        print(line)
