"""One digest of everything governance decides, to prove a refactor changes nothing.

A refactor that must keep behaviour byte-identical (issue: "governed bodies and reports of
bench's shapes, the real-session corpus") is checked by running this before and after
and comparing the digests. It governs, with fixed inputs:

* every bench shape (bench/shapes.py) for ``--steps`` steps through a ``Governor`` and
  through ``govern()``, at a 128k and a 32k window, with the default policy, the cache
  policy for reads at 0.1x and the seed's (``nanobot``) profile, for an OpenAI and an
  Anthropic model;
* the same histories through ``govern()`` for every built-in profile at 32k;
* a long history's first call (2,000 messages) at 128k;
* every step of the real-session corpus (tests/data/real_sessions/) through
  ``govern_request`` at 64k and 16k.

What is hashed is the governed messages (or body) and the report's ``to_dict()``.
``--verbose`` prints one digest per part, to find which part moved.

Run: ``python -m bench.identity [--steps N] [--verbose]``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from context_governor import CompactionPolicy, Governor, govern, govern_request
from context_governor.profiles import PROFILES

from .sessions import long_history
from .shapes import SHAPES

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("gpt-4o", "claude-sonnet-4-5")
POLICIES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default", {}),
    ("cache-0.1x", {"compaction": CompactionPolicy(price_aware=False)}),
    ("seed", {"profile": "nanobot"}),
)


def _dump(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, default=repr).encode()


def _shape_parts(steps: int) -> Iterator[tuple[str, bytes]]:
    for shape in SHAPES:
        replay = shape.make(steps)
        for model in MODELS:
            for window in (128_000, 32_000):
                for label, settings in POLICIES:
                    gov = Governor(
                        model=model, tools=replay.tools, context_window=window, **settings
                    )
                    digest = hashlib.sha256()
                    for history in replay.histories():
                        result = gov.govern(history)
                        digest.update(_dump(result.messages))
                        digest.update(_dump(result.report.to_dict()))
                        if label == "default":
                            once = govern(
                                list(history),
                                model=model,
                                tools=replay.tools,
                                context_window=window,
                            )
                            digest.update(_dump(once.messages))
                            digest.update(_dump(once.report.to_dict()))
                    yield f"{shape.key} {model} {window} {label}", digest.digest()


def _profile_parts(steps: int) -> Iterator[tuple[str, bytes]]:
    replay = SHAPES[0].make(steps)
    history = replay.messages
    for name in sorted(PROFILES):
        digest = hashlib.sha256()
        result = govern(list(history), profile=name, model=None, context_window=32_000)
        digest.update(_dump(result.messages))
        digest.update(_dump(result.report.to_dict()))
        yield f"profile {name}", digest.digest()


def _long_part() -> Iterator[tuple[str, bytes]]:
    replay = long_history(2_000)
    gov = Governor(model=replay.model, tools=replay.tools, context_window=128_000)
    result = gov.govern(replay.messages)
    yield (
        "long history 2,000",
        hashlib.sha256(_dump(result.messages) + _dump(result.report.to_dict())).digest(),
    )


def _corpus_parts() -> Iterator[tuple[str, bytes]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from real_sessions import (  # type: ignore[import-not-found]  # the tests' loader
        load_corpus,
        step_records,
    )

    for session in load_corpus():
        digest = hashlib.sha256()
        for step in step_records(session):
            for window in (64_000, 16_000):
                result = govern_request(
                    copy.deepcopy(step.body),
                    api=step.api,
                    model=step.model,
                    context_window=window,
                )
                digest.update(_dump(result.body))
                digest.update(_dump(result.report.to_dict()))
        yield f"corpus {session}", digest.digest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60, help="steps per shape (default 60)")
    parser.add_argument("--verbose", action="store_true", help="one digest per part")
    args = parser.parse_args(argv)
    total = hashlib.sha256()
    parts = (_shape_parts(args.steps), _profile_parts(args.steps), _long_part(), _corpus_parts())
    for part in parts:
        for name, digest in part:
            total.update(name.encode() + digest)
            if args.verbose:
                print(f"{digest.hex()[:16]}  {name}", flush=True)
    print(total.hexdigest())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
