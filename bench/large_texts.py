"""Large texts in one request: each encoded once, and a 10 MB request in under 2 s.

Issue 38, item 6: a 900 KB tool argument was encoded three or four times per request
(mistral and qwen profiles: their stages rewrite the message around it, each rewrite a
new payload the count memo had never seen), and 10 MB requests took 3 to 8 s. This
governs, with ``govern_request`` (Chat Completions), under every built-in profile:

* ``arg 900 KB``: one tool call whose arguments carry a 900 KB file;
* ``result 900 KB``: one tool result of 900 KB;
* ``10 MB``: five tool results of 1.8 MB and a 1 MB user message.

Each request's texts are new (seeded per profile and body), so no count memo of the
process knows them: what is measured is a first sight of the texts, as for a request
that brings them. For each it prints the wall time, its ratio to one ``json.dumps`` of
the same body, how many characters the tokenizer was handed against the body's size
(``encoded``: 1.0 means each text once) and the most times one string of 1,000
characters or more was handed to it (``repeats``). Texts counted by the worker processes
of a big first call (counting/pool.py) are not seen: ``--workers 0`` counts every text in
this process, so ``encoded`` covers all of them. The tokenizer is watched at its
bottom (rs-bpe's ``FastEncoding.count`` and tiktoken's ``Encoding.encode``), so the same
module measures a checkout from before the change.

Run: ``python -m bench.large_texts [--profiles mistral,qwen] [--bodies "10 MB"]``;
``CONTEXT_GOVERNOR_FAST=0`` to count with tiktoken instead of rs-bpe;
``--out docs/large-texts.md`` writes the page (both encoders, ``--workers 0``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import tiktoken

from context_governor import govern_request
from context_governor.counting import FastEncoding, counting_encoding, pool
from context_governor.profiles import PROFILES

#: A model of each profile's provider (the counter and window follow it).
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "bedrock": "anthropic.claude-sonnet-4-5",
    "deepseek": "deepseek-chat",
    "gemini": "gemini-2.5-pro",
    "glm": "glm-4.6",
    "groq": "llama-3.3-70b-versatile",
    "mistral": "mistral-large-latest",
    "moonshot": "kimi-k2",
    "ollama": "llama3.1",
    "qwen": "qwen3-coder-plus",
    "vllm": "llama3.1",
}
WORDS = (
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "with", "was", "on",
    "be", "by", "at", "this", "from", "def", "return", "class", "import", "self", "value",
    "data", "file", "error", "test", "print", "if", "else",
)  # fmt: skip
SEPARATORS = (" ", " ", " ", ", ", ".\n", "_", "(", ") ")
#: Strings at least this long handed to the tokenizer more than once are repeats.
REPEAT_MIN = 1_000


def text(rng: random.Random, size: int) -> str:
    """``size`` characters of code-like prose: words, numbers, punctuation, newlines."""
    out: list[str] = []
    total = 0
    while total < size:
        word = rng.choice(WORDS) + rng.choice(SEPARATORS) + str(rng.randrange(1000))
        out.append(word)
        total += len(word)
    return "".join(out)[:size]


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def arg_body(rng: random.Random, model: str, size: int = 900_000) -> dict[str, Any]:
    arguments = json.dumps({"path": "a.py", "content": text(rng, size)})
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Write the file."},
            _call("call_abc123", "write_file", arguments),
            {"role": "tool", "tool_call_id": "call_abc123", "content": "ok"},
            {"role": "user", "content": "Now test it."},
        ],
    }


def result_body(rng: random.Random, model: str, size: int = 900_000) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Read the file."},
            _call("call_abc123", "read_file", '{"path": "a.py"}'),
            {"role": "tool", "tool_call_id": "call_abc123", "content": text(rng, size)},
            {"role": "user", "content": "Summarise it."},
        ],
    }


def big_body(rng: random.Random, model: str, scale: float = 1.0) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(5):
        first = text(rng, int(1_000_000 * scale)) if i == 0 else f"step {i}"
        messages.append({"role": "user", "content": first})
        messages.append(_call(f"call_{i}", "read_file", json.dumps({"path": f"f{i}.py"})))
        content = text(rng, int(1_800_000 * scale))
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": content})
    messages.append({"role": "user", "content": "go on"})
    return {"model": model, "messages": messages}


BODIES: dict[str, Callable[[random.Random, str], dict[str, Any]]] = {
    "arg 900 KB": arg_body,
    "result 900 KB": result_body,
    "10 MB": big_body,
}


class Tokenizer:
    """Watches every string handed to the tokenizer (rs-bpe's count and tiktoken's
    encode, whichever counts), from any thread, while ``watch`` is on."""

    def __init__(self) -> None:
        self.chars = 0
        self.seen: Counter[bytes] = Counter()
        self._lock = threading.Lock()

    def note(self, value: str) -> None:
        with self._lock:
            self.chars += len(value)
            if len(value) >= REPEAT_MIN:
                key = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16)
                self.seen[key.digest()] += 1

    def reset(self) -> None:
        with self._lock:
            self.chars = 0
            self.seen.clear()

    @property
    def repeats(self) -> int:
        return max(self.seen.values(), default=0)

    def install(self) -> None:
        fast_count = FastEncoding.count
        fast_encode = FastEncoding.encode
        slow_encode = tiktoken.Encoding.encode
        watcher = self

        def count(self: FastEncoding, value: str) -> int:
            watcher.note(value)
            return fast_count(self, value)

        def encode(self: FastEncoding, value: str, **kwargs: Any) -> list[int]:
            watcher.note(value)
            return fast_encode(self, value, **kwargs)

        def tk_encode(self: tiktoken.Encoding, value: str, **kwargs: Any) -> list[int]:
            watcher.note(value)
            return slow_encode(self, value, **kwargs)

        FastEncoding.count = count  # type: ignore[method-assign,assignment]
        FastEncoding.encode = encode  # type: ignore[method-assign,assignment]
        tiktoken.Encoding.encode = tk_encode  # type: ignore[method-assign,assignment]


def measure(profiles: list[str], bodies: list[str], scale: float = 1.0) -> Iterator[dict[str, Any]]:
    watcher = Tokenizer()
    watcher.install()
    for name in profiles:
        model = MODELS.get(name, "gpt-4o")
        for label in bodies:
            rng = random.Random(f"{name}/{label}")
            make = BODIES[label]
            body = big_body(rng, model, scale) if label == "10 MB" else make(rng, model)
            size = len(json.dumps(body))
            started = time.perf_counter()
            json.dumps(body)
            dumps = time.perf_counter() - started
            window = 10_000_000 if label == "10 MB" else 1_000_000
            watcher.reset()
            cpu = time.process_time()
            started = time.perf_counter()
            govern_request(body, api="openai", profile=name, context_window=window)
            seconds = time.perf_counter() - started
            yield {
                "profile": name,
                "body": label,
                "mb": size / 1e6,
                "seconds": seconds,
                "cpu": time.process_time() - cpu,
                "x_dumps": seconds / dumps,
                "encoded": watcher.chars / size,
                "repeats": watcher.repeats,
            }


def table(profiles: list[str], bodies: list[str], scale: float = 1.0) -> list[str]:
    """The measurements as Markdown lines (printed as they come), and the verdict."""
    for name in ("cl100k_base", "o200k_base"):  # built before timing anything
        counting_encoding(name)
    lines = [
        "| profile | body | MB | s | CPU s | x json.dumps | encoded | repeats |",
        "|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    worst = 0.0
    for row in measure(profiles, bodies, scale):
        if row["body"] == "10 MB":
            worst = max(worst, row["seconds"])
        lines.append(
            f"| {row['profile']} | {row['body']} | {row['mb']:.1f} | {row['seconds']:.2f} "
            f"| {row['cpu']:.2f} | {row['x_dumps']:.0f} | {row['encoded']:.2f} "
            f"| {row['repeats']} |"
        )
        print(lines[-1], flush=True)
    if worst:
        verdict = "PASS" if worst < 2.0 else "FAIL"
        lines += ["", f"Slowest 10 MB request: {worst:.2f} s (target < 2 s: {verdict})."]
        print("\n".join(lines[-2:]), flush=True)
    return lines


#: The page's text around the tables (docs/large-texts.md).
LEAD = """\
Issue 38, item 6: each text counted once per request, whatever the profile, and a 10 MB
request governed in under 2 s. Before the change (commit 3a193fa, same bodies, `--workers
0`): a 900 KB tool argument was handed to the tokenizer 3 times per request under mistral
and nanobot (`encoded` 3.00), twice under qwen, ollama and vllm; a 900 KB tool result
2-3 times under bedrock, mistral and nanobot; the 10 MB request took up to 4.7 s with
tiktoken (bedrock; mistral 4.3 s, nanobot 2.9 s) and up to 1.1 s with rs-bpe.

Why: counts were memoised by the digest of a message's whole payload, and the stages make
new payloads around the same large text (mistral's nine-character tool-call ids,
`content: null` made `""`, tool results flattened into text, turns merged, the seed's
whole-prompt estimate), each one a miss. Now a text of 32 KB or more is counted in
content-defined chunks of about 5 KB, cut where both encodings must split, each chunk's
count memoised per encoding (counting/_chunks.py): the sum is the text's count exactly,
and a payload rewritten around the same text re-encodes only its edges. Counting worker
processes send their chunk counts back (counting/pool.py).

*encoded*: characters handed to the tokenizer over the body's JSON size (1.00: each text
once; bedrock's 1.98 for the argument is its two forms: JSON-escaped in `tool_calls`, then
flattened into text as it is); *repeats*: the most times one string of 1,000 characters or
more was handed to it; *x json.dumps*: the request's time over one `json.dumps` of the
same body. Each request's texts are new to the process (no memo knows them); counting in
this process only (`--workers 0`), so every encode is seen.
"""


def page(command: str) -> str:
    """docs/large-texts.md: the table with rs-bpe (the ``fast`` extra) and with tiktoken,
    each measured in a process of its own."""
    out = [
        "# Large texts: counted once per request",
        "",
        f"Generated by `{command}` on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC "
        f"({os.cpu_count()} cores, shared: load average {os.getloadavg()[0]:.1f} at the "
        "start). Times move with the machine's load; *encoded* and *repeats* must not.",
        "",
        LEAD,
    ]
    for fast, title in (("1", "rs-bpe (the `fast` extra)"), ("0", "tiktoken")):
        env = {**os.environ, "CONTEXT_GOVERNOR_FAST": fast}
        found = subprocess.run(
            [sys.executable, "-m", "bench.large_texts", "--workers", "0"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        out += [f"## Counting with {title}", "", found.strip(), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--bodies", default=",".join(BODIES))
    parser.add_argument("--scale", type=float, default=1.0, help="of the 10 MB body's texts")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="counting worker processes (default: the library's; 0: count in this process, "
        "so that every encode is seen)",
    )
    parser.add_argument(
        "--out", default=None, help="write the page (both encoders, --workers 0) to this file"
    )
    args = parser.parse_args(argv)
    if args.out:
        text = page(f"python -m bench.large_texts --out {args.out}")
        with open(args.out, "w", encoding="utf-8") as sink:
            sink.write(text)
        return
    pool.set_workers(args.workers)
    table(args.profiles.split(","), args.bodies.split(","), args.scale)


if __name__ == "__main__":
    main()
