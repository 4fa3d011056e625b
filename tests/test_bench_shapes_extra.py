"""bench/shapes_extra.py's sessions and bench/headroom_side.py's parts that need no headroom:
the shapes are deterministic and hold what they claim; facts are planted without breaking
JSON; the fake upstream records and answers; the tokenizer cache is what tiktoken pins."""

from __future__ import annotations

import json

import httpx
import pytest

from bench.headroom_side import (
    TIKTOKEN_URLS,
    FakeAnthropic,
    SideRow,
    plant,
    render,
    tiktoken_cache,
)
from bench.shapes import SHAPES
from bench.shapes_extra import EXTRA_SHAPES

STEPS = 40


def _shape(key: str):  # type: ignore[no-untyped-def]
    return next(s for s in EXTRA_SHAPES if s.key == key)


def _results(replay, name: str | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    return [
        m["content"]
        for m in replay.messages
        if m["role"] == "tool" and (name is None or m["name"] == name)
    ]


@pytest.mark.parametrize("key", [s.key for s in EXTRA_SHAPES])
def test_the_shapes_are_deterministic(key: str) -> None:
    make = _shape(key).make
    assert make(STEPS).to_json() == make(STEPS).to_json()
    assert make(STEPS, variant=1).to_json() != make(STEPS).to_json()


def test_the_extra_shapes_stay_out_of_shapes() -> None:
    """The sections written from SHAPES stay as they are."""
    assert not {s.key for s in EXTRA_SHAPES} & {s.key for s in SHAPES}


def test_the_json_shape_returns_json_records_of_5_to_40_kb() -> None:
    results = _results(_shape("json-api").make(STEPS))
    assert len(results) >= STEPS - 2
    layouts = set()
    for text in results:
        data = json.loads(text)
        records = data["data"] if isinstance(data, dict) else data
        assert isinstance(records, list) and records
        assert all(isinstance(r, dict) and "id" in r for r in records)
        assert len(text) <= 40_000
        layouts.add(text.startswith(("[\n", "{\n")))
    assert layouts == {True, False}  # pretty-printed and compact
    assert sorted(map(len, results))[len(results) // 2] >= 5_000


def test_the_ci_shape_has_long_coloured_logs_with_redraws_and_failures() -> None:
    logs = _results(_shape("ci-log").make(80), "ci_job_log")
    assert logs
    for log in logs:
        lines = log.split("\n")
        assert len(lines) >= 1_000
        assert "\x1b[32mPASSED\x1b[0m" in log and "\x1b[31mFAILED\x1b[0m" in log
        assert "\r" in log  # progress bars redrawn in place
        assert "Traceback (most recent call last):" in log
        assert sum("PASSED" in line for line in lines) > 900
        assert 1 <= log.count("AssertionError") <= 3


def test_facts_are_planted_as_json_fields_in_json_and_as_lines_elsewhere() -> None:
    for key, steps in (("json-api", STEPS), ("ci-log", STEPS)):
        replay, facts = plant(_shape(key).make(steps))
        assert facts and all(f.needed for f in facts[:1])
        text = json.dumps(replay.steps)
        assert all(text.count(f.token) == 1 for f in facts)
        if key == "json-api":
            for content in _results(replay):
                json.loads(content)  # still JSON
    assert plant(_shape("json-api").make(STEPS)) == plant(_shape("json-api").make(STEPS))


def test_the_fake_upstream_records_the_body_and_answers_the_agents_message() -> None:
    upstream = FakeAnthropic()
    try:
        upstream.reply = [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}]
        body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
            {"role": "user", "content": "hi"}]}  # fmt: skip
        answer = httpx.post(f"{upstream.url}/v1/messages", json=body).json()
        assert upstream.bodies == [body]
        assert answer["content"] == upstream.reply and answer["stop_reason"] == "tool_use"
    finally:
        upstream.close()


def test_the_tokenizer_cache_holds_the_files_tiktoken_pins(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """tiktoken's own constructors read both files from the cache (checking the SHA-256
    they pin) instead of downloading them."""
    from tiktoken_ext import openai_public

    tiktoken_cache(tmp_path)
    assert len(list(tmp_path.iterdir())) == len(TIKTOKEN_URLS)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert len(openai_public.cl100k_base()["mergeable_ranks"]) == 100_256
    assert len(openai_public.o200k_base()["mergeable_ranks"]) == 199_998


def test_the_section_shows_each_configuration_and_the_verdict() -> None:
    rows = [
        SideRow("json-api", 64_000, "client alone", requests=2, tokens=300, over=1),
        SideRow(
            "json-api",
            64_000,
            "context-governor (proxy, default)",
            requests=2,
            tokens=105,
            newest=2,
            results=2,
            added=[0.01],
        ),
        SideRow(
            "json-api",
            64_000,
            "headroom 0.42.0 (proxy, default)",
            requests=2,
            tokens=100,
            over=1,
            added=[0.05],
        ),
    ]
    text = render(rows, 3)
    assert text.startswith("## Side by side with headroom\n")
    assert "| API / JSON-heavy (64k) | headroom 0.42.0 (proxy, default) | 0.00 | 1.00× |" in text
    assert "1.05×" in text and "10.0 ms" in text
    assert "- API / JSON-heavy: **PASS**." in text
    rows[1].busts = 1
    assert "1 prefixes broken between compactions" in render(rows, 3)
