"""The proxy's summaries: --summary-model/--summary-store over real HTTP, the config."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_upstream import FakeUpstream, Reply
from summary_helpers import MARK
from test_compact import _session
from test_proxy import Served

from context_governor import ConfigError
from context_governor.proxy import ProxyConfig, SummariesConfig, create_app
from context_governor.summary._summarizer import SUMMARY_PROMPT

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("read_file", "exec", "grep")
]


def _reply(body: dict[str, Any]) -> Reply:
    if body.get("model") == "small":
        return Reply.text("Summary: the parser fix is half done.")
    return Reply.text("ok")


@pytest.fixture
def serve() -> Iterator[Any]:
    started: list[Served] = []

    def start(config: ProxyConfig) -> str:
        served = Served(create_app(config))
        started.append(served)
        return f"{served.url}/v1"

    yield start
    for served in started:
        served.stop()


def _post(base: str, messages: list[dict[str, Any]]) -> httpx.Response:
    body = {"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS, "max_tokens": 1000}
    return httpx.post(
        f"{base}/chat/completions",
        json=body,
        headers={"authorization": "Bearer sk-client"},
        timeout=30,
    )


def test_replicas_sharing_a_store_forward_identical_bodies(
    upstream: FakeUpstream, serve: Any, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'proxy.db'}"
    common = {"upstream": upstream.base_url, "context_window": 16_000}
    summaries = SummariesConfig(model="small", store=store)
    first = serve(ProxyConfig(api_key="sk-proxy", summaries=summaries, **common))
    history = _session(100)[-1]  # long enough to cut turns, not only clear results
    upstream.push(*[_reply] * 30)
    assert _post(first, history).status_code == 200
    upstream.replies.clear()  # the spare replies
    *summaries, forwarded = upstream.requests  # one summary call per cut, oldest first
    assert summaries and all(s["model"] == "small" for s in summaries)
    assert all(s["messages"][0]["content"] == SUMMARY_PROMPT for s in summaries)
    sent = json.dumps(forwarded["messages"])
    assert sent.count(MARK) == 1 and "the parser fix is half done" in sent

    # another replica (its own Summaries object, same store): no summary call, same body
    replica = serve(
        ProxyConfig(
            api_key="sk-proxy",
            summaries=SummariesConfig(model="small", store=store, timeout=5.0),
            **common,
        )
    )
    upstream.push(Reply.text("ok"))
    assert _post(replica, history).status_code == 200
    assert len(upstream.requests) == len(summaries) + 2
    assert upstream.requests[-1]["messages"] == forwarded["messages"]


def test_a_failing_summary_model_never_fails_the_request(
    upstream: FakeUpstream, serve: Any
) -> None:
    base = serve(
        ProxyConfig(
            upstream=upstream.base_url,
            context_window=16_000,
            summaries=SummariesConfig(model="gone"),
            api_key="k",
        )
    )
    upstream.push(Reply.error(404, "no such model"), Reply.text("ok"))
    response = _post(base, _session(100)[-1])  # long enough to cut turns, not only clear results
    assert response.status_code == 200
    assert MARK not in json.dumps(upstream.requests[-1]["messages"])
    assert "fit the context window.]" in json.dumps(upstream.requests[-1]["messages"])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"summary_store": "sqlite:///x.db"},
        {"summary_model": "m", "compaction": "seed"},
        {"summary_model": "m", "summary_store": "ftp://x"},
        {"summary_model": "m", "summary_timeout": 0},
        {"summary_model": "m", "summary_retention": -1},
        {"summary_model": "", "summary_store": None},
        {"summary_model": "m", "summary_base_url": "file:///x"},
    ],
)
def test_bad_summary_settings_stop_the_proxy(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        ProxyConfig(upstream="http://up.example/v1", **kwargs)


def test_the_store_password_is_never_shown() -> None:
    config = ProxyConfig(
        upstream="http://up.example/v1",
        summaries=SummariesConfig(model="m", store="redis://:hunter2secret@cache.example:6379/0"),
    )
    assert "hunter2secret" not in repr(config)
    assert "hunter2secret" not in config.redactor()("connecting to redis://:hunter2secret@x")
    assert ProxyConfig.from_json(config.to_json()) == config
