"""Summary compaction: one stored summary where the cache policy cuts (docs/summaries.md)."""

from __future__ import annotations

import asyncio
import itertools
import json
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from summary_helpers import MARK, scripted_summary, summary_count
from test_compact import WINDOW, _is_prefix, _session

from context_governor import CompactionPolicy, ConfigError, Governor, govern
from context_governor.providers import validate
from context_governor.stages._summary import PREVIOUS_HEAD
from context_governor.summary import (
    MemoryStore,
    SqliteStore,
    Summaries,
    model_summarizer,
    open_store,
    transcript,
)

Message = dict[str, Any]
TESTS = Path(__file__).parent
PLAIN_NOTE = "to fit the context window.]"  # the end of the plain cut note


def _policy(summarizer: Any = scripted_summary, **kwargs: Any) -> CompactionPolicy:
    kwargs.setdefault("name", "scripted_summary")
    # summaries are of cuts: the policy that cuts rather than masks first
    return CompactionPolicy(summary=Summaries(summarizer, **kwargs), mask_first=False)


def _cut(result: Any) -> bool:
    return any(a.stage == "compact" and a.kind == "drop" for a in result.report.actions)


def _compacted_at(result: Any, seen: int, kind: str | None = None) -> bool:
    """Whether a compaction (one of ``kind`` of action: "drop" for a cut) happened at one
    of the requests past the ``seen`` messages of the previous call."""
    return any(
        a.stage == "compact"
        and (kind is None or a.kind == kind)
        and "at message " in a.detail
        and int(a.detail.rsplit("at message ", 1)[1][:-1]) > seen
        for a in result.report.actions
    )


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_one_summary_per_cut_and_requests_only_append_between_compactions(seed: int) -> None:
    calls: list[list[Message]] = []

    def summarizer(messages: list[Message]) -> str:
        calls.append(messages)
        return scripted_summary(messages)

    gov = Governor(context_window=WINDOW, max_output=1000, compaction=_policy(summarizer))
    previous: list[Message] | None = None
    breaks = compactions = cut_compactions = 0
    seen = 0
    for history in _session(120, seed=seed):
        result = gov.govern(history)
        assert result.report.within_budget, result.report.notes
        assert validate(result.messages, provider="openai") == []
        assert not any(a.kind == "fallback" for a in result.report.actions)
        now = _compacted_at(result, seen)
        cut_now = _compacted_at(result, seen, "drop")  # a compaction may only clear results
        seen = len(history)
        compactions += now
        if _cut(result):
            # every request past a cut carries exactly one summary, and no plain note
            assert summary_count(result.messages) == 1
            assert PLAIN_NOTE not in json.dumps(result.messages)
            cut_compactions += cut_now
        else:
            assert summary_count(result.messages) == 0
        if previous is not None and not _is_prefix(previous, result.messages):
            breaks += 1
            assert now, "the prefix changed without a compaction at this request"
        previous = result.messages
    assert cut_compactions >= 3
    assert breaks == compactions
    # one summary per cut block: the summarizer ran once per compaction that cut
    assert len(calls) == cut_compactions


def test_summaries_nest_the_previous_summary_and_the_newly_cut_turns() -> None:
    calls: list[list[Message]] = []

    def summarizer(messages: list[Message]) -> str:
        calls.append(messages)
        return scripted_summary(messages)

    gov = Governor(context_window=WINDOW, max_output=1000, compaction=_policy(summarizer))
    for history in _session(120):
        gov.govern(history)
    assert len(calls) >= 3
    assert not str(calls[0][0]["content"]).startswith(PREVIOUS_HEAD)
    for before, after in itertools.pairwise(calls):
        lead = str(after[0]["content"])
        assert lead.startswith(PREVIOUS_HEAD + scripted_summary(before))
        # only the newly cut turns follow: none of what the previous summary covered
        covered = {json.dumps(m, sort_keys=True) for m in before[1:]}
        assert not any(json.dumps(m, sort_keys=True) in covered for m in after[1:])


def test_stateless_govern_equals_the_governor_with_a_shared_store() -> None:
    store = MemoryStore()
    policy = _policy(store=store)
    gov = Governor(context_window=WINDOW, max_output=1000, compaction=policy)
    stateless = _policy(lambda m: pytest.fail("must come from the store"), store=store)
    for history in _session(90)[::7]:
        expected = gov.govern(history).messages
        again = govern(history, context_window=WINDOW, max_output=1000, compaction=stateless)
        assert again.messages == expected


@pytest.mark.parametrize("use_governor", [True, False])
def test_a_fresh_process_with_the_same_store_sends_byte_identical_requests(
    tmp_path: Path, use_governor: bool
) -> None:
    url = f"sqlite:///{tmp_path / 'summaries.db'}"
    policy = CompactionPolicy(
        summary=Summaries(scripted_summary, store=open_store(url), name="scripted_summary"),
        mask_first=False,
    )
    histories = _session(100)[::9]
    gov = Governor(context_window=WINDOW, max_output=1000, compaction=policy)
    mine = [gov.govern(h).messages for h in histories]
    assert sum(summary_count(m) for m in mine) >= 3
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps([histories, url, WINDOW, use_governor]))
    child = subprocess.run(
        [sys.executable, str(TESTS / "summary_helpers.py"), str(spec)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout == json.dumps(mine)  # byte for byte; its summarizer refuses to run


def _last_history() -> list[Message]:
    return _session(60)[-1]


def _fallback_run(policy: CompactionPolicy) -> Any:
    result = govern(_last_history(), context_window=WINDOW, max_output=1000, compaction=policy)
    assert _cut(result)
    assert result.report.within_budget
    assert summary_count(result.messages) == 0
    assert PLAIN_NOTE in json.dumps(result.messages)  # today's cut
    fallbacks = [a for a in result.report.actions if a.stage == "summary"]
    assert len(fallbacks) == 1 and fallbacks[0].kind == "fallback"
    assert any(n.startswith("summary: ") for n in result.report.notes)
    return result


def test_summarizer_failure_falls_back_to_the_plain_cut_and_is_not_retried() -> None:
    calls = 0

    def broken(messages: list[Message]) -> str:
        nonlocal calls
        calls += 1
        raise RuntimeError("model down")

    policy = _policy(broken)
    result = _fallback_run(policy)
    assert "model down" in result.report.actions[-1].detail or any(
        "model down" in n for n in result.report.notes
    )
    _fallback_run(policy)
    assert calls == 1


@pytest.mark.parametrize("junk", ["", "   ", None, 42])
def test_a_summary_that_is_not_text_falls_back(junk: Any) -> None:
    _fallback_run(_policy(lambda m: junk))


def test_summarizer_timeout_falls_back_within_the_timeout() -> None:
    release = threading.Event()

    def slow(messages: list[Message]) -> str:
        release.wait(10)
        return "late"

    start = time.monotonic()
    try:
        result = _fallback_run(_policy(slow, timeout=0.2))
    finally:
        release.set()
    assert time.monotonic() - start < 5
    assert any("no answer within 0.2s" in n for n in result.report.notes)


class _BrokenStore:
    def __init__(self, fail_get: bool) -> None:
        self.fail_get = fail_get

    def get(self, key: str) -> str | None:
        if self.fail_get:
            raise ConnectionError("store unreachable")
        return None

    def put(self, key: str, text: str) -> None:
        raise ConnectionError("store read-only")


@pytest.mark.parametrize("fail_get", [True, False])
def test_store_failure_falls_back_to_the_plain_cut(fail_get: bool) -> None:
    result = _fallback_run(_policy(store=_BrokenStore(fail_get)))
    assert any("summary store failed" in n for n in result.report.notes)


def test_corrupt_sqlite_entry_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    policy = _policy(store=store)
    good = govern(_last_history(), context_window=WINDOW, max_output=1000, compaction=policy)
    assert summary_count(good.messages) == 1
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE summaries SET text = x'00ff'")
    _fallback_run(_policy(store=SqliteStore(path)))


def test_unreachable_redis_falls_back() -> None:
    store = open_store("redis://127.0.0.1:1/0")  # nothing listens on port 1
    _fallback_run(_policy(store=store))


def test_async_summarizer_inside_a_running_event_loop() -> None:
    async def summarizer(messages: list[Message]) -> str:
        await asyncio.sleep(0)
        return scripted_summary(messages)

    async def main() -> Any:
        return govern(
            _last_history(),
            context_window=WINDOW,
            max_output=1000,
            compaction=_policy(summarizer),
        )

    result = asyncio.run(main())
    assert summary_count(result.messages) == 1


def test_the_summarizer_never_sees_more_than_its_budget() -> None:
    from context_governor.profiles import get_profile

    seen: list[int] = []
    counter = get_profile("openai").counter(None)

    def summarizer(messages: list[Message]) -> str:
        seen.append(counter.prompt_tokens(messages, None))
        return "short"

    result = govern(
        _session(100)[-1],
        context_window=64_000,
        max_output=1000,
        compaction=CompactionPolicy(  # cutting, not masking: the summary is of a cut
            target=4000, summary=Summaries(summarizer, input_tokens=2000), mask_first=False
        ),
    )
    assert summary_count(result.messages) == 1
    assert seen and max(seen) <= 2000


def test_a_long_summary_is_shortened_to_its_room() -> None:
    policy = _policy(lambda m: "word " * 5000, max_tokens=200)
    result = govern(_last_history(), context_window=WINDOW, max_output=1000, compaction=policy)
    assert result.report.within_budget
    assert summary_count(result.messages) == 1
    assert "summary shortened" in json.dumps(result.messages)


def test_model_summarizer_sends_the_prompt_and_a_transcript() -> None:
    from context_governor.llm._scripted import ScriptedModel

    requests: list[Any] = []

    class Recording(ScriptedModel):
        async def complete(self, messages: Any, **kwargs: Any) -> Any:
            requests.append((list(messages), kwargs))
            return await super().complete(messages, **kwargs)

    summarizer = model_summarizer(lambda: Recording(["the summary"]), max_tokens=300)
    result = govern(
        _last_history(), context_window=WINDOW, max_output=1000, compaction=_policy(summarizer)
    )
    assert "the summary" in json.dumps(result.messages)
    assert requests  # one per cut, oldest first: the summaries nest
    sent, kwargs = requests[-1]
    assert kwargs["max_tokens"] == 300
    assert PREVIOUS_HEAD in sent[1]["content"] or len(requests) == 1
    assert sent[0]["role"] == "system" and "decisions" in sent[0]["content"]
    assert sent[1]["role"] == "user" and "## tool result" in sent[1]["content"]


def test_transcript_names_calls_and_results() -> None:
    text = transcript(
        [
            {"role": "user", "content": "read a.py"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c", "name": "read_file", "content": "x = 1"},
        ]
    )
    assert 'read_file({"path": "a.py"})' in text and "## tool result (read_file)\nx = 1" in text


def _writer(path: str, worker: int, keys: int, out: Any) -> None:
    store = SqliteStore(path)
    for k in range(keys):
        store.put(f"shared{k}", f"from {worker}")
        store.put(f"own{worker}_{k}", f"{worker}:{k}")
    out.put([store.get(f"shared{k}") for k in range(keys)])


def test_sqlite_store_is_safe_under_concurrent_writer_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    workers = [ctx.Process(target=_writer, args=(path, w, 40, out)) for w in range(4)]
    for p in workers:
        p.start()
    seen = [out.get(timeout=60) for _ in workers]
    for p in workers:
        p.join(60)
        assert p.exitcode == 0
    store = SqliteStore(path)
    first = [store.get(f"shared{k}") for k in range(40)]
    assert all(view == first for view in seen)  # every process sees the first writer's text
    assert all(store.get(f"own{w}_{k}") == f"{w}:{k}" for w in range(4) for k in range(40))


def test_retention_expires_entries(tmp_path: Path) -> None:
    for store in (MemoryStore(retention_seconds=0.05), SqliteStore(tmp_path / "r.db", 0.05)):
        store.put("k", "v")
        assert store.get("k") == "v"
        time.sleep(0.1)
        assert store.get("k") is None


@pytest.mark.parametrize("url", ["", "sqlite:///", "ftp://x", "postgres://db/x", 3])
def test_bad_store_urls_are_config_errors(url: Any) -> None:
    with pytest.raises(ConfigError):
        open_store(url)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"summarizer": "not callable"},
        {"summarizer": scripted_summary, "timeout": 0},
        {"summarizer": scripted_summary, "timeout": float("nan")},
        {"summarizer": scripted_summary, "max_tokens": 3},
        {"summarizer": scripted_summary, "input_tokens": True},
        {"summarizer": scripted_summary, "store": object()},
    ],
)
def test_bad_summary_settings_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        Summaries(**kwargs)


def test_summary_option_errors() -> None:
    with pytest.raises(ConfigError, match="needs a summarizer"):
        govern([{"role": "user", "content": "hi"}], compaction="summary")
    with pytest.raises(ConfigError, match="Summaries"):
        CompactionPolicy(summary=scripted_summary)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="cache policy"):
        CompactionPolicy(kind="seed", summary=Summaries(scripted_summary))  # deprecated


def test_no_cut_no_summary() -> None:
    history = _session(5)[-1]
    result = govern(history, context_window=WINDOW, max_output=1000, compaction=_policy())
    assert result.messages is history
    assert MARK not in json.dumps(result.messages)


TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("read_file", "exec", "grep")
]


@pytest.mark.parametrize("api", ["anthropic", "responses"])
def test_native_formats_get_one_summary_through_the_same_pipeline(api: str) -> None:
    from context_governor.formats._request import govern_request
    from context_governor.llm._anthropic_client import AnthropicClient
    from context_governor.llm._responses_client import ResponsesClient

    client: Any = (
        AnthropicClient("claude-sonnet-4-5", api_key="k")
        if api == "anthropic"
        else ResponsesClient("gpt-4o", api_key="k")
    )
    seen: list[list[Message]] = []

    def summarizer(messages: list[Message]) -> str:
        json.dumps(messages)  # the edge's private state never reaches the summarizer
        seen.append(messages)
        return scripted_summary(messages)

    body = client.request_body(_last_history(), TOOLS, 1000)
    policy = _policy(summarizer)
    result = govern_request(body, api=api, context_window=WINDOW, compaction=policy)
    assert result.report.violations == []
    assert not any(a.kind == "fallback" for a in result.report.actions)
    assert json.dumps(result.body).count(MARK) == 1
    calls = len(seen)  # one per cut of the history, oldest first (they nest)
    assert calls >= 1
    again = govern_request(body, api=api, context_window=WINDOW, compaction=policy)
    assert json.dumps(again.body) == json.dumps(result.body) and len(seen) == calls


def test_the_key_covers_only_what_is_sent() -> None:
    cfg = Summaries(scripted_summary)
    plain = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    carried = {
        "role": "user",
        "_edge": object(),
        "content": [{"type": "text", "text": "hi", "_part": object()}],
    }
    assert cfg.key([plain]) == cfg.key([carried])
    assert cfg.key([plain]) != cfg.key([{"role": "user", "content": "hi!"}])
    assert cfg.key([plain]) != Summaries(scripted_summary, max_tokens=500).key([plain])


def test_a_summarizer_that_never_returns_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        "import sys, threading\n"
        f"sys.path.insert(0, {str(TESTS)!r})\n"
        "from test_compact import WINDOW, _session\n"
        "from context_governor import CompactionPolicy, govern\n"
        "from context_governor.summary import Summaries\n"
        "def hang(messages):\n"
        "    threading.Event().wait()\n"
        "policy = CompactionPolicy(summary=Summaries(hang, timeout=0.3), mask_first=False)\n"
        "r = govern(_session(60)[-1], context_window=WINDOW, max_output=1000, compaction=policy)\n"
        "print(any('no answer within' in n for n in r.report.notes))\n"
    )
    child = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "True"


def test_bench_summaries_smoke() -> None:
    from bench.summaries import render
    from bench.summaries import run as bench_run

    results = bench_run(80, [16_000])
    plain, summarized, every = (r.at(80) for r, _ in results)
    assert all(r["over_budget"] == 0 and r["invalid"] == 0 for r in (plain, summarized, every))
    assert summarized["share"] > every["share"]
    calls = [s.calls for _, s in results if s is not None]
    assert 0 < calls[0] < calls[1]  # one per cut, against one per request over the trigger
    assert "cache + summaries" in render(results, 80)


def test_a_fact_that_was_cut_is_answered_with_summaries_and_not_without() -> None:
    """A scripted agent answers from what it is sent: the deploy port was found early,
    in a tool result the cache policy later cuts. An extractive summarizer keeps the
    lines that state a finding; the agent finds the port only when it is summarized."""
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Deploy the service, then tell me which port it uses."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "cfg",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "deploy.toml"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "cfg",
            "name": "read_file",
            "content": "FINDING: the service listens on port 48213\n" + "x = 1\n" * 400,
        },
    ]
    history += _session(60)[-1][2:]  # a long session after it: the finding gets cut
    history.append({"role": "assistant", "content": "Deployed."})
    history.append({"role": "user", "content": "Which port does it use?"})

    def extractive(messages: list[Message]) -> str:
        found = [
            line
            for m in messages
            for line in str(m.get("content") or "").splitlines()
            if line.startswith("FINDING:") or line.startswith("- FINDING:")
        ]
        return "\n".join(f"- {line.removeprefix('- ')}" for line in found) or "no findings"

    def agent(request: list[Message]) -> str:
        text = json.dumps(request)
        marker = "FINDING: the service listens on port "
        return text.split(marker, 1)[1][:5] if marker in text else "I do not know"

    cutting = CompactionPolicy(mask_first=False)  # the plain note where it cuts
    plain = govern(history, context_window=WINDOW, max_output=1000, compaction=cutting)
    assert _cut(plain) and "48213" not in json.dumps(plain.messages)
    summarized = govern(
        history, context_window=WINDOW, max_output=1000, compaction=_policy(extractive)
    )
    assert _cut(summarized)
    assert agent(plain.messages) == "I do not know"
    assert agent(summarized.messages) == "48213"


def test_after_a_failed_summary_the_next_cut_is_summarized_from_scratch() -> None:
    calls: list[list[Message]] = []

    def first_fails(messages: list[Message]) -> str:
        calls.append(messages)
        if len(calls) == 1:
            raise RuntimeError("transient")
        return scripted_summary(messages)

    gov = Governor(context_window=WINDOW, max_output=1000, compaction=_policy(first_fails))
    outcomes = []
    for history in _session(120):
        result = gov.govern(history)
        if _cut(result):
            outcomes.append(summary_count(result.messages))
    assert outcomes[0] == 0 and outcomes[-1] == 1  # the plain cut first, summaries later
    assert len(calls) >= 3
    assert not str(calls[1][0]["content"]).startswith(PREVIOUS_HEAD)  # nothing to nest
    assert str(calls[2][0]["content"]).startswith(PREVIOUS_HEAD)


def test_failed_summaries_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from context_governor.stages import _summary as stage

    monkeypatch.setattr(stage, "MAX_FAILED", 2)
    cfg = Summaries(scripted_summary)
    for key in ("a", "b", "c"):
        stage._remember(cfg, key, "failed")
    assert list(cfg.failed) == ["b", "c"]
