"""What the lossless shrink (CompactionPolicy.shrink, stages/_shrink.py) saves.

For each bench shape (bench/shapes.py, ``--steps`` steps) and for the last request of
each session of the real corpus (tests/data/real_sessions/), the whole history is
governed twice at a window nothing is compacted in (trigger and target the whole
budget): shrink off, then on. The figures are the request's tokens each way (o200k for
the shapes' gpt-4o; each session's own model), what the shrink saved and how many tool
results it changed. Nothing else differs between the two runs. The shapes' outputs are
clean text (no colours, no progress bars, no pretty-printed JSON), so a third table
shows typical noisy outputs one by one (``SAMPLES``), counted as tool results for gpt-4o.

A last table is what the shrink costs a Governor: each shape (bench/shapes.py's and
bench/shapes_extra.py's JSON and CI-log sessions) governed step by step at 128,000 tokens,
shrink off and on alternately (``--repeats`` each, a variant of the session per run so
that no count or form is remembered from the run before), the medians of the govern()
calls' total time, their ratio, and how many steps ran the whole pipeline each way.

Run: ``python -m bench.shrink [--steps N] [--repeats N]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from context_governor import CompactionPolicy, Governor, govern
from context_governor.counting import exact_counter
from context_governor.formats import govern_request
from context_governor.stages import shrink_text

from .section import write_section
from .shapes import SHAPES, Shape
from .shapes_extra import EXTRA_SHAPES

ROOT = Path(__file__).resolve().parent.parent
WINDOW = 1 << 40


def _policy(shrink: bool) -> CompactionPolicy:
    return CompactionPolicy(trigger=1.0, target=1.0, shrink=shrink)


def _changed(report: Any) -> int:
    return sum(1 for a in report.actions if a.stage == "shrink")


def shape_rows(steps: int) -> Iterator[tuple[str, int, int, int]]:
    """(shape, tokens off, tokens on, results shrunk) for each shape's whole history."""
    for shape in SHAPES:
        replay = shape.make(steps)
        runs = [
            govern(
                list(replay.messages),
                model="gpt-4o",
                tools=replay.tools,
                context_window=WINDOW,
                compaction=_policy(on),
            ).report
            for on in (False, True)
        ]
        yield shape.key, runs[0].tokens_after, runs[1].tokens_after, _changed(runs[1])


def _corpus() -> Any:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        return importlib.import_module("real_sessions")
    finally:
        sys.path.pop(0)


def session_rows() -> Iterator[tuple[str, int, int, int]]:
    """The same for the last request of each real session."""
    corpus = _corpus()
    for session in corpus.load_corpus():
        records = corpus.step_records(session)
        if not records:
            continue
        step = records[-1]
        runs = [
            govern_request(
                step.body,
                api=step.api,
                model=step.model,
                context_window=WINDOW,
                compaction=_policy(on),
            ).report
            for on in (False, True)
        ]
        yield session.name, runs[0].tokens_after, runs[1].tokens_after, _changed(runs[1])


def _samples() -> dict[str, str]:
    """Tool outputs as agents get them: an npm install drawing its spinner, pytest in
    colour, a pretty-printed API response, ``ls -la`` with trailing blanks, a retry log."""
    spin = "|/-\\"
    npm = "\x1b[?25l" + "".join(
        f"\r\x1b[K\x1b[36m{spin[k % 4]}\x1b[0m idealTree:lodash: \x1b[90mtiming {k}ms\x1b[0m"
        for k in range(120)
    ) + "\r\x1b[K\x1b[?25h\nadded 214 packages, and audited 215 packages in 3s\n"
    tests = "".join(
        f"tests/test_m{k}.py \x1b[32m.\x1b[0m\x1b[32m.\x1b[0m\x1b[31mF\x1b[0m"
        f"\x1b[32m   [{k * 10}%]\x1b[0m\n"
        for k in range(1, 11)
    )
    pytest = (
        f"\x1b[1m===== test session starts =====\x1b[0m\n{tests}"
        "\x1b[31m== 10 failed, 20 passed ==\x1b[0m\n"
    )
    api = json.dumps(
        {"items": [{"id": k, "name": f"repo-{k}", "private": False, "stars": k * 7,
                    "owner": {"login": "octo", "type": "User"}} for k in range(25)]},
        indent=2,
    )  # fmt: skip
    ls = "total 96\n" + "".join(
        f"-rw-r--r--  1 dev dev {k * 131:6} May  1 10:{k:02} file_{k}.py   \n" for k in range(40)
    )
    log = "".join(
        ["connecting to db:5432\n", "WARN db:5432 refused, retrying in 1s\n" * 60, "connected\n"]
    )
    pip = "Downloading torch-2.3.whl (780 MB)\n" + "".join(
        f"\r   {'━' * (k // 2)}{' ' * (50 - k // 2)} {k}%" for k in range(101)
    ) + "\nSuccessfully installed torch-2.3\n"
    return {"npm install": npm, "pytest (colour)": pytest, "JSON API response": api,
            "ls -la": ls, "retry log": log, "pip download": pip}  # fmt: skip


def sample_rows() -> Iterator[tuple[str, int, int, int]]:
    counter = exact_counter("gpt-4o")
    for name, text in _samples().items():
        out, done = shrink_text(text)
        before = counter.message_tokens({"role": "tool", "tool_call_id": "c", "content": text})
        after = counter.message_tokens({"role": "tool", "tool_call_id": "c", "content": out})
        yield name, before, after, int(bool(done))


def render(title: str, rows: Sequence[tuple[str, int, int, int]]) -> str:
    lines = [
        f"| {title} | tokens, shrink off | tokens, shrink on | saved | results shrunk |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, off, on, changed in rows:
        share = (off - on) / off if off else 0.0
        lines.append(f"| {name} | {off:,} | {on:,} | {off - on:,} ({share:.1%}) | {changed} |")
    return "\n".join(lines)


def _governed(shape: Shape, steps: int, variant: int, shrink: bool) -> tuple[float, int]:
    """Seconds of a Governor's govern() calls over a session, and its whole runs."""
    replay = shape.make(steps, variant=variant)
    governor = Governor(
        model=replay.model,
        tools=replay.tools,
        context_window=128_000,
        compaction=CompactionPolicy(shrink=shrink),
    )
    whole = 0
    full = governor._full  # counted, not changed

    def counted(messages: list[Any]) -> Any:
        nonlocal whole
        whole += 1
        return full(messages)

    governor._full = counted  # type: ignore[method-assign]
    spent = 0.0
    for history in replay.histories():
        started = time.perf_counter()
        governor.govern(history).report  # noqa: B018 - the report made, as a caller reads it
        spent += time.perf_counter() - started
    return spent, whole


def speed_rows(steps: int, repeats: int) -> Iterator[tuple[str, float, float, int, int]]:
    """(shape, median ms off, median ms on, whole runs off, whole runs on)."""
    for shape in (*SHAPES, *EXTRA_SHAPES):
        times: dict[bool, list[float]] = {False: [], True: []}
        whole: dict[bool, int] = {}
        for k in range(repeats):
            for on in (False, True):
                # a variant of its own per run: no count or form is in the memo yet
                spent, whole[on] = _governed(shape, steps, 2 * k + 1 + on, on)
                times[on].append(spent * 1000)
        yield (
            shape.label,
            statistics.median(times[False]),
            statistics.median(times[True]),
            whole[False],
            whole[True],
        )


def render_speed(rows: Sequence[tuple[str, float, float, int, int]]) -> str:
    lines = [
        "| shape (a Governor, 128k) | govern() total, shrink off | shrink on | on / off "
        "| whole runs, off / on |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, off, on, whole_off, whole_on in rows:
        ratio = on / off if off else 0.0
        lines.append(
            f"| {name} | {off:,.0f} ms | {on:,.0f} ms | {ratio:.2f}x | {whole_off} / {whole_on} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="steps of each bench shape")
    parser.add_argument("--no-corpus", action="store_true", help="the bench shapes only")
    parser.add_argument(
        "--repeats", type=int, default=3, help="runs of each way for the Governor's time"
    )
    parser.add_argument("--out", type=Path, default=None, help="replace the section here")
    args = parser.parse_args(argv)
    parts = [
        INTRO.format(steps=args.steps, repeats=args.repeats),
        render("typical output", list(sample_rows())),
        render("shape", list(shape_rows(args.steps))),
    ]
    if not args.no_corpus:
        parts.append(render("real session (last request)", list(session_rows())))
    parts.append(render_speed(list(speed_rows(args.steps, args.repeats))))
    section = "\n\n".join(parts) + "\n"
    print(section, flush=True)
    if args.out is not None:
        write_section(args.out, section)
    return 0


HEADING = "## Lossless shrink"
INTRO = HEADING + """

What the lossless shrink (`CompactionPolicy.shrink`, on by default) saves, and what it costs
a Governor. `python -m bench.shrink --out docs/benchmarks.md` reruns this section
(`--steps {steps} --repeats {repeats}`). Tokens: the whole history governed at a window
nothing is compacted in, shrink off then on (o200k for the shapes' gpt-4o; each real
session's own model); typical noisy outputs one by one. Time: a Governor over each shape
step by step at 128,000 tokens, off and on alternately, medians of {repeats} runs each (a
new variant of the session per run); *whole runs* are the steps that ran the whole
pipeline instead of appending (the same either way: a step meeting a result to shrink
appends it shrunk)."""


if __name__ == "__main__":
    raise SystemExit(main())
