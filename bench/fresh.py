"""``python -m bench.fresh STEPS WINDOW VARIANT [default]``: a replay governed by a process
that has just started (bench/speed.py runs it in a fresh interpreter). The Governor is
made with ``immutable_messages=True`` (the replay never edits a message in place), or
without it when the fourth argument is ``default``.

Nothing of context_governor is imported before the clock starts, and nothing is warmed
up. Building the Governor is counted with the first call (it builds no encoding: the
counter builds it on its first count). Each step's report is read after the call,
standing for the model call, during which the Governor's threads work: the worker counts
a step's new messages, and after a first call decided on byte bounds (governor.py) a
thread of its own makes the exact run, building the encoding (50-70 ms of CPU for
o200k_base with rs-bpe, holding the GIL). Reading the first report waits for that run,
or makes it if the thread has not started yet: ``first_report_ns`` is that wait, wall
clock, and every thread's CPU (the reader's included) is ``background_ns``, reported
apart from the critical path (``total_ns``). A first call the bounds cannot decide (a
history near or over the trigger) builds the encoding inside the call, and then it is
in ``first_ns``. Prints one JSON line of nanoseconds.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from .sessions import Message, coding_session

MAX_OUTPUT = 4096  # as bench/speed.py


def main(argv: list[str]) -> dict[str, float]:
    steps, window, variant = (int(a) for a in argv[:3])
    immutable = argv[3:4] != ["default"]
    replay = coding_session(steps, variant=variant)  # generating is not governing
    clock = time.perf_counter_ns
    start = clock()
    from context_governor import CompactionPolicy, Governor
    from context_governor.counting import background_cpu_ns
    from context_governor.governor._late import first_call_cpu_ns

    imported = clock() - start
    start = clock()
    gov = Governor(
        profile="openai",
        model=replay.model,
        context_window=window,
        max_output=MAX_OUTPUT,
        tools=replay.tools,
        immutable_messages=immutable,
        compaction=CompactionPolicy(price_aware=False),  # bench.speed.SPEED_POLICY
    )
    built = clock() - start  # resolves the settings; the encoding is built on first count
    history: list[Message] = []
    critical: list[int] = []
    background = 0
    first_report = 0
    for step in replay.steps:
        history.extend(step)
        worker = background_cpu_ns() + first_call_cpu_ns()
        start = clock()
        result = gov.govern(history)
        critical.append(clock() - start)
        cpu = time.thread_time_ns()
        start = clock()
        result.report  # noqa: B018 - read after the model call: made from the exact counts
        if not first_report:
            first_report = clock() - start
        threads = background_cpu_ns() + first_call_cpu_ns() - worker
        background += threads + time.thread_time_ns() - cpu
    return {
        "import_ns": imported,
        "construct_ns": built,
        "first_ns": built + critical[0],
        "total_ns": built + sum(critical),
        "background_ns": background,
        "first_report_ns": first_report,
        "median_ns": statistics.median(critical),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
