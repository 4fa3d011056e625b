"""The one timing helper of the small per-request benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(run: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``run`` in milliseconds, after one warm-up call (which fills
    the token caches, as a long-lived process has them)."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000
