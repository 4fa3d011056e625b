"""Results whose report is made after govern() returns.

The Governor answers a step as soon as its decisions are known and leaves the exact
counting to another thread, which runs while the caller makes its model call (see
governor.py's module docstring):

* ``CountedLater``: an appending step decided on byte bounds; its report is made from
  the new messages' exact counts (counting.count_in_background) when first read.
* ``ExactLater``: a first call decided on byte bounds; its report is the exact run's
  (the pipeline on exact counts, which builds the encoding), made by a thread of its own
  (``FirstJob``), and checked against the messages already returned.

Every figure such a report shows is exact; reading it waits for the work if needed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..counting import BackgroundCounts, Known, TokenCounter, message_bound, tools_bound
from ..messages import Message
from ..messages.roles import with_entries
from ..pipeline import GovernResult
from ..report import Action, Report
from ..stages import Replay

__all__ = [
    "MISMATCH",
    "Bounds",
    "CountedLater",
    "Exact",
    "ExactLater",
    "FirstJob",
    "LateResult",
    "Relabelled",
    "first_call_cpu_ns",
]

#: The dataclass's own storage of GovernResult.report (a slot), which CountedLater's
#: property stands in front of.
_REPORT_SLOT: Any = GovernResult.__dict__["report"]


class LateResult(GovernResult):
    """A GovernResult whose report is made later: equal, shown and pickled as the plain
    result it stands for (reading ``report`` makes it)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GovernResult):
            return NotImplemented
        return (self.messages, self.report) == (other.messages, other.report)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GovernResult(messages={self.messages!r}, report={self.report!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # copies and pickles are plain results (the pending work does not travel)
        return (GovernResult, (self.messages, self.report))

    def _once(self, make: Callable[[], Report]) -> Report:
        """The report: made by ``make`` on first read, then kept in the dataclass's slot."""
        try:
            done: Report = _REPORT_SLOT.__get__(self, GovernResult)
        except AttributeError:  # not made yet
            done = make()
            _REPORT_SLOT.__set__(self, done)
        return done


class CountedLater(LateResult):
    """A GovernResult whose report is made when first read, from exact token counts a
    worker thread computes meanwhile (see the module docstring). Reading ``report``
    waits for those counts if they are not ready; every figure it shows is exact."""

    __slots__ = ("_counts", "_finish")
    _counts: BackgroundCounts
    _finish: Callable[[int], Report]

    def __init__(
        self,
        messages: list[Message],
        counts: BackgroundCounts,
        finish: Callable[[int], Report],
    ) -> None:
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "_counts", counts)
        object.__setattr__(self, "_finish", finish)

    @property
    def report(self) -> Report:
        return self._once(lambda: self._finish(sum(self.counts())))

    def counts(self) -> list[int]:
        """The exact counts of the step's new messages (made now if the worker has not
        started on them, else waited for)."""
        return self._counts.result()


class Relabelled(LateResult):
    """A result whose messages the developer-role edge relabelled (messages/roles.py): its report
    is the inner result's with the edge's entries, made when first read, since the inner
    report may itself be made later (reading it now would wait for the counts)."""

    __slots__ = ("_actions", "_inner")
    _inner: GovernResult
    _actions: list[Action]

    def __init__(self, inner: GovernResult, messages: list[Message], actions: list[Action]):
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_actions", actions)

    @property
    def report(self) -> Report:
        return self._once(lambda: with_entries(self._inner.report, self._actions))


class Bounds:
    """A counter that answers with upper bounds (counting.message_bound, tools_bound) and
    never builds the encoding: what a first call decides on. Its name stands in for the
    real counter's (the report of a run on bounds is never shown)."""

    def __init__(
        self,
        counter: TokenCounter,
        known: Known,
        tools: tuple[Sequence[Any] | None, int],
    ) -> None:
        self._counter = counter
        self._known = known
        self._tools = tools

    @property
    def name(self) -> str:
        return "bounds"

    def message_tokens(self, message: Message) -> int:
        bound = self._known.get(id(message))
        if bound is None:
            bound = self.made_tokens(message)
            self._known.add(message, bound)
        return bound

    def made_tokens(self, message: Message) -> int:
        """``message_tokens`` of a message made only to be weighed (Context.made_tokens):
        the same bound, not kept by identity."""
        known = self._known.get(id(message))
        if known is not None:
            return known
        bound = message_bound(self._counter, message)
        if bound is None:  # cannot happen: the Governor asked the counter first
            raise ValueError("the counter has no byte bound")
        return bound

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        if tools is self._tools[0]:
            tools_tokens = self._tools[1]
        else:
            bound = tools_bound(self._counter, tools)
            if bound is None:
                raise ValueError("the counter has no byte bound")
            tools_tokens = bound
        return sum(self.message_tokens(m) for m in messages) + tools_tokens


@dataclass(slots=True)
class Exact:
    """The first call's run on exact counts (what the Governor would have done on the
    critical path), and whether its messages are the ones the run on bounds returned."""

    result: GovernResult
    tokens: list[int]
    replay: Replay | None
    same: bool


#: How long the first call's thread waits before it starts (seconds). Building rs-bpe's
#: o200k_base holds the GIL for all of its 50-70 ms: the thread lets the caller leave
#: govern() and send its model call first (on a busy machine the caller can be off the CPU
#: for milliseconds, so a switch interval is not enough). The model call takes far longer;
#: a caller that asks for the result sooner makes the run itself (FirstJob.result).
_FIRST_DELAY = 0.02
_FIRST_CPU_LOCK = threading.Lock()
_first_cpu_ns = [0]


def first_call_cpu_ns() -> int:
    """CPU time (ns) the first calls' threads have spent in this process so far (the exact
    runs of first calls decided on bounds, encoding builds included; a run a reader made
    itself is its own thread's time): a benchmark adds it to the critical path's time."""
    return _first_cpu_ns[0]


class FirstJob:
    """The exact run of a first call decided on bounds, made by a thread of its own or by
    the first reader if that thread has not started on it (as counting.BackgroundCounts)."""

    def __init__(self, work: Callable[[], Exact]) -> None:
        self._work: Callable[[], Exact] | None = work
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._value: Exact | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        threading.Thread(
            target=self._in_thread, name="context-governor-first-call", daemon=True
        ).start()

    def _in_thread(self) -> None:
        time.sleep(_FIRST_DELAY)
        start = time.thread_time_ns()
        ran = self.run()
        if ran:
            with _FIRST_CPU_LOCK:
                _first_cpu_ns[0] += time.thread_time_ns() - start

    def run(self) -> bool:
        """Run the job unless someone already does; whether this call ran it."""
        with self._lock:
            work, self._work = self._work, None
        if work is None:
            return False
        try:
            self._value = work()
        except BaseException as exc:  # handed to the reader, who raises it
            self._error = exc
        finally:
            self._done.set()
        return True

    def result(self) -> Exact:
        self.run()
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


MISMATCH = (
    "context-governor: a first call decided on byte bounds returned messages that differ "
    "from the exact run's, so they were not what govern() returns. With "
    "immutable_messages=True a message edited in place before that run finished does "
    "this (a broken promise); otherwise it is an internal error: please report it"
)


class ExactLater(LateResult):
    """The result of a first call decided on bounds: its messages now, its report made
    from the exact run (see the module docstring) when first read."""

    __slots__ = ("_job", "read")
    _job: FirstJob
    read: bool

    def __init__(self, messages: list[Message], job: FirstJob) -> None:
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "_job", job)
        object.__setattr__(self, "read", False)

    @property
    def report(self) -> Report:
        object.__setattr__(self, "read", True)
        exact = self._job.result()
        if not exact.same:
            raise RuntimeError(MISMATCH)
        return exact.result.report

    def exact(self) -> Exact:
        return self._job.result()
