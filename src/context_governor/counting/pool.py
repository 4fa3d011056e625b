"""Exact counting spread over the machine's other cores, for first calls on big histories.

A first call on a history nobody counted before tokenizes every message, and exact
counting is most of that call's time: rs-bpe holds the GIL while it counts, so threads
cannot share the work, and on 10,000 messages (19 MB of JSON) counting alone takes
several times what ``json.dumps`` of the history does. ``precount`` splits the texts a
call has not counted yet into chunks that this thread and worker processes take from
the two ends of one queue, and hands the counts to the call (and to the counter's memo)
before its pipeline runs. Decisions cannot change: each worker counts with the very
encoding and rules this process counts with (``runs.bounded_tokens`` over
``encodings.counting_encoding``), and a worker is used only after it gave this process's
counts for a probe set of texts (code, CJK, emoji, lone surrogates, special-token text,
a run long enough to be bounded).

When it applies: the call's counter is an exact counter on a shared encoding (not a
``count_tokens`` hook, nor the chars/4 estimate), the string contents not yet counted add
up to ``MIN_CHARS`` characters or more, and workers are allowed (``workers``: one fewer than
the cores this process may run on, at most ``MAX_WORKERS``; ``CONTEXT_GOVERNOR_COUNT_WORKERS``
or ``set_workers`` overrides it, 0 turns it off). Below that size one core counts
faster than a worker starts.

Workers are plain child processes (counting/_worker.py's ``main``, run without the
package's ``__init__``: see ``_boot``; no ``multiprocessing``, so a user's script is never
imported again in a child), started
on the first call that needs them, by the thread that feeds them: the calling thread
starts counting at once and never waits for a start. They stay up for later calls,
count nothing between them, and end when this process ends (their input closes). A
worker that fails or answers wrongly is dropped; any chunk it did not return is counted
here. Nothing here can fail a call: on any error the call counts as it would without.
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from queue import SimpleQueue

from ..messages import Message
from ._counters import PER_MESSAGE_OVERHEAD, ExactCounter, Known, TokenCounter, pending
from ._encodings import BULK_CHARS, FAST_PROBE, bulk_counting, chunked_count, counting_encoding

__all__ = [
    "CHUNK_CHARS",
    "IN_FLIGHT",
    "MAX_WORKERS",
    "MIN_CHARS",
    "PROBES",
    "WAIT_IN_FLIGHT",
    "WORKERS_ENV",
    "close",
    "count_texts",
    "precount",
    "prepare",
    "rough_chars",
    "set_workers",
    "started",
    "workers",
]

#: The environment variable that sets the number of worker processes (0: off).
WORKERS_ENV = "CONTEXT_GOVERNOR_COUNT_WORKERS"
#: The most workers used by default, whatever the cores.
MAX_WORKERS = 4
#: Characters of uncounted text below which a call counts alone (at ~25 MB/s per core,
#: about 0.15 s of counting; a worker takes about as long to start).
MIN_CHARS = 4_000_000
#: Characters per chunk: small enough that the last chunks in flight end soon after
#: this thread's, large enough that the pipe's round trips are a small share.
CHUNK_CHARS = 512 * 1024
#: Seconds this thread waits for the chunks workers are counting once it ran out of its
#: own; then it counts what is still out itself (the counts are the same).
WAIT_IN_FLIGHT = 5.0
#: Chunks a worker holds at once: the next one waits in its pipe while it counts.
IN_FLIGHT = 3
#: Texts a worker must count as this process does before it is used.
PROBES: tuple[str, ...] = (
    FAST_PROBE,  # code, CJK, emoji, accents, CR LF, a contraction, special-token text
    "<|endofprompt|><|fim_prefix|>",
    "lone \ud800 surrogate and a pair \ud83d\ude42 end",
    '{"path": "src/a.py", "lines": [1, 2, 3], "ok": true}' * 40,
    "a" * 1500 + " tail " + " " * 1200 + "x",
    "",
)

_LENGTH = 8
_override: list[int | None] = [None]


def set_workers(n: int | None) -> None:
    """Use ``n`` worker processes from now on (0: count in this process only); None goes
    back to the environment variable or the default."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise ValueError(f"workers must be a non-negative integer or None, got {n!r}")
    _override[0] = n


def workers() -> int:
    """How many worker processes a big first call may use (see the module docstring)."""
    if _override[0] is not None:
        return _override[0]
    value = os.environ.get(WORKERS_ENV, "").strip()
    if value:
        try:
            return max(0, int(value))
        except ValueError:
            return 0  # an unreadable setting turns it off rather than failing a call
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(0, min(cores - 1, MAX_WORKERS))


def rough_chars(messages: Sequence[Message], known: Known) -> int:
    """The characters of the string contents of ``messages`` not in ``known``: a cheap
    lower estimate of what is left to count (no payload is built). Every call asks it,
    so it is one comprehension (about 0.1 µs a message)."""
    if not known:
        return sum([len(c) for m in messages if type(c := m.get("content")) is str])
    return sum(
        [len(c) for m in messages if id(m) not in known and type(c := m.get("content")) is str]
    )


def precount(
    counter: TokenCounter,
    messages: Sequence[Message],
    known: Known,
    min_chars: int | None = None,
) -> int:
    """Count the messages of a big call not in ``known`` over worker processes and add
    their counts to ``known`` (by message identity, as ``counters.KnownCounts`` takes
    them) and to the counter's memo, when what is left is ``min_chars`` (default
    ``MIN_CHARS``) or more. Where the texts the memo lacks add up to ``BULK_CHARS`` or
    more, the bulk counter is loaded first (encodings.bulk_counting), with or without
    workers; where the call looks that big from the start (``rough_chars``), its workers
    are asked to load theirs as soon as they are up, while this process builds the texts
    (100,000 messages: the workers count half the texts instead of a quarter, the
    counting 1.1-1.2 s -> 0.8 s). Returns how many texts workers counted (0 when it did
    not apply, or no worker could be used: the call then counts as it would have)."""
    if not isinstance(counter, ExactCounter):
        return 0
    n = workers()
    least = MIN_CHARS if min_chars is None else min_chars
    try:
        rough = rough_chars(messages, known)
        if rough < (least if n > 0 else BULK_CHARS):
            return 0
        spec = counter.shared_encoding()
        if spec is None:
            return 0
        name, count = spec
        # workers start meanwhile; for a call big enough for the bulk counter they load it
        job = _Job(name, count, n if rough >= least else 0, bulk=rough >= BULK_CHARS)
    except Exception:  # never fail a call: it counts what is left itself
        return 0
    try:
        wanted = pending(counter, messages, known)
        if sum(map(len, wanted.texts)) >= BULK_CHARS:
            bulk_counting(name)  # the shared encoding's count: ``count`` counts with it
        counts, by_workers = job.run(wanted.texts)
    except Exception:  # never fail a call: it counts what is left itself
        job.cancel()
        return 0
    counter.remember(zip(wanted.keys, counts, strict=True))
    totals = [max(4, made + PER_MESSAGE_OVERHEAD) for made in counts]
    known.add_all(wanted.messages, [totals[i] for i in wanted.at])
    return by_workers


def count_texts(
    name: str, count: Callable[[str], int], texts: Sequence[str], n: int
) -> tuple[list[int], int]:
    """``[count(t) for t in texts]``, with up to ``n`` workers counting with encoding
    ``name`` taking chunks from the front while this thread takes them from the back;
    also how many texts the workers counted."""
    return _Job(name, count, n).run(texts)


class _Job:
    """One call's counting: its workers are taken (and started, by their feeders) when it
    is made, and fed once ``run`` has the texts, so that a start overlaps the caller's
    work in between (building each text and its digest)."""

    def __init__(
        self, name: str, count: Callable[[str], int], n: int, bulk: bool = False
    ) -> None:
        self.count = count
        #: the call will count with the bulk counter: its workers load theirs at once
        self.bulk = bulk
        self.chunks: list[list[str]] = []
        self.queue: deque[int] = deque()
        self.results: dict[int, list[int]] = {}
        self.in_flight: dict[int, threading.Event] = {}
        self.go = threading.Event()
        self.workers = [w for w in (_pool.acquire(name) for _ in range(n)) if w is not None]
        for worker in self.workers:
            threading.Thread(
                target=_feed, args=(worker, self), name="context-governor-count-feed", daemon=True
            ).start()

    def cancel(self) -> None:
        """Let the workers go without work (the call needs none)."""
        self.go.set()

    def run(self, texts: Sequence[str]) -> tuple[list[int], int]:
        """The counts of ``texts`` and how many of them workers counted."""
        chunks = _chunks(texts)
        if len(chunks) < 2 or not self.workers:
            self.cancel()
            return [self.count(t) for t in texts], 0
        self.chunks = chunks
        self.queue.extend(range(len(chunks)))
        with _quick_turns():
            self.go.set()
            count, results = self.count, self.results
            mine = 0
            while True:
                try:
                    i = self.queue.pop()
                except IndexError:
                    break
                results[i] = [count(t) for t in chunks[i]]
                mine += len(chunks[i])
            deadline = time.monotonic() + WAIT_IN_FLIGHT
            for i, done in list(self.in_flight.items()):
                if i not in results:
                    done.wait(max(0.0, deadline - time.monotonic()))
        out: list[int] = []
        for i, chunk in enumerate(chunks):
            got = results.get(i)
            if got is None:  # a worker failed or is slow: count it here
                got = [count(t) for t in chunk]
                mine += len(chunk)
            out.extend(got)
        return out, len(texts) - mine


#: The interpreter's switch interval while a job feeds workers (seconds; see _quick_turns).
SWITCH_INTERVAL = 0.0002
_turns_lock = threading.Lock()
_turns: list[float | int] = [0, 0.0]  # jobs feeding now, the interval before the first


@contextlib.contextmanager
def _quick_turns() -> Iterator[None]:
    """A shorter switch interval while workers are fed. This thread counts holding the
    GIL (rs-bpe does), and the threads that feed the workers and read their answers
    need it for a moment per chunk: at the default 5 ms they waited their turn so long
    that a worker counting several times faster than this thread took a quarter of the
    chunks or less (measured: 0.3-0.6 s for 10,000 messages' texts, against 0.2 s with
    0.2 ms). Put back when the last such job ends."""
    with _turns_lock:
        if _turns[0] == 0:
            _turns[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(_turns[1], SWITCH_INTERVAL))
        _turns[0] += 1
    try:
        yield
    finally:
        with _turns_lock:
            _turns[0] -= 1
            if _turns[0] == 0:
                sys.setswitchinterval(_turns[1])


def _chunks(texts: Sequence[str]) -> list[list[str]]:
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for text in texts:
        current.append(text)
        size += len(text)
        if size >= CHUNK_CHARS:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks


def _feed(worker: _Worker, job: _Job) -> None:
    """Start ``worker`` if need be, wait for ``job``'s texts, then keep ``IN_FLIGHT``
    chunks from the front of its queue in the worker's pipe until none is left, the
    answers read by a second thread (so the worker never waits for this process to
    take its turn at the GIL). A failure drops the worker; the job counts whatever it
    did not return."""
    if not worker.ready(job.count):
        _pool.release(worker)
        return
    if job.bulk and not job.go.is_set():
        try:  # loaded while this process builds the texts, not after its first chunk
            worker.load_bulk()
        except Exception:
            worker.kill()
            _pool.release(worker)
            return
    job.go.wait()
    chunks, queue, in_flight = job.chunks, job.queue, job.in_flight
    slots = threading.Semaphore(IN_FLIGHT)
    order: SimpleQueue[int | None] = SimpleQueue()
    lock = threading.Lock()
    closed = [False]  # set by the reader when it ends: no chunk is sent after that

    def read() -> None:
        try:
            while (i := order.get()) is not None:
                try:
                    counts = worker.answer()
                except Exception:
                    worker.kill()
                    return
                if len(counts) == len(chunks[i]):
                    job.results[i] = counts
                in_flight[i].set()
                slots.release()
        finally:
            with lock:
                closed[0] = True
                for done in list(in_flight.values()):
                    done.set()  # nothing more comes from this worker
            slots.release(IN_FLIGHT)  # a writer waiting for a slot sees it ended
            _pool.release(worker)

    threading.Thread(target=read, name="context-governor-count-read", daemon=True).start()
    try:
        while not worker.dead:
            slots.acquire()
            try:
                i = queue.popleft()
            except IndexError:
                return
            with lock:
                if closed[0]:
                    return  # the caller counts chunk i: it has no result
                in_flight[i] = threading.Event()
                order.put(i)
            try:
                worker.send(chunks[i])
            except Exception:
                worker.kill()
                return
    finally:
        order.put(None)


class _Worker:
    """One worker process, started on first use (``ready``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.proc: subprocess.Popen[bytes] | None = None
        self.dead = False

    def ready(self, count: Callable[[str], int]) -> bool:
        """Whether the worker can be used: started now if it was not, and checked to count
        the probes as ``count`` does. False (and dropped for good) otherwise."""
        if self.dead:
            return False
        if self.proc is not None:
            return True
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _boot(), self.name],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_child_env(),
            )
            if self.count(list(PROBES)) == [count(t) for t in PROBES]:
                return True
        except Exception:  # cannot start, or died: counted here
            pass
        self.kill()
        return False

    def load_bulk(self) -> None:
        """Have the worker load the bulk counter now (a frame it does not answer)."""
        self.send(None)

    def count(self, texts: list[str]) -> list[int]:
        """The counts of ``texts`` (one round trip)."""
        self.send(texts)
        return self.answer()

    def send(self, texts: list[str] | None) -> None:
        """One frame: texts to count, or None (load the bulk counter, see load_bulk)."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        data = marshal.dumps(texts)
        proc.stdin.write(len(data).to_bytes(_LENGTH, "little") + data)
        proc.stdin.flush()

    def answer(self) -> list[int]:
        """The counts of the oldest chunk sent and not answered yet."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        head = proc.stdout.read(_LENGTH)
        if len(head) < _LENGTH:
            raise EOFError("the counting worker ended")
        size = int.from_bytes(head, "little")
        body = proc.stdout.read(size)
        if len(body) < size:
            raise EOFError("the counting worker ended")
        answer = marshal.loads(body)
        if not isinstance(answer, tuple) or len(answer) != 2:
            raise ValueError("the counting worker answered something else than counts")
        counts, chunks = answer
        if not isinstance(counts, list) or not all(type(c) is int and c >= 0 for c in counts):
            raise ValueError("the counting worker answered something else than counts")
        _remember_chunks(self.name, chunks)
        return counts

    def kill(self) -> None:
        self.dead = True
        proc = self.proc
        if proc is not None:
            with contextlib.suppress(Exception):
                proc.kill()
            with contextlib.suppress(Exception):
                proc.wait(timeout=1)

    def close(self) -> None:
        proc = self.proc
        if proc is None or self.dead:
            return
        self.dead = True
        with contextlib.suppress(Exception):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=1)
        except Exception:
            self.kill()


def _remember_chunks(name: str, chunks: object) -> None:
    """Memoise here the chunk counts a worker made for encoding ``name`` (so a text it
    counted is not encoded again here, inside a payload a stage rewrote around it)."""
    encoding = counting_encoding(name)
    chunked = None if encoding is None else chunked_count(encoding)
    if chunked is None or not isinstance(chunks, list):
        return
    chunked.remember(
        entry
        for entry in chunks
        if type(entry) is tuple
        and len(entry) == 2
        and type(entry[0]) is bytes
        and type(entry[1]) is int
        and entry[1] >= 0
    )


def _boot() -> str:
    """The worker's command: counting/_worker.py's ``main``, its two packages stood in by
    plain modules with their paths, so that neither package's ``__init__`` runs. The
    worker needs only the counting modules (the standard library and the tokenizers);
    importing the whole package took ~160 ms of the ~350 ms before a worker was ready,
    and a first call on a long history counts alone until then."""
    counting = Path(__file__).resolve().parent
    packages = [("context_governor", str(counting.parent)), (__package__, str(counting))]
    return (
        "import sys, types\n"
        f"for name, path in {packages!r}:\n"
        "    module = types.ModuleType(name)\n"
        "    module.__path__ = [path]\n"
        "    sys.modules[name] = module\n"
        "from context_governor.counting._worker import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )


def _child_env() -> dict[str, str]:
    """This environment, with this package's directory first on the child's path (the
    package may have been put on ``sys.path`` by hand rather than installed)."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parent.parent)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = here if not path else here + os.pathsep + path
    return env


class _Pool:
    """The process's workers, per encoding; each used by one call at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[_Worker]] = {}
        self._all: list[_Worker] = []

    def acquire(self, name: str) -> _Worker | None:
        """An idle worker for ``name`` (made, not started, if there are fewer than
        ``workers()`` in all), or None."""
        with self._lock:
            idle = self._idle.setdefault(name, [])
            while idle:
                worker = idle.pop()
                if not worker.dead:
                    return worker
            live = [w for w in self._all if not w.dead and w.name == name]
            if len(live) >= workers():
                return None
            worker = _Worker(name)
            self._all = [w for w in self._all if not w.dead] + [worker]
            return worker

    def release(self, worker: _Worker) -> None:
        with self._lock:
            if not worker.dead:
                self._idle.setdefault(worker.name, []).append(worker)

    def started(self) -> int:
        """How many live workers have a process (tests and benchmarks read it)."""
        with self._lock:
            return sum(1 for w in self._all if w.proc is not None and not w.dead)

    def close(self) -> None:
        """End every worker (at exit; tests)."""
        with self._lock:
            every, self._all, self._idle = self._all, [], {}
        for worker in every:
            worker.close()


_pool = _Pool()


def _at_exit() -> None:
    """End this process's workers (a forked child's pool holds none: see _after_fork)."""
    _pool.close()


def _after_fork() -> None:
    """In a forked child: forget the parent's workers without touching them. Their pipes
    are the parent's too; a child writing to them would mix its frames with the
    parent's and could read the parent's answers. The child starts its own if it needs
    them."""
    global _pool
    _pool = _Pool()


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def prepare(counter: TokenCounter) -> int:
    """Start the worker processes ``counter``'s big calls would use now, not during the
    first such call (a server that expects long histories calls it at start-up); how
    many are ready. Builds the counter's encoding; 0 when workers would not be used."""
    if not isinstance(counter, ExactCounter):
        return 0
    spec = counter.shared_encoding()
    if spec is None:
        return 0
    name, count = spec
    taken = [w for w in (_pool.acquire(name) for _ in range(workers())) if w is not None]
    try:
        return sum(1 for worker in taken if worker.ready(count))
    finally:
        for worker in taken:
            _pool.release(worker)


def started() -> int:
    """How many worker processes are up in this process."""
    return _pool.started()


def close() -> None:
    """End every worker process now (the next big call starts new ones)."""
    _pool.close()
