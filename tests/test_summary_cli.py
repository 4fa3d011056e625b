"""Summaries from the command line: ``run --summary-model`` and the proxy's flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_upstream import FakeUpstream, Reply
from summary_helpers import MARK
from test_compact import _session

from context_governor.cli import main
from context_governor.summary._summarizer import SUMMARY_PROMPT

#: more replies than the summary calls of a cold store (one per cut); the rest are cleared
SPARE = 30


def _reply(body: dict[str, Any]) -> Reply:
    if body.get("model") == "small-model":
        return Reply.text("The parser fix is half done; tests in tests/ fail.")
    return Reply.text("ok")


def _cli(args: list[str], env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def test_run_with_a_summary_model_sends_one_summary_from_the_store(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    history = tmp_path / "chat.json"
    history.write_text(json.dumps(_session(60)[-1]))
    store = tmp_path / "summaries.db"
    upstream.push(*[_reply] * SPARE)
    args = [
        "run",
        "go on",
        "--model",
        "gpt-4o-mini",
        "--base-url",
        upstream.base_url,
        "--workspace",
        str(tmp_path),
        "--context-window",
        "16000",
        "--no-stream",
        "--summary-model",
        "small-model",
        "--summary-store",
        f"sqlite:///{store}",
    ]
    result = _cli([*args, "--history", str(history)], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.stderr
    upstream.replies.clear()  # the spare replies
    *summaries, agent = upstream.requests
    assert summaries and all(s["model"] == "small-model" for s in summaries)
    assert all(s["messages"][0]["content"] == SUMMARY_PROMPT for s in summaries)
    assert agent["model"] == "gpt-4o-mini"
    sent = json.dumps(agent["messages"])
    assert sent.count(MARK) == 1 and "The parser fix is half done" in sent
    # a second run on the same history reads the summary back: no summarizer call
    history.write_text(json.dumps(_session(60)[-1]))
    upstream.push(Reply.text("ok"))
    again = _cli([*args, "--history", str(history)], env={"OPENAI_API_KEY": "k"})
    assert again.exit_code == 0, again.stderr
    assert len(upstream.requests) == len(summaries) + 2
    assert upstream.requests[-1]["messages"] == agent["messages"]


def test_run_summary_model_failure_falls_back_and_the_run_goes_on(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    history = tmp_path / "chat.json"
    history.write_text(json.dumps(_session(60)[-1]))
    upstream.push(Reply.error(400, "no such model"), Reply.text("ok"))  # the first fails: no more
    result = _cli(
        [
            "run",
            "go on",
            "--model",
            "gpt-4o-mini",
            "--base-url",
            upstream.base_url,
            "--workspace",
            str(tmp_path),
            "--context-window",
            "16000",
            "--no-stream",
            "--summary-model",
            "missing",
            "--history",
            str(history),
            "-v",
        ],
        env={"OPENAI_API_KEY": "k"},
    )
    assert result.exit_code == 0, result.stderr
    assert "the plain cut note is used" in result.stderr
    assert MARK not in json.dumps(upstream.requests[-1]["messages"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--summary-store", "memory://"], "--summary-store needs --summary-model"),
        (
            ["--summary-model", "m", "--compaction", "seed"],
            "--summary-model needs --compaction cache",
        ),
        (["--summary-model", "m", "--summary-store", "ftp://x"], "summary store 'ftp://x'"),
    ],
)
def test_run_summary_usage_errors(extra: list[str], message: str, tmp_path: Path) -> None:
    result = _cli(
        [
            "run",
            "hi",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--workspace",
            str(tmp_path),
            *extra,
        ]
    )
    assert result.exit_code == 2
    assert message in result.stderr
