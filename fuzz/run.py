"""`make fuzz`: govern() on N generated hostile inputs across all profiles.

    python -m fuzz.run --n 1000000 --seed 1 --jobs 2     # the campaign
    python -m fuzz.run --replay 1:4711                    # one input, its findings
    python -m fuzz.run --n 20000 --profile vllm --model llama-3.3-70b   # a targeted one

Progress goes to stderr; each new finding (class + signature) is shrunk to a
small reproducer and written to --out as JSON, and a summary table ends the run.
Exit status: 0 when nothing new was found (known open classes, fuzz/known.py,
are counted but do not fail the run), 1 otherwise.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path
from typing import Any

from context_governor import warm_up

from .generate import MODELS, NO_FOCUS, Case, Focus, load_corpus, make_case
from .known import is_known
from .oracle import Finding, check

CHUNK = 250

_CORPUS: list[Case] | None = None


def _corpus() -> list[Case]:
    global _CORPUS
    if _CORPUS is None:
        _CORPUS = load_corpus()
    return _CORPUS


def warm(focus: Focus = NO_FOCUS) -> None:
    """Load the corpus and build every encoding the inputs are counted with, once, before
    the workers start: forked workers inherit them (each would build its own, ~1 s of
    CPU per encoding)."""
    _corpus()
    warm_up([model for model in (*MODELS, *focus.models) if model])


def run_range(
    seed: int, start: int, stop: int, focus: Focus = NO_FOCUS
) -> list[tuple[int, Finding]]:
    """Findings on inputs ``start`` to ``stop`` - 1 (a worker's unit of work).

    The cyclic garbage collector is paused for the chunk and run once at its end: the
    inputs hold up to 10^5 nested containers and the collector would otherwise walk them
    again and again (10-20% of the time); what is not cyclic is freed as usual."""
    found = []
    corpus = _corpus()
    collecting = gc.isenabled()
    gc.disable()
    try:
        for index in range(start, stop):
            try:
                case = make_case(seed, index, corpus, focus)
            except Exception as exc:  # a bug of the harness, not of the library: say so
                found.append((index, Finding("harness", type(exc).__name__, repr(exc)[:300])))
                continue
            for finding in check(case):
                found.append((index, finding))
    finally:
        if collecting:
            gc.enable()
        gc.collect()
    return found


def _same(case: Case, finding: Finding) -> bool:
    return any(f.kind == finding.kind and f.signature == finding.signature for f in check(case))


def shrink(case: Case, finding: Finding, attempts: int = 150) -> Case:
    """A smaller case with the same finding: drop messages, tools, settings one by one."""
    for key in list(case.settings):
        if key == "profile" or attempts <= 0:
            continue
        attempts -= 1
        trial = Case(
            case.messages, case.tools, {k: v for k, v in case.settings.items() if k != key}
        )
        if _same(trial, finding):
            case = trial
    if case.tools is not None and attempts > 0:
        attempts -= 1
        trial = Case(case.messages, None, case.settings)
        if _same(trial, finding):
            case = trial
    if isinstance(case.messages, list):
        i = len(case.messages) - 1
        while i >= 0 and attempts > 0:
            attempts -= 1
            trial = Case(case.messages[:i] + case.messages[i + 1 :], case.tools, case.settings)
            if _same(trial, finding):
                case = trial
            i -= 1
    if isinstance(case.messages, list):
        case = _shrink_fields(case, finding, attempts)
    return case


def _shrink_fields(case: Case, finding: Finding, attempts: int) -> Case:
    """Shorten long strings and drop optional keys of each message, one at a time."""
    for i in range(len(case.messages)):
        message = case.messages[i]
        if not isinstance(message, dict):
            continue
        for key in list(message):
            if attempts <= 0:
                return case
            value = message[key]
            if key in ("role", "tool_call_id") or (key == "content" and not value):
                continue
            if isinstance(value, str) and len(value) > 40:
                smaller = {**message, key: value[:40]}
            elif key in ("content", "tool_calls"):
                continue
            else:
                smaller = {k: v for k, v in message.items() if k != key}
            attempts -= 1
            messages = [*case.messages[:i], smaller, *case.messages[i + 1 :]]
            trial = Case(messages, case.tools, case.settings, case.mutations)
            if _same(trial, finding):
                case, message = trial, smaller
    return case


def _jsonable(case: Case) -> Any:
    try:
        text = json.dumps(
            {"messages": case.messages, "tools": case.tools, "settings": case.settings},
            ensure_ascii=True,
        )
    except (TypeError, ValueError, RecursionError):
        return None
    return json.loads(text) if len(text) < 200_000 else None


def _record(out: Path, seed: int, index: int, finding: Finding, focus: Focus) -> Path:
    case = shrink(make_case(seed, index, _corpus(), focus), finding)
    out.mkdir(parents=True, exist_ok=True)
    digest = hashlib.blake2b(finding.signature.encode(), digest_size=4).hexdigest()
    name = f"{finding.kind}-{digest}.json"
    path = out / name
    path.write_text(
        json.dumps(
            {
                **asdict(finding),
                "replay": f"{seed}:{index}",
                "focus": focus.flags(),
                "mutations": case.mutations,
                "case": _jsonable(case),
            },
            indent=1,
            ensure_ascii=True,
        )
    )
    return path


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, CHUNK):
        yield start, min(n, start + CHUNK)


def campaign(
    n: int,
    seed: int,
    jobs: int,
    out: Path | None,
    quiet: bool = False,
    focus: Focus = NO_FOCUS,
) -> dict[str, Any]:
    """Run ``n`` inputs (drawn within ``focus``); returns the counts and the first finding
    of each signature."""
    counts: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], tuple[int, Finding]] = {}
    done = 0
    started = last = time.monotonic()

    def take(results: list[tuple[int, Finding]], size: int) -> None:
        nonlocal done, last
        done += size
        for index, finding in results:
            key = (finding.kind, finding.signature)
            counts[key] += 1
            if key not in first:
                first[key] = (index, finding)
                known = " (known)" if is_known(*key) else ""
                where = ""
                if out is not None:
                    where = f" -> {_record(out, seed, index, finding, focus)}"
                if not quiet:
                    flags = f" {focus.flags()}" if focus.flags() else ""
                    print(
                        f"finding{known}: {finding.kind} {finding.signature} at {seed}:{index}"
                        f"{flags}{where}",
                        file=sys.stderr,
                        flush=True,
                    )
        now = time.monotonic()
        if not quiet and (now - last > 10 or done == n):
            last = now
            rate = done / max(now - started, 1e-9)
            print(
                f"fuzz: {done:,}/{n:,} inputs, {rate:,.0f}/s, {sum(counts.values())} findings "
                f"in {len(counts)} signatures",
                file=sys.stderr,
                flush=True,
            )

    warm(focus)
    if jobs <= 1:
        for start, stop in _chunks(n):
            take(run_range(seed, start, stop, focus), stop - start)
    else:
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else None)
        with ProcessPoolExecutor(jobs, mp_context=context) as pool:
            pending = {pool.submit(run_range, seed, a, b, focus): b - a for a, b in _chunks(n)}
            for future in as_completed(pending):
                take(future.result(), pending[future])
    return {"counts": counts, "first": first, "seconds": time.monotonic() - started}


def _summary(result: dict[str, Any], seed: int, focus: Focus = NO_FOCUS) -> int:
    counts: Counter[tuple[str, str]] = result["counts"]
    new = 0
    print(f"{'class':<22} {'signature':<60} {'count':>7}  first input", file=sys.stderr)
    for (kind, signature), count in sorted(counts.items()):
        index = result["first"][(kind, signature)][0]
        known = is_known(kind, signature)
        new += not known
        mark = " known" if known else ""
        print(f"{kind:<22} {signature[:60]:<60} {count:>7}  {seed}:{index}{mark}", file=sys.stderr)
    print(
        f"{new} new signature(s), {len(counts) - new} known; {result['seconds']:.0f}s",
        file=sys.stderr,
    )
    if counts and focus.flags():
        print(f"replay with: --replay SEED:INDEX {focus.flags()}", file=sys.stderr)
    return 1 if new else 0


def replay(spec: str, focus: Focus = NO_FOCUS) -> int:
    seed, index = (int(part) for part in spec.split(":"))
    case = make_case(seed, index, _corpus(), focus)
    print(case.describe(), file=sys.stderr)
    findings = check(case)
    for finding in findings:
        print(f"{finding.kind} {finding.signature}\n{finding.detail}\n", file=sys.stderr)
    return 1 if findings else 0


def _model(text: str) -> str | None:
    return None if text == "none" else text


def _window(text: str) -> int | None:
    if text == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a window is a number of tokens or 'none', not {text!r}"
        ) from None
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fuzz.run",
        description=__doc__.split("\n")[0],
        epilog="A focused campaign (--profile, --model, --window) draws those settings from "
        "the given values only; replay its inputs with the same options. Without them the "
        "inputs are the same as ever for a seed.",
    )
    parser.add_argument(
        "--n",
        type=int,
        default=int(os.environ.get("FUZZ_N", 1_000_000)),
        help="how many inputs to generate and check (default: $FUZZ_N or 1,000,000)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=int(os.environ.get("FUZZ_SEED", 1)),
        help="the campaign's seed: input INDEX is rebuilt from SEED:INDEX "
        "(default: $FUZZ_SEED or 1)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("FUZZ_JOBS", 1)),
        help="worker processes, one per core at most (default: $FUZZ_JOBS or 1)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("fuzz/findings"),
        help="where the first input of each new finding is written, shrunk, as JSON "
        "(default: fuzz/findings)",
    )
    parser.add_argument(
        "--replay",
        metavar="SEED:INDEX",
        help="rebuild one input, check it and print its findings (exit 1 if any) instead "
        "of running a campaign",
    )
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="draw the profile from these only (repeat the option for several), e.g. "
        "vllm; default: every profile",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        type=_model,
        metavar="MODEL",
        help="draw the model from these only (repeatable; any model name, 'none' for no "
        "model), e.g. llama-3.3-70b for the one-call-per-turn templates",
    )
    parser.add_argument(
        "--window",
        action="append",
        default=[],
        type=_window,
        metavar="TOKENS",
        help="draw the context window from these only (repeatable; 'none' for no window)",
    )
    args = parser.parse_args(argv)
    try:
        focus = Focus(tuple(args.profile), tuple(args.model), tuple(args.window))
    except ValueError as exc:
        parser.error(str(exc))
    if args.replay:
        return replay(args.replay, focus)
    result = campaign(args.n, args.seed, args.jobs, args.out, focus=focus)
    return _summary(result, args.seed, focus)


if __name__ == "__main__":
    sys.exit(main())
