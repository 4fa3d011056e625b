"""``python -m bench.fresh STEPS WINDOW VARIANT [default]``: a replay governed by a process
that has just started (bench/speed.py runs it in a fresh interpreter). The Governor is
made with ``immutable_messages=True`` (the replay never edits a message in place), or
without it when the fourth argument is ``default``.

Nothing of context_governor is imported before the clock starts, and nothing is warmed
up: building the Governor loads the encoding (it resolves its counter), and that time
is counted with the first call's. Each step's
report is read after the call (the model call's time, during which the Governor's worker
thread counts the step's new messages); that thread's CPU time is reported apart from the
critical path. Prints one JSON line of nanoseconds.
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
    from context_governor.tokens import background_cpu_ns

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
    built = clock() - start  # resolves the counter: the encoding is loaded here
    history: list[Message] = []
    critical: list[int] = []
    background = 0
    for step in replay.steps:
        history.extend(step)
        worker = background_cpu_ns()
        start = clock()
        result = gov.govern(history)
        critical.append(clock() - start)
        cpu = time.thread_time_ns()
        result.report  # noqa: B018 - read after the model call: made from the exact counts
        background += background_cpu_ns() - worker + time.thread_time_ns() - cpu
    return {
        "import_ns": imported,
        "construct_ns": built,
        "first_ns": built + critical[0],
        "total_ns": built + sum(critical),
        "background_ns": background,
        "median_ns": statistics.median(critical),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
