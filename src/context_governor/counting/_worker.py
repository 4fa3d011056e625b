"""A counting worker process (pool.py starts it): exact token counts over a pipe.

Run as ``python -m context_governor.counting._worker ENCODING``. It builds the encoding the
parent counts with (``encodings.counting_encoding``), then answers frames until its input
ends: each frame is an 8-byte little-endian length and a ``marshal``-ed list of texts,
each answer the same framing around the pair of the list of their counts
(``runs.bounded_tokens`` with the encoding, as ``ExactCounter`` counts) and the chunk
counts made for them (``chunks.ChunkedCount.journal``: the parent remembers them). The
parent's first frame is a probe it checks the answer to. It exits with 3 when the encoding
cannot be built, and at the end of its input (the parent closed the pipe, or died).

Kept out of the package's imports: only the child process loads it.
"""

from __future__ import annotations

import marshal
import sys
from typing import BinaryIO

from context_governor.counting._chunks import ChunkedCount
from context_governor.counting._encodings import count_ordinary, counting_encoding
from context_governor.counting._runs import bounded_tokens

LENGTH = 8


def read_frame(stream: BinaryIO) -> bytes | None:
    """One frame's payload, or None at the end of the stream."""
    head = stream.read(LENGTH)
    if len(head) < LENGTH:
        return None
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    return data if len(data) == size else None


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
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        frame = read_frame(stdin)
        if frame is None:
            return 0
        texts = marshal.loads(frame)
        counts = [bounded_tokens(count, text) for text in texts]
        write_frame(stdout, marshal.dumps((counts, journal[:])))
        journal.clear()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
