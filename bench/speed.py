"""Speed and memory: the cost of governing every step of a long agent session.

Contenders, all on the same replays, in the same run:

* ``Governor``: one ``Governor`` per conversation, ``.govern(history)`` per step, made
  with ``immutable_messages=True`` (the replay, like an agent loop that owns its history,
  never edits a message in place); the same without that promise (the default, which
  compares the old history deeply with a frozen copy) runs next to it, on its own variant
  of the session;
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

from context_governor import CompactionPolicy, Governor, govern
from context_governor.counting import (
    ExactCounter,
    background_cpu_ns,
    counting_encoding,
    encoding_for_model,
)
from context_governor.governor._governor import _ANCHOR
from context_governor.governor._late import first_call_cpu_ns
from context_governor.governor._probe import leaves_alone, plain_facts

from . import first_call
from .sessions import SEED, Message, Replay, coding_session, long_history

REPO = Path(__file__).resolve().parents[1]
NANOBOT_SIDE = REPO / "bench" / "nanobot_side.py"
MAX_OUTPUT = 4096
StepFn = Callable[[list[Message]], Any]


#: What exact counting alone costs: the floor under any exact governor's time.
TOKENIZE_NEW = "exact tokens of the new messages (o200k)"
#: The Governor's exact counting of a step's new messages, done by its worker thread
#: after the call returned (CPU time of that thread), and the step's whole cost.
GOV_BACKGROUND = "Governor: background counting (worker CPU)"
GOV_TOTAL = "Governor: critical path + background"
#: The Governor without the promise (the default): deep comparison with a frozen copy.
GOV_DEFAULT = "Governor, default (no immutable_messages promise)"
#: The parts of the Governor's critical path, each measured alone on the same step's data
#: (see governor_parts): what stands in the way of 0.1x json.dumps.
GOV_PREFIX = "Governor part: old history unchanged? (deep ==, default)"
GOV_IDENTITY = "Governor part: old history unchanged? (identity, promise)"
GOV_PROBE = "Governor part: needs no repair? (the plain walk over the new messages, the rules)"
GOV_RULES = "Governor part: of which the provider's rules (probe.leaves_alone)"
GOV_REST = "Governor part: the rest (id checks, bookkeeping, replay, worker hand-off, copies)"
GOV_PARTS = (GOV_PREFIX, GOV_IDENTITY, GOV_PROBE, GOV_RULES, GOV_REST)
#: The cache policy the speed replay is governed with: the default as a model whose cached
#: reads cost 0.1x gets it (gpt-5, Claude, Gemini 2.5, DeepSeek, any unknown model), the
#: same thresholds as before the trigger became price-aware, so the figures stay comparable
#: from run to run. The replay's own model (gpt-4o, reads at 0.5x) gets a lower trigger and
#: so compacts more often; GOV_PRICED is the Governor as it gets it.
SPEED_POLICY = CompactionPolicy(price_aware=False)
GOV_PRICED = "Governor, the default as gpt-4o gets it (price-aware trigger)"


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


def governor_parts(step_fn: StepFn, history: list[Message], new: list[Message]) -> dict[str, int]:
    """Time, alone, the parts of a Governor's appending step on this step's data, before
    the step runs, each called as the step calls it: checking that the old history is
    unchanged (a deep comparison with the frozen copy by default; pointer compares under
    the promise) and asking whether the newest turn with the new messages needs a repair:
    the plain walk over the new messages (probe.plain_facts, resumed after the old turn
    when the last window was plain; it also gives their byte bounds and call ids), then
    probe.leaves_alone (the trigger and the provider's rules, the per-message ones on the
    new messages only). Empty when the step will not take the appending path."""
    gov = getattr(step_fn, "__self__", None)
    state = getattr(gov, "_state", None)
    if not isinstance(gov, Governor) or state is None or state.turn is None:
        return {}
    tokens = list(state.tokens)  # without settling: that is the timed step's own work
    if state.pending is not None:
        tokens += state.pending.result.counts()
    clock = time.perf_counter_ns
    n = len(state.history)
    whole = history + new
    start = clock()
    _ = whole[:n] != state.frozen
    prefix = clock() - start
    out = {GOV_IDENTITY if gov.immutable_messages else GOV_PREFIX: prefix}
    turn = state.turn
    window = [_ANCHOR, *state.history[turn:], *new]
    s = gov.settings
    clean = len(window) - len(new)
    start = clock()
    facts = plain_facts(window, s, clean, state.resume)
    walk = clock() - start
    if facts is not None and gov._byte_bounds():
        bounds = facts[0]
    else:
        bounds = gov._bounds(new) or [s.counter.message_tokens(m) for m in new]
    plain = facts is not None
    counter = None if plain else gov._window_counter(window[1:clean], tokens[turn:], new, bounds)
    total = gov._anchor() + sum(tokens[turn:]) + sum(bounds) + gov._tools_count[1]
    checked = range(1, clean)
    start = clock()
    leaves_alone(window, s, counter, clean=clean, plain=plain, total=total, checked=checked)
    out[GOV_RULES] = clock() - start
    out[GOV_PROBE] = walk + out[GOV_RULES]
    return out


def governor_fn(
    replay: Replay,
    window: int,
    *,
    immutable: bool = True,
    compaction: CompactionPolicy | None = SPEED_POLICY,
) -> StepFn:
    """A Governor's step; by default with the promise the replay keeps (it never edits a
    message in place), ``immutable=False`` for the default Governor; ``compaction=None``
    for the cache policy as the replay's model gets it (see SPEED_POLICY)."""
    gov = Governor(
        profile="openai",
        model=replay.model,
        context_window=window,
        max_output=MAX_OUTPUT,
        tools=replay.tools,
        immutable_messages=immutable,
        compaction=compaction,
    )
    return gov.govern


def priced_governor_fn(replay: Replay, window: int) -> StepFn:
    """The Governor (with the promise) under the cache policy the replay's model gets."""
    return governor_fn(replay, window, compaction=None)


def default_governor_fn(replay: Replay, window: int) -> StepFn:
    """The Governor without the promise (deep comparison with its frozen copy)."""
    return governor_fn(replay, window, immutable=False)


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
            compaction=SPEED_POLICY,
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
    from langchain_core.messages import BaseMessage, convert_to_messages

    gc.collect()
    clock = time.perf_counter_ns
    state: list[BaseMessage] = []
    convert_ns: list[int] = []
    trim_ns: list[int] = []
    for step in replay.steps:
        start = clock()
        state.extend(convert_to_messages(step))
        mid = clock()
        trim(state, budget)
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


class NanobotProcess:
    """``bench/nanobot_side.py`` in the reference interpreter, serving one command a line.

    Its replays are asked for one at a time so that they can be interleaved with
    ours: load from other processes on the machine then slows both alike.
    """

    def __init__(
        self,
        python: Path,
        *,
        window: int,
        warmup: Replay,
        replays: Sequence[Replay],
        histories: Sequence[Replay],
    ) -> None:
        job = {
            "context_window": window,
            "max_output": MAX_OUTPUT,
            "warmup": warmup.to_json(),
            "replays": [r.to_json() for r in replays],
            "histories": [h.to_json() for h in histories],
        }
        self._tmp = tempfile.TemporaryDirectory(prefix="cg-bench-")
        path = Path(self._tmp.name) / "replays.json"
        path.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
        del job
        self._proc = subprocess.Popen(
            [str(python), str(NANOBOT_SIDE), str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # nanobot_side's progress goes straight to our stderr
            text=True,
            encoding="utf-8",
        )
        ready = self._read()
        self.python: str = ready["python"]
        self.version: str = ready["nanobot"]

    def _read(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            code = self._proc.wait()
            raise RuntimeError(f"bench/nanobot_side.py exited with {code}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"bench/nanobot_side.py: {answer['error']}")
        return answer

    def _ask(self, command: str) -> dict[str, Any]:
        assert self._proc.stdin is not None
        self._proc.stdin.write(command + "\n")
        self._proc.stdin.flush()
        return self._read()

    def replay(self, index: int) -> list[int]:
        steps: list[int] = self._ask(f"replay {index}")["steps_ns"]
        return steps

    def first_call(self, index: int) -> int:
        return int(self._ask(f"history {index}")["ns"])

    def peak(self, index: int) -> int:
        return int(self._ask(f"memory {index}")["peak_bytes"])

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._tmp.cleanup()

    def __enter__(self) -> NanobotProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ----------------------------------------------------------------------------- fresh process


def fresh_process_replay(
    steps: int, window: int, variant: int, *, immutable: bool = True
) -> dict[str, int]:
    """``python -m bench.fresh`` in a new interpreter (this one's, same sys.path): the
    replay as an agent process that has just started would govern it (with the promise,
    or the default Governor when ``immutable`` is False)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    extra = [] if immutable else ["default"]
    out = subprocess.run(
        [sys.executable, "-m", "bench.fresh", str(steps), str(window), str(variant), *extra],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=env,
    ).stdout
    answer: dict[str, int] = json.loads(out.strip().splitlines()[-1])
    return answer


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
    first_calls: list[first_call.FirstCall]  # per history size, the main one first
    memory: Memory | None
    machine: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    #: the replay governed in a fresh process, first call included (one dict per repeat)
    fresh: list[dict[str, int]] = field(default_factory=list)
    #: the same by the default Governor (no immutable_messages promise)
    fresh_default: list[dict[str, int]] = field(default_factory=list)


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


def trim(messages: list[Any], budget: int) -> list[Any]:
    """LangChain's trim_messages with the documented recipe for agents."""
    from langchain_core.messages import trim_messages

    return trim_messages(
        messages,
        max_tokens=budget,
        token_counter="approximate",
        strategy="last",
        include_system=True,
        start_on="human",
        end_on=("human", "tool"),
    )


def interleaved_repeat(
    replay: Replay,
    fresh: Replay,
    window: int,
    *,
    langchain: bool,
    other: Replay | None = None,
    priced: Replay | None = None,
) -> dict[str, list[int]]:
    """One repeat of every in-process contender, interleaved step by step.

    At each step every contender is timed once on its own history, one after the
    other, so that a burst of load elsewhere on the machine hits all of them alike.
    ``govern()`` runs on ``fresh`` (same session, other ids): the Governor's calls
    fill the process-wide token cache with ``replay``'s messages. The Governor without
    the promise runs on ``other`` (a third variant) for the same reason; its rows are left
    out when ``other`` is None.
    """
    budget = window - MAX_OUTPUT - 1024
    gov = governor_fn(replay, window)
    default = None if other is None else default_governor_fn(other, window)
    price_gov = None if priced is None else priced_governor_fn(priced, window)
    stateless = govern_fn(fresh, window)
    labels = [
        "Governor",
        GOV_BACKGROUND,
        GOV_TOTAL,
        *([GOV_DEFAULT] if default is not None else []),
        *([GOV_PRICED] if price_gov is not None else []),
        *(p for p in GOV_PARTS if default is not None or p != GOV_PREFIX),
        "govern()",
        TOKENIZE_NEW,
        "json.dumps (sent body)",
        "json.dumps (whole history)",
    ]
    # Its own counter: a cache of its own, so every new message is really tokenized.
    tokenizer = ExactCounter(counting_encoding(encoding_for_model(replay.model)))
    if langchain:
        from langchain_core.messages import BaseMessage, convert_to_messages

        labels += ["LangChain trim_messages", "LangChain conversion"]
        state: list[BaseMessage] = []
    out: dict[str, list[int]] = {label: [] for label in labels}
    history: list[Message] = []
    other_history: list[Message] = []
    default_history: list[Message] = []
    default_steps = other.steps if other is not None else [[] for _ in replay.steps]
    priced_steps = priced.steps if priced is not None else [[] for _ in replay.steps]
    priced_history: list[Message] = []
    clock = time.perf_counter_ns
    gc.collect()
    for step, fresh_step, default_step, priced_step in zip(
        replay.steps, fresh.steps, default_steps, priced_steps, strict=True
    ):
        parts = governor_parts(gov, history, step)
        if default is not None:
            parts.update(
                (k, v)
                for k, v in governor_parts(default, default_history, default_step).items()
                if k == GOV_PREFIX
            )
        history.extend(step)
        other_history.extend(fresh_step)
        worker = background_cpu_ns() + first_call_cpu_ns()
        start = clock()
        result = gov(history)
        critical = clock() - start
        # the model call: the worker counts the new messages meanwhile (a first call's
        # thread makes its exact run), and the caller reads the report (made from the
        # exact counts; CPU of this thread, not waiting)
        cpu = time.thread_time_ns()
        result.report  # noqa: B018
        threads = background_cpu_ns() + first_call_cpu_ns() - worker
        background = threads + time.thread_time_ns() - cpu
        out["Governor"].append(critical)
        out[GOV_BACKGROUND].append(background)
        out[GOV_TOTAL].append(critical + background)
        for label in GOV_PARTS:
            if label in out and label != GOV_REST:
                out[label].append(parts.get(label, 0))
        # what the parts above leave of this step (0 when it did not take the appending
        # path: then the parts were not measured)
        measured = parts.get(GOV_IDENTITY, 0) + parts.get(GOV_PROBE, 0)
        out[GOV_REST].append(max(0, critical - measured) if parts else 0)
        if default is not None:
            default_history.extend(default_step)
            start = clock()
            default_result = default(default_history)
            out[GOV_DEFAULT].append(clock() - start)
            default_result.report  # noqa: B018 - after the call, as for the Governor above
        if price_gov is not None:
            priced_history.extend(priced_step)
            start = clock()
            priced_result = price_gov(priced_history)
            out[GOV_PRICED].append(clock() - start)
            priced_result.report  # noqa: B018 - after the call, as for the Governor above
        start = clock()
        stateless(other_history)
        out["govern()"].append(clock() - start)
        start = clock()
        for message in step:
            tokenizer.message_tokens(message)
        out[TOKENIZE_NEW].append(clock() - start)
        sent = body(replay, result.messages)
        start = clock()
        json.dumps(sent)
        out["json.dumps (sent body)"].append(clock() - start)
        whole = body(replay, history)
        start = clock()
        json.dumps(whole)
        out["json.dumps (whole history)"].append(clock() - start)
        if langchain:
            start = clock()
            state.extend(convert_to_messages(step))
            mid = clock()
            trim(state, budget)
            end = clock()
            out["LangChain conversion"].append(mid - start)
            out["LangChain trim_messages"].append(end - mid)
    return out


def machine_info() -> dict[str, Any]:
    return {
        "source": source_info(),
        "load": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(terse=True),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def measure_memories(
    steps: int,
    window: int,
    series: dict[str, Series],
    replay: Replay,
    budget: int,
    langchain: bool,
    nano: NanobotProcess | None,
) -> Memory:
    """The memory part of run_speed, run after the timings (tracemalloc slows what it
    watches): the Governor's memory and each contender's peak, put in ``series``;
    ``replay`` is the session LangChain trims to ``budget``."""
    progress("memory: Governor (tracemalloc, a fresh variant)")
    mem = measure_memory(governor_fn, coding_session(steps, variant=50), window)
    series["Governor"].peak_bytes = mem.peak_bytes
    progress("memory: govern() peak")
    g_replay = coding_session(steps, variant=51)
    g_fn = govern_fn(g_replay, window)
    series["govern()"].peak_bytes = measure_peak(lambda: time_replay(g_fn, g_replay))
    if langchain:
        progress("memory: LangChain peak")
        series["LangChain trim_messages"].peak_bytes = measure_peak(
            lambda: time_langchain(replay, budget)
        )
    if nano is not None:
        progress("memory: Nanobot 0.2.2 peak")
        series["Nanobot 0.2.2"].peak_bytes = nano.peak(0)
    return mem


def run_speed(
    *,
    steps: int = 300,
    window: int = 128_000,
    repeats: int = 3,
    history_messages: int = 10_000,
    nanobot: bool = True,
    langchain: bool = True,
    memory: bool = True,
    more_histories: Sequence[int] = (),
    more_repeats: int = 1,
) -> SpeedResult:
    """The whole speed benchmark; progress on stderr."""
    from .sessions import describe

    machine = machine_info()
    budget = window - MAX_OUTPUT - 1024
    replays = [coding_session(steps, variant=r) for r in range(repeats)]
    warmup = coding_session(min(steps, 30), seed=SEED + 1)
    # the main size's histories, as first_call.measure makes them (Nanobot gets them too)
    histories = [long_history(history_messages, variant=100 + r) for r in range(repeats)]
    notes: list[str] = []
    use_langchain = langchain and langchain_available()
    if langchain and not use_langchain:
        notes.append("langchain-core is not installed (pip install -e '.[bench]'): skipped")
    python = ref_python() if nanobot else None
    if nanobot and python is None:
        notes.append("nanobot reference environment (.venv-ref) not found: Nanobot skipped")

    nano: NanobotProcess | None = None
    if python is not None:
        progress("starting Nanobot 0.2.2 in its own environment (import and warm-up)")
        nano = NanobotProcess(
            python, window=window, warmup=warmup, replays=replays, histories=histories
        )
        if nano.python != platform.python_version():
            notes.append(f"Nanobot ran on Python {nano.python}")
    try:
        progress("warm-up (a different session: loads encodings and code paths)")
        other_warmup = coding_session(len(warmup.steps), seed=SEED + 2)
        default_warmup = coding_session(len(warmup.steps), seed=SEED + 3)
        priced_warmup = coding_session(len(warmup.steps), seed=SEED + 4)
        interleaved_repeat(
            warmup,
            other_warmup,
            window,
            langchain=use_langchain,
            other=default_warmup,
            priced=priced_warmup,
        )
        series: dict[str, Series] = {}
        for r, replay in enumerate(replays):
            progress(f"repeat {r + 1}/{repeats}: Governor, govern(), json.dumps, LangChain")
            fresh = coding_session(steps, variant=repeats + r)
            default = coding_session(steps, variant=2 * repeats + r)
            priced = coding_session(steps, variant=3 * repeats + r)
            for label, times in interleaved_repeat(
                replay, fresh, window, langchain=use_langchain, other=default, priced=priced
            ).items():
                series.setdefault(label, Series(label)).runs.append(times)
            del fresh, default, priced
            if nano is not None:
                progress(f"repeat {r + 1}/{repeats}: Nanobot 0.2.2")
                series.setdefault("Nanobot 0.2.2", Series("Nanobot 0.2.2")).runs.append(
                    nano.replay(r)
                )

        progress("fresh processes: the replay with the first call included, nothing warmed up")
        fresh_runs = [fresh_process_replay(steps, window, 700 + r) for r in range(repeats)]
        fresh_default = [
            fresh_process_replay(steps, window, 700 + r, immutable=False) for r in range(repeats)
        ]

        def others(r: int, history: Replay, result: first_call.FirstCall) -> None:
            """LangChain and Nanobot on the main size's history (not a cold variant: no
            cache of ours matters to them)."""
            times = result.times
            if use_langchain:
                from langchain_core.messages import convert_to_messages

                gc.collect()
                start = time.perf_counter_ns()
                converted = convert_to_messages(history.messages)
                mid = time.perf_counter_ns()
                trim(converted, budget)
                end = time.perf_counter_ns()
                times.setdefault("LangChain conversion", []).append(mid - start)
                times.setdefault("LangChain trim_messages", []).append(end - mid)
                del converted
            if nano is not None:
                times.setdefault("Nanobot 0.2.2", []).append(nano.first_call(r))

        contenders = {"Governor": governor_fn, "govern()": govern_fn}
        first_calls = [
            first_call.measure(
                history_messages, repeats, window, contenders, others, progress=progress
            )
        ]
        for size in more_histories:
            first_calls.append(
                first_call.measure(
                    size,
                    more_repeats,
                    window,
                    {"Governor": governor_fn},
                    progress=progress,
                )
            )

        mem: Memory | None = None
        if memory:
            mem = measure_memories(steps, window, series, replays[0], budget, use_langchain, nano)
    finally:
        if nano is not None:
            nano.close()

    machine["load_end"] = machine_info()["load"]
    return SpeedResult(
        steps=steps,
        window=window,
        repeats=repeats,
        session=describe(replays[0]),
        series=series,
        first_calls=first_calls,
        memory=mem,
        machine=machine,
        notes=notes,
        fresh=fresh_runs,
        fresh_default=fresh_default,
    )
