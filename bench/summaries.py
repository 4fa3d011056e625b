"""Summaries where the cache policy cuts, measured on bench's coding-session replay.

Three configurations govern every step of the same replay:

* **cache**: the default cache policy (a short note where it cuts);
* **cache + summaries**: the same policy with ``CompactionPolicy(summary=...)`` and a
  scripted summarizer of realistic length (about ``SUMMARY_WORDS`` words, derived
  from its input, so a different input gives a different summary);
* **summarize every time**: what a summarization middleware does when it summarizes
  on every request over its trigger (LangChain's ``SummarizationMiddleware`` shape
  without persisting the summary): keep the newest messages that fit the target,
  replace everything older (after the system prompt) by a fresh summary.

For each: the cached-prefix share and effective input cost of the requests (as in
bench/cache.py), the summarizer calls per 100 steps, and the tokens the summarizer
itself was sent (billed uncached). Run: ``python -m bench.summaries [--steps N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from context_governor import CompactionPolicy
from context_governor.summary import Summaries

from .cache import MAX_OUTPUT, SAFETY_BUFFER, Config, Meter, Outcome, Run, governor, measure
from .sessions import Message, Replay, coding_session

SUMMARY_WORDS = 450
WORDS = [
    "task",
    "parser",
    "fix",
    "tests",
    "failing",
    "auth",
    "token",
    "refresh",
    "expiry",
    "decided",
    "approach",
    "file",
    "src",
    "module",
    "function",
    "value",
    "error",
    "traceback",
    "pending",
    "open",
    "problem",
    "user",
    "asked",
    "keep",
]


class Scripted:
    """A deterministic summarizer of realistic length; counts its calls and input."""

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self.calls = 0
        self.input_tokens = 0

    def __call__(self, messages: list[Message]) -> str:
        self.calls += 1
        self.input_tokens += sum(self.meter.tokens(m, self.meter.text(m)) for m in messages)
        seed = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
        words = [WORDS[(seed[i % 32] + i) % len(WORDS)] for i in range(SUMMARY_WORDS)]
        return " ".join(words)


def _every_time(summarizer: Scripted, meter: Meter) -> Config:
    def make(replay: Replay, window: int) -> Any:
        policy = CompactionPolicy()
        budget = window - MAX_OUTPUT - SAFETY_BUFFER
        trigger, target = policy.thresholds(budget)

        def step(history: list[Message]) -> Outcome:
            tokens = [meter.tokens(m, meter.text(m)) for m in history]
            if sum(tokens) <= trigger:
                return Outcome(list(history))
            head = 1 if history and history[0].get("role") == "system" else 0
            kept, cut = 0, len(history)
            while cut > head + 1 and kept + tokens[cut - 1] <= target:
                cut -= 1
                kept += tokens[cut]
            while cut < len(history) and history[cut].get("role") == "tool":
                cut += 1  # never start at a result whose call is cut
            text = summarizer(history[head:cut])
            note: Message = {"role": "user", "content": f"[Summary of earlier messages]\n{text}"}
            tail = history[cut:]
            if tail and tail[0].get("role") == "user":
                merged = f"{note['content']}\n\n{tail[0].get('content')}"
                return Outcome([*history[:head], {"role": "user", "content": merged}, *tail[1:]])
            return Outcome([*history[:head], note, *tail])

        return step

    return Config("summarize every time (middleware)", make)


def run(steps: int, windows: Sequence[int]) -> list[tuple[Run, Scripted | None]]:
    replay = coding_session(steps)
    meter = Meter()
    out: list[tuple[Run, Scripted | None]] = []
    for window in windows:
        plain = governor("cache (note where it cuts)")
        print(f"[bench] summaries: {plain.label} at {window:,}", file=sys.stderr, flush=True)
        out.append((measure(plain, replay, window, meter), None))
        scripted = Scripted(meter)
        summaries = Summaries(scripted, name="bench-scripted", max_tokens=1024)
        with_summary = governor("cache + summaries", compaction=CompactionPolicy(summary=summaries))
        print(f"[bench] summaries: {with_summary.label} at {window:,}", file=sys.stderr, flush=True)
        out.append((measure(with_summary, replay, window, meter), scripted))
        every = Scripted(meter)
        config = _every_time(every, meter)
        print(f"[bench] summaries: {config.label} at {window:,}", file=sys.stderr, flush=True)
        out.append((measure(config, replay, window, meter), every))
    return out


def render(results: list[tuple[Run, Scripted | None]], steps: int) -> str:
    lines = [
        "| window | configuration | cached-prefix share | effective input cost | "
        "summarizer calls / 100 steps | summarizer input tokens | over budget / invalid |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r, summarizer in results:
        a = r.at(steps)
        calls = "—" if summarizer is None else f"{100 * summarizer.calls / steps:.1f}"
        fed = "—" if summarizer is None else f"{summarizer.input_tokens:,}"
        lines.append(
            f"| {r.window:,} | {r.config} | {a['share']:.1%} | {a['cost']:,.0f} | {calls} | "
            f"{fed} | {a['over_budget']} / {a['invalid']} |"
        )
    return "\n".join(lines)


def section(results: list[tuple[Run, Scripted | None]], steps: int) -> str:
    """The table as a section of docs/benchmarks.md (bench.run)."""
    return "\n".join(
        [
            "## Summary compaction",
            "",
            f"The {steps}-step coding-session replay governed three ways: the cache policy "
            "as it is (a short note where it cuts), the same policy with summaries where it "
            f"cuts (a scripted summarizer of about {SUMMARY_WORDS} words), and a summary made "
            "afresh on every request over the trigger (the shape of LangChain's "
            "summarization middleware). Cost counts cached input at a tenth of the price "
            "(the summarizer's own input is its own column). `python -m bench.summaries` "
            "reruns it; docs/summaries.md explains the option.",
            "",
            render(results, steps),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--window", type=int, action="append", default=None)
    args = parser.parse_args(argv)
    windows = args.window or [128_000, 32_000]
    print(render(run(args.steps, windows), args.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
