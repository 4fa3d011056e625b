"""The count store (counting/store.py): exact counts kept between processes.

What must hold: a store never changes an answer (Governor and govern() with a store give
what they give without one), a fresh counter with a filled store tokenizes none of the
stored texts, only exact counts are stored and read, and a store that fails is reported
and counted around, never raised.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import random
import socket
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fake_upstream import FakeUpstream, Reply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from redis_server import redis_url
from test_governor import SETTINGS_CHOICES, _clean_session
from test_proxy import Served
from transcripts import random_case

from context_governor import Governor, govern
from context_governor import counting as tokens
from context_governor.cli import main
from context_governor.counting import ExactCounter, counting_encoding
from context_governor.counting import _runs as runs
from context_governor.counting import store as cs
from context_governor.errors import ConfigError
from context_governor.formats._base import DEFAULT_PROFILES
from context_governor.pipeline import GovernResult
from context_governor.profiles import _cached_exact_counter, get_profile
from context_governor.proxy import CountingConfig, ProxyConfig, create_app

__all__ = ["redis_url"]  # the fixture, used by name

Message = dict[str, Any]
SRC = Path(__file__).resolve().parents[1] / "src"


def _drain() -> None:
    """Wait until the worker thread has run every job queued so far (they run in order)."""
    assert cs.flush()


def _fresh_counters() -> None:
    """The profiles' counters are shared by the process (their memo too): make the next
    Governor or govern() count with a new one, with an empty memo (the encoding, built
    once per process, is kept)."""
    _cached_exact_counter.cache_clear()


def _same(a: GovernResult, b: GovernResult) -> None:
    assert a.messages == b.messages
    assert a.report.to_dict() == b.report.to_dict()


class Spy:
    """Wraps a counter's tokenizer: which texts were really tokenized."""

    def __init__(self, counter: ExactCounter) -> None:
        counter._ready()
        self.inner = counter._ordinary
        self.texts: list[str] = []
        counter._ordinary = self

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return self.inner(text)


def _spied(model: str = "gpt-4o") -> tuple[ExactCounter, Spy]:
    counter = ExactCounter(counting_encoding(tokens.encoding_for_model(model)))
    return counter, Spy(counter)


def _with_counter(gov: Governor, counter: ExactCounter) -> Governor:
    gov.settings = replace(gov.settings, counter=counter)
    gov._tools_counted = None
    return gov


# -- the stores --------------------------------------------------------------------------


def _stores(tmp_path: Path) -> list[cs.CountStore]:
    return [cs.MemoryCountStore(), cs.open_count_store(f"sqlite:///{tmp_path / 'c.db'}")]


def test_stores_give_back_what_was_put_and_nothing_else(tmp_path: Path) -> None:
    for store in _stores(tmp_path):
        store.put_many({f"k{i}": i for i in range(2000)})  # over one SELECT's batch
        found = store.get_many([f"k{i}" for i in range(0, 2500, 7)])
        assert found == {f"k{i}": i for i in range(0, 2000, 7)}
        assert store.get_many([]) == {}


def test_retention_hides_old_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(cs.time, "time", lambda: now[0])
    for store in (cs.MemoryCountStore(10), cs.SqliteCountStore(tmp_path / "r.db", 10)):
        store.put_many({"a": 1})
        now[0] += 5
        store.put_many({"b": 2})
        assert store.get_many(["a", "b"]) == {"a": 1, "b": 2}
        now[0] += 6
        assert store.get_many(["a", "b"]) == {"b": 2}
        now[0] -= 11


def test_bad_urls_and_settings_are_config_errors() -> None:
    for url in ("", "ftp://x", "sqlite://", "sqlite:///"):
        with pytest.raises(ConfigError):
            cs.open_count_store(url)
    with pytest.raises(ConfigError):
        cs.MemoryCountStore(retention_seconds=0)
    with pytest.raises(ConfigError, match="count_store"):
        Governor(count_store=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="count_store"):
        govern([], count_store=object())  # type: ignore[arg-type]


def _put(args: tuple[str, int]) -> int:
    path, worker = args
    store = cs.SqliteCountStore(path)
    for batch in range(20):
        store.put_many({f"w{worker}-{batch}-{i}": i for i in range(100)})
        store.put_many({f"shared-{batch}-{i}": i for i in range(100)})  # both write these
    return worker


def test_two_processes_writing_one_file_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        assert sorted(pool.map(_put, [(path, 0), (path, 1)])) == [0, 1]
    rows = sqlite3.connect(path).execute("SELECT count(*) FROM counts").fetchone()
    assert rows == (2 * 20 * 100 + 20 * 100,)


# -- a store never changes an answer ---------------------------------------------------


STORE_CHOICES = [c for c in SETTINGS_CHOICES if c.get("profile") != "nanobot"] + [
    {"profile": "nanobot"},  # not incremental: never reads, still the same answer
    {"profile": "openai", "model": "gpt-4o"},
    {"profile": "openai", "count_tokens": len},  # a hook: never stored
]


def _session_steps(rng: random.Random, full: list[Message]) -> Iterator[list[Message]]:
    history: list[Message] = full[:2]
    position = 2
    while position < len(full):
        step = rng.randint(1, 4)
        history.extend(full[position : position + step])
        position += step
        yield history


@settings(
    max_examples=examples(full=40, fast=10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), choice=st.sampled_from(STORE_CHOICES))
def test_governor_with_a_store_answers_as_govern_without(
    seed: int, choice: dict[str, Any]
) -> None:
    """A session governed with a store (filling it), then resumed by a Governor with empty
    memos and the same store, mid-way and at each later step: every answer is govern()'s
    without a store."""
    rng = random.Random(seed)
    full = _clean_session(rng, rng.randint(5, 40))
    window = rng.choice([6_000, 12_000, 20_000, 60_000, None])
    store = cs.MemoryCountStore()
    kwargs: dict[str, Any] = {"context_window": window, "max_output": 1000, **choice}
    _fresh_counters()
    first = Governor(count_store=store, **kwargs)
    steps = [copy.deepcopy(h) for h in _session_steps(rng, full)]
    for history in steps[: len(steps) // 2 + 1]:
        first.govern(history).report  # noqa: B018 - made now (the first call's thread)
    _drain()
    _fresh_counters()
    resumed = Governor(count_store=store, **kwargs)
    _fresh_counters()
    for history in steps[len(steps) // 2 :]:
        _same(resumed.govern(history), govern(history, **kwargs))
    _drain()


@settings(
    max_examples=examples(full=40, fast=10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 2**32 - 1), choice=st.sampled_from(STORE_CHOICES))
def test_govern_with_a_store_answers_as_without(seed: int, choice: dict[str, Any]) -> None:
    """The messy generator of the core tests (orphans, lists, repairs, cut histories):
    govern() with a filled store and an empty memo is govern() without a store."""
    case = random_case(random.Random(seed))
    kwargs: dict[str, Any] = {
        "context_window": case["context_window"],
        "tools": case["tools"],
        **choice,
    }
    store = cs.MemoryCountStore()
    _fresh_counters()
    govern(case["messages"], count_store=store, **kwargs)
    _drain()
    _fresh_counters()
    with_store = govern(case["messages"], count_store=store, **kwargs)
    _fresh_counters()
    _same(with_store, govern(case["messages"], **kwargs))


# -- a filled store spares the tokenizer ------------------------------------------------


def _long_session(seed: int = 7, steps: int = 60) -> list[Message]:
    return _clean_session(random.Random(seed), steps)


TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


def test_a_fresh_counter_with_a_filled_store_tokenizes_nothing_stored() -> None:
    history = _long_session()
    store = cs.MemoryCountStore()
    kwargs: dict[str, Any] = {"model": "gpt-4o", "context_window": 20_000, "tools": TOOLS}
    counter, spy = _spied()
    filled = _with_counter(Governor(count_store=store, **kwargs), counter)
    expected = filled.govern(history)
    expected.report  # noqa: B018
    _drain()
    assert spy.texts, "the first Governor counted"
    assert len(store) > 0
    counter, spy = _spied()
    resumed = _with_counter(Governor(count_store=store, **kwargs), counter)
    result = resumed.govern(history)
    _same(result, expected)
    # every message and the tools came from the store; what was tokenized is only what
    # the run made (its compaction and clearing notes), which is not looked up
    assert _inputs(history, TOOLS).isdisjoint(spy.texts)
    assert all("removed" in text for text in spy.texts)
    # the next step counts its new message (and no input text again), and stores it
    spy.texts.clear()
    grown = [*history, {"role": "user", "content": "and one more thing"}]
    _same(resumed.govern(grown), govern(grown, **kwargs))
    _drain()
    assert "and one more thing" in spy.texts
    assert _inputs(history, TOOLS).isdisjoint(spy.texts)
    rules = tokens.rules_fingerprint("o200k_base")
    assert store.get_many([rules + tokens.digest("and one more thing").hex()])


def _inputs(history: list[Message], tools: Any = None) -> set[str]:
    """The texts counted for the input: each message's payload, the tools' JSON."""
    texts = {tokens.seed_message_payload(m) for m in history} - {""}
    return texts | ({tokens.json_text(tools)} if tools else set())


def test_without_the_store_the_fresh_counter_tokenizes_everything() -> None:
    """The spy sees counting (the test above would fail on code that ignored the store)."""
    history = _long_session()
    counter, spy = _spied()
    gov = _with_counter(Governor(model="gpt-4o", context_window=20_000, tools=TOOLS), counter)
    gov.govern(history).report  # noqa: B018
    assert _inputs(history, TOOLS) <= set(spy.texts)


SCRIPT = textwrap.dedent(
    """
    import json, random, sys
    sys.path.insert(0, sys.argv[3])
    from test_governor import _clean_session
    from context_governor import Governor

    history = _clean_session(random.Random(11), 50)
    gov = Governor(model="gpt-4o", context_window=int(sys.argv[2]), count_store=sys.argv[1])
    counter = gov.settings.counter
    counter._ready()
    texts = []
    inner = counter._ordinary
    counter._ordinary = lambda t: (texts.append(t), inner(t))[1]
    result = gov.govern(history)
    report = result.report.to_dict()
    from context_governor.counting.store import flush
    assert flush()
    from context_governor.counting import seed_message_payload
    inputs = {seed_message_payload(m) for m in history}
    tokenized = sum(text in inputs for text in texts)  # made texts (notes) are not stored
    print(json.dumps({"request": result.messages, "report": report, "tokenized": tokenized}))
    """
)


@pytest.mark.parametrize("window", [200_000, 12_000])  # decided on bounds, and not
def test_a_fresh_process_with_the_same_file_sends_the_same_request(
    tmp_path: Path, window: int
) -> None:
    script = tmp_path / "resume.py"
    script.write_text(SCRIPT)
    url = f"sqlite:///{tmp_path / 'counts.db'}"
    tests_dir = str(Path(__file__).parent)

    def run() -> dict[str, Any]:
        out = subprocess.run(
            [sys.executable, str(script), url, str(window), tests_dir],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": str(SRC), "PATH": ""},
        )
        data: dict[str, Any] = json.loads(out.stdout)
        return data

    cold, resumed = run(), run()
    assert cold["tokenized"] > 0
    assert resumed["tokenized"] == 0
    assert json.dumps(resumed["request"]) == json.dumps(cold["request"])
    assert resumed["report"] == cold["report"]


# -- only exact counts are stored, under their rules --------------------------------------


def test_hook_and_estimate_counts_are_never_written_nor_read() -> None:
    history = _long_session(steps=10)
    store = cs.MemoryCountStore()
    govern(history, count_tokens=len, count_store=store, context_window=20_000)
    _drain()
    assert len(store) == 0
    link = cs.CountLink(store)
    # chars/4: a counter made without an encoding, and a lazy one whose build fails
    for estimate in (ExactCounter(None), ExactCounter(None, load=lambda: None)):
        assert estimate.store_rules is None
        assert link.read(estimate, history) is None
        assert estimate.name == "estimate:chars/4"
    hook = tokens.custom_counter(len)
    assert hook.store_rules is None
    # a store full of wrong counts under every fingerprint cannot reach a hook's counts
    _fresh_counters()
    govern(history, count_store=store, model="gpt-4o", context_window=20_000)
    _drain()
    store.put_many({key: 999_999 for key in store._data})
    _same(
        govern(history, count_tokens=len, count_store=store, context_window=20_000),
        govern(history, count_tokens=len, context_window=20_000),
    )


def test_counts_of_other_rules_are_a_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    history = _long_session(steps=10)
    kwargs: dict[str, Any] = {"model": "gpt-4o", "context_window": 20_000}
    o200k = tokens.rules_fingerprint("o200k_base")
    assert o200k != tokens.rules_fingerprint("cl100k_base")
    monkeypatch.setattr(runs, "COUNT_RULES_VERSION", tokens.COUNT_RULES_VERSION + 1)
    assert tokens.rules_fingerprint("o200k_base") != o200k
    monkeypatch.undo()
    # wrong counts stored under the other encoding's and the other version's keys
    store = cs.MemoryCountStore()
    payloads = {tokens.seed_message_payload(m) for m in history} - {""}
    for rules in (tokens.rules_fingerprint("cl100k_base"), "0" * 16):
        store.put_many({rules + tokens.digest(p).hex(): 1 for p in payloads})
    _fresh_counters()
    with_store = govern(history, count_store=store, **kwargs)
    _fresh_counters()
    _same(with_store, govern(history, **kwargs))
    _drain()
    assert any(key.startswith(o200k) for key in store._data)  # its own, written back


# -- a failing store is reported and counted around -----------------------------------


class Broken:
    """A store whose every call raises."""

    def __init__(self) -> None:
        self.calls = 0

    def get_many(self, keys: Any) -> dict[str, int]:
        self.calls += 1
        raise OSError("disk on fire")

    def put_many(self, items: Any) -> None:
        self.calls += 1
        raise OSError("disk on fire")


def _check_degrades(store: Any, kwargs: dict[str, Any] | None = None) -> GovernResult:
    """govern() with ``store``: the answer without a store, plus one note that says so."""
    history = _long_session(steps=12)
    kwargs = kwargs or {"model": "gpt-4o", "context_window": 20_000}
    _fresh_counters()
    result = govern(history, count_store=store, **kwargs)
    _fresh_counters()
    plain = govern(history, **kwargs)
    assert result.messages == plain.messages
    notes = [n for n in result.report.notes if n.startswith(cs.NOTE)]
    assert len(notes) == 1, result.report.notes
    assert [n for n in result.report.notes if not n.startswith(cs.NOTE)] == plain.report.notes
    assert replace(result.report, notes=[]) == replace(plain.report, notes=[])
    return result


def test_a_store_that_raises_degrades_to_counting_and_rests() -> None:
    store = Broken()
    link = cs.CountLink(store)
    _check_degrades(link)
    assert store.calls == 1
    result = _check_degrades(link)  # not asked again for RETRY_AFTER seconds
    assert store.calls == 1
    assert "not asked again" in result.report.notes[-1]


def test_a_corrupt_file_degrades(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.db"
    path.write_bytes(b"this is not a database" * 100)
    _check_degrades(f"sqlite:///{path}")


def test_a_file_of_another_schema_degrades(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).execute("CREATE TABLE counts (a, b)").connection.commit()
    note = _check_degrades(f"sqlite:///{path}").report.notes[-1]
    assert "read failed" in note


def test_a_file_holding_wrong_values_degrades(tmp_path: Path) -> None:
    store = cs.SqliteCountStore(tmp_path / "v.db")
    history = _long_session(steps=12)
    rules = tokens.rules_fingerprint("o200k_base")
    payloads = {tokens.seed_message_payload(m) for m in history} - {""}
    store.put_many({rules + tokens.digest(p).hex(): 5 for p in payloads})
    conn = sqlite3.connect(tmp_path / "v.db")
    conn.execute("UPDATE counts SET count = 'many'")
    conn.commit()
    _check_degrades(store)


def test_a_locked_file_drops_the_write_and_warns_once(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = cs.SqliteCountStore(path, timeout=0.05)
    store.put_many({"x": 1})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the file
    try:
        link = cs.CountLink(store)
        history = _long_session(steps=12)
        kwargs: dict[str, Any] = {"model": "gpt-4o", "context_window": 20_000}
        _fresh_counters()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = govern(history, count_store=link, **kwargs)
            _drain()
            govern([*history, {"role": "user", "content": "more"}], count_store=link, **kwargs)
            _drain()
        _fresh_counters()
        _same(result, govern(history, **kwargs))  # reads still work under WAL
        assert [str(w.message) for w in caught if cs.NOTE in str(w.message)] == [
            link.failure + ": these counts were not stored"  # type: ignore[operator]
        ]
    finally:
        holder.execute("ROLLBACK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_redis_degrades() -> None:
    _check_degrades(f"redis://127.0.0.1:{_free_port()}/0")


@pytest.mark.filterwarnings("ignore:count store. write failed:RuntimeWarning")
def test_a_broken_store_never_fails_a_governor_step() -> None:
    gov = Governor(model="gpt-4o", context_window=20_000, count_store=Broken())
    history: list[Message] = []
    for step in _session_steps(random.Random(3), _long_session(steps=20)):
        history = copy.deepcopy(step)
        result = gov.govern(history)
        assert result.messages == govern(history, model="gpt-4o", context_window=20_000).messages
    _drain()


# -- Redis, a real server ---------------------------------------------------------------


def test_redis_store_spares_a_replica_the_tokenizer(redis_url: str) -> None:
    store = cs.open_count_store(redis_url, retention_seconds=3600)
    store.put_many({"a": 3, "b": 0})
    assert store.get_many(["a", "b", "c"]) == {"a": 3, "b": 0}
    history = _long_session(seed=21)
    kwargs: dict[str, Any] = {"model": "gpt-4o", "context_window": 20_000, "tools": TOOLS}
    counter, spy = _spied()
    expected = _with_counter(Governor(count_store=redis_url, **kwargs), counter).govern(history)
    expected.report  # noqa: B018
    _drain()
    counter, spy = _spied()
    replica = _with_counter(Governor(count_store=redis_url, **kwargs), counter)
    _same(replica.govern(history), expected)
    assert _inputs(history, TOOLS).isdisjoint(spy.texts)


# -- where users set it: the runner CLI and the proxy ----------------------------------------


def test_run_cli_keeps_counts_between_runs(upstream: FakeUpstream, tmp_path: Path) -> None:
    db = tmp_path / "counts.db"
    history = tmp_path / "chat.json"
    args = ["--model", "gpt-4o-mini", "--base-url", upstream.base_url, "--workspace",
            str(tmp_path), "--history", str(history), "--no-stream",
            "--count-store", f"sqlite:///{db}"]  # fmt: skip
    for task in ("first task", "second task"):
        upstream.push(Reply.text("done"))
        result = CliRunner().invoke(main, ["run", task, *args], catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        assert cs.flush()
    rules = tokens.rules_fingerprint("o200k_base")
    stored = cs.SqliteCountStore(db).get_many(
        [rules + tokens.digest(t).hex() for t in ("first task", "done", "second task")]
    )
    assert len(stored) == 3  # each run's messages, written back
    bad = CliRunner().invoke(main, ["run", "x", *args[:-1], "ftp://nope"])
    assert bad.exit_code == 2 and "count store 'ftp://nope'" in bad.stderr


def _post_chat(base: str, messages: list[Message]) -> httpx.Response:
    body = {"model": "gpt-4o", "messages": messages, "max_tokens": 1000}
    return httpx.post(f"{base}/chat/completions", json=body, timeout=30)


def test_a_restarted_proxy_counts_only_new_messages(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'proxy-counts.db'}"
    config = ProxyConfig(upstream=upstream.base_url, context_window=20_000, counting=CountingConfig(store=url))
    history = _long_session(seed=5, steps=30)
    bodies = []
    for _ in range(2):  # the first proxy, then a restarted one (fresh counters, same file)
        _fresh_counters()
        counter = _cached_exact_counter("gpt-4o")
        assert isinstance(counter, ExactCounter)
        spy = Spy(counter)
        served = Served(create_app(config))
        try:
            upstream.push(Reply.text("ok"))
            assert _post_chat(f"{served.url}/v1", history).status_code == 200
        finally:
            served.stop()
        assert cs.flush()
        bodies.append(upstream.requests[-1])
        if len(bodies) == 1:
            assert _inputs(history) <= set(spy.texts)
    assert _inputs(history).isdisjoint(spy.texts)
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"count_store": "ftp://x"},
        {"count_store": 3},
        {"count_retention": 5},
        {"count_store": "memory://", "count_retention": 0},
    ],
)
def test_bad_count_store_settings_stop_the_proxy(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        ProxyConfig(upstream="http://up.example/v1", **kwargs)


def test_the_count_store_password_is_never_shown() -> None:
    config = ProxyConfig(
        upstream="http://up.example/v1",
        counting=CountingConfig(store="redis://:hunter2secret@cache.example:6379/0"),
    )
    assert "hunter2secret" not in repr(config)
    assert "hunter2secret" not in config.redactor()("connecting to redis://:hunter2secret@x")
    assert ProxyConfig.from_json(config.to_json()) == config


# -- the wire formats' edges read and write the store too ---------------------------------


def _native_body(api: str, steps: int = 12) -> dict[str, Any]:
    """A tool-using session in ``api``'s own wire format; each tool output has a marker
    (``out<step>``) that only its own text holds."""
    if api == "responses":
        items: list[Any] = [{"type": "message", "role": "user", "content": "Fix the bug."}]
        for k in range(steps):
            items.append(
                {"type": "function_call", "call_id": f"c{k}", "name": "read", "arguments": "{}"}
            )
            items.append(
                {"type": "function_call_output", "call_id": f"c{k}", "output": _output(k)}
            )
        return {"model": "gpt-4o", "input": items, "max_output_tokens": 1000}
    contents: list[Any] = [{"role": "user", "parts": [{"text": "Fix the bug."}]}]
    for k in range(steps):
        call = {"functionCall": {"name": "read", "args": {"path": f"m{k}.py"}}}
        contents.append({"role": "model", "parts": [call]})
        answer = {"functionResponse": {"name": "read", "response": {"content": _output(k)}}}
        contents.append({"role": "user", "parts": [answer]})
    return {"contents": contents, "generationConfig": {"maxOutputTokens": 1000}}


def _output(k: int) -> str:
    return f"out{k} " + " ".join(f"w{k}_{i}" for i in range(300))


@pytest.mark.parametrize("api", ["responses", "gemini"])
def test_native_bodies_read_the_store_and_answer_as_without(api: str) -> None:
    """A Responses or Gemini body, governed by a fresh process's counter with a filled
    store, tokenizes none of its tool outputs again, and the body sent is the same."""
    from context_governor.formats import govern_request

    body = _native_body(api)
    kwargs: dict[str, Any] = {"api": api, "model": "gpt-4o", "context_window": 12_000}
    plain = govern_request(copy.deepcopy(body), **kwargs)
    store = cs.MemoryCountStore()
    spies = []
    results = []
    for _ in range(2):  # the first process fills the store, the second reads it
        _fresh_counters()
        # the counter of the API's own profile (a Gemini body's media follows Gemini's rule)
        counter = get_profile(DEFAULT_PROFILES[api]).counter("gpt-4o")
        assert isinstance(counter, ExactCounter)
        spies.append(Spy(counter))
        results.append(govern_request(copy.deepcopy(body), count_store=store, **kwargs))
        _drain()
    first, second = spies
    marked = [f"out{k} " for k in range(12)]
    assert all(any(m in text for text in first.texts) for m in marked)
    assert not any(m in text for m in marked for text in second.texts)
    for result in results:
        assert result.body == plain.body
        assert result.report.to_dict() == plain.report.to_dict()
    assert len(store) > 0

