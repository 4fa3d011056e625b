"""A window for every model, and the upstream's word over ours (providers/windows.py, proxy/
learning.py, refusals.py, usage.py, watch.py).

Units: the family rules, the 1M header, every collected refusal text, usage in each
API's shapes, the stream watch, the learner. Through the real proxy (uvicorn) against
tests/fake_limits.py, an upstream with a real window: a request refused for its
length is governed again to the window the refusal states and retried once, the
client getting a 200; a second proxy process sharing the count store uses that window
without a refusal; budgets shrink by the upstream's ratio to our count; a stream that
ends without its terminal event reaches the client as its API's error; the
"client went away" line only when it did.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_limits import FakeLimits
from test_proxy import Served

from context_governor import govern
from context_governor.counting.store import MemoryCountStore, flush
from context_governor.formats import govern_request
from context_governor.formats._gemini_stream import elements
from context_governor.providers.windows import (
    default_window,
    family_window,
    known_window,
    resolve_window,
)
from context_governor.proxy import CountingConfig, ProxyConfig, create_app
from context_governor.proxy._learning import (
    MAX_RATIO,
    Hints,
    Known,
    Learner,
    applied_ratio,
    governed_window,
    request_window,
)
from context_governor.proxy._refusals import refusal_of
from context_governor.proxy._usage import Usage, usage_of
from context_governor.proxy._watch import StreamWatch

DATA = json.loads((Path(__file__).parent / "data" / "refusals.json").read_text())
LIMIT = 20_000
RESERVE = 1_000

# ----------------------------------------------------------------------------- families


@pytest.mark.parametrize(
    ("model", "window", "source"),
    [
        ("claude-opus-5-5", 200_000, "family"),  # Claude Code's default today
        ("us.anthropic.claude-opus-5-5-v1:0", 200_000, "family"),
        ("claude-sonnet-4-5-20250929", 200_000, "model"),
        ("gpt-6", 128_000, "family"),
        ("gpt-4-0613", 8_192, "model"),  # the table's, not the family's 128,000
        ("gpt-4o-mini", 128_000, "model"),
        ("o7-pro", 128_000, "family"),
        ("gemini-3.5-pro", 1_048_576, "family"),
        ("models/gemini-2.5-flash-lite", 1_048_576, "model"),
        ("gemini-pro", 30_720, "family"),
        ("glm-5", 128_000, "family"),
        ("glm-4.6", 200_000, "model"),
        ("kimi-k3", 131_072, "family"),
        ("deepseek-v4", 64_000, "family"),
        ("Qwen/Qwen3-Coder-30B-A3B-Instruct", 32_768, "family"),
        ("mistral-large-latest", 32_768, "family"),
        ("codestral-latest", 32_768, "family"),
        ("meta-llama/Llama-3.3-70B-Instruct", 131_072, "family"),
        ("llama3:8b", 8_192, "family"),
        ("llama-2-13b-chat", 4_096, "family"),
        ("my-local-model", None, "none"),
    ],
)
def test_every_family_has_a_window(model: str, window: int | None, source: str) -> None:
    assert default_window(model) == (window, source)
    assert resolve_window(None, model) == (window, source)
    assert resolve_window(5_000, model) == (5_000, "given")
    if source == "family":
        assert known_window(model) is None and family_window(model) == window


def test_the_1m_header_gives_1m_to_the_models_that_take_it() -> None:
    beta = ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"]
    assert default_window("claude-sonnet-4-5", betas=beta) == (1_000_000, "model")
    assert default_window("claude-opus-4-6", betas=beta) == (1_000_000, "model")
    assert default_window("claude-opus-5-5", betas=beta) == (1_000_000, "family")  # newer
    assert default_window("claude-opus-4-5", betas=beta) == (200_000, "model")  # takes none
    assert default_window("claude-3-5-haiku", betas=beta) == (200_000, "model")
    assert default_window("gpt-6", betas=beta) == (128_000, "family")
    assert default_window("claude-sonnet-4-5", betas=["interleaved-thinking"]) == (200_000, "model")


def test_the_library_governs_an_unknown_claude_at_its_familys_window() -> None:
    messages = [{"role": "user", "content": "hi"}]
    report = govern(messages, profile="anthropic", model="claude-opus-5-5").report
    assert (report.context_window, report.window_source) == (200_000, "family")
    body = {"model": "claude-opus-5-5", "max_tokens": 300_000, "messages": messages}
    result = govern_request(body, api="anthropic")
    assert result.report.window_source == "family"
    # the reserve is fitted too: what the window leaves after the prompt
    assert result.body["max_tokens"] == 200_000 - 1024 - result.report.tokens_after


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("entry", DATA["readable"], ids=lambda e: e["provider"])
def test_every_collected_refusal_gives_its_limit(entry: dict[str, Any]) -> None:
    found = refusal_of(entry["body"].encode())
    assert found is not None
    assert (found.limit, found.prompt_tokens) == (entry["limit"], entry["prompt_tokens"])


@pytest.mark.parametrize("entry", DATA["unreadable"], ids=lambda e: e["provider"])
def test_a_refusal_without_a_limit_is_not_read(entry: dict[str, Any]) -> None:
    assert refusal_of(entry["body"].encode()) is None


def test_bodies_that_are_not_refusals_give_none() -> None:
    assert refusal_of(b"") is None
    assert refusal_of(b'{"error": {"message": "rate limited"}}') is None
    assert refusal_of(b"\xff\xfe not utf-8") is None
    assert refusal_of(b"prompt is too long: 5 tokens > 12 maximum") is None  # not believed
    assert refusal_of(b"x" * 70_000 + b"prompt is too long: 9 tokens > 9000 maximum") is None


# ----------------------------------------------------------------------------- usage


def test_usage_in_each_apis_shapes() -> None:
    anthropic = {"usage": {"input_tokens": 10, "cache_read_input_tokens": 100,
                           "cache_creation_input_tokens": 5, "output_tokens": 7}}  # fmt: skip
    assert usage_of("anthropic", anthropic) == Usage(115, 7, 100, 5)
    start = {"type": "message_start", "message": anthropic}
    assert usage_of("anthropic", json.dumps(start).encode()) == Usage(115, 7, 100, 5)
    assert usage_of("anthropic", {"type": "message_delta", "usage": {"output_tokens": 3}}) is None
    assert usage_of("openai", {"usage": {"prompt_tokens": 42, "completion_tokens": 2}}) == Usage(42, 2)
    assert usage_of("openai", {"choices": [], "usage": None}) is None
    done = {"type": "response.completed", "response": {"usage": {"input_tokens": 9, "output_tokens": 1}}}
    assert usage_of("responses", done) == Usage(9, 1)
    assert usage_of("responses", {"object": "response", "usage": {"input_tokens": 9}}) == Usage(9)
    assert usage_of("gemini", {"usageMetadata": {"promptTokenCount": 77, "candidatesTokenCount": 3}}) == Usage(77, 3)
    assert usage_of("gemini", b"not json") is None
    assert usage_of("anthropic", {"usage": {"input_tokens": True}}) is None
    assert usage_of("nope", anthropic) is None


def _sse(*events: tuple[str | None, Any]) -> bytes:
    out = b""
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        text = data if isinstance(data, str) else json.dumps(data)
        out += f"{head}data: {text}\r\n\r\n".encode()
    return out


def test_the_watch_knows_each_apis_last_event_and_keeps_the_last_usage() -> None:
    chat = StreamWatch("openai")
    chat.see(_sse((None, {"choices": [{"delta": {"content": "response.completed [DONE]"}}]})))
    assert not chat.finished
    chat.see(_sse((None, {"choices": [], "usage": {"prompt_tokens": 5}}), (None, "[DONE]")))
    assert chat.finished and chat.usage == Usage(5)

    messages = StreamWatch("anthropic")
    messages.see(_sse(("message_start", {"type": "message_start",
                                         "message": {"usage": {"input_tokens": 8}}})))  # fmt: skip
    assert not messages.finished and messages.usage == Usage(8)
    messages.see(_sse(("message_stop", {"type": "message_stop"})))
    assert messages.finished
    failed = StreamWatch("anthropic")
    failed.see(_sse(("error", {"type": "error", "error": {"type": "overloaded_error"}})))
    assert failed.finished

    responses = StreamWatch("responses")
    responses.see(_sse(("response.output_text.delta", {"delta": '"type":"response.completed"'})))
    assert not responses.finished
    responses.see(_sse((None, {"type": "response.incomplete", "response": {"usage": {"input_tokens": 3}}})))
    assert responses.finished and responses.usage == Usage(3)

    gemini = StreamWatch("gemini")
    gemini.see(_sse((None, {"candidates": [{"content": {"parts": [{"text": "finishReason"}]}}],
                            "usageMetadata": {"promptTokenCount": 4}})))  # fmt: skip
    assert not gemini.finished and gemini.usage == Usage(4)
    gemini.see(_sse((None, {"candidates": [{"finishReason": "STOP"}]})))
    assert gemini.finished
    array = StreamWatch("gemini", elements)
    array.see(b'[{"candidates": [{"index": 0}]}')
    assert not array.finished
    array.see(b',\r\n{"candidates": [{"finishReason": "MAX_TOKENS"}], "usageMetadata": {"promptTokenCount": 6}}')
    assert array.finished and array.usage == Usage(6)
    # the last elements relayed together (one upstream chunk) are read one by one
    both = StreamWatch("gemini", elements)
    both.see(b'[{"candidates": [{"index": 0}], "usageMetadata": {"promptTokenCount": 6}},\r\n'
             b'{"candidates": [{"finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 7}}\r\n]')  # fmt: skip
    assert both.finished and both.usage == Usage(7)


# ----------------------------------------------------------------------------- the learner


def test_the_applied_ratio_rounds_up_and_moves_only_by_whole_steps() -> None:
    assert applied_ratio(None) == 1.0 and applied_ratio(0.8) == 1.0  # errs high: left alone
    assert applied_ratio(1.3) == 1.3 and applied_ratio(1.21) == 1.25
    assert applied_ratio(9.0) == MAX_RATIO
    assert applied_ratio(1.27, previous=1.3) == 1.3  # less than a step below: kept
    assert applied_ratio(1.2, previous=1.3) == 1.2
    assert applied_ratio(1.4, previous=1.3) == 1.4
    assert governed_window(200_000, 1.3) == 153_846 and governed_window(200_000, 1.0) == 200_000


def test_usage_converges_and_a_learned_window_wins_only_when_smaller() -> None:
    learner = Learner()
    assert not learner.observe("m", 500, 400)  # too small a sample: the upstream's fixed part
    for _ in range(12):
        learner.observe("m", 13_000, 10_000)
    assert learner.get("m").ratio == 1.3
    for _ in range(12):
        learner.observe("m", 10_100, 10_000)
    assert learner.get("m").ratio == 1.05  # the smoothed ratio came back down
    learner.learn_window("m", 30_000)
    known = learner.snapshot()
    assert known["m"] == Known(30_000, 1.05)
    found = request_window(None, "m", Hints(known))
    assert (found.window, found.source, found.governed) == (30_000, "learned", 28_571)
    assert found.note and "1.05x" in found.note
    bigger = request_window(10_000, "m", Hints({"m": Known(30_000)}))
    assert (bigger.window, bigger.source) == (10_000, "given")  # ours was smaller
    family = request_window(None, "claude-opus-5-5", Hints({"claude-opus-5-5": Known(150_000)}))
    assert (family.window, family.source) == (150_000, "learned")


def test_what_one_learner_stored_another_reads() -> None:
    from context_governor.counting.store import CountLink

    link = CountLink(MemoryCountStore())
    first, second = Learner(link), Learner(link, refresh=0.0)
    first.learn_window("m", 12_345)
    first.observe("m", 26_000, 20_000)
    assert flush()
    assert second.due("m") and second.refresh("m")
    assert second.get("m") == Known(12_345, 1.3)
    assert not second.refresh("m")  # nothing new


def test_replicas_sharing_a_store_govern_with_the_same_ratio_and_it_does_not_flip() -> None:
    """The upstream counts a hair over 1.3x ours (its counts are whole tokens): the
    smoothed ratio sits just above the 1.3 step, the store holds it in thousandths
    (1300). Every replica governs with the stored ratio, the one that learned it
    included; before, that one governed with 1.35 and the others with 1.3, and it
    went back to 1.3 at each read of the store, then to 1.35 at its next answer."""
    from context_governor.counting.store import CountLink

    link = CountLink(MemoryCountStore())
    first, second = Learner(link, refresh=0.0), Learner(link, refresh=0.0)
    first.observe("m", 2_600, 2_000)  # 1.3: written as 1300
    assert flush() and second.refresh("m")
    seen = set()
    for _ in range(5):
        first.observe("m", 2_601, 2_000)  # 1.3005: less than WRITE_STEP from 1300
        seen.add(first.get("m").ratio)
        first.refresh("m")
        seen.add(first.get("m").ratio)
    assert flush()
    second.refresh("m")
    assert seen == {second.get("m").ratio} == {1.3}
    # without a store, the one process governs with its own smoothed figure, as before
    alone = Learner()
    alone.observe("m", 2_601, 2_000)
    assert alone.get("m").ratio == 1.35


# ----------------------------------------------------------------------------- the proxy


@pytest.fixture
def fakes() -> Iterator[list[FakeLimits]]:
    started: list[FakeLimits] = []
    yield started
    for fake in started:
        fake.stop()


@pytest.fixture
def proxies() -> Iterator[list[Served]]:
    served: list[Served] = []
    yield served
    for one in served:
        one.stop()


def _text(turn: int, words: int) -> str:
    return f"turn {turn}: " + " ".join(f"w{turn}x{j}" for j in range(words))


def _body(api: str, model: str, turns: int, words: int = 700, stream: bool = False) -> dict[str, Any]:
    """A plain conversation of ``turns`` user/assistant pairs ending on a user turn."""
    pairs = [(_text(2 * i, words), _text(2 * i + 1, words)) for i in range(turns)]
    last = "and now?"
    if api == "gemini":
        contents = [c for u, a in pairs for c in ({"role": "user", "parts": [{"text": u}]},
                                                   {"role": "model", "parts": [{"text": a}]})]  # fmt: skip
        contents.append({"role": "user", "parts": [{"text": last}]})
        return {"contents": contents, "generationConfig": {"maxOutputTokens": RESERVE}}
    messages = [m for u, a in pairs for m in ({"role": "user", "content": u},
                                              {"role": "assistant", "content": a})]  # fmt: skip
    messages.append({"role": "user", "content": last})
    if api == "responses":
        return {"model": model, "input": messages, "max_output_tokens": RESERVE, "stream": stream}
    return {"model": model, "messages": messages, "max_tokens": RESERVE, "stream": stream}


PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions", "responses": "/v1/responses"}


def _url(base: str, api: str, model: str, stream: bool = False, alt: str | None = "sse") -> str:
    if api != "gemini":
        return base + PATHS[api]
    action = "streamGenerateContent" if stream else "generateContent"
    return f"{base}/v1beta/models/{model}:{action}" + (f"?alt={alt}" if stream and alt else "")


def _start(fakes: list[FakeLimits], proxies: list[Served], fake: FakeLimits, **config: Any) -> str:
    fakes.append(fake.start())
    served = Served(create_app(ProxyConfig(upstream=fake.base_url, **config)))
    proxies.append(served)
    return served.url


@pytest.mark.parametrize(
    ("style", "api", "model"),
    [
        ("anthropic", "anthropic", "claude-opus-5-5"),
        ("openai", "openai", "gpt-6"),
        ("openai", "responses", "gpt-6"),
        ("gemini", "gemini", "gemini-3.5-pro"),
        ("vllm", "openai", "gpt-6"),
        ("sglang", "openai", "gpt-6"),
        ("llama.cpp", "openai", "gpt-6"),
        ("openrouter", "openai", "gpt-6"),
        ("litellm", "openai", "gpt-6"),
    ],
)
def test_a_refusal_teaches_the_window_and_the_request_is_retried_once(
    fakes: list[FakeLimits], proxies: list[Served], style: str, api: str, model: str
) -> None:
    """No flags: the family's window lets a 30k-token history through; the upstream
    (20,000) refuses it in its words; the client still gets a 200, for a request
    governed under the learned window, and the next request is not refused at all."""
    fake = FakeLimits(LIMIT, style)
    url = _start(fakes, proxies, fake)
    body = _body(api, model, turns=20)
    response = httpx.post(_url(url, api, model), json=body, timeout=60)
    assert response.status_code == 200, response.text
    assert response.headers["x-context-governor-window-learned"] == str(LIMIT)
    assert response.headers["x-context-governor-window-source"] == "learned"
    assert [s.status for s in fake.seen] == [400, 200]
    assert fake.seen[0].count + fake.seen[0].reserve > LIMIT
    assert fake.seen[1].count + fake.seen[1].reserve <= LIMIT
    again = httpx.post(_url(url, api, model), json=body, timeout=60)
    assert again.status_code == 200 and "x-context-governor-window-learned" not in again.headers
    assert again.headers["x-context-governor-window-source"] == "learned"
    assert [s.status for s in fake.seen] == [400, 200, 200]


def test_a_refusal_without_a_limit_is_relayed_as_it_came(
    fakes: list[FakeLimits], proxies: list[Served]
) -> None:
    fake = FakeLimits(LIMIT, "unreadable")
    url = _start(fakes, proxies, fake)
    response = httpx.post(_url(url, "responses", "gpt-6"), json=_body("responses", "gpt-6", 20), timeout=60)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "context_length_exceeded"
    assert [s.status for s in fake.seen] == [400]  # not retried


def _cli_proxy(upstream: str, *flags: str) -> tuple[subprocess.Popen[str], str]:
    args = [sys.executable, "-m", "context_governor", "proxy", "--upstream", upstream, "--port", "0", *flags]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env)
    assert process.stderr is not None
    banner = process.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", banner)
    assert match, banner
    url = f"http://127.0.0.1:{match.group(1)}"
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(url + "/healthz", timeout=1)
            return process, url
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the proxy did not come up"
            time.sleep(0.05)


def test_a_second_proxy_process_uses_the_learned_window_without_a_refusal(
    fakes: list[FakeLimits], proxies: list[Served], tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'counts.db'}"
    fake = FakeLimits(LIMIT, "anthropic")
    first = _start(fakes, proxies, fake, counting=CountingConfig(store=store))
    body = _body("anthropic", "claude-opus-5-5", turns=20)
    assert httpx.post(first + "/v1/messages", json=body, timeout=60).status_code == 200
    assert [s.status for s in fake.seen] == [400, 200]
    assert flush()  # the learned window is written in the background
    process, second = _cli_proxy(fake.base_url, "--count-store", store)
    try:
        response = httpx.post(second + "/v1/messages", json=body, timeout=60)
        assert response.status_code == 200
        assert response.headers["x-context-governor-window-source"] == "learned"
        assert [s.status for s in fake.seen] == [400, 200, 200]  # no refusal this time
        assert fake.seen[2].count + fake.seen[2].reserve <= LIMIT
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_budgets_shrink_by_the_upstreams_ratio_to_our_count(
    fakes: list[FakeLimits], proxies: list[Served], api: str
) -> None:
    """The upstream counts 1.3x our count (as Claude's tokenizer may): after its first
    answer says so, budgets are taken from window / 1.3, and no request of a growing
    session exceeds the window by the upstream's own count, streamed answers or not.
    The seed policy fills the budget to the brim, so without the ratio the later
    requests would be refused."""
    window = 30_000
    fake = FakeLimits(window, "anthropic" if api == "anthropic" else "openai", factor=1.3)
    model = "claude-opus-5-5" if api == "anthropic" else "gpt-6"
    url = _start(fakes, proxies, fake, context_window=window, compaction="seed")
    budgets = []
    said: list[tuple[str | None, str | None, str]] = []
    for turns in (4, 10, 20, 30, 40, 50):
        body = _body(api, model, turns, words=200, stream=turns % 20 == 0)
        response = httpx.post(_url(url, api, model), json=body, timeout=60)
        assert response.status_code == 200, response.text
        response.read()
        budgets.append(int(response.headers["x-context-governor-budget"]))
        h = response.headers
        said.append((h.get("x-context-governor-upstream-ratio"), h.get("x-context-governor-window-governed"),
                     h["x-context-governor-window"]))  # fmt: skip
    # the ratio and the window governed to are said, not only applied (issue 38)
    assert said[0] == (None, None, str(window))
    ratio, governed, stands = said[-1]
    assert ratio is not None and 1.3 <= float(ratio) <= 1.35 and stands == str(window)
    assert governed == str(governed_window(window, float(ratio)))
    scraped = httpx.get(f"{url.removesuffix('/v1')}/metrics", timeout=10).text
    assert f'context_governor_upstream_ratio{{api="{api}",model="{model}"}} {float(ratio)}' in scraped
    assert f'context_governor_window_governed_tokens{{api="{api}",model="{model}"}} {float(governed)}' in scraped
    (conv,) = httpx.get(f"{url}/ui/api/conversations", timeout=10).json()
    rows = httpx.get(f"{url}/ui/api/conversations/{conv['id']}", timeout=10).json()["rows"]
    last = rows[-1]
    assert (last["window"], last["window_source"], last["ratio"]) == (window, "given", float(ratio))
    assert last["window_governed"] == int(governed) and rows[0]["ratio"] == 1.0
    assert all(s.status == 200 for s in fake.seen), [s.count for s in fake.seen]
    assert all(s.count + s.reserve <= window for s in fake.seen)
    assert fake.seen[-1].count + fake.seen[-1].reserve > 0.8 * window  # filled, not starved
    plain = window - RESERVE - 1024
    assert budgets[0] == plain  # before any usage was seen
    assert governed_window(window, 1.35) - RESERVE - 1024 <= budgets[-1]
    assert budgets[-1] <= governed_window(window, 1.3) - RESERVE - 1024


STREAMED = [("openai", "gpt-6", None), ("anthropic", "claude-opus-5-5", None),
            ("responses", "gpt-6", None), ("gemini", "gemini-3.5-pro", "sse"),
            ("gemini", "gemini-3.5-pro", None)]  # fmt: skip


@pytest.mark.parametrize(("api", "model", "alt"), STREAMED)
@pytest.mark.parametrize("truncate", [True, False])
def test_a_stream_without_its_last_event_ends_as_the_apis_error(
    fakes: list[FakeLimits], proxies: list[Served], api: str, model: str, alt: str | None,
    truncate: bool,
) -> None:  # fmt: skip
    fake = FakeLimits(10**9)
    fake.truncate = truncate
    url = _start(fakes, proxies, fake)
    body = _body(api, model, turns=1, words=5, stream=True)
    with httpx.stream("POST", _url(url, api, model, stream=True, alt=alt), json=body, timeout=30) as r:
        assert r.status_code == 200
        text = r.read().decode()
    said = "without its final event"
    if api == "gemini" and alt is None:  # the JSON array: complete, the error its last element
        elements = json.loads(text)
        assert ("error" in elements[-1]) is truncate
        if truncate:
            assert elements[-1]["error"]["status"] == "UNAVAILABLE" and said in text
        return
    last = [e for e in text.replace("\r\n", "\n").split("\n\n") if e.strip()][-1]
    assert (said in last) is truncate, text
    if not truncate:
        return
    data = json.loads(last.split("data: ", 1)[1])
    if api == "openai":
        assert data["error"]["type"] == "upstream_error" and "[DONE]" not in text
    elif api == "anthropic":
        assert last.startswith("event: error") and data["error"]["type"] == "api_error"
    elif api == "responses":
        assert last.startswith("event: error") and data["code"] == "upstream_error"
    else:
        assert data["error"]["code"] == 502


def test_the_client_went_away_line_only_when_it_did(
    fakes: list[FakeLimits], proxies: list[Served], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="context_governor.proxy")
    fake = FakeLimits(10**9)
    url = _start(fakes, proxies, fake)
    body = _body("openai", "gpt-6", turns=1, words=5, stream=True)
    for _ in range(3):
        with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=30) as r:
            assert "data: [DONE]" in r.read().decode()
    time.sleep(0.3)
    went = "client went away mid-stream"
    assert not [r for r in caplog.records if went in r.getMessage()]
    fake.stall = 3.0
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=30) as r:
        first = next(line for line in r.iter_lines() if line)
    assert first.startswith("data: ")
    deadline = time.monotonic() + 2.5
    while not [r for r in caplog.records if went in r.getMessage()]:
        assert time.monotonic() < deadline, "the early leave was not logged"
        time.sleep(0.02)
