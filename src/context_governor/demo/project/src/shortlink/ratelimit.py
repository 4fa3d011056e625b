"""A token-bucket rate limiter, per client key, in process memory.

Good enough for one process; behind several workers each one has its own
buckets, which makes the effective limit N times higher. Documented, accepted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(
        self,
        capacity: int,
        refill_per_second: float,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 10_000,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        if refill_per_second <= 0:
            raise ValueError("refill_per_second must be positive")
        self.capacity = capacity
        self.refill_per_second = refill_per_second
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: dict[str, _Bucket] = {}
        self._lock = threading.Lock()

    def _refill(self, bucket: _Bucket, now: float) -> None:
        elapsed = max(0.0, now - bucket.updated)
        bucket.tokens = min(self.capacity, bucket.tokens + elapsed * self.refill_per_second)
        bucket.updated = now

    def _bucket(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._max_keys:
                self._evict(now)
            bucket = self._buckets[key] = _Bucket(tokens=float(self.capacity), updated=now)
        return bucket

    def _evict(self, now: float) -> None:
        """Forget buckets that have refilled completely (they carry no state)."""
        full_after = self.capacity / self.refill_per_second
        stale = [k for k, b in self._buckets.items() if now - b.updated >= full_after]
        for key in stale:
            del self._buckets[key]
        if len(self._buckets) >= self._max_keys:
            oldest = min(self._buckets, key=lambda k: self._buckets[k].updated)
            del self._buckets[oldest]

    def allow(self, key: str, cost: float = 1.0) -> bool:
        with self._lock:
            now = self._clock()
            bucket = self._bucket(key, now)
            self._refill(bucket, now)
            if bucket.tokens >= cost:
                bucket.tokens -= cost
                return True
            return False

    def retry_after(self, key: str, cost: float = 1.0) -> float:
        """Seconds until ``allow(key, cost)`` would succeed."""
        with self._lock:
            now = self._clock()
            bucket = self._bucket(key, now)
            self._refill(bucket, now)
            missing = cost - bucket.tokens
            return max(0.0, missing / self.refill_per_second)
