"""A counting worker process (pool.py starts it): exact token counts over a pipe.

Run as ``python -m context_governor.counting._worker ENCODING``, or as pool.py runs it:
its ``main`` with the two packages stood in by plain modules, so that their ``__init__``
(the whole library) is not imported: it needs only the counting modules it names.

It builds the encoding the parent counts with (``encodings.counting_encoding``), then
answers frames until its input ends: each frame is an 8-byte little-endian length and a
``marshal``-ed list of texts, each answer the same framing around the pair of the list of
their counts
(``runs.bounded_tokens`` with the encoding, as ``ExactCounter`` counts) and the chunk
counts made for them (``chunks.ChunkedCount.journal``: the parent remembers them). The
parent's first frame is a probe it checks the answer to. It exits with 3 when the encoding
cannot be built, and at the end of its input (the parent closed the pipe, or died).

A frame holding ``None`` instead of a list asks it to load the bulk counter at once
(the parent's call is big enough to count with it; nothing is answered). Otherwise, the
first time it is idle after a job (no frame within ``IDLE`` seconds of an answer
other than the probe's: between the probe and the first job it waits for the caller to
make its texts, and a load then would hold up that job), it loads
the bulk counter (``encodings.bulk_counting``: quicktok, the same counts, several times
faster than rs-bpe, half a second to load): the call that started it is not held up by
the load, and every later one is counted faster. The load holds only this process's
interpreter, never the parent's.

Kept out of the package's imports: only the child process loads it.
"""

from __future__ import annotations

import marshal
import os
import select
import sys
from typing import BinaryIO

from context_governor.counting._chunks import ChunkedCount
from context_governor.counting._encodings import bulk_counting, count_ordinary, counting_encoding
from context_governor.counting._runs import bounded_tokens

LENGTH = 8
#: Seconds without a frame after which the worker counts itself idle (see the docstring).
IDLE = 0.25


def read_frame(fd: int) -> bytes | None:
    """One frame's payload from file descriptor ``fd`` (read unbuffered, so that a wait
    on it tells whether a frame is coming), or None at the end of the stream."""
    head = _read_exactly(fd, LENGTH)
    if head is None:
        return None
    return _read_exactly(fd, int.from_bytes(head, "little"))


def _read_exactly(fd: int, size: int) -> bytes | None:
    parts: list[bytes] = []
    left = size
    while left > 0:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def write_frame(stream: BinaryIO, data: bytes) -> None:
    stream.write(len(data).to_bytes(LENGTH, "little"))
    stream.write(data)
    stream.flush()


def main(argv: list[str]) -> int:
    encoding = counting_encoding(argv[0]) if argv else None
    if encoding is None:
        return 3
    count = count_ordinary(encoding)
    journal: list[tuple[bytes, int]] = []
    if isinstance(count, ChunkedCount):
        count.journal = journal
    stdin, stdout = sys.stdin.fileno(), sys.stdout.buffer
    bulk = os.name != "posix"  # (select does not wait on a pipe elsewhere: no bulk there)
    answered = 0
    while True:
        if not bulk and answered > 1 and not _waiting(stdin, IDLE):
            bulk_counting(argv[0])  # swaps ``count``'s inner count: same counts, faster
            bulk = True
        frame = read_frame(stdin)
        if frame is None:
            return 0
        texts = marshal.loads(frame)
        if texts is None:  # the parent's call is big: load the bulk counter now
            if not bulk:
                bulk_counting(argv[0])
                bulk = True
            continue
        answered += 1
        counts = [bounded_tokens(count, text) for text in texts]
        write_frame(stdout, marshal.dumps((counts, journal[:])))
        journal.clear()


def _waiting(fd: int, timeout: float) -> bool:
    """Whether a frame arrives on ``fd`` within ``timeout`` seconds."""
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    except (OSError, ValueError):
        return True  # cannot tell: do not load now


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
