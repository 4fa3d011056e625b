"""Digests of cleared logs and JSON (``CompactionPolicy(digest=True)``), measured.

    PYTHONPATH=src:. python -m bench.digest [--steps N] [--out docs/benchmarks.md]

Each session shape where tool output is a log or JSON (bench/shapes_extra.py's CI logs and
API/JSON-heavy agents) and, as controls, the coding and research shapes, governed step by
step by a Governor with the cache policy as reads at 0.1x get it, digests off and on, at
128k and 64k. Per row: the effective input cost (cached reads at 0.1x, the automatic
prefix cache of bench/cache.py), requests over the budget, prefix breaks, and what the
agent can still see of its cleared results:

* *failures seen*: of the lines of every tool result so far that report a failed test
  (``FAILED``) or an error (``Error:``), the share that is in the request, averaged over
  the steps (the CI-log agent's work is to fix them);
* *ends seen*: of the JSON arrays returned so far, the share whose first and last record's
  id is in the request (what an agent paging through records comes back for).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from context_governor import CompactionPolicy

from .cache import Config, Meter, governor, measure
from .pricing import OPENAI_5
from .section import section_main
from .sessions import Message, Replay
from .shapes import SHAPES, Shape
from .shapes_extra import EXTRA_SHAPES

HEADING = "## Digests of cleared logs and JSON"
WINDOWS = (128_000, 64_000)
STEPS = 160
#: the shapes measured: logs and JSON, then the coding, big-reads and research controls
SHAPES_MEASURED: tuple[Shape, ...] = (*EXTRA_SHAPES, *SHAPES[:3])
_FAILURE = re.compile(r"FAILED|Error:")


@dataclass(frozen=True, slots=True)
class Row:
    shape: str
    window: int
    digest: bool
    cost: float
    over: int
    breaks: int
    failures_seen: float | None
    ends_seen: float | None


def _facts(replay: Replay) -> tuple[list[list[str]], list[list[tuple[str, str]]]]:
    """Per step: the failure lines and the (first id, last id) of the JSON arrays that
    the step's tool results hold."""
    failures: list[list[str]] = []
    ends: list[list[tuple[str, str]]] = []
    for step in replay.steps:
        lines: list[str] = []
        pairs: list[tuple[str, str]] = []
        for m in step:
            if m.get("role") != "tool" or not isinstance(m.get("content"), str):
                continue
            text = m["content"]
            lines.extend(line.strip() for line in text.split("\n") if _FAILURE.search(line))
            pair = _array_ends(text)
            if pair is not None:
                pairs.append(pair)
        failures.append(lines)
        ends.append(pairs)
    return failures, ends


def _array_ends(text: str) -> tuple[str, str] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), None)
    if not isinstance(data, list) or len(data) < 2:
        return None
    first, last = data[0], data[-1]
    if not (isinstance(first, dict) and isinstance(last, dict)):
        return None
    return json.dumps(first.get("id")), json.dumps(last.get("id"))


def _seen(config: Config, replay: Replay, window: int) -> tuple[float | None, float | None]:
    """The mean shares of failure lines and array ends in each step's request."""
    failures, ends = _facts(replay)
    step = config.make(replay, window)
    so_far_f: list[str] = []
    so_far_e: list[tuple[str, str]] = []
    shares_f: list[float] = []
    shares_e: list[float] = []
    for history, lines, pairs in zip(replay.histories(), failures, ends, strict=True):
        so_far_f.extend(lines)
        so_far_e.extend(pairs)
        sent = "\n".join(_text(m) for m in step(history).messages)
        if so_far_f:
            shares_f.append(sum(line in sent for line in so_far_f) / len(so_far_f))
        if so_far_e:
            shares_e.append(sum(a in sent and b in sent for a, b in so_far_e) / len(so_far_e))
    return _mean(shares_f), _mean(shares_e)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _text(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        # a JSON record re-serialised compactly still holds its id as "id":N
        return content.replace('"id": ', '"id":')
    return json.dumps(content)


def run(steps: int, shapes: Sequence[Shape], windows: Sequence[int] = WINDOWS) -> list[Row]:
    rows: list[Row] = []
    meter = Meter()
    for shape in shapes:
        replay = shape.make(steps)
        for window in windows:
            for digest in (False, True):
                what = f"{shape.label} at {window:,}, digest={digest}"
                print(f"[bench] digest: {what}", file=sys.stderr, flush=True)
                config = governor(
                    f"digest={digest}", profile="openai",
                    compaction=CompactionPolicy(cache_price=OPENAI_5, digest=digest),
                )  # fmt: skip
                result = measure(config, replay, window, meter)
                seen_f, seen_e = _seen(config, replay, window)
                at = result.at(len(result.steps))
                rows.append(Row(
                    shape.label, window, digest, result.cost(OPENAI_5), at["over_budget"],
                    at["breaks"], seen_f, seen_e,
                ))  # fmt: skip
    return rows


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def render(rows: Sequence[Row], steps: int) -> str:
    lines = [
        HEADING,
        "",
        f"`python -m bench.digest --out docs/benchmarks.md` reruns this section ({steps} model "
        "calls per shape; the cache policy as reads at 0.1x get it; cost in millions of "
        "input tokens, cached reads at 0.1x). *Failures seen*: the mean share of the failure "
        "and error lines of every tool result so far that the request holds; *ends seen*: "
        "the mean share of the JSON arrays so far whose first and last record are in it.",
        "",
        "| shape | window | digests | cost | over the window | prefix breaks "
        "| failures seen | ends seen |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.shape} | {r.window // 1000}k | {'on' if r.digest else 'off'} | "
            f"{r.cost / 1e6:.2f} | {r.over} | {r.breaks} | {_share(r.failures_seen)} | "
            f"{_share(r.ends_seen)} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    def build(args: argparse.Namespace) -> str:
        return render(run(args.steps, SHAPES_MEASURED), args.steps)

    return section_main(__doc__, argv, {"steps": STEPS}, build)


if __name__ == "__main__":
    raise SystemExit(main())
