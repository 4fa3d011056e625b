"""A targeted campaign: models that take one tool call per turn, parallel calls in the
newest model turn, windows around that turn's size.

    python -m fuzz.one_call --n 5000 --seed 1

Such a model (Llama 3.x on vLLM) gets each parallel call as single-call turns, and the
cache policy must plan its cuts on those turns (docs/hardening.md). The general campaign
reaches this shape rarely (a few inputs in 20,000); here every input has it. Each input
is checked for every class of fuzz/oracle.py; ``case`` is also the generator of the
property in tests/test_one_call_per_turn.py.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from typing import Any

from context_governor.counting import exact_counter

from .generate import Case
from .oracle import check

Message = dict[str, Any]
#: model names vLLM serves with a Llama 3.x template (one tool call per turn)
LLAMA = ["llama-3.3-70b", "meta-llama/Llama-3.1-8B-Instruct", "llama3.2"]
#: tool result sizes, in repeats of a 4-token phrase
SIZES = [3, 30, 300, 1500, 4000]


def call(n: int, name: str = "read_file") -> dict[str, Any]:
    return {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": "{}"}}


def result(n: int, repeat: int) -> Message:
    return {"role": "tool", "tool_call_id": f"call_{n}", "content": f"out call_{n} " * repeat}


def case(rnd: random.Random) -> tuple[list[Message], dict[str, Any]]:
    """A history whose newest model turn holds a parallel call (2-4 calls, results of
    mixed sizes, maybe more rounds after it), older turns before it, and settings for a
    one-call-per-turn model with a window from 0.15 to 1.6 times that turn's size."""
    ids = iter(range(10**6))

    def rounds(count: int, parallel_first: bool) -> list[Message]:
        out: list[Message] = []
        for r in range(count):
            width = rnd.randint(2, 4) if r == 0 and parallel_first else rnd.randint(1, 3)
            numbers = [next(ids) for _ in range(width)]
            calls = [call(n, rnd.choice(["read_file", "grep"])) for n in numbers]
            content = rnd.choice([None, "", "reading the files"])
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
            out += [result(n, rnd.choice(SIZES)) for n in numbers]
        return out

    history: list[Message] = []
    if rnd.random() < 0.5:
        history.append({"role": "system", "content": "You are a coding agent."})
    history.append({"role": "user", "content": "the task"})
    for t in range(rnd.randint(0, 3)):
        if t or rnd.random() < 0.5:
            history.append({"role": "user", "content": f"step {t}"})
        history += rounds(rnd.randint(0, 2), parallel_first=False)
        history.append({"role": "assistant", "content": f"done {t}"})
    if rnd.random() < 0.5:
        history.append({"role": "user", "content": "the newest step"})
    turn_start = len(history)
    history += rounds(rnd.randint(1, 3), parallel_first=True)
    if rnd.random() < 0.5:
        history.append({"role": "assistant", "content": "all read"})
    model = rnd.choice(LLAMA)
    turn = exact_counter(model).prompt_tokens(history[turn_start:], None)
    max_output = rnd.choice([0, 500, 1000])
    budget = max(1, int(turn * rnd.uniform(0.15, 1.6)))
    settings = {
        "profile": "vllm",
        "model": model,
        "context_window": budget + max_output + 1024,
        "max_output": max_output,
        "compaction": rnd.choice(["cache", "cache", "seed"]),
    }
    return history, settings


def make(seed: int, index: int) -> Case:
    history, settings = case(random.Random(f"one-call:{seed}:{index}"))
    return Case(history, None, settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fuzz.one_call", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--n", type=int, default=5000, help="how many inputs (default 5,000)")
    parser.add_argument(
        "--seed", type=int, default=1, help="input INDEX is rebuilt from SEED:INDEX (default 1)"
    )
    parser.add_argument(
        "--replay", metavar="SEED:INDEX", help="check one input and print its findings"
    )
    args = parser.parse_args(argv)
    if args.replay:
        seed, index = (int(part) for part in args.replay.split(":"))
        found = check(make(seed, index))
        for finding in found:
            print(f"{finding.kind} {finding.signature}\n{finding.detail}\n", file=sys.stderr)
        return 1 if found else 0
    counts: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], int] = {}
    started = time.monotonic()
    for index in range(args.n):
        for finding in check(make(args.seed, index)):
            key = (finding.kind, finding.signature)
            counts[key] += 1
            first.setdefault(key, index)
    for (kind, signature), count in sorted(counts.items()):
        print(f"{kind} {signature}: {count} (first {args.seed}:{first[kind, signature]})")
    print(
        f"{args.n} inputs, {sum(counts.values())} findings; {time.monotonic() - started:.0f}s",
        file=sys.stderr,
    )
    return 1 if counts else 0


if __name__ == "__main__":
    sys.exit(main())
