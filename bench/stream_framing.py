"""What relaying a stream in whole pieces costs (``python -m bench.stream_framing [ELEMENTS]``).

The proxy relays a streamed answer through a framing (proxy/_sse.py): server-sent events
are held until their blank line (sse.EventSplitter), Gemini's streamed JSON array until
each element closes (formats/gemini_stream.ArrayStream, which has to read the JSON's
brackets, strings and escapes). Both run on the event loop for every byte of every
answer, so this measures them on the same Gemini answer in both forms, cut in 1500-byte
chunks (one TCP segment's worth), against baselines run in the same process:

- ``json.loads`` of the whole array (a C parser reading every byte once);
- joining the chunks unframed (what relaying raw costs here).

Each row is the best of REPEATS runs, as MB/s and as a ratio to ``json.loads``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from context_governor.formats._gemini_stream import ArrayStream
from context_governor.proxy._sse import EventSplitter

CHUNK = 1500
REPEATS = 7


def answer_chunks(count: int) -> list[dict[str, Any]]:
    """A streamed Gemini answer: text parts with quotes and escapes, usage on each."""
    return [
        {
            "candidates": [{
                "content": {"role": "model", "parts": [
                    {"text": f"word {i} " * 60 + 'a "quoted" path C:\\dir\\file [1] {x}'}]},
                "index": 0,
            }],
            "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 60 * i,
                              "totalTokenCount": 900 + 60 * i},
            "modelVersion": "gemini-2.5-flash",
        }
        for i in range(count)
    ]  # fmt: skip


def as_array(chunks: list[dict[str, Any]]) -> bytes:
    """The array form, laid out as Gemini sends it (indented, ``,\\r\\n`` between)."""
    return b"[" + b",\r\n".join(json.dumps(c, indent=2).encode() for c in chunks) + b"\n]"


def as_events(chunks: list[dict[str, Any]]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)


def pieces(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


def best(run: Callable[[], object]) -> float:
    """The fastest of REPEATS runs, in seconds."""
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def framed(make: Callable[[], Any], data: bytes) -> Callable[[], bytes]:
    """Relay ``data`` in chunks through a new framing; checks nothing was changed."""
    chunks = pieces(data)

    def run() -> bytes:
        framing = make()
        out: bytes = b"".join(framing.feed(c) for c in chunks) + framing.flush()
        assert out == data
        return out

    return run


def measure(count: int) -> list[tuple[str, int, float]]:
    """(row, bytes, seconds) for each framing and baseline."""
    chunks = answer_chunks(count)
    array, events = as_array(chunks), as_events(chunks)
    split = pieces(array)
    return [
        ("json.loads of the array (baseline)", len(array), best(lambda: json.loads(array))),
        ("raw relay: chunks joined", len(array), best(lambda: b"".join(split))),
        ("events: sse.EventSplitter", len(events), best(framed(EventSplitter, events))),
        ("array: gemini_stream.ArrayStream", len(array),
         best(framed(lambda: ArrayStream(lambda m: {"error": m}), array))),
    ]  # fmt: skip


def report(rows: list[tuple[str, int, float]]) -> str:
    base = rows[0][2] / rows[0][1]  # seconds per byte of json.loads
    lines = [f"{'':38} {'MB/s':>8} {'x json.loads':>13}"]
    for name, size, seconds in rows:
        per_byte = seconds / size
        lines.append(f"{name:38} {size / seconds / 1e6:8.0f} {per_byte / base:13.2f}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    count = int(argv[0]) if argv else 300
    print(f"{count} chunks of a Gemini answer, relayed in {CHUNK}-byte pieces")
    print(report(measure(count)))


if __name__ == "__main__":
    main(sys.argv[1:])
