"""Observability of the proxy: the provider's usage (cache figures included) in each
API's shape, conversation ids, /metrics against what a caching fake upstream reported,
cache busts, spans (OpenTelemetry's in-memory exporter), the page's API and its access
rules, the side-by-side view's marks, and the offline page of `govern --html`.

Everything runs through a real proxy (uvicorn) and real HTTP (httpx) against
fake_cache.FakeCache, which decides the cache figures itself (prefix reuse), so the
proxy's figures are checked against an independent source.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fake_cache import FakeCache
from observe_session import MODELS, SESSION, metric, run
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_proxy import Served

from context_governor.cli import main
from context_governor.observe.views import side_by_side
from context_governor.prices import cache_price
from context_governor.proxy import ProxyConfig, create_app
from context_governor.proxy.conversation import from_body, from_headers
from context_governor.proxy.metrics import OTHER, LabelCap
from context_governor.proxy.observer import Journal, Record
from context_governor.proxy.usage import Usage, usage_of

APIS = ["openai", "anthropic", "responses", "gemini"]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeCache]:
    server = FakeCache().start()
    yield server
    server.stop()


@pytest.fixture
def proxy(fake: FakeCache) -> Iterator[Any]:
    served: list[Served] = []

    def start(api: str = "openai", **config: Any) -> str:
        upstream = fake.root_url + ("/v1beta" if api == "gemini" else "/v1")
        config.setdefault("context_window", 8000)
        tracer_provider = config.pop("tracer_provider", None)
        s = Served(create_app(ProxyConfig(upstream=upstream, **config), tracer_provider=tracer_provider))
        served.append(s)
        fake.reported.clear()
        return s.url

    yield start
    for s in served:
        s.stop()


# ----------------------------------------------------------------------------- units


def test_usage_reads_each_providers_cache_figures() -> None:
    chat = {"usage": {"prompt_tokens": 2000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1536}}}
    assert usage_of("openai", chat) == Usage(2000, 5, 1536, 0)
    responses = {"type": "response.completed", "response": {"usage": {"input_tokens": 900, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 0}}}}
    assert usage_of("responses", responses) == Usage(900, 3, 0, 0)
    gemini = {"usageMetadata": {"promptTokenCount": 5000, "cachedContentTokenCount": 4096, "candidatesTokenCount": 9}}
    assert usage_of("gemini", gemini) == Usage(5000, 9, 4096, 0)
    anthropic = {"usage": {"input_tokens": 3, "cache_read_input_tokens": 4000, "cache_creation_input_tokens": 700, "output_tokens": 1}}
    found = usage_of("anthropic", anthropic)
    assert found == Usage(4703, 1, 4000, 700) and found.uncached_tokens == 3
    # a count the provider cannot mean is not believed: cached never exceeds the prompt
    odd = {"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 99}}}
    assert usage_of("openai", odd) == Usage(10, None, 10, 0)
    assert usage_of("openai", {"usage": {"prompt_tokens": 10, "prompt_tokens_details": "x"}}) == Usage(10)


def test_conversation_ids_are_the_clients_own_else_a_stable_digest() -> None:
    assert from_headers({"session_id": "019a-codex-session"}) == "019a-codex-session"
    assert from_headers({"x-context-governor-conversation": "<script>x"}) == "_script_x"
    assert from_headers({"x-context-governor-conversation": "a" * 500}) == "a" * 80
    assert from_headers({}) is None
    claude = {"metadata": {"user_id": f"user_0a1b_account_2c3d_session_{SESSION}"}, "messages": []}
    assert from_body("anthropic", claude, "claude-sonnet-4-5") == SESSION
    newer = {"metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "s-1234-5678"})}}
    assert from_body("anthropic", newer, None) == "s-1234-5678"
    assert from_body("responses", {"prompt_cache_key": "conv_9"}, "gpt-5") == "conv_9"
    a = {"model": "m", "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]}
    grown = {"messages": [*a["messages"], {"role": "assistant", "content": "A"}], "model": "m", "stream": True}
    assert from_body("openai", a, "m") == from_body("openai", grown, "m")  # fixed parts only
    other = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "V"}]}
    assert from_body("openai", other, "m") != from_body("openai", a, "m")
    assert from_body("openai", a, "m") != from_body("openai", a, "n")
    assert from_body("openai", a, "m").startswith("d-")


def test_model_labels_are_capped() -> None:
    cap = LabelCap(3)
    assert [cap(m) for m in ["a", "b", "a", "c", "d", "e", "b"]] == ["a", "b", "a", "c", OTHER, OTHER, "b"]
    assert cap(None) == OTHER  # "unknown" would be a fourth value


def test_the_journal_is_bounded() -> None:
    journal = Journal(max_conversations=2, max_requests=3, content_bytes=100)
    for cid in ["a", "b", "c"]:
        with journal.lock:
            conv = journal.conversation(cid, "openai", "m")
            for i in range(5):
                seq = len(journal._by_seq) + 1000 * ord(cid) + i
                journal.file(conv, Record(seq, cid, i, "openai", "m", 0.0, content=(b"x" * 30, b"y" * 10)))
    ids = [c["id"] for c in journal.conversations()]
    assert ids == ["c", "b"]  # the least recently active dropped
    detail = journal.detail("c")
    assert detail is not None and len(detail["rows"]) == 3
    kept = [r for c in ("b", "c") for r in journal._conversations[c].records if r.content is not None]
    assert sum(len(x) + len(y) for x, y in (r.content for r in kept if r.content)) <= 100


def test_side_by_side_marks_what_was_cut_cleared_truncated_and_inserted() -> None:
    big = "line of output\n" * 200
    client = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": big},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": big},
    ]
    model = [
        client[0],
        {"role": "user", "content": "[2 earlier messages were removed]"},
        client[4],
        {"role": "tool", "tool_call_id": "c1", "content": "[read output cleared]"},
        client[6],
        {"role": "tool", "tool_call_id": "c2", "content": big[:300] + "\n…\n" + big[-100:]},
    ]
    view = side_by_side(client, model)
    assert [r["mark"] for r in view["client"]] == ["kept", "cut", "cut", "cut", "kept", "changed", "kept", "changed"]
    assert [r["mark"] for r in view["model"]] == ["kept", "inserted", "kept", "cleared", "kept", "truncated"]
    assert view["counts"] == {"kept": 3, "inserted": 1, "cleared": 1, "truncated": 1, "cut": 3}
    assert view["model"][3]["pair"] == 5 and view["client"][5]["pair"] == 3


# ----------------------------------------------------------------------------- through the proxy


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_metrics_and_the_page_equal_what_the_upstream_reported(proxy: Any, fake: FakeCache, api: str, stream: bool) -> None:
    root = proxy(api)
    run(root, api, 24, stream=stream)
    reported = list(fake.reported)
    totals = fake.totals()
    assert len(reported) == 24 and totals["read"] > 0
    for name, key in [("input", "input"), ("cache_read", "read"), ("cache_write", "write"), ("output", "output")]:
        assert metric(root, f"context_governor_upstream_{name}_tokens_total", api=api) == totals[key], name
    assert metric(root, "context_governor_requests_total", api=api, model=MODELS[api], outcome="ok") == 24
    assert metric(root, "context_governor_upstream_usage_missing_total") == 0
    assert metric(root, "context_governor_compactions_total", reason="compact") >= 1
    assert metric(root, "context_governor_saved_tokens_total", stage="compact") > 0
    assert metric(root, "context_governor_messages_cut_total", stage="compact") > 0
    assert metric(root, "context_governor_actions_total", stage="compact", effect="inserted") >= 1
    assert metric(root, "context_governor_governance_seconds_count", api=api) == 24
    assert metric(root, "context_governor_added_seconds_count", api=api) == 24
    # the page: one conversation, every request's provider figures as reported, in order
    conversations = httpx.get(f"{root}/ui/api/conversations").json()
    assert len(conversations) == 1
    conv = conversations[0]
    assert (conv["input"], conv["cache_read"], conv["cache_write"]) == (totals["input"], totals["read"], totals["write"])
    assert conv["cached_share"] == pytest.approx(totals["read"] / totals["input"])
    assert conv["client_tokens"] == metric(root, "context_governor_client_tokens_total")
    assert conv["forwarded_tokens"] == metric(root, "context_governor_forwarded_tokens_total")
    assert conv["forwarded_tokens"] < conv["client_tokens"]
    if api == "anthropic":
        assert conv["id"] == SESSION  # Claude Code's session id, from metadata.user_id
    rows = httpx.get(f"{root}/ui/api/conversations/{conv['id']}").json()["rows"]
    assert [(r["input"], r["cache_read"], r["cache_write"]) for r in rows] == [(r["input"], r["read"], r["write"]) for r in reported]
    assert sum(r["compacted"] for r in rows) == conv["compactions"] >= 1
    price = cache_price("anthropic" if api == "anthropic" else "gemini" if api == "gemini" else "openai", MODELS[api])
    assert price is not None
    cost = sum(r["input"] - r["read"] - r["write"] + price.read * r["read"] + price.write * r["write"] for r in reported)
    assert conv["cost"] == pytest.approx(cost) and conv["uncached_cost"] == totals["input"]


def test_a_client_that_edits_an_old_message_busts_the_cache_and_it_is_counted(proxy: Any, fake: FakeCache) -> None:
    root = proxy("anthropic", context_window=200_000)
    run(root, "anthropic", 12, edit_system_at=10)
    reported = fake.reported
    lost = reported[8]["read"] - reported[9]["read"]
    assert reported[8]["read"] > 2000 and reported[9]["read"] == 0  # the fake saw the edit as a miss
    assert metric(root, "context_governor_cache_busts_total", cause="other") == 1
    assert metric(root, "context_governor_cache_busts_total", cause="compaction") == 0
    assert metric(root, "context_governor_cache_bust_tokens_total") == lost
    rows = httpx.get(f"{root}/ui/api/conversations/{SESSION}").json()["rows"]
    assert [r["bust_tokens"] for r in rows] == [None] * 9 + [lost, None, None]
    assert not any(r["compacted"] for r in rows)


def test_a_codex_session_header_names_the_conversation(proxy: Any) -> None:
    root = proxy("responses")
    run(root, "responses", 3, headers={"session_id": "codex-7f3a"})
    assert [c["id"] for c in httpx.get(f"{root}/ui/api/conversations").json()] == ["codex-7f3a"]


def test_one_genai_span_per_request_with_our_figures(proxy: Any, fake: FakeCache) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    root = proxy("anthropic", tracer_provider=provider)
    run(root, "anthropic", 20, stream=True)
    spans = exporter.get_finished_spans()
    assert len(spans) == 20
    for span, reported in zip(spans, fake.reported, strict=True):
        a = span.attributes or {}
        assert span.name == "chat claude-sonnet-4-5"
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "anthropic"
        assert a["gen_ai.request.model"] == "claude-sonnet-4-5"
        assert a["gen_ai.conversation.id"] == SESSION
        assert a["gen_ai.usage.input_tokens"] == reported["input"]
        assert a["gen_ai.usage.cache_read.input_tokens"] == reported["read"]
        assert a["gen_ai.usage.cache_creation.input_tokens"] == reported["write"]
        assert a["gen_ai.usage.output_tokens"] == 7
        assert a["context_governor.tokens_after"] <= a["context_governor.tokens_before"]
        assert span.end_time is not None and span.start_time is not None and span.end_time > span.start_time
    compacted = [s for s in spans if (s.attributes or {})["gen_ai.conversation.compacted"]]
    assert compacted and all((s.attributes or {}).get("context_governor.actions.compact") for s in compacted)


def test_the_page_is_for_loopback_or_the_token_and_content_only_when_asked(proxy: Any) -> None:
    root = proxy("openai")
    run(root, "openai", 3)
    page = httpx.get(f"{root}/ui/")
    assert page.status_code == 200 and "ui.js" in page.text and "http" not in page.text.split("<body>")[1]
    assert httpx.get(f"{root}/ui/ui.js").headers["content-type"].startswith("text/javascript")
    detail = httpx.get(f"{root}/ui/api/requests/1").json()
    assert detail["view"] is None and "--ui-content" in detail["content_note"]
    assert detail["report"]["tokens_before"] > 0
    assert httpx.get(f"{root}/ui/api/requests/999").status_code == 404
    token = "t0ken-for-the-page-0123"
    guarded = proxy("openai", ui_token=token, ui_content=True)
    run(guarded, "openai", 3)
    assert httpx.get(f"{guarded}/ui/api/conversations").status_code == 403
    assert httpx.get(f"{guarded}/ui/api/conversations", headers={"authorization": "Bearer wrong"}).status_code == 403
    seen = httpx.get(f"{guarded}/ui/api/requests/3", headers={"authorization": f"Bearer {token}"}).json()
    assert seen["view"]["client"][1]["text"].startswith("Refactor")
    assert httpx.get(f"{guarded}/ui/?token={token}").status_code == 200
    assert httpx.get(f"{guarded}/metrics").status_code == 200  # no content, no ids: open
    assert "t0ken" not in repr(ProxyConfig(upstream="http://x", ui_token=token))


def test_the_page_refuses_other_hosts_without_a_token(fake: FakeCache) -> None:
    from starlette.testclient import TestClient

    app = create_app(ProxyConfig(upstream=fake.base_url))
    with TestClient(app, client=("203.0.113.9", 5000)) as client:
        assert client.get("/ui/api/conversations").status_code == 403
        assert client.get("/metrics").status_code == 200
    with TestClient(app, client=("127.0.0.1", 5000)) as client:
        assert client.get("/ui/api/conversations").status_code == 200


def test_rejected_and_passthrough_requests_are_counted(proxy: Any) -> None:
    root = proxy("openai")
    assert httpx.post(f"{root}/v1/chat/completions", content=b"{nope", headers={"content-type": "application/json"}).status_code == 400
    httpx.get(f"{root}/v1/models")
    assert metric(root, "context_governor_requests_total", outcome="rejected") == 1
    assert metric(root, "context_governor_ungoverned_total", reason="passthrough") == 1


def test_govern_html_writes_one_self_contained_page(tmp_path: Path) -> None:
    from observe_session import body

    lines = [json.dumps(body("openai", n)[1]) for n in range(1, 30)]
    source = tmp_path / "session.jsonl"
    source.write_text("\n".join(lines) + "\n")
    out = tmp_path / "page.html"
    result = CliRunner().invoke(main, ["govern", str(source), "--context-window", "8000", "--html", str(out)])
    assert out.exists(), result.output
    html = out.read_text()
    assert "window.CG_DATA" in html and "<style>" in html
    assert 'src="' not in html and "href=\"ui.css\"" not in html and "https://" not in html
    start = html.index("window.CG_DATA = ") + len("window.CG_DATA = ")
    data = json.loads(html[start : html.index(";</script>", start)])
    rows = data["conversations/session.jsonl"]["rows"]
    assert len(rows) == 29 and any(r["compacted"] for r in rows)
    compacted = next(r for r in rows if r["compacted"])
    view = data[f"requests/{compacted['seq']}"]["view"]
    assert view["counts"].get("cleared", 0) + view["counts"].get("cut", 0) > 0
