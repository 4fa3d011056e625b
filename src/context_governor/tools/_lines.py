"""Bounded reading for the file tools: lines cut to a size, and a deadline checked as we go.

A tool call runs in a worker thread, and a thread cannot be interrupted: when its
timeout expires the call is answered but the thread keeps going. So the work
itself must be bounded. :class:`LineReader` reads a file in fixed-size chunks and
keeps at most ``keep`` bytes of any line (a 512 MB file with no newline costs one
chunk plus ``keep`` bytes, not 512 MB), and checks a :class:`Deadline` before
every chunk, so the thread stops soon after the time is up.

Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (Python's universal newlines);
splitting the bytes first is safe because neither byte occurs inside a UTF-8
multi-byte sequence.
"""

from __future__ import annotations

import time
from typing import BinaryIO

__all__ = ["CHUNK_BYTES", "Deadline", "LineReader", "OutOfTime"]

CHUNK_BYTES = 1 << 16
_CR = 0x0D


class OutOfTime(Exception):
    """The deadline passed; the caller turns this into a note or an error."""


class Deadline:
    """A point in time (monotonic clock) that bounded work checks between steps."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def passed(self) -> bool:
        return time.monotonic() > self.at

    def check(self) -> None:
        if self.passed():
            raise OutOfTime


class LineReader:
    """The lines of a binary stream, each cut to its first ``keep`` bytes.

    :meth:`next_line` returns ``(head, cut)``; when ``cut`` is true the rest of
    that line has not been read yet and is skipped (chunk by chunk, never held)
    by the next call, or by :meth:`finish_line` with a byte limit.
    """

    def __init__(
        self, stream: BinaryIO, keep: int, deadline: Deadline, chunk: int = CHUNK_BYTES
    ) -> None:
        self.stream = stream
        self.keep = keep
        self.chunk = chunk
        self.deadline = deadline
        self.buf = b""
        self.pos = 0
        self.eof = False
        #: inside a line whose head was returned but whose end was not reached
        self.partial = False

    def _fill(self) -> bool:
        """Append one chunk (dropping what was consumed); False at the end of the stream."""
        if self.eof:
            return False
        self.deadline.check()
        chunk = self.stream.read(self.chunk)
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0
        return True

    def _line_end(self, start: int, stop: int) -> int | None:
        """Index of the next end of line in ``buf[start:stop]``, reading on when a ``\\r``
        ends the buffer (a ``\\n`` may follow); None when there is none."""
        while True:
            # Two memchr scans: a regex character class is ~500x slower per byte.
            newline = self.buf.find(b"\n", start, stop)
            carriage = self.buf.find(b"\r", start, stop if newline < 0 else newline)
            i = carriage if carriage >= 0 else newline
            if i < 0:
                return None
            if self.buf[i] == _CR and i + 1 == len(self.buf) and not self.eof:
                offset = i - self.pos
                self._fill()
                start, stop = self.pos + offset, self.pos + offset + (stop - i)
                continue
            return i

    def _consume_end(self, i: int) -> None:
        self.pos = i + (2 if self.buf[i : i + 2] == b"\r\n" else 1)

    def next_line(self) -> tuple[bytes, bool] | None:
        """The next line's first ``keep`` bytes and whether it is longer; None at the end."""
        if self.partial:
            self.finish_line()
        while True:
            stop = min(len(self.buf), self.pos + self.keep + 1)
            end = self._line_end(self.pos, stop)
            if end is not None:
                line = self.buf[self.pos : end]
                self._consume_end(end)
                return line, False
            if len(self.buf) - self.pos > self.keep:
                line = self.buf[self.pos : self.pos + self.keep]
                self.pos += self.keep
                self.partial = True
                return line, True
            if not self._fill():
                if self.pos >= len(self.buf):
                    return None
                line = self.buf[self.pos :]
                self.pos = len(self.buf)
                return line, False

    def finish_line(self, limit: int | None = None) -> bool:
        """Skip the rest of a cut line, reading at most about ``limit`` bytes (None: no
        limit but the deadline). True when its end (or the stream's) was reached."""
        if not self.partial:
            return True
        scanned = 0
        while True:
            end = self._line_end(self.pos, len(self.buf))
            if end is not None:
                self._consume_end(end)
                self.partial = False
                return True
            scanned += len(self.buf) - self.pos
            self.pos = len(self.buf)
            if limit is not None and scanned >= limit:
                return False
            if not self._fill():
                self.partial = False
                return True

    def at_end(self) -> bool:
        """Whether nothing is left to read (may read one chunk to find out)."""
        if self.pos < len(self.buf):
            return False
        return not self._fill()
