"""Times nanobot-ai 0.2.2's own context pipeline on the benchmark replays.

Run with the reference interpreter, never with ours (nanobot lives only in
``.venv-ref``)::

    .venv-ref/bin/python bench/nanobot_side.py REPLAYS.json > timings.json

The pipeline is exactly the one the differential test checks our ``nanobot``
profile against: ``tests/reference/nanobot_oracle.py``'s ``_governed`` (what
``AgentRunner._run_core`` runs before every model call -- orphans, backfill,
microcompact, snip, orphans, backfill -- then the provider layer's
``_enforce_role_alternation``), called through nanobot's own functions. It is
imported from there rather than copied so that the two cannot drift apart.

Input (JSON, written by ``bench/speed.py``)::

    {"context_window": int, "max_output": int, "repeats": int, "memory": bool,
     "warmup": <replay>, "replays": [<replay>, ...], "histories": [<replay>, ...]}

where a replay is ``{"name", "model", "tools", "steps": [[message, ...], ...]}``.
Each replay in ``replays`` is one repeat of the session: its history grows
step by step in one list, and every step is timed once with
``time.perf_counter_ns`` (gc enabled, warm-up excluded). Each replay in
``histories`` is a single long history governed once, cold.

Output (JSON on stdout): ``{"python", "nanobot", "steps_ns": [[int, ...] per
repeat], "first_call_ns": [int, ...], "peak_bytes": int | null}``. Progress goes
to stderr.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
import shutil
import sys
import time
import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any

ORACLE = Path(__file__).resolve().parents[1] / "tests" / "reference" / "nanobot_oracle.py"


def _load_oracle() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nanobot_oracle", ORACLE)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {ORACLE}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _progress(text: str) -> None:
    print(f"[nanobot] {text}", file=sys.stderr, flush=True)


class _Side:
    def __init__(self, oracle: ModuleType, window: int, max_output: int) -> None:
        self.oracle = oracle
        self.window = window
        self.max_output = max_output
        # Keep every spec and tool list alive to the end: nanobot caches tool-token
        # counts by id(), and a freed list could hand its id to the next replay.
        self.alive: list[Any] = []

    def _spec(self, replay: dict[str, Any]) -> Any:
        # One registry per conversation, returning the same list on every call, as
        # nanobot's ToolRegistry does: its tool-token cache then works as in production.
        spec = self.oracle.AgentRunSpec(
            initial_messages=[],
            tools=self.oracle._Tools(replay["tools"]),
            model=replay["model"],
            max_iterations=1,
            max_tool_result_chars=0,
            max_tokens=self.max_output,
            context_window_tokens=self.window,
        )
        self.alive.append(spec)
        return spec

    def replay(self, replay: dict[str, Any]) -> list[int]:
        spec = self._spec(replay)
        governed = self.oracle._governed
        history: list[dict[str, Any]] = []
        out: list[int] = []
        clock = time.perf_counter_ns
        for step in replay["steps"]:
            history.extend(step)
            start = clock()
            governed(spec, history)
            out.append(clock() - start)
        return out

    def first_call(self, replay: dict[str, Any]) -> int:
        spec = self._spec(replay)
        history = [m for step in replay["steps"] for m in step]
        start = time.perf_counter_ns()
        self.oracle._governed(spec, history)
        return time.perf_counter_ns() - start


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    job = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    _progress("importing nanobot")
    oracle = _load_oracle()
    try:
        oracle._check_real_tiktoken()
        side = _Side(oracle, job["context_window"], job["max_output"])
        side.replay(job["warmup"])
        steps_ns: list[list[int]] = []
        for i, replay in enumerate(job["replays"], 1):
            _progress(f"replay {i}/{len(job['replays'])} ({len(replay['steps'])} steps)")
            steps_ns.append(side.replay(replay))
        first_call_ns: list[int] = []
        for i, replay in enumerate(job["histories"], 1):
            _progress(f"long history {i}/{len(job['histories'])}")
            first_call_ns.append(side.first_call(replay))
        peak: int | None = None
        if job.get("memory") and job["replays"]:
            _progress("memory pass (tracemalloc)")
            tracemalloc.start()
            side.replay(job["replays"][0])
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    finally:
        shutil.rmtree(oracle._CACHE_DIR, ignore_errors=True)
    result = {
        "python": platform.python_version(),
        "nanobot": importlib.metadata.version("nanobot-ai"),
        "steps_ns": steps_ns,
        "first_call_ns": first_call_ns,
        "peak_bytes": peak,
    }
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
