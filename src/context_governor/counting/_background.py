"""Background counting: the exact counts a Governor's step leaves for after the call.

One worker thread per process, started on first use, counts what a step decided on byte
bounds (bounds.py) while the caller makes its model call; the report reads the counts
(waiting if it must) before it shows a figure.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Protocol

from ..messages import Message
from ._counters import TokenCounter

__all__ = ["BackgroundCounts", "Job", "background_cpu_ns", "count_in_background", "in_background"]


#: How often the worker looks for work: often while a conversation is active (its steps
#: come seconds apart), rarely once it has been idle for a while. Polling, not waking:
#: waking a sleeping thread from the caller's thread costs the caller its CPU slice on a
#: busy machine (measured: 0.2-1.8 ms a step at load 6 on 2 cores), which is the very
#: latency this thread exists to remove.
_POLL_ACTIVE = 0.002
_POLL_IDLE = 0.05
_ACTIVE_FOR = 1.0
#: Idle seconds after which the worker ends (the next job starts a new one): a process
#: that stopped governing is not woken 20 times a second for ever.
_EXIT_AFTER = 10.0

_BACKGROUND_LOCK = threading.Lock()


class Job(Protocol):
    """Work for the worker thread: ``run()`` does it (and must not raise)."""

    def run(self) -> None: ...


_jobs: deque[Job] = deque()
_worker: list[threading.Thread] = []
_background_cpu_ns = [0]


def background_cpu_ns() -> int:
    """CPU time (ns) the worker thread has spent counting in this process so far (counts
    a reader made itself are its own thread's time): a benchmark adds it to the critical
    path's time to report the total cost honestly."""
    return _background_cpu_ns[0]


class BackgroundCounts:
    """``[counter.message_tokens(m) for m in messages]``, made after the call that needed
    them returned: by the process's worker thread, or by the first caller of ``result()``
    if the worker has not started on it yet (a reader never waits for a thread that has
    not begun). The messages must not change until then (a Governor passes frozen copies).

    rs-bpe holds the GIL while it counts (tiktoken releases it): the worker is meant to
    run while the caller waits on the network, as during a model call."""

    def __init__(self, counter: TokenCounter, messages: Sequence[Message]) -> None:
        self._counter = counter
        self._messages = list(messages)
        #: held by whoever counts (the worker or a reader), so that a second one waits on
        #: it; one lock and no Event per job: the hand-off is on the caller's critical path
        self._lock = threading.Lock()
        self._done = False
        self._counts: list[int] = []
        self._error: BaseException | None = None

    def run(self) -> None:
        """Count, unless someone already does or did."""
        if not self._lock.acquire(blocking=False):
            return  # being counted
        try:
            if self._done:
                return
            try:
                self._counts = [self._counter.message_tokens(m) for m in self._messages]
            except BaseException as exc:  # handed to the reader, who raises it
                self._error = exc
            self._messages = []
            self._done = True
        finally:
            self._lock.release()

    def done(self) -> bool:
        return self._done

    def result(self) -> list[int]:
        """The counts: made here if the worker has not started, else waited for."""
        if not self._done:
            self.run()
            if not self._done:  # the worker is counting: wait until it lets go
                with self._lock:
                    pass
        if self._error is not None:
            raise self._error
        return self._counts


def count_in_background(counter: TokenCounter, messages: Sequence[Message]) -> BackgroundCounts:
    """Queue the counting of ``messages`` for the worker thread (started on first use)."""
    job = BackgroundCounts(counter, messages)
    in_background(job)
    return job


def in_background(job: Job) -> None:
    """Queue ``job`` for the worker thread (started on first use); jobs run in order."""
    with _BACKGROUND_LOCK:  # the worker ends under this lock once it sees no job
        _jobs.append(job)
        if not _worker:
            thread = threading.Thread(target=_work, name="context-governor-count", daemon=True)
            thread.start()
            _worker.append(thread)


def _work() -> None:
    last = time.monotonic()
    while True:
        try:
            job = _jobs.popleft()
        except IndexError:
            idle = time.monotonic() - last
            if idle > _EXIT_AFTER:
                with _BACKGROUND_LOCK:
                    if not _jobs:
                        _worker.clear()
                        return
            time.sleep(_POLL_IDLE if idle > _ACTIVE_FOR else _POLL_ACTIVE)
            continue
        start = time.thread_time_ns()
        job.run()
        _background_cpu_ns[0] += time.thread_time_ns() - start  # the only writer
        last = time.monotonic()
