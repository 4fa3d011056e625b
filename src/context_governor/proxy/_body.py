"""Reading a request body with a size limit.

A limit checked after ``await request.body()`` is no limit: the whole body is
already in memory. So a declared ``Content-Length`` over the limit is refused
before a byte is read, and a chunked body is read only until it crosses it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

__all__ = ["TooLarge", "declared_length", "read_limited"]


class TooLarge(Exception):
    """The body is larger than the limit; answered with a 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit

    @property
    def message(self) -> str:
        return f"request body is larger than the proxy's limit of {self.limit} bytes"


def declared_length(value: str | None) -> int | None:
    """The Content-Length header as a number, or None when absent or not a number."""
    if value is None or not value.strip().isdigit():
        return None
    return int(value)


async def read_limited(
    chunks: AsyncIterator[bytes], limit: int, declared: int | None = None
) -> bytes:
    """The body from ``chunks``; TooLarge as soon as it is known to exceed ``limit``."""
    if declared is not None and declared > limit:
        raise TooLarge(limit)
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise TooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)
