"""Exact token counters compared: exactness against tiktoken, speed, cold start.

    .venv/bin/python -m bench.counters [--texts N] [--cold N] [--out docs/benchmarks.md]

Contenders: tiktoken (the reference; o200k_base is rebuilt from quicktok's vocabulary
and checked against tiktoken's pinned digest, see counting/_encodings.py), rs-bpe (the ``fast``
extra, what counters use when it is installed) and bpe-openai (evaluated, not used).

* **Exactness**: every text of a generated corpus (``corpus``: prose, code, JSON,
  CJK, emoji, whitespace runs, long lines, random mixed-script text, lone surrogates
  and surrogate pairs), counted by each contender after the surrogate clean-up
  tiktoken itself applies, against ``len(tiktoken.encode(text, disallowed_special=()))``.
* **Speed**: counting every message payload of the benchmark's 300-step replay, once
  (a warm process: encodings loaded before timing), median of 5 interleaved rounds.
* **Cold start**: a fresh interpreter per run, timing the import of the counter and
  the first count of one message (the encoding load included), median of ``--cold``
  runs (interleaved). The ``context-governor`` rows are what a first ``govern()``
  pays for its counter in a fresh process, with and without rs-bpe (``CONTEXT_GOVERNOR_FAST=0``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from context_governor.counting import (
    FAST_ENV,
    clean_surrogates,
    load_encoding,
    seed_message_payload,
)

from .section import section_main
from .sessions import coding_session

HEADING = "## Exact token counters"
ENCODINGS = ("cl100k_base", "o200k_base")

#: Ranges of code points the random texts are drawn from: ASCII, CJK, kana, Cyrillic,
#: Arabic, emoji, Hangul, Devanagari, surrogates (lone, or paired by chance), combining
#: marks, general punctuation (zero-width joiners and spaces among them).
_RANGES = (
    (0x20, 0x7E), (0x4E00, 0x9FFF), (0x3040, 0x30FF), (0x0400, 0x04FF), (0x0600, 0x06FF),
    (0x1F300, 0x1FAFF), (0xAC00, 0xD7A3), (0x0900, 0x097F), (0xD800, 0xDFFF),
    (0x0300, 0x036F), (0x2000, 0x206F),
)  # fmt: skip
_SPACES = (" ", "\n", "\t", "\r\n", "  ", "\u3000", "\xa0", "\x0b")
_WORDS = (
    "def", "class", "return", "self", "import", "the", "of", "naïve", "café", "日本語",
    "🙂", "👩\u200d💻", "x_1", "0xFF", "12345678", "'s", "'ll", "DON'T", "HTTPServer",
    "   ", "\n\n", "<|endoftext|>", "{\"a\": [1, 2]}", "é", "e\u0301", "٣", "，", "。",
)  # fmt: skip


def corpus(n: int, seed: int = 1) -> list[str]:
    """``n`` texts of many kinds, the same on every run (raw: surrogates are left in)."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(n):
        kind = i % 5
        if kind in (0, 1):  # random mixed-script text with whitespace runs
            length = rng.choice((1, 3, 10, 50, 300, 2000))
            chars = []
            for _ in range(length):
                if rng.random() < 0.15:
                    chars.append(rng.choice(_SPACES) * rng.choice((1, 1, 2, 5, 40)))
                else:
                    low, high = rng.choice(_RANGES)
                    chars.append(chr(rng.randint(low, high)))
            out.append("".join(chars))
        elif kind == 2:  # JSON, compact or indented
            value = {
                f"k{j}": rng.choice(
                    (rng.random(), rng.randint(-(10**12), 10**12), "v" * rng.randint(0, 30),
                     None, [1, 2, {"x": "ü中"}], "\\n\\t\"q\"")
                )
                for j in range(rng.randint(1, 30))
            }  # fmt: skip
            out.append(json.dumps(value, indent=rng.choice((None, 2)), ensure_ascii=i % 2 == 0))
        elif kind == 3:  # words, code tokens and symbols
            out.append(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 400))))
        else:  # long lines and runs: repeated pieces up to a few thousand characters
            piece = rng.choice((*_WORDS, *_SPACES, "-", "=", "a", "中", "/"))
            out.append(piece * rng.randint(1, 3000) + rng.choice(("", "x", "\n", " end")))
    return out


def replay_texts(steps: int = 300) -> list[str]:
    """The message payloads counters see on the benchmark's replay."""
    replay = coding_session(steps)
    return [seed_message_payload(m) for step in replay.steps for m in step]


def _counters(name: str) -> dict[str, Callable[[str], int]]:
    """Each available contender's ``text -> tokens`` for ``name`` (ordinary text)."""
    reference = load_encoding(name)
    assert reference is not None, f"{name} must load offline"
    found: dict[str, Callable[[str], int]] = {
        "tiktoken": lambda t: len(reference.encode(t, disallowed_special=()))
    }
    try:
        from rs_bpe.bpe import openai as rs_openai

        rs = getattr(rs_openai, name)()
        found["rs-bpe"] = lambda t: int(rs.count(t))
    except ImportError:
        pass
    try:
        from bpe_openai import _bindings

        bo = _bindings.tokenizer_for_encoding(name)
        found["bpe-openai"] = lambda t: int(bo.count(t))
    except ImportError:
        pass
    return found


@dataclass(frozen=True, slots=True)
class Exactness:
    encoding: str
    counter: str
    texts: int
    mismatches: int
    corpus_ms: float
    replay_ms: float


def _time(count: Callable[[str], int], texts: Sequence[str], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for text in texts:
            count(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure_exactness(n: int, repeats: int = 5) -> list[Exactness]:
    """Mismatches on the corpus, and times; the replay is counted ``repeats`` times
    with the contenders interleaved (each round times every contender once), so a
    busy machine slows them alike."""
    texts = [clean_surrogates(t) for t in corpus(n)]
    replay = replay_texts()
    rows = []
    for name in ENCODINGS:
        counters = _counters(name)
        truth = [counters["tiktoken"](t) for t in texts]
        rounds: dict[str, list[float]] = {label: [] for label in counters}
        for _ in range(repeats):
            for label, count in counters.items():
                rounds[label].append(_time(count, replay, 1))
        for label, count in counters.items():
            bad = sum(count(t) != want for t, want in zip(texts, truth, strict=True))
            corpus_ms = _time(count, texts, 1)
            replay_ms = statistics.median(rounds[label])
            rows.append(Exactness(name, label, len(texts), bad, corpus_ms, replay_ms))
    return rows


#: What each cold-start run executes in a fresh interpreter (``{name}`` is the encoding).
_COLD = {
    "tiktoken": (
        "from context_governor.counting import load_encoding\n"
        "load_encoding('{name}').encode('hello world', disallowed_special=())"
    ),
    "rs-bpe": "from rs_bpe.bpe import openai\nopenai.{name}().count('hello world')",
    "bpe-openai": (
        "from bpe_openai import _bindings\n"
        "_bindings.tokenizer_for_encoding('{name}').count('hello world')"
    ),
    "context-governor import": "import context_governor.counting",
    "context-governor": (
        "from context_governor.counting import exact_counter\n"
        "exact_counter({model!r}).message_tokens({{'role': 'user', 'content': 'hello world'}})"
    ),
}
_MODELS = {"cl100k_base": "gpt-4", "o200k_base": "gpt-4o"}


def cold_ms(code: str, env: dict[str, str] | None = None) -> float:
    """Milliseconds ``code`` takes in a fresh interpreter (interpreter start excluded)."""
    script = (
        "import time\nstart = time.perf_counter()\n"
        + code
        + "\nprint((time.perf_counter() - start) * 1000)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **(env or {})},
    )
    return float(done.stdout.strip().splitlines()[-1])


@dataclass(frozen=True, slots=True)
class Cold:
    encoding: str
    what: str
    median_ms: float
    runs: int


def measure_cold(runs: int) -> list[Cold]:
    """Each contender's median over ``runs`` fresh processes, the contenders interleaved
    (every round starts each one once)."""
    available = set(_counters("cl100k_base"))
    plan: list[tuple[str, str, str, dict[str, str]]] = []
    for name in ENCODINGS:
        for label, template in _COLD.items():
            if label not in available and not label.startswith("context-governor"):
                continue
            code = template.format(name=name, model=_MODELS[name])
            if label == "context-governor":
                plan.append((name, "context-governor, rs-bpe", code, {}))
                plan.append((name, "context-governor, tiktoken", code, {FAST_ENV: "0"}))
            else:
                plan.append((name, label, code, {}))
    times: dict[tuple[str, str], list[float]] = {(n, w): [] for n, w, _, _ in plan}
    for _ in range(runs):
        for name, what, code, env in plan:
            times[name, what].append(cold_ms(code, env))
    return [Cold(n, w, statistics.median(times[n, w]), runs) for n, w, _, _ in plan]


def render(exact: Sequence[Exactness], cold: Sequence[Cold]) -> str:
    lines = [
        HEADING,
        "",
        "Counters count with rs-bpe when the `fast` extra is installed, else with tiktoken; "
        "tiktoken is the reference. *Mismatches*: texts of the generated corpus (prose, "
        "code, JSON, CJK, emoji, whitespace runs, long lines, random mixed-script text, "
        "lone surrogates cleaned as tiktoken cleans them) whose count differs from "
        "tiktoken's. *Replay*: counting every message payload of the 300-step replay once, "
        "encodings already loaded (median of 5 rounds, the counters interleaved). "
        "`python -m bench.counters --out docs/benchmarks.md` reruns this section. "
        f"Load average at the end of the run: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs (a busy machine slows every contender; compare ratios).",
        "",
        "| encoding | counter | texts | mismatches | corpus | replay | speed-up on the replay |",
        "|---|---|---|---|---|---|---|",
    ]
    base = {r.encoding: r.replay_ms for r in exact if r.counter == "tiktoken"}
    for r in exact:
        lines.append(
            f"| {r.encoding} | {r.counter} | {r.texts:,} | {r.mismatches} | "
            f"{r.corpus_ms:,.0f} ms | {r.replay_ms:,.0f} ms | "
            f"{base[r.encoding] / r.replay_ms:.2f}× |"
        )
    lines += [
        "",
        "### Cold start (a fresh process per run)",
        "",
        "Import and first count of one short text, encoding load included; interpreter "
        "start-up excluded. *context-governor* is `exact_counter(model).message_tokens(...)`, "
        "what the first `govern()` pays for its counter; *context-governor import* is the "
        "package's own import, which that figure includes.",
        "",
        "| encoding | what | median | runs |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c.encoding} | {c.what} | {c.median_ms:,.0f} ms | {c.runs} |" for c in cold]
    return "\n".join([*lines, ""])


def main(argv: Sequence[str] | None = None) -> int:
    def build(args: argparse.Namespace) -> str:
        return render(measure_exactness(args.texts), measure_cold(args.cold))

    return section_main(__doc__, argv, {"texts": 20_000, "cold": 5}, build)


if __name__ == "__main__":
    sys.exit(main())
