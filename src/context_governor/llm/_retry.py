"""Retries with exponential backoff that honour the server's Retry-After.

Kept apart from the HTTP client so that the policy is a pure, testable
function (:meth:`RetryPolicy.delay`) and any client can reuse the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

from ._errors import ModelError

__all__ = ["NO_RETRY", "RetryCallback", "RetryPolicy", "Sleep", "parse_retry_after", "with_retries"]

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
RetryCallback = Callable[[ModelError, int, float], None]
"""Told (error, attempt number starting at 1, seconds it will wait) before each retry."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often, and how patiently, a failed model call is tried again.

    Only errors the client marked ``retryable`` are retried (429, 5xx, timeouts,
    dropped connections); a 400 will fail the same way every time. A server's
    Retry-After is used as given; one longer than ``max_delay`` ends the retries
    rather than hammering a server that asked us to go away.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 30.0

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("RetryPolicy values must be non-negative")

    def delay(self, error: ModelError, attempt: int) -> float | None:
        """Seconds to wait before retry number ``attempt`` (1-based), or None: give up."""
        if not error.retryable or attempt > self.max_retries:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_delay else None
        return float(min(self.max_delay, self.base_delay * 2 ** (attempt - 1)))


NO_RETRY = RetryPolicy(max_retries=0)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date; None if unreadable.

    Fractional seconds are accepted because several providers send them
    (and ``retry-after-ms`` is converted by the caller).
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if seconds == seconds else None  # NaN is unreadable


async def with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    sleep: Sleep = asyncio.sleep,
    on_retry: RetryCallback | None = None,
) -> T:
    """Await ``call()`` until it succeeds or ``policy`` says to stop; then re-raise."""
    attempt = 0
    while True:
        try:
            return await call()
        except ModelError as error:
            attempt += 1
            wait = policy.delay(error, attempt)
            if wait is None:
                raise
            if on_retry is not None:
                on_retry(error, attempt, wait)
            await sleep(wait)
