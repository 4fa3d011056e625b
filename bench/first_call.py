"""The first call on a long history nobody has governed before (a cold token cache).

Issue 15's target: a first call on 10,000 and on 100,000 messages costs at most 5x one
``json.dumps`` of the history's request body. Measured per size, in the same run:

* ``Governor``: a fresh Governor (profile openai, gpt-4o, the default cache policy) on a
  history variant of its own, so no count of it is in the process-wide memo; the
  counting worker processes (counting/pool.py, as many as the default gives: one fewer
  than the cores) are ended before, so the call starts them, as a fresh process would;
* the same with the workers already running (a proxy that counted a big history
  before), and with none (``CONTEXT_GOVERNOR_COUNT_WORKERS=0``, counting on this core);
* ``govern()``: the stateless function, same settings, another variant;
* ``json.dumps`` of ``{model, messages, tools}``: the yardstick;
* what stands in the way: exact tokens of every message alone (the memoised o200k
  counter, as the Governor counts: payload, digest, count), the same work split over 2
  threads and over 2 processes (``os.fork``: the children inherit the loaded encoding and
  the texts, and send back only the counts), and what is left of the Governor's time
  once counting is taken away (a fresh Governor on the same history, its counter's memo
  filled beforehand);
* ``Governor, a resumed session``: what issue 15's long history is in practice, an agent
  or proxy restarted (or another replica) on a session governed before: a fresh Governor
  whose counter's memo is empty, with a SQLite count store (counting/store.py) that another
  Governor (a counter of its own) filled by governing the same history. Its own verdict
  against the same 5x goal; the cold rows keep theirs.

Why exact counts of every message: the default (cache) policy replays every request of
the history (one per assistant message) with its hysteresis, and each request's total
(compared with the trigger, the target and the minimum savings) sums the exact counts of
every message still in it. Every message is in the request of the next compaction, so
each count takes part in a decision; a bound (UTF-8 bytes, several times the count,
measured as ``bytes_per_token``) cannot stand in for it. See docs/benchmarks.md,
*First call on a long history*.
"""

from __future__ import annotations

import array
import gc
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from context_governor.counting import (
    BULK_CHARS,
    ExactCounter,
    chunked_count,
    counting_encoding,
    encoding_for_model,
    seed_message_payload,
)
from context_governor.counting import pool as count_pool
from context_governor.counting.store import count_link, flush

from .fmt import ms, ratio
from .sessions import Message, Replay, long_history

GOVERNOR = "Governor"
GOVERN = "govern()"
DUMPS = "json.dumps (whole history)"
TOKENIZE_ALL = "exact tokens of every message (o200k)"
THREADS = "exact tokens of every message, 2 threads"
PROCESSES = "exact tokens of every message, 2 processes (fork)"
REST = "Governor, every count already in the memo"
WARM = "Governor, count workers already running (a process that counted a big history before)"
ALONE = "Governor, counting in this process only (CONTEXT_GOVERNOR_COUNT_WORKERS=0)"
RESUMED = "Governor, a resumed session (counts in a SQLite store, empty memo)"
#: Issue 15's goal for both sizes.
FIRST_CALL_VS_DUMPS = 5.0
#: Contender rows that are not the Governor's total: what its time is made of.
BREAKDOWN = (TOKENIZE_ALL, THREADS, PROCESSES, REST, WARM, ALONE)


@dataclass(slots=True)
class FirstCall:
    """One history size: ns per repeat for each row."""

    messages: int
    json_bytes: int
    repeats: int
    times: dict[str, list[int]] = field(default_factory=dict)
    #: UTF-8 bytes of the counted payloads per exact token (how loose the byte bound is)
    bytes_per_token: float = 0.0

    def median(self, label: str) -> float:
        return float(statistics.median(self.times[label]))

    def ratio(self, label: str) -> float:
        return self.median(label) / self.median(DUMPS)


def _counter(model: str) -> ExactCounter:
    """A counter of its own (an empty memo): every message is really tokenized."""
    return ExactCounter(counting_encoding(encoding_for_model(model)))


def _count_all(model: str, messages: Sequence[Message]) -> list[int]:
    counter = _counter(model)
    return [counter.message_tokens(m) for m in messages]


def _forget_texts(model: str) -> None:
    """Empty the process-wide memo of long texts' counts (counting/_chunks.py: every text
    of 1,024 characters or more, by digest) that the shared encoding keeps across
    counters: a counting row timed after another on the same history would otherwise
    read most counts back instead of making them."""
    encoding = counting_encoding(encoding_for_model(model))
    chunked = None if encoding is None else chunked_count(encoding)
    if chunked is not None:
        chunked.clear()


def _threads(model: str, messages: Sequence[Message], n: int = 2) -> list[int]:
    """Counts of ``messages`` split over ``n`` threads (each with its own counter)."""
    chunks = _split(messages, n)
    out: list[list[int]] = [[] for _ in chunks]

    def work(k: int) -> None:
        out[k] = _count_all(model, chunks[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, len(chunks))]
    for thread in threads:
        thread.start()
    work(0)
    for thread in threads:
        thread.join()
    return [c for part in out for c in part]


def _forked(model: str, messages: Sequence[Message], n: int = 2) -> list[int]:
    """Counts of ``messages`` split over this process and ``n - 1`` forked children.
    Only the counts cross a pipe (the children inherit the texts and the encoding)."""
    chunks = _split(messages, n)
    children: list[tuple[int, int]] = []
    for chunk in chunks[1:]:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: count, send, leave without running any cleanup
            os.close(read)
            try:
                data = array.array("q", _count_all(model, chunk)).tobytes()
                with os.fdopen(write, "wb") as sink:
                    sink.write(data)
            finally:
                os._exit(0)
        os.close(write)
        children.append((pid, read))
    counts = _count_all(model, chunks[0])
    for pid, read in children:
        with os.fdopen(read, "rb") as source:
            counts.extend(array.array("q", source.read()).tolist())
        os.waitpid(pid, 0)
    return counts


def _split(messages: Sequence[Message], n: int) -> list[Sequence[Message]]:
    size = -(-len(messages) // n)
    return [messages[k * size : (k + 1) * size] for k in range(n)]


def _timed(run: Callable[[], Any]) -> tuple[int, Any]:
    gc.collect()  # the generator's garbage is not billed to the contender
    start = time.perf_counter_ns()
    result = run()
    return time.perf_counter_ns() - start, result


def body(replay: Replay) -> dict[str, Any]:
    return {"model": replay.model, "messages": replay.messages, "tools": replay.tools}


def _with_counts_known(
    factory: Callable[[Replay, int], Callable[[list[Message]], Any]], cold: Replay, window: int
) -> int:
    """ns of a fresh Governor on ``cold`` whose counter's memo already holds every count
    (a memo of its own, big enough for the whole history): what is left of the first
    call once counting is taken away (the memo's digests and look-ups stay in)."""
    counter = ExactCounter(
        counting_encoding(encoding_for_model(cold.model)), cache_size=4 * len(cold.messages)
    )
    for message in cold.messages:
        counter.message_tokens(message)
    fn = factory(cold, window)
    owner = getattr(fn, "__self__", None)  # the Governor of a bound .govern
    if owner is None:
        raise TypeError("the Governor contender must be a Governor's bound govern method")
    owner.settings = replace(owner.settings, counter=counter)
    return _timed(lambda: fn(cold.messages))[0]


def _resumed(
    factory: Callable[[Replay, int], Callable[[list[Message]], Any]], cold: Replay, window: int
) -> int:
    """ns of a fresh Governor (a counter with an empty memo) on ``cold`` with a SQLite count
    store that another Governor, with a counter of its own, filled by governing ``cold``
    (its write-back finished before the timing): a resumed session. The store's file is
    opened within the timed call, as a restarted process opens it."""
    folder = tempfile.mkdtemp(prefix="cg-count-store-")
    url = "sqlite:///" + os.path.join(folder, "counts.db")
    try:
        for timed in (False, True):
            counter = ExactCounter(counting_encoding(encoding_for_model(cold.model)))
            fn = factory(cold, window)
            owner = getattr(fn, "__self__", None)
            if owner is None:
                raise TypeError("the Governor contender must be a Governor's bound govern method")
            link = count_link(url)
            owner.settings = replace(owner.settings, counter=counter, count_store=link)
            owner._store = link
            owner._tools_counted = None
            if timed:
                return _timed(lambda fn=fn: fn(cold.messages))[0]  # type: ignore[misc]
            fn(cold.messages).report  # noqa: B018 - made now (the write-back with it)
            if not flush(60.0):
                raise RuntimeError("the count store's write-back did not finish")
        raise AssertionError("unreachable")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pooled(
    factory: Callable[[Replay, int], Callable[[list[Message]], Any]],
    cold: Replay,
    window: int,
    row: str,
) -> int:
    """ns of a fresh Governor on ``cold`` with the counting workers started beforehand
    (``WARM``), or with none (``ALONE``)."""
    fn = factory(cold, window)
    if row == ALONE:
        count_pool.set_workers(0)
        try:
            return _timed(lambda: fn(cold.messages))[0]
        finally:
            count_pool.set_workers(None)
    count_pool.prepare(_counter(cold.model))
    return _timed(lambda: fn(cold.messages))[0]


def _yardsticks(history: Replay, result: FirstCall) -> None:
    """json.dumps of ``history``'s body, and its exact counting: serial, 2 threads, 2
    processes (the parallel counts are checked against the serial ones)."""
    times = result.times
    payload = body(history)
    times.setdefault(DUMPS, []).append(_timed(lambda: json.dumps(payload))[0])
    model, messages = history.model, history.messages
    _forget_texts(model)
    serial_ns, serial = _timed(lambda: _count_all(model, messages))
    size = sum(len(seed_message_payload(m).encode("utf-8", "surrogatepass")) for m in messages)
    result.bytes_per_token = size / max(1, sum(serial))
    times.setdefault(TOKENIZE_ALL, []).append(serial_ns)
    for label, split in ((THREADS, _threads), (PROCESSES, _forked)):
        _forget_texts(model)
        ns, counts = _timed(lambda split=split: split(model, messages))  # type: ignore[misc]
        if counts != serial:
            raise AssertionError(f"{label}: counts differ from the serial counts")
        times.setdefault(label, []).append(ns)


def measure(
    size: int,
    repeats: int,
    window: int,
    make: Mapping[str, Callable[[Replay, int], Callable[[list[Message]], Any]]],
    extra: Callable[[int, Replay, FirstCall], None] | None = None,
    progress: Callable[[str], None] = lambda text: None,
) -> FirstCall:
    """Each repeat: every contender of ``make`` on a cold variant of its own, json.dumps,
    the counting rows, then ``extra(repeat, history, result)`` (other contenders)."""
    histories = [long_history(size, variant=100 + r) for r in range(repeats)]
    result = FirstCall(size, len(json.dumps(body(histories[0])).encode()), repeats)
    times = result.times
    for r, history in enumerate(histories):
        progress(f"first call, {size:,} messages, repeat {r + 1}/{repeats}")
        for offset, (label, factory) in enumerate(make.items()):
            cold = long_history(size, variant=200 + 100 * offset + r)
            fn = factory(cold, window)
            if label == GOVERNOR:
                count_pool.close()  # the call starts its workers, as in a fresh process
            ns, _ = _timed(lambda fn=fn, cold=cold: fn(cold.messages))  # type: ignore[misc]
            times.setdefault(label, []).append(ns)
            if label == GOVERNOR:
                times.setdefault(REST, []).append(_with_counts_known(factory, cold, window))
                times.setdefault(RESUMED, []).append(_resumed(factory, cold, window))
                for row, variant in ((WARM, 700), (ALONE, 800)):
                    other = long_history(size, variant=variant + r)
                    times.setdefault(row, []).append(_pooled(factory, other, window, row))
                    del other
            del cold, fn
        _yardsticks(history, result)
        if extra is not None:
            extra(r, history, result)
    return result


def render_table(results: Sequence[FirstCall]) -> str:
    """One row per contender, two columns (time, vs json.dumps) per history size."""
    labels: list[str] = []
    for result in results:
        labels += [label for label in result.times if label not in labels]
    header = ["contender"]
    for result in results:
        header += [
            f"{result.messages:,} messages (median of {result.repeats})",
            "vs json.dumps",
        ]
    rows = []
    for label in labels:
        row = [label]
        for result in results:
            if label in result.times:
                row += [ms(result.median(label)), ratio(result.ratio(label))]
            else:
                row += ["–", "–"]
        rows.append(row)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    sizes = ", ".join(
        f"{r.messages:,} messages: {r.json_bytes / 1e6:.1f} MB of request JSON" for r in results
    )
    return f"Histories ({sizes}) generated by bench/sessions.py's `long_history`.\n\n" + "\n".join(
        lines
    )


def target_rows(results: Sequence[FirstCall]) -> list[tuple[str, str, str, bool]]:
    """(target, goal, measured, met) per size."""
    out = []
    for result in results:
        governor = result.ratio(GOVERNOR)
        pool = ""
        if WARM in result.times and ALONE in result.times:
            pool = (
                f"with {count_pool.workers()} counting worker process(es) already running: "
                f"{ratio(result.ratio(WARM))}, with none: {ratio(result.ratio(ALONE))}; "
            )
        measured = (
            f"{ratio(governor)} ({ms(result.median(GOVERNOR))} vs {ms(result.median(DUMPS))}); "
            + pool
            + f"exact tokens of every message alone: {ratio(result.ratio(TOKENIZE_ALL))}, "
            f"over 2 processes: {ratio(result.ratio(PROCESSES))}; "
            f"the Governor with every count known: {ratio(result.ratio(REST))}"
        )
        out.append(
            (
                f"first call on a {result.messages:,}-message history",
                f"≤ {FIRST_CALL_VS_DUMPS:.0f}× json.dumps of it",
                measured,
                governor <= FIRST_CALL_VS_DUMPS,
            )
        )
        if RESUMED in result.times:
            resumed = result.ratio(RESUMED)
            out.append(
                (
                    f"first call on a {result.messages:,}-message history, resumed "
                    "(its counts in a SQLite count store, an empty memo)",
                    f"≤ {FIRST_CALL_VS_DUMPS:.0f}× json.dumps of it",
                    f"{ratio(resumed)} ({ms(result.median(RESUMED))} vs "
                    f"{ms(result.median(DUMPS))})",
                    resumed <= FIRST_CALL_VS_DUMPS,
                )
            )
    return out


def why(results: Sequence[FirstCall]) -> str:
    """What stands in the way, with this run's figures."""
    ratios = "; ".join(
        f"{r.messages:,} messages: {r.bytes_per_token:.1f} UTF-8 bytes per token" for r in results
    )
    return (
        "What stands in the way, measured above. The default (cache) policy replays every "
        "request of the history: its decisions (over the trigger? how far to cut? enough "
        "savings?) sum the exact counts of every message in each request, and every message "
        "is in the request of the next compaction, so no count can be replaced by a bound "
        f"(UTF-8 bytes, an upper bound, are several times the count: {ratios}). Counting "
        "every message exactly is then the floor, and alone it costs more than the goal on "
        "one core. A call whose texts left to count reach "
        f"{BULK_CHARS / 1e6:.0f} million characters loads the bulk counter (quicktok, "
        "about five times rs-bpe's speed, the same counts) and counts with it from then on "
        "(the 100,000-message rows: the load, about half a second, is in the Governor's "
        "cold row); below that a fresh process counts with rs-bpe, which holds the GIL "
        "while it counts, so threads cannot help; processes can, and the Governor uses "
        "them: a call with over "
        f"{count_pool.MIN_CHARS / 1e6:.0f} million characters left to count hands chunks of "
        "them to counting worker processes (one fewer than the cores; "
        "`CONTEXT_GOVERNOR_COUNT_WORKERS`), which it starts on first need and keeps. On "
        "two cores that can at best halve the counting, and only when the second core is "
        "free; the main process also builds each text and its digest, and a worker that "
        "is starting counts nothing (the rows above are what they gave in this run). "
        "Everything else the Governor does (input checks and repairs, the replay with the "
        "receipt of every cut, which reads each message a cut removes, pairing, copies, "
        "the memo's digests) is the row with every count known. "
        "A long history in a fresh process is, in practice, a resumed "
        "session (an agent or proxy restarted, another replica): with a count store "
        "(`count_store=`, the proxy's `--count-store`, `count-store` in `run`'s config file) "
        "its counts, made before, are read back instead of made again (the digests of "
        "8,192 messages at a time, each batch looked up in one query by a reader thread "
        "while the next is made); the resumed-session row is that first call, its store "
        "filled by another Governor governing the same history: it costs about the row "
        "with every count known (which makes the same digests, to find its counts in the "
        "memo) plus the look-ups; the texts the replay makes (its placeholders and notes) "
        "are tokenized in both. On a shared 2-core machine the ratios move between "
        "sittings (json.dumps of the same 100,000-message history took 752-1,404 ms in "
        "runs of 2026-12-05 and -06): a row near 5x passes in one sitting and misses in "
        "the next; `python -m bench.run --first-call-only --history-repeats 3` measures "
        "three repeats at every size."
    )


HEADING = "### First call on a long history"


def section(results: Sequence[FirstCall], provenance: str = "") -> str:
    """The first-call subsection of docs/benchmarks.md's *Speed* section; ``provenance``
    says where its figures come from when they are not from the run of the page."""
    head = [HEADING, "", provenance, ""] if provenance else [HEADING, ""]
    return "\n".join([*head, render_table(results), "", why(results)])


def target_lines(results: Sequence[FirstCall]) -> list[str]:
    """The first-call rows of the Targets table, as bench/run.py renders that table."""
    return [
        f"| {name} | {goal} | {measured} | **{'PASS' if ok else 'MISS'}** |"
        for name, goal, measured, ok in target_rows(results)
    ]


def splice(text: str, results: Sequence[FirstCall], provenance: str = "") -> str:
    """``text`` (docs/benchmarks.md) with its first-call target rows and its first-call
    subsection replaced by those of ``results`` (the rest, measured by other runs, is
    left as it is). ValueError if ``text`` has neither."""
    lines = text.split("\n")
    rows = [i for i, line in enumerate(lines) if line.startswith("| first call on a ")]
    start = next(
        (i for i, line in enumerate(lines) if line.startswith("### First call on a")), None
    )
    if not rows or start is None:
        raise ValueError("no first-call targets or section to replace")
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].startswith(("### ", "## "))),
        len(lines),
    )
    lines[start:end] = [*section(results, provenance).split("\n"), ""]
    lines[rows[0] : rows[-1] + 1] = target_lines(results)
    return "\n".join(lines)
