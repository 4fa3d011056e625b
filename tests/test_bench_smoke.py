"""Smoke test of bench/: its measures on a 20-step replay, in a few seconds.

The figures themselves are not asserted (they depend on the machine); what is
asserted is that they are computed sanely, so that `make bench` cannot quietly
report nonsense.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import cache, pricing, run, sessions, shapes, speed  # noqa: E402
from bench.anthropic_cache import write_section  # noqa: E402

STEPS = 20


@pytest.fixture(scope="module")
def replay() -> sessions.Replay:
    return sessions.coding_session(STEPS)


def test_sessions_are_deterministic_and_shaped_like_the_issue(replay: sessions.Replay) -> None:
    again = sessions.coding_session(STEPS)
    assert json.dumps(replay.to_json()) == json.dumps(again.to_json())
    assert len(replay.steps) == STEPS
    other = sessions.coding_session(STEPS, variant=1)
    # a variant differs in ids only: same sizes, different tool-call ids
    assert sessions.describe(other) == sessions.describe(replay)
    assert replay.steps[1][0]["tool_calls"][0]["id"] != other.steps[1][0]["tool_calls"][0]["id"]
    for message in replay.messages:
        if message["role"] == "tool":
            assert sessions.MIN_RESULT_CHARS <= len(message["content"]) <= sessions.MAX_RESULT_CHARS
    # every step after the opening starts with an assistant message; calls are answered
    for step in replay.steps[1:]:
        assert step[0]["role"] == "assistant"
        ids = [c["id"] for c in step[0].get("tool_calls") or ()]
        assert [m["tool_call_id"] for m in step if m["role"] == "tool"] == ids
    longer = sessions.coding_session(300)
    info = sessions.describe(longer)
    assert 600 <= info["messages"] <= 800
    assert info["user_messages"] >= 8  # a follow-up every ~30 steps
    assert info["parallel_steps"] > 0


def test_long_history_has_the_exact_size() -> None:
    history = sessions.long_history(333)
    assert len(history.steps) == 1
    assert len(history.messages) == 333


def test_replay_round_trips_through_json(replay: sessions.Replay) -> None:
    assert sessions.Replay.from_json(json.loads(json.dumps(replay.to_json()))) == replay


def test_histories_grow_one_list_in_place(replay: sessions.Replay) -> None:
    seen = [(id(h), len(h)) for h in replay.histories()]
    assert len({i for i, _ in seen}) == 1
    lengths = [n for _, n in seen]
    assert lengths == sorted(lengths) and lengths[-1] == len(replay.messages)


def test_stats() -> None:
    assert speed.percentile([5, 1, 3, 2, 4], 50) == 3
    assert speed.percentile(list(range(1, 101)), 95) == 95
    assert speed.across_repeats([[1, 10, 3], [2, 20, 1], [3, 30, 2]]) == [2, 20, 2]
    with pytest.raises(ValueError):
        speed.across_repeats([[1, 2], [1]])
    assert speed.steady_start(300) == 30 and speed.steady_start(5) == 1


def test_deep_sizeof_counts_nested_and_shared_objects_once() -> None:
    text = "x" * 1000
    one = speed.deep_sizeof([{"content": text}])
    two = speed.deep_sizeof([{"content": text}, {"content": text}])
    assert one > 1000
    assert two - one < 1000  # the shared string is counted once


def test_speed_on_a_short_replay(replay: sessions.Replay) -> None:
    window = 8_000
    times = speed.time_replay(speed.governor_fn(replay, window), replay)
    assert len(times) == STEPS and all(t > 0 for t in times)
    sent: list[list[dict[str, object]]] = []
    speed.time_replay(speed.govern_fn(replay, window), replay, lambda r: sent.append(r.messages))
    dumps = speed.time_dumps(replay, sent)
    assert len(dumps) == STEPS and all(t > 0 for t in dumps)
    memory = speed.measure_memory(speed.governor_fn, replay, window)
    assert memory.messages_bytes > len(json.dumps(replay.messages)) // 2
    assert memory.retained_bytes >= 0 and memory.peak_bytes > 0


def test_langchain_trim(replay: sessions.Replay) -> None:
    convert_ns, trim_ns = speed.time_langchain(replay, 8_000)
    assert len(convert_ns) == len(trim_ns) == STEPS


def test_interleaved_repeat_times_every_contender_at_every_step(
    replay: sessions.Replay,
) -> None:
    fresh = sessions.coding_session(STEPS, variant=1)
    default = sessions.coding_session(STEPS, variant=2)
    out = speed.interleaved_repeat(
        replay, fresh, 8_000, langchain=speed.langchain_available(), other=default
    )
    assert {"Governor", speed.GOV_DEFAULT, "govern()", "json.dumps (sent body)"} <= set(out)
    assert all(len(times) == STEPS for times in out.values())
    # the Governor's parts and its worker's counting exist only on appending steps
    partial = {speed.GOV_BACKGROUND, *speed.GOV_PARTS}
    assert all(min(times) > 0 for label, times in out.items() if label not in partial)
    assert all(min(out[label]) >= 0 and max(out[label]) > 0 for label in partial)
    assert out[speed.GOV_TOTAL] == [
        a + b for a, b in zip(out["Governor"], out[speed.GOV_BACKGROUND], strict=True)
    ]


def test_the_step_replay_alone_prints_every_governor_row() -> None:
    from bench import step

    lines = step.main(["12", "1"])
    labels = {line.split(" µs  ", 1)[1] for line in lines}
    assert {"Governor", speed.GOV_PROBE, speed.GOV_RULES, speed.GOV_REST} <= labels
    assert all(float(line.split("x", 1)[0]) >= 0 for line in lines)


def test_providers_step_times_every_profile() -> None:
    from bench import providers_step

    lines = providers_step.main(["40", "1"])
    assert [line.split("x  ", 1)[1] for line in lines] == list(providers_step.PROFILES)
    assert all(float(line.split("x", 1)[0]) > 0 for line in lines)


def test_floor_step_times_and_counts_every_config() -> None:
    from bench import floor_step

    lines = floor_step.main(["16", "1"])
    rows = [line for line in lines if line.startswith("  ")]
    assert len(rows) == len(floor_step.SESSIONS) * len(floor_step.CONFIGS)
    assert all("full runs:" in row and " µs " in row for row in rows)
    # the first call is no appending step: every config leaves the fast path at least once
    assert all(row.split("full runs: ", 1)[1] for row in rows)


def test_prefix_and_cost_definitions() -> None:
    a, b, c = (cache.serialize({"role": "user", "content": t}) for t in "abc")
    assert cache.common_prefix([a, b], [a, b, c]) == 2
    assert cache.common_prefix([a, b], [a, c]) == 1
    assert cache.common_prefix([], [a]) == 0
    assert cache.effective_cost(100, 0) == 100
    assert cache.effective_cost(0, 100) == pytest.approx(10)
    assert cache.effective_cost(50, 50) == pytest.approx(55)
    # key order does not matter, content does
    assert cache.serialize({"a": 1, "b": 2}) == cache.serialize({"b": 2, "a": 1})
    tool = cache.serialize({"role": "tool", "content": "t1"})
    tool2 = cache.serialize({"role": "tool", "content": "t2"})
    history, roles = [a, tool, b, tool2], ["user", "tool", "user", "tool"]
    assert cache.recent_tool_results_kept(history, roles, {a, tool, b, tool2}) == 2
    assert cache.recent_tool_results_kept(history, roles, {a, tool, b}) == 0
    assert cache.recent_tool_results_kept(history, roles, {tool2}) == 1
    assert cache.recent_share_kept(history, {b, tool2}, 2) == 1.0
    assert cache.recent_share_kept(history, {tool2}, 4) == 0.25


def _identity(replay: sessions.Replay, window: int) -> cache.StepFn:
    frozen = replay.steps[0]
    return lambda history: cache.Outcome(list(frozen), True)


def test_identical_consecutive_requests_are_fully_cached(replay: sessions.Replay) -> None:
    same = cache.measure(cache.Config("same request", _identity), replay, 32_000)
    assert same.steps[0].cached == 0
    assert all(s.cached == s.tokens for s in same.steps[1:])
    figures = same.at(STEPS)
    assert figures["breaks"] == 0
    assert figures["share"] == pytest.approx((STEPS - 1) / STEPS)
    tokens = same.steps[0].tokens
    assert figures["cost"] == pytest.approx(tokens + 0.1 * tokens * (STEPS - 1))


def test_cache_metrics_are_sane(replay: sessions.Replay) -> None:
    runs = cache.run_cache(replay, windows=(32_000, 8_000))
    labels = [c.label for c in cache.CONFIGS]
    assert [r.config for r in runs] == labels + labels
    for r in runs:
        assert len(r.steps) == STEPS
        for s in r.steps:
            assert 0 <= s.cached <= s.tokens
            assert all(0.0 <= v <= 1.0 for v in s.recent_share.values())
            assert s.recent_tool_results >= 0
            assert s.violations == 0  # every configuration sends valid OpenAI requests here
        for mark in cache.marks(STEPS):
            figures = r.at(mark)
            assert 0.0 <= figures["share"] <= 1.0
            assert 0.1 * figures["tokens"] - 1e-9 <= figures["cost"] <= figures["tokens"] + 1e-9
            assert figures["over_budget"] == sum(not s.within_budget for s in r.steps[:mark])
    full_32k, full_8k = runs[0], runs[len(labels)]
    # the whole history only ever grows: every request extends the previous one
    assert all(
        s.cached == p.tokens for p, s in zip(full_32k.steps, full_32k.steps[1:], strict=False)
    )
    assert full_32k.at(STEPS)["breaks"] == 0
    # the reference has no report: o200k decides, and 8k is too small for it
    assert full_8k.at(STEPS)["over_budget"] == sum(s.tokens > full_8k.budget for s in full_8k.steps)
    assert full_8k.at(STEPS)["over_budget"] > 0
    for r in runs[1 : len(labels)]:  # governed at 32k: everything fits
        assert all(s.within_budget for s in r.steps)
        # governance never sends more than the whole history
        assert all(g.tokens <= f.tokens + 50 for g, f in zip(r.steps, full_32k.steps, strict=True))


def test_marks() -> None:
    assert cache.marks(20) == [10, 20]
    assert cache.marks(300) == [10, 100, 300]
    assert cache.marks(5) == [5]


def test_quick_run_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "benchmarks.md"
    assert run.main(["--quick", "--steps", "12", "--history", "200", "--no-nanobot",
                     "--out", str(out)]) == 0  # fmt: skip
    text = out.read_text(encoding="utf-8")
    assert "## Targets" in text and "## Cache friendliness" in text
    assert text.count("PASS") + text.count("MISS") + text.count("n/a") >= 4
    assert "## Governing a long Messages session" in text
    assert "## Governing a long Responses session, next to Chat Completions" in text
    for heading in ("## Summary compaction", "## Exact token counters", "## Proxy per-request cost"):
        assert heading in text
    assert shapes.HEADING in text


def test_pricing_prices_reads_and_writes_per_provider() -> None:
    assert pricing.FLAT.request_cost(10_000, 8_000) == cache.effective_cost(2_000, 8_000)
    # Anthropic: what was not read is written at 1.25x, reads at 0.1x
    assert pricing.ANTHROPIC.request_cost(10_000, 8_000) == pytest.approx(2_000 * 1.25 + 800)
    assert pricing.ANTHROPIC.request_cost(5_000, 0) == pytest.approx(6_250)
    # OpenAI gpt-4o: no write charge, reads at half price
    assert pricing.OPENAI_4O.request_cost(10_000, 8_000) == pytest.approx(2_000 + 4_000)
    # under the smallest cacheable prompt nothing is read or written
    assert pricing.ANTHROPIC.request_cost(900, 800) == 900
    assert pricing.OPENAI_4O.request_cost(900, 800) == 900
    assert pricing.GEMINI_25.request_cost(3_000, 2_100) == pytest.approx(900 + 210)
    assert pricing.GEMINI_25.request_cost(3_000, 1_500) == 3_000  # under its 2,048
    assert set(pricing.PRICES) >= {"anthropic", "openai-4o", "openai-4.1", "openai-5"}


def test_run_cost_under_flat_pricing_is_the_effective_cost(replay: sessions.Replay) -> None:
    r = cache.measure(cache.governor("cache", profile="openai"), replay, 32_000)
    assert r.cost(pricing.FLAT) == pytest.approx(r.at(STEPS)["cost"])
    # a dearer cached read never makes a run cheaper
    assert r.cost(pricing.OPENAI_4O) >= r.cost(pricing.OPENAI_5)


def test_session_shapes_are_deterministic_and_shaped_like_their_names() -> None:
    by_key = {s.key: s.make(120) for s in shapes.SHAPES}
    assert set(by_key) == {"coding", "big-reads", "research", "chat", "bursts", "screens"}
    for key, replay in by_key.items():
        again = shapes.SHAPES[list(by_key).index(key)].make(120)
        assert json.dumps(replay.to_json()) == json.dumps(again.to_json()), key
        assert len(replay.steps) == 120
        for step in replay.steps[1:]:
            assert step[0]["role"] == "assistant"
            ids = [c["id"] for c in step[0].get("tool_calls") or ()]
            assert [m["tool_call_id"] for m in step if m["role"] == "tool"] == ids
    assert by_key["coding"] == sessions.coding_session(120)
    size = {k: shapes.describe(r) for k, r in by_key.items()}
    assert 20_000 <= size["big-reads"]["result_chars_max"] <= 61_000
    research = [m for m in by_key["research"].messages if m["role"] == "tool"]
    assert all(300 <= len(m["content"]) <= 2_000 for m in research)
    assert size["research"]["tool_results"] >= 3 * size["research"]["tool_steps"]
    assert 0 < size["chat"]["tool_steps"] <= 0.2 * 120
    assert 8 <= size["bursts"]["max_parallel"] <= 20
    screens = [m for m in by_key["screens"].messages if isinstance(m.get("content"), list)]
    assert len(screens) == 119  # a screenshot after every action
    assert all(m["content"][1]["image_url"]["url"].startswith("data:image/png;base64,") for m in screens)


def test_session_shapes_quick_run_renders_its_own_section(tmp_path: Path) -> None:
    results = shapes.run(8, windows=(32_000,))
    # the default as each price class gets it
    assert len(results) == len(shapes.PRICE_CLASSES) * len(shapes.SHAPES)
    for r in results:
        v = shapes.verdict(r)
        assert 0.0 <= v.share <= 1.0 and 0.0 <= r.share_ceiling() <= 1.0
        assert all(ratio > 0 for ratio in v.costs.values())
        assert set(v.costs) == {p.name for p in r.prices.pricings}
        assert 0.0 <= r.verbatim_goal() <= r.verbatim_cap
    # a dearer read compacts earlier: never larger requests on average than at 0.1x reads
    for key in {r.shape.key for r in results}:
        sizes = [r.mean_tokens(r.ours) for r in results if r.shape.key == key]
        assert sizes == sorted(sizes, reverse=True)
    section = shapes.render(results)
    assert section.startswith(shapes.HEADING + "\n")
    # a row per run in the targets table, and in the fidelity table a row per run plus
    # the seed policy's once per shape
    assert section.count("| 32,000 |") == 2 * len(results) + len(shapes.SHAPES)
    assert section.count("| 32,000 | seed policy |") == len(shapes.SHAPES)
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# B\n\n## A\n\nkeep\n\n## Session shapes\n\nSTALE\n\n## Method\n\nm\n")
    write_section(doc, section)
    text = doc.read_text(encoding="utf-8")
    assert "STALE" not in text and "keep" in text and text.rstrip().endswith("m")
    assert text.count(shapes.HEADING) == 1


def test_nanobot_side_times_every_step() -> None:
    python = speed.ref_python()
    assert python is not None, (
        "no nanobot reference environment (.venv-ref): run `make test` or `make bench`"
    )
    short = sessions.coding_session(5)
    with speed.NanobotProcess(
        python,
        window=8_000,
        warmup=sessions.coding_session(3, seed=1),
        replays=[short, sessions.coding_session(5, variant=1)],
        histories=[sessions.long_history(50)],
    ) as nano:
        assert nano.version == "0.2.2"
        runs = [nano.replay(0), nano.replay(1)]
        assert [len(run) for run in runs] == [5, 5]
        assert all(t > 0 for run in runs for t in run)
        assert nano.first_call(0) > 0
        assert nano.peak(0) > 0


def test_real_sessions_section_measures_counts_and_the_screenshot() -> None:
    """bench.real_sessions on the recorded corpus: a row per request with usage, and a
    5 MB screenshot on every wire format counted within 10% of its documented figure."""
    from bench import real_sessions

    usage = real_sessions.measure_usage()
    assert len(usage) >= 40 and all(u.upstream > 0 for u in usage)
    media, text_ms, text_tokens = real_sessions.measure_media(1)
    assert {m.api for m in media} == {"anthropic", "openai", "responses", "gemini"}
    for m in media:
        assert abs(m.counted - m.documented) <= 0.1 * m.documented, m
    assert text_tokens > 1_000_000  # what its base64 was counted as before
    section = real_sessions.render(usage, media, text_ms, text_tokens)
    assert section.startswith(real_sessions.HEADING + "\n")
    assert section.count("\n| ") == len(usage) + len(media) + 4  # and two header rows each


def test_reasoning_section_counts_what_the_provider_reads() -> None:
    """bench.reasoning on a short session: both wire formats counted within 5% of what the
    provider counts (earlier reasoning at nothing), where counting the ciphertext and the
    earlier thinking as text was further off; no governed request over its window."""
    from bench import reasoning

    result = reasoning.run(36, windows=(32_000,))
    assert [a.api for a in result.accuracy] == ["responses", "anthropic"]
    for a in result.accuracy:
        median, low, high = a.now
        assert 0.99 <= low <= median <= high <= 1.05, a
        assert a.before[2] > 1.3, a  # the old count, after a follow-up prompt
    assert [f.over for f in result.fits] == [0, 0]
    assert all(0 < f.agent_kept <= 1 and f.outputs_masked > 0 for f in result.fits)
    section = reasoning.render(result)
    assert section.startswith(reasoning.HEADING + "\n")
    assert section.count("\n| ") == len(result.accuracy) + len(result.fits) + 4
