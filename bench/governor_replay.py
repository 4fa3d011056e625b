"""A Governor over bench's 300-step coding replay at 128,000: total time of its govern()
calls, median of 5 replays (each a variant of its own, so no count is in the memo), for
the cache policy as a model with reads at 0.1x gets it and the default as gpt-4o gets
it. A quick A/B of the critical path between two commits (the full table is make bench's).

Run: ``python -m bench.governor_replay``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from context_governor import CompactionPolicy, Governor

from .sessions import coding_session

CONFIGS: dict[str, dict[str, Any]] = {
    "cache policy, reads at 0.1x": {"compaction": CompactionPolicy(price_aware=False)},
    "the default as gpt-4o gets it": {},
}


def measure(repeats: int = 5, steps: int = 300) -> dict[str, float]:
    out = {}
    for label, settings in CONFIGS.items():
        totals = []
        for k in range(repeats):
            replay = coding_session(steps, variant=k + 1)
            governor = Governor(
                model=replay.model, tools=replay.tools, context_window=128_000, **settings
            )
            spent = 0.0
            for history in replay.histories():
                started = time.perf_counter()
                governor.govern(history)
                spent += time.perf_counter() - started
            totals.append(spent * 1000)
        out[label] = statistics.median(totals)
    return out


def main() -> int:
    print(" | ".join(f"{label}: {ms:,.0f} ms" for label, ms in measure().items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
