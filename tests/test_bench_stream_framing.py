"""Smoke test of bench/stream_framing.py: its rows are computed on a small answer and
its framings relay the bytes unchanged (the figures themselves depend on the machine)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import stream_framing  # noqa: E402


def test_the_rows_are_sane_and_the_forms_carry_the_same_chunks() -> None:
    chunks = stream_framing.answer_chunks(5)
    array = stream_framing.as_array(chunks)
    assert json.loads(array) == chunks
    events = stream_framing.as_events(chunks).split(b"\r\n\r\n")
    assert [json.loads(e.removeprefix(b"data: ")) for e in events if e] == chunks
    rows = stream_framing.measure(5)
    assert [name.split(":")[0] for name, _, _ in rows] == [
        "json.loads of the array (baseline)", "raw relay", "events", "array"
    ]
    assert all(size > 0 and seconds > 0 for _, size, seconds in rows)
    text = stream_framing.report(rows)
    assert "1.00" in text.splitlines()[1]  # the baseline's own ratio
