"""Times nanobot-ai 0.2.2's own context pipeline on the benchmark replays.

Run with the reference interpreter, never with ours (nanobot lives only in
``.venv-ref``)::

    .venv-ref/bin/python bench/nanobot_side.py REPLAYS.json   # commands on stdin

The pipeline is exactly the one the differential test checks our ``nanobot``
profile against: ``tests/reference/nanobot_oracle.py``'s ``_governed`` (what
``AgentRunner._run_core`` runs before every model call -- orphans, backfill,
microcompact, tool-result budget, snip, orphans, backfill -- then the provider layer's
``_enforce_role_alternation``), called through nanobot's own functions. It is
imported from there rather than copied so that the two cannot drift apart.

Input: a JSON file (written by ``bench/speed.py``)::

    {"context_window": int, "max_output": int,
     "warmup": <replay>, "replays": [<replay>, ...], "histories": [<replay>, ...]}

where a replay is ``{"name", "model", "tools", "steps": [[message, ...], ...]}``.
After importing nanobot and running the warm-up replay (not timed), the script
prints one line ``{"ready": true, "python": ..., "nanobot": ...}`` and then serves
one command per stdin line, answering each with one JSON line, so that the caller
can interleave Nanobot's repeats with its own (a busy machine then slows both alike):

* ``replay I`` -> ``{"steps_ns": [int, ...]}``: replay I, its history growing step
  by step in one list, every step timed once with ``time.perf_counter_ns`` (gc
  enabled, one collection before the replay);
* ``history I`` -> ``{"ns": int}``: one cold call on the whole of history I;
* ``memory I`` -> ``{"peak_bytes": int}``: tracemalloc peak while replaying replay I.

Progress goes to stderr.
"""

from __future__ import annotations

import gc
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
            max_tool_result_chars=self.oracle._DEFAULT_CAP,
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


def _serve(side: _Side, job: dict[str, Any]) -> None:
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if not command:
            continue
        index = int(arg)
        answer: dict[str, Any]
        if command == "replay":
            replay = job["replays"][index]
            _progress(f"replay {index + 1}/{len(job['replays'])} ({len(replay['steps'])} steps)")
            gc.collect()
            answer = {"steps_ns": side.replay(replay)}
        elif command == "history":
            _progress(f"long history {index + 1}/{len(job['histories'])}")
            gc.collect()
            answer = {"ns": side.first_call(job["histories"][index])}
        elif command == "memory":
            _progress("memory pass (tracemalloc)")
            gc.collect()
            tracemalloc.start()
            try:
                side.replay(job["replays"][index])
                answer = {"peak_bytes": tracemalloc.get_traced_memory()[1]}
            finally:
                tracemalloc.stop()
        else:
            answer = {"error": f"unknown command {command!r}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


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
        ready = {
            "ready": True,
            "python": platform.python_version(),
            "nanobot": importlib.metadata.version("nanobot-ai"),
        }
        sys.stdout.write(json.dumps(ready) + "\n")
        sys.stdout.flush()
        _serve(side, job)
    finally:
        shutil.rmtree(oracle._CACHE_DIR, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
