"""A session long enough to reach the ceiling: where cuts of turns, not clearing, decide
the cost (docs/compaction.md, *Cutting in the cache's rhythm*).

    PYTHONPATH=src:. python -m bench.long_session [--steps 1000]

bench/sessions.py's coding replay generator run for ``--steps`` model calls (the 300-step
replay never reaches the ceiling at 128k), governed step by step by a Governor with the
cache policy as reads at 0.1x get it, at 128k and 32k: effective input cost (reads at
0.1x, and at Anthropic's prices with writes at 1.25x), prefix breaks, requests over the
budget and the agent's messages kept (bench/fidelity.py). Takes a few minutes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from context_governor import CompactionPolicy

from .cache import Meter, governor, measure
from .pricing import ANTHROPIC, OPENAI_5
from .sessions import coding_session

WINDOWS = (128_000, 32_000)


def run(steps: int) -> list[str]:
    replay = coding_session(steps)
    rows = [
        "| window | cost, reads 0.1x (M) | cost, Anthropic (M) | prefix breaks | over the budget "
        "| agent's messages kept |",
        "|---|---|---|---|---|---|",
    ]
    for window in WINDOWS:
        print(f"[bench] long session: {steps} steps at {window:,}", file=sys.stderr, flush=True)
        config = governor(
            "cache", profile="openai", compaction=CompactionPolicy(cache_price=OPENAI_5)
        )
        result = measure(config, replay, window, Meter())
        at = result.at(len(result.steps))
        rows.append(
            f"| {window // 1000}k | {result.cost(OPENAI_5) / 1e6:.2f} | "
            f"{result.cost(ANTHROPIC) / 1e6:.2f} | {at['breaks']} | {at['over_budget']} | "
            f"{result.fidelity().share('own'):.2f} |"
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.long_session", description=__doc__)
    parser.add_argument("--steps", type=int, default=1000, help="model calls (1000)")
    args = parser.parse_args(argv)
    print("\n".join(run(args.steps)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
