"""Counting over worker processes (counting/pool.py): the same counts, the same results.

The workers are real child processes counting with the encoding they build
themselves; every test compares with this process's own counter (itself checked
against tiktoken in test_fast_counter.py). The size threshold is lowered so that
small inputs go through the workers.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples

from bench.counters import corpus
from bench.sessions import coding_session
from context_governor import Governor, govern
from context_governor.counting import (
    ExactCounter,
    Known,
    counting_encoding,
    custom_counter,
    exact_counter,
)
from context_governor.counting import pool as count_pool

Message = dict[str, Any]
#: texts of the varied corpus per test (CG_TEST_LEVEL=full: more)
N_TEXTS = examples(full=3_000, fast=800)


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """One worker, used by any call with a history over 2,000 characters; every worker
    ended afterwards."""
    count_pool.set_workers(1)
    monkeypatch.setattr(count_pool, "MIN_CHARS", 2_000)
    monkeypatch.setattr(count_pool, "CHUNK_CHARS", 4_000)
    yield
    count_pool.set_workers(None)
    count_pool.close()


#: The longest a test's own counting waits for a worker's answer before going on (a
#: worker that cannot answer in that time fails the test's "worker used" assertion
#: instead of hanging it).
GATE_SECONDS = 120.0


@pytest.fixture
def answered(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[str], int]], Callable[[str], int]]:
    """``gate(count)``: ``count``, made to wait (once) until a worker has answered a chunk
    of the call that uses it, so that the worker surely counts something in that call
    whatever the scheduling: a test never depends on which of two processes is faster.
    The counts stay the same."""
    real = count_pool._Worker.answer
    pending: list[threading.Event] = []

    def answer(self: count_pool._Worker) -> list[int]:
        try:
            return real(self)
        finally:
            for event in pending:
                event.set()

    monkeypatch.setattr(count_pool._Worker, "answer", answer)

    def gate(count: Callable[[str], int]) -> Callable[[str], int]:
        event = threading.Event()
        pending.append(event)

        def gated(text: str) -> int:
            if not event.is_set():
                event.wait(GATE_SECONDS)
            return count(text)

        return gated

    return gate


def idle(name: str) -> None:
    """Wait until the pool's worker for ``name`` is idle again: a call's feeder and reader
    threads give it back just after the call returns, so a call made at once may find it
    still taken (and count alone, which a test that waits for a worker must not do)."""
    deadline = time.monotonic() + GATE_SECONDS
    while not count_pool._pool._idle.get(name) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert count_pool._pool._idle.get(name), "the worker was never given back"


def fresh(name: str) -> ExactCounter:
    """A counter on the process's shared encoding with an empty memo of its own."""
    return ExactCounter(counting_encoding(name))


def prepared(name: str = "o200k_base") -> tuple[str, Callable[[str], int]]:
    """(encoding name, count) of a fresh counter whose worker is started and checked."""
    counter = fresh(name)
    spec = counter.shared_encoding()
    assert spec is not None
    assert count_pool.prepare(counter) == 1
    return spec


def history(seed: int, n: int = 240) -> list[Message]:
    """A tool-using history whose texts are the varied corpus (surrogates, CJK, runs...)."""
    rng = random.Random(seed)
    texts = corpus(300, seed=seed)
    out: list[Message] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": rng.choice(texts)},
    ]
    for i in range((n - 2) // 3):
        call = {
            "id": f"c{seed}_{i}",
            "type": "function",
            "function": {"name": "read", "arguments": json.dumps({"q": rng.choice(texts)[:300]})},
        }
        out.append({"role": "assistant", "content": rng.choice(["", None, "ok"]), "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": call["id"], "content": rng.choice(texts)})
        out.append({"role": "user", "content": rng.choice(texts)[:2000]})
    return out


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_workers_count_every_text_as_this_process_does(
    pool: None, answered: Callable[[Callable[[str], int]], Callable[[str], int]], name: str
) -> None:
    texts = corpus(N_TEXTS)
    assert any("\ud800" <= ch <= "\udfff" for t in texts for ch in t), "corpus has surrogates"
    spec = prepared(name)
    counted, by_workers = count_pool.count_texts(spec[0], answered(spec[1]), texts, 1)
    assert by_workers > 0, "the worker counted nothing: the test did not test it"
    assert counted == [spec[1](t) for t in texts]


def test_a_call_over_the_threshold_gets_every_message_count_from_the_pool(
    pool: None,
    monkeypatch: pytest.MonkeyPatch,
    answered: Callable[[Callable[[str], int]], Callable[[str], int]],
) -> None:
    messages = history(1)
    counter = fresh("o200k_base")
    assert count_pool.prepare(counter) == 1
    spec = counter.shared_encoding()
    assert spec is not None
    monkeypatch.setattr(counter, "shared_encoding", lambda: (spec[0], answered(spec[1])))
    known = Known()
    by_workers = count_pool.precount(counter, messages, known)
    assert by_workers > 0
    assert count_pool.started() == 1
    check = fresh("o200k_base")
    assert [known[id(m)] for m in messages] == [check.message_tokens(m) for m in messages]
    # the memo has them too: the next call tokenizes nothing
    assert all(counter.message_tokens(m) == known[id(m)] for m in messages)


def test_govern_and_the_governor_give_the_same_results_with_workers(
    pool: None,
    monkeypatch: pytest.MonkeyPatch,
    answered: Callable[[Callable[[str], int]], Callable[[str], int]],
) -> None:
    # two sessions: the counts are memoized per text, so the second call on one history
    # would have nothing left for a worker
    for_govern = coding_session(steps=80, seed=11).messages
    for_governor = coding_session(steps=80, seed=12).messages
    settings: dict[str, Any] = {"profile": "openai", "model": "gpt-4o", "context_window": 16_000}
    assert count_pool.prepare(fresh("o200k_base")) == 1
    shared = ExactCounter.shared_encoding

    def gated(self: ExactCounter) -> tuple[str, Callable[[str], int]] | None:
        spec = shared(self)
        return None if spec is None else (spec[0], answered(spec[1]))

    monkeypatch.setattr(ExactCounter, "shared_encoding", gated)
    used: list[int] = []  # texts the workers counted, per call that spread its counting
    run = count_pool._Job.run

    def recorded(job: count_pool._Job, texts: Any) -> tuple[list[int], int]:
        counted = run(job, texts)
        used.append(counted[1])
        return counted

    monkeypatch.setattr(count_pool._Job, "run", recorded)
    with_pool_govern = govern(for_govern, **settings)
    assert used and used[-1] > 0, f"govern(): workers counted {used}"
    idle("o200k_base")  # the last call's threads give the worker back after it returns
    with_pool_governor = Governor(**settings).govern(for_governor)
    assert len(used) >= 2 and used[-1] > 0, f"Governor: workers counted {used}"
    assert count_pool.started() == 1
    count_pool.set_workers(0)
    for with_pool, messages in ((with_pool_govern, for_govern), (with_pool_governor, for_governor)):
        alone = govern(messages, **settings)
        assert with_pool.messages == alone.messages
        assert with_pool.report.tokens_before == alone.report.tokens_before
        assert with_pool.report.tokens_after == alone.report.tokens_after
        assert with_pool.report.actions == alone.report.actions


def test_a_worker_that_counts_otherwise_is_never_used(pool: None) -> None:
    spec = fresh("o200k_base").shared_encoding()
    assert spec is not None

    def off_by_one(text: str) -> int:
        return spec[1](text) + 1

    wrong = count_pool._Worker(spec[0])
    assert not wrong.ready(off_by_one), "its probe answers differ from this process's"
    assert wrong.dead and wrong.proc is not None and wrong.proc.poll() is not None
    right = count_pool._Worker(spec[0])
    try:
        assert right.ready(spec[1])
    finally:
        right.close()
    texts = corpus(200)
    counted, by_workers = count_pool.count_texts(spec[0], off_by_one, texts, 1)
    assert by_workers == 0
    assert counted == [off_by_one(t) for t in texts]


def test_a_worker_that_dies_mid_call_costs_nothing_but_time(
    pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = prepared()
    texts = corpus(N_TEXTS)
    answers = 0
    real = count_pool._Worker.answer
    killed = threading.Event()

    def dies_after_one(self: count_pool._Worker) -> list[int]:
        nonlocal answers
        answers += 1
        if answers > 2:  # two chunks answered, then the process is gone
            self.kill()
            killed.set()
        return real(self)

    def after_the_kill(text: str) -> int:  # the worker surely gets its chunks first
        killed.wait(GATE_SECONDS)
        return spec[1](text)

    monkeypatch.setattr(count_pool._Worker, "answer", dies_after_one)
    counted, _ = count_pool.count_texts(spec[0], after_the_kill, texts, 1)
    assert answers > 2, "the worker was not used"
    assert counted == [spec[1](t) for t in texts]
    assert count_pool.started() == 0, "the dead worker is dropped"


def test_small_calls_and_hooks_start_no_worker(pool: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(count_pool, "MIN_CHARS", 10_000_000)
    messages = history(2)
    assert count_pool.precount(fresh("o200k_base"), messages, Known()) == 0
    monkeypatch.setattr(count_pool, "MIN_CHARS", 2_000)
    hook = custom_counter(lambda text: len(text) // 3, name="hook")
    assert count_pool.precount(hook, messages, Known()) == 0
    estimate = ExactCounter(None)
    assert count_pool.precount(estimate, messages, Known()) == 0
    assert count_pool.started() == 0


def test_messages_already_known_are_not_counted_again(pool: None) -> None:
    messages = history(3)
    counter = exact_counter("gpt-4o")
    known = Known()
    known.add_all(messages, [7] * len(messages))
    assert count_pool.precount(counter, messages, known) == 0
    assert all(count == 7 for count in known.values())


def test_the_number_of_workers_comes_from_the_setting_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    count_pool.set_workers(None)
    monkeypatch.setenv(count_pool.WORKERS_ENV, "0")
    assert count_pool.workers() == 0
    monkeypatch.setenv(count_pool.WORKERS_ENV, "3")
    assert count_pool.workers() == 3
    monkeypatch.setenv(count_pool.WORKERS_ENV, "lots")
    assert count_pool.workers() == 0, "an unreadable setting turns it off"
    monkeypatch.delenv(count_pool.WORKERS_ENV)
    assert 0 <= count_pool.workers() <= count_pool.MAX_WORKERS
    count_pool.set_workers(2)
    try:
        assert count_pool.workers() == 2
    finally:
        count_pool.set_workers(None)
    with pytest.raises(ValueError, match="non-negative"):
        count_pool.set_workers(-1)


def test_closing_the_pool_ends_the_worker_processes(pool: None) -> None:
    spec = prepared()
    count_pool.count_texts(spec[0], spec[1], corpus(N_TEXTS), 1)
    procs = [w.proc for w in count_pool._pool._all if w.proc is not None]
    assert procs
    count_pool.close()
    assert all(p.poll() is not None for p in procs)
    assert count_pool.started() == 0


def test_a_forked_child_never_uses_the_parents_workers(pool: None) -> None:
    counter = fresh("o200k_base")
    assert count_pool.prepare(counter) == 1
    parent_worker = count_pool._pool._all[0]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it sees, then leave without cleanup
        try:
            seen = count_pool.started(), len(count_pool._pool._all)
            os.write(write, json.dumps(seen).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as source:
        seen = json.loads(source.read())
    os.waitpid(pid, 0)
    assert seen == [0, 0], "the child must start workers of its own"
    assert parent_worker.proc is not None and parent_worker.proc.poll() is None
    assert count_pool.started() == 1, "the parent keeps its worker"


def test_a_slow_worker_is_not_waited_for_long(
    pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = prepared()
    real = count_pool._Worker.answer

    def hangs(self: count_pool._Worker) -> list[int]:
        time.sleep(3)
        return real(self)

    monkeypatch.setattr(count_pool._Worker, "answer", hangs)
    monkeypatch.setattr(count_pool, "WAIT_IN_FLIGHT", 0.2)
    texts = corpus(300)
    started = time.monotonic()
    counted, by_workers = count_pool.count_texts(spec[0], spec[1], texts, 1)
    assert time.monotonic() - started < 2.5, "it waited for the worker"
    assert by_workers == 0
    assert counted == [spec[1](t) for t in texts]


def test_the_cli_option_sets_the_workers_of_this_process_and_its_children(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from click.testing import CliRunner

    from context_governor.cli import main

    example = str(Path(__file__).resolve().parents[1] / "examples" / "coding-session.json")
    monkeypatch.setenv(count_pool.WORKERS_ENV, "3")  # restored after the test
    runner = CliRunner()
    done = runner.invoke(main, ["govern", example, "--count-workers", "0"])
    assert done.exit_code in (0, 1), done.output
    assert os.environ[count_pool.WORKERS_ENV] == "0" and count_pool.workers() == 0
    bad = runner.invoke(main, ["govern", example, "--count-workers", "-1"])
    assert bad.exit_code == 2 and "--count-workers" in bad.output
    assert "CONTEXT_GOVERNOR_COUNT_WORKERS" in runner.invoke(main, ["proxy", "--help"]).output


_PROPERTY_WORKER: list[count_pool._Worker] = []


@pytest.fixture(scope="module", autouse=True)
def _end_the_property_worker() -> Iterator[None]:
    yield
    for worker in _PROPERTY_WORKER:
        worker.close()


@settings(max_examples=examples(full=300, fast=60), deadline=None)
@given(
    texts=st.lists(
        st.text(alphabet=st.characters(blacklist_categories=()), max_size=3000), max_size=20
    )
)
def test_a_worker_counts_any_text_as_this_process_does(texts: list[str]) -> None:
    """Any text (lone surrogates, special-token text and runs included): the counts a
    worker process answers are this process's."""
    spec = fresh("o200k_base").shared_encoding()
    assert spec is not None
    if not _PROPERTY_WORKER or _PROPERTY_WORKER[0].dead:
        worker = count_pool._Worker(spec[0])
        assert worker.ready(spec[1])
        _PROPERTY_WORKER[:] = [worker]
    assert _PROPERTY_WORKER[0].count(texts) == [spec[1](t) for t in texts]


def test_the_switch_interval_is_short_while_workers_are_fed_and_put_back_after(
    pool: None,
) -> None:
    """This thread counts holding the GIL; the threads feeding the workers get their
    turns every SWITCH_INTERVAL while a job runs, and the interval is put back after."""
    import sys

    spec = prepared("o200k_base")
    seen: list[float] = []

    def count(text: str) -> int:
        seen.append(sys.getswitchinterval())
        return spec[1](text)

    before = sys.getswitchinterval()
    counted, _ = count_pool.count_texts(spec[0], count, corpus(N_TEXTS), 1)
    assert counted == [spec[1](t) for t in corpus(N_TEXTS)]
    assert seen and max(seen) <= count_pool.SWITCH_INTERVAL
    assert sys.getswitchinterval() == before


def test_a_worker_starts_without_importing_the_library() -> None:
    """The worker's command stands in for both packages, so neither ``__init__`` runs (the
    whole library, ~160 ms of a worker's start): only the counting modules load."""
    import subprocess
    import sys

    boot = count_pool._boot()
    run_main = "from context_governor.counting._worker import main\n"
    assert run_main in boot
    probe = boot.split(run_main)[0] + (
        "from context_governor.counting import _worker\n"
        "import context_governor\n"
        "print(hasattr(context_governor, 'govern'), 'context_governor.formats' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
