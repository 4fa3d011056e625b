"""Our count of real Codex sessions against the upstream's usage, request by request.

A Codex rollout (``~/.codex/sessions/**/rollout-*.jsonl``) holds every item the CLI sent
and, per model call, the input tokens the upstream billed. tests/real_sessions.py turns
it into the request bodies; each is counted by ``govern_request`` at a window that cuts
nothing. The rollout does not store Codex's instructions and tool definitions: the first
request (no reasoning, no tool output yet) gives their tokens, the upstream's count
minus ours, which is added to every request.

Run: ``python -m bench.codex_usage [ROLLOUT.jsonl ...]`` (default: the corpus's rollouts
in tests/data/real_sessions/codex).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from context_governor.formats import govern_request

from .real_sessions import ROOT, _corpus


@dataclass(frozen=True, slots=True)
class SessionFit:
    name: str
    model: str
    requests: int
    unstored: int
    ratios: tuple[float, ...]

    def within(self, tolerance: float = 0.05) -> int:
        return sum(abs(r - 1) <= tolerance for r in self.ratios)


def measure(path: Path) -> SessionFit:
    corpus = _corpus()
    steps = corpus.step_records(corpus.Session(path.stem, "codex", path))
    ours = [
        govern_request(s.body, api="responses", context_window=1 << 40).report.tokens_before
        for s in steps
    ]
    unstored = int(steps[0].upstream_prompt_tokens) - ours[0]
    ratios = tuple(
        (count + unstored) / int(s.upstream_prompt_tokens)
        for count, s in zip(ours, steps, strict=True)
    )
    return SessionFit(path.stem, str(steps[0].body["model"]), len(steps), unstored, ratios)


def render(fits: Sequence[SessionFit]) -> str:
    lines = [
        "| session | model | requests | unstored prefix | ours / upstream, median | range "
        "| within 5% |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in fits:
        lines.append(
            f"| {f.name} | {f.model} | {f.requests} | {f.unstored:,} | "
            f"{statistics.median(f.ratios):.3f} | {min(f.ratios):.3f}-{max(f.ratios):.3f} | "
            f"{f.within()} of {f.requests} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.codex_usage", description=__doc__)
    parser.add_argument("rollouts", nargs="*", type=Path, help="Codex rollout files")
    args = parser.parse_args(argv)
    paths = args.rollouts or sorted((ROOT / "tests/data/real_sessions/codex").glob("*.jsonl"))
    print(render([measure(p) for p in paths]), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
