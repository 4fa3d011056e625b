"""Speed and memory: the cost of governing every step of a long agent session.

Contenders, all on the same replays, in the same run:

* ``Governor``: one ``Governor`` per conversation, ``.govern(history)`` per step;
* ``govern()``: the stateless function with the same settings;
* Nanobot 0.2.2: its own pipeline functions, in its own environment (``bench/nanobot_side.py``);
* LangChain ``trim_messages`` (langchain-core, ``token_counter="approximate"``,
  ``strategy="last"``, ``include_system=True``, ``start_on="human"``,
  ``end_on=("human", "tool")`` -- the documented recipe) on messages converted once
  with ``convert_to_messages``; the conversion of each step's new messages is timed
  separately (a LangChain agent holds BaseMessages already);
* ``json.dumps`` of the request body (``{"model", "messages", "tools"}``) as the floor:
  of the body actually sent (the Governor's output) and of the whole history.

Timing: ``time.perf_counter_ns`` around each call, each step measured once in
sequence (the history is one list extended in place, as an agent loop does), gc
enabled, a warm-up replay of a different session first. The whole replay is
repeated (three times by default) with fresh tool-call ids each time, so a token
cache filled by one repeat cannot serve the next; the per-step figure is the
median across repeats.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_governor import Governor, govern

from .sessions import SEED, Message, Replay, coding_session, long_history

REPO = Path(__file__).resolve().parents[1]
NANOBOT_SIDE = REPO / "bench" / "nanobot_side.py"
MAX_OUTPUT = 4096
StepFn = Callable[[list[Message]], Any]


def progress(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- stats


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]); the median for q=50 of an odd count."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return float(ordered[int(rank) - 1])


def across_repeats(runs: Sequence[Sequence[int]]) -> list[float]:
    """Per-step median across repeats (all runs have the same number of steps)."""
    if not runs or len({len(r) for r in runs}) != 1:
        raise ValueError("runs must be non-empty and of equal length")
    return [float(statistics.median(step)) for step in zip(*runs, strict=True)]


@dataclass(slots=True)
class Series:
    """One contender's per-step times (ns): one list per repeat."""

    label: str
    runs: list[list[int]] = field(default_factory=list)
    peak_bytes: int | None = None
    note: str = ""

    @property
    def per_step(self) -> list[float]:
        return across_repeats(self.runs)

    def summary(self, steady_from: int = 0) -> dict[str, float]:
        steps = self.per_step
        steady = steps[steady_from:] or steps
        return {
            "median": statistics.median(steps),
            "p95": percentile(steps, 95),
            "steady_median": statistics.median(steady),
            "last": steps[-1],
            "total": sum(steps),
        }


def steady_start(steps: int) -> int:
    """Steady state: every step after the first 10% (the Governor's cold start is excluded)."""
    return max(1, steps // 10)


# ----------------------------------------------------------------------------- sizes


def deep_sizeof(obj: object) -> int:
    """Bytes of ``obj`` and everything it references (dict, list, tuple, set, str, numbers),
    each object counted once (``sys.getsizeof``, shared objects not double-counted)."""
    seen: set[int] = set()
    total = 0
    stack = [obj]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
    return total


# ----------------------------------------------------------------------------- contenders


def governor_fn(replay: Replay, window: int) -> StepFn:
    gov = Governor(
        profile="openai",
        model=replay.model,
        context_window=window,
        max_output=MAX_OUTPUT,
        tools=replay.tools,
    )
    return gov.govern


def govern_fn(replay: Replay, window: int) -> StepFn:
    tools, model = replay.tools, replay.model

    def step(history: list[Message]) -> Any:
        return govern(
            history,
            tools=tools,
            profile="openai",
            model=model,
            context_window=window,
            max_output=MAX_OUTPUT,
        )

    return step


def time_replay(fn: StepFn, replay: Replay, keep: Callable[[Any], None] | None = None) -> list[int]:
    """Time ``fn`` on each step's history, once per step, in order.

    gc stays enabled; one collection first, so the garbage of generating the
    replay is not billed to the first steps.
    """
    gc.collect()
    clock = time.perf_counter_ns
    out: list[int] = []
    for history in replay.histories():
        start = clock()
        result = fn(history)
        out.append(clock() - start)
        if keep is not None:
            keep(result)
    return out


def time_and_keep(fn: StepFn, replay: Replay) -> tuple[list[int], list[list[Message]]]:
    """Time a governor and keep the message list it returned at each step."""
    sent: list[list[Message]] = []
    times = time_replay(fn, replay, lambda result: sent.append(result.messages))
    return times, sent


def body(replay: Replay, messages: list[Message]) -> dict[str, Any]:
    return {"model": replay.model, "messages": messages, "tools": replay.tools}


def time_dumps(replay: Replay, bodies: Iterable[list[Message]]) -> list[int]:
    clock = time.perf_counter_ns
    out: list[int] = []
    for messages in bodies:
        payload = body(replay, messages)
        start = clock()
        json.dumps(payload)
        out.append(clock() - start)
    return out


def langchain_available() -> bool:
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        return False
    return True


def time_langchain(replay: Replay, budget: int) -> tuple[list[int], list[int]]:
    """(conversion ns, trim ns) per step. Conversion covers only the step's new messages."""
    from langchain_core.messages import BaseMessage, convert_to_messages, trim_messages

    gc.collect()
    clock = time.perf_counter_ns
    state: list[BaseMessage] = []
    convert_ns: list[int] = []
    trim_ns: list[int] = []
    for step in replay.steps:
        start = clock()
        state.extend(convert_to_messages(step))
        mid = clock()
        trim_messages(
            state,
            max_tokens=budget,
            token_counter="approximate",
            strategy="last",
            include_system=True,
            start_on="human",
            end_on=("human", "tool"),
        )
        end = clock()
        convert_ns.append(mid - start)
        trim_ns.append(end - mid)
    return convert_ns, trim_ns


# ----------------------------------------------------------------------------- nanobot


def ref_python() -> Path | None:
    """The reference interpreter: $NANOBOT_REF_PYTHON, else .venv-ref/bin/python."""
    configured = Path(os.environ.get("NANOBOT_REF_PYTHON", ".venv-ref/bin/python"))
    path = configured if configured.is_absolute() else REPO / configured
    return path if path.exists() else None


def run_nanobot(
    python: Path,
    *,
    window: int,
    warmup: Replay,
    replays: Sequence[Replay],
    histories: Sequence[Replay],
    memory: bool,
) -> dict[str, Any]:
    """Time nanobot's pipeline in its own interpreter; returns nanobot_side's JSON."""
    job = {
        "context_window": window,
        "max_output": MAX_OUTPUT,
        "memory": memory,
        "warmup": warmup.to_json(),
        "replays": [r.to_json() for r in replays],
        "histories": [h.to_json() for h in histories],
    }
    with tempfile.TemporaryDirectory(prefix="cg-bench-") as tmp:
        path = Path(tmp) / "replays.json"
        path.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
        del job
        proc = subprocess.run(
            [str(python), str(NANOBOT_SIDE), str(path)],
            stdout=subprocess.PIPE,
            stderr=None,  # nanobot_side's progress goes straight to our stderr
            text=True,
            encoding="utf-8",
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"bench/nanobot_side.py exited with {proc.returncode}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


# ----------------------------------------------------------------------------- memory


@dataclass(slots=True)
class Memory:
    """What governing a whole replay costs in memory (tracemalloc, bytes)."""

    messages_bytes: int  # deep size of the final message list
    retained_bytes: int  # still allocated after the replay, once the last result is dropped
    peak_bytes: int  # peak during the replay, above the level at its start
    top: list[tuple[str, int]]  # retained bytes by file, largest first


def measure_memory(make: Callable[[Replay, int], StepFn], replay: Replay, window: int) -> Memory:
    """Memory kept by one governed conversation, measured with tracemalloc.

    The messages exist before tracing starts (they are the caller's); the history
    list grows during the replay and its own size is subtracted. Everything else
    still allocated after the replay (with the last result dropped and a full gc)
    is what governing the conversation kept: the Governor object, its caches and
    any process-wide cache it fills (the token counts). Encodings are loaded by the
    warm-up before tracing, so they are not counted.
    """
    messages = replay.messages
    history: list[Message] = []
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn = make(replay, window)
        result: Any = None
        for step in replay.steps:
            history.extend(step)
            result = fn(history)
        del result
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot()
        retained = current - base - sys.getsizeof(history)
        by_file = [
            (str(s.traceback[0].filename), s.size) for s in snapshot.statistics("filename")[:6]
        ]
        keep_alive = fn  # the Governor stays alive until it has been measured
        del keep_alive
    finally:
        tracemalloc.stop()
    return Memory(deep_sizeof(messages), max(0, retained), peak - base, by_file)


def measure_peak(run: Callable[[], object]) -> int:
    """Peak traced allocation (bytes) while ``run()`` executes."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


# ----------------------------------------------------------------------------- the run


@dataclass(slots=True)
class SpeedResult:
    steps: int
    window: int
    repeats: int
    session: dict[str, Any]
    series: dict[str, Series]
    first_call: dict[str, list[int]]  # label -> ns per repeat, on the long history
    history_messages: int
    history_json_bytes: int
    memory: Memory | None
    machine: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def source_info() -> str:
    """The commit of the context_governor being measured, and whether its tree is dirty."""
    import context_governor

    where = Path(context_governor.__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return f"commit {commit}" + (" with uncommitted changes in src/" if dirty else "")


def machine_info() -> dict[str, Any]:
    return {
        "source": source_info(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def run_speed(
    *,
    steps: int = 300,
    window: int = 128_000,
    repeats: int = 3,
    history_messages: int = 10_000,
    nanobot: bool = True,
    langchain: bool = True,
    memory: bool = True,
) -> SpeedResult:
    """The whole speed benchmark; progress on stderr."""
    from .sessions import describe

    budget = window - MAX_OUTPUT - 1024
    replays = [coding_session(steps, variant=r) for r in range(repeats)]
    warmup = coding_session(min(steps, 30), seed=SEED + 1)
    notes: list[str] = []
    series = {
        label: Series(label)
        for label in (
            "Governor",
            "govern()",
            "json.dumps (sent body)",
            "json.dumps (whole history)",
        )
    }

    progress("warm-up (a different session: loads encodings and code paths)")
    for make in (governor_fn, govern_fn):
        time_replay(make(warmup, window), warmup)
    use_langchain = langchain and langchain_available()
    if langchain and not use_langchain:
        notes.append("langchain-core is not installed (pip install -e '.[bench]'): skipped")
    if use_langchain:
        series["LangChain trim_messages"] = Series("LangChain trim_messages")
        series["LangChain conversion"] = Series("LangChain conversion")
        time_langchain(warmup, budget)

    for r, replay in enumerate(replays, 1):
        progress(f"repeat {r}/{repeats}: Governor")
        governor_ns, sent = time_and_keep(governor_fn(replay, window), replay)
        series["Governor"].runs.append(governor_ns)
        progress(f"repeat {r}/{repeats}: json.dumps")
        series["json.dumps (sent body)"].runs.append(time_dumps(replay, sent))
        series["json.dumps (whole history)"].runs.append(
            time_dumps(replay, (list(h) for h in replay.histories()))
        )
        # govern() gets a fresh variant's ids: the Governor's run filled the token cache.
        fresh = coding_session(steps, variant=repeats + r)
        progress(f"repeat {r}/{repeats}: govern()")
        series["govern()"].runs.append(time_replay(govern_fn(fresh, window), fresh))
        if use_langchain:
            progress(f"repeat {r}/{repeats}: LangChain trim_messages")
            convert_ns, trim_ns = time_langchain(replay, budget)
            series["LangChain conversion"].runs.append(convert_ns)
            series["LangChain trim_messages"].runs.append(trim_ns)

    first_call: dict[str, list[int]] = {}
    progress(f"long history: {history_messages} messages, first call")
    histories = [long_history(history_messages, variant=100 + r) for r in range(repeats)]
    hist_json = len(json.dumps(body(histories[0], histories[0].messages)).encode())
    for label, make in (("Governor", governor_fn), ("govern()", govern_fn)):
        first_call[label] = []
        for r in range(repeats):
            # a variant of its own for each contender and repeat: a cold token cache
            history = long_history(history_messages, variant=200 + 10 * len(first_call) + r)
            fn = make(history, window)
            gc.collect()  # the generator's garbage is not the governor's
            start = time.perf_counter_ns()
            fn(history.messages)
            first_call[label].append(time.perf_counter_ns() - start)
    first_call["json.dumps (whole history)"] = [min(time_dumps(h, [h.messages])) for h in histories]
    if use_langchain:
        from langchain_core.messages import convert_to_messages, trim_messages

        convert, trim = [], []
        for h in histories:
            gc.collect()
            start = time.perf_counter_ns()
            converted = convert_to_messages(h.messages)
            mid = time.perf_counter_ns()
            trim_messages(
                converted,
                max_tokens=budget,
                token_counter="approximate",
                strategy="last",
                include_system=True,
                start_on="human",
                end_on=("human", "tool"),
            )
            convert.append(mid - start)
            trim.append(time.perf_counter_ns() - mid)
        first_call["LangChain conversion"] = convert
        first_call["LangChain trim_messages"] = trim

    python = ref_python() if nanobot else None
    if nanobot and python is None:
        notes.append("nanobot reference environment (.venv-ref) not found: Nanobot skipped")
    if python is not None:
        progress("Nanobot 0.2.2 in its own environment (slow)")
        answer = run_nanobot(
            python,
            window=window,
            warmup=warmup,
            replays=replays,
            histories=histories,
            memory=memory,
        )
        series["Nanobot 0.2.2"] = Series(
            "Nanobot 0.2.2", answer["steps_ns"], answer.get("peak_bytes")
        )
        first_call["Nanobot 0.2.2"] = answer["first_call_ns"]
        if answer["python"] != platform.python_version():
            notes.append(f"Nanobot ran on Python {answer['python']}")
    del histories

    mem: Memory | None = None
    if memory:
        progress("memory: Governor (tracemalloc, a fresh variant)")
        mem = measure_memory(governor_fn, coding_session(steps, variant=50), window)
        series["Governor"].peak_bytes = mem.peak_bytes
        progress("memory: govern() peak")
        g_replay = coding_session(steps, variant=51)
        g_fn = govern_fn(g_replay, window)
        series["govern()"].peak_bytes = measure_peak(lambda: time_replay(g_fn, g_replay))
        if use_langchain:
            progress("memory: LangChain peak")
            series["LangChain trim_messages"].peak_bytes = measure_peak(
                lambda: time_langchain(replays[0], budget)
            )

    return SpeedResult(
        steps=steps,
        window=window,
        repeats=repeats,
        session=describe(replays[0]),
        series=series,
        first_call=first_call,
        history_messages=history_messages,
        history_json_bytes=hist_json,
        memory=mem,
        machine=machine_info(),
        notes=notes,
    )
