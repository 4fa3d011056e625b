"""One proxy for every agent: an upstream per API (issue 38 item 1).

Two fake upstreams, one speaking Chat Completions (tests/fake_upstream.py) and one
speaking Messages and Responses (tests/fake_native.py): each route's request reaches
its own API's upstream, governed with its own API's rules, through one proxy; a route
with no upstream answers 404 in its API's shape; a URL with no path gets its API's
version, so ``https://host`` and ``https://host/v1`` are one upstream.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fake_native import FakeNative, NativeReply
from fake_upstream import FakeUpstream, Reply
from test_proxy import DAMAGED, MODEL, Served

from context_governor import ConfigError
from context_governor.proxy import ProxyConfig, create_app

ANTHROPIC = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
H = "x-context-governor-"


@pytest.fixture
def served() -> Iterator[list[Served]]:
    servers: list[Served] = []
    yield servers
    for server in servers:
        server.stop()


def _start(servers: list[Served], **config: object) -> str:
    server = Served(create_app(ProxyConfig(**config)))  # type: ignore[arg-type]
    servers.append(server)
    return f"http://127.0.0.1:{server.port}"


def test_each_api_reaches_its_own_upstream_with_its_own_rules(
    upstream: FakeUpstream, native: FakeNative, served: list[Served]
) -> None:
    # the native fake given with no path: /v1 is added
    root = _start(served, upstreams={"openai": upstream.base_url, "anthropic": native.root_url})
    upstream.push(Reply.text("from chat"))
    chat = httpx.post(f"{root}/v1/chat/completions", json={"model": MODEL, "messages": DAMAGED}, timeout=30)
    assert chat.status_code == 200 and chat.headers[f"{H}profile"] == "openai"
    native.push(NativeReply.answer("from messages"))
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    messages = httpx.post(f"{root}/v1/messages", json=body, headers=ANTHROPIC, timeout=30)
    assert messages.status_code == 200 and messages.headers[f"{H}profile"] == "anthropic"
    assert len(upstream.requests) == 1 and len(native.requests) == 1
    # responses: openai's upstream unless given apart, so the chat fake gets it (and has no route)
    answer = httpx.post(f"{root}/v1/responses", json={"model": "gpt-5", "input": "hi"}, timeout=30)
    assert answer.status_code == 404 and len(native.requests) == 1


def test_an_api_without_an_upstream_is_a_404_in_its_shape(native: FakeNative, served: list[Served]) -> None:
    root = _start(served, upstreams={"anthropic": native.base_url})
    chat = httpx.post(f"{root}/v1/chat/completions", json={"model": MODEL, "messages": DAMAGED}, timeout=30)
    assert chat.status_code == 404
    assert "--upstream openai=URL" in chat.json()["error"]["message"]
    gemini = httpx.post(f"{root}/v1beta/models/gemini-2.5-pro:generateContent",
                        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, timeout=30)  # fmt: skip
    assert gemini.status_code == 404 and gemini.json()["error"]["status"] == "NOT_FOUND"
    models = httpx.get(f"{root}/v1/models", timeout=30)  # passed through: OpenAI's, no upstream
    assert models.status_code == 404
    assert native.requests == []


def test_upstream_urls_are_checked_and_given_their_version() -> None:
    config = ProxyConfig(upstream="https://api.example.com", upstreams={"gemini": "https://g.example/"})
    assert config.upstream_for("anthropic") == "https://api.example.com/v1"
    assert config.upstream_for("gemini") == "https://g.example/v1beta"
    assert ProxyConfig(upstream="https://gw.example/api/v1").upstream_for("openai") == "https://gw.example/api/v1"
    only = ProxyConfig(upstreams={"openai": "https://api.openai.com"})
    assert only.upstream_for("responses") == "https://api.openai.com/v1"
    assert only.upstream_for("anthropic") is None
    with pytest.raises(ConfigError, match="no API is named claude"):
        ProxyConfig(upstreams={"claude": "https://api.anthropic.com"})
    with pytest.raises(ConfigError, match="give an upstream"):
        ProxyConfig()
    with pytest.raises(ConfigError, match="the anthropic upstream must be an http"):
        ProxyConfig(upstreams={"anthropic": "api.anthropic.com"})
    with pytest.raises(ConfigError, match="carries credentials"):
        ProxyConfig(upstreams={"anthropic": "https://u:p@gw.example"}, api_key="sk")
    shown = repr(ProxyConfig(upstreams={"openai": "https://gw.example/v1?key=s3cret"}))
    assert "s3cret" not in shown and "gw.example" in shown


def test_the_banner_names_each_route_the_window_and_what_is_learned_where() -> None:
    from context_governor.cli._proxy import banner
    from context_governor.proxy import CountingConfig

    config = ProxyConfig(upstreams={"openai": "https://api.openai.com", "anthropic": "https://u:pw@gw.example"},
                         context_window=16_000)  # fmt: skip
    lines = banner(config, "127.0.0.1", 8787, workers=2)
    text = "\n".join(lines)
    assert lines[0] == "governing proxy on http://127.0.0.1:8787/v1 → one per API (2 workers)"
    assert "  /v1/messages → https://***@gw.example/v1 (anthropic rules)" in lines
    assert "  /v1/responses → https://api.openai.com/v1 (openai rules)" in lines
    assert any(line.startswith("  /v1beta/models/{model}:generateContent") and "no upstream (404)" in line for line in lines)
    assert "Anthropic and Gemini clients: http://127.0.0.1:8787 (no /v1)" in text
    assert "window: 16,000 tokens" in text and "page http://127.0.0.1:8787/ui" in text
    assert "learned: this process only" in text and "workers do not share them" in text and "pw" not in text
    shared = ProxyConfig(upstream="https://api.openai.com/v1", counting=CountingConfig(store="memory://"))
    assert "  learned: shared through the count store" in banner(shared, "127.0.0.1", 1, workers=1)


def test_a_base_url_ending_in_v1_for_an_anthropic_client_is_told_not_passed_through(
    native: FakeNative, served: list[Served]
) -> None:
    """Anthropic(base_url="http://HOST:PORT/v1") sends POST /v1/v1/messages: it used to be
    passed through ungoverned with one log line; it is a 404 saying which URL to give."""
    root = _start(served, upstream=native.base_url)
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    answer = httpx.post(f"{root}/v1/v1/messages", json=body, headers=ANTHROPIC, timeout=30)
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"  # Anthropic's shape
    assert "names the API version twice" in error["message"] and "proxy's root" in error["message"]
    assert native.requests == []


@pytest.mark.parametrize(
    ("api", "given", "taken"),
    [
        ("anthropic", "https://api.anthropic.com/v1", "https://api.anthropic.com"),
        ("anthropic", "https://api.anthropic.com", "https://api.anthropic.com"),
        ("anthropic", "https://gw.example/anthropic/v1/", "https://gw.example/anthropic"),
        ("openai", "http://localhost:11434", "http://localhost:11434/v1"),
        ("openai", "https://api.openai.com/v1", "https://api.openai.com/v1"),
        ("responses", "https://openrouter.ai/api/v1", "https://openrouter.ai/api/v1"),
    ],
)
def test_run_takes_a_base_url_with_or_without_its_version_as_the_proxy_does(
    api: str, given: str, taken: str
) -> None:
    """``run --base-url`` wanted Anthropic's URL without /v1 and the proxy with it; both
    now take either (issue 38 item 1)."""
    from context_governor.cli._run import API_SPECS, as_client_takes_it

    assert as_client_takes_it(API_SPECS[api], given) == taken
    proxy_api = "openai" if api == "responses" else api
    upstream = ProxyConfig(upstreams={proxy_api: given}).upstream_for(api)
    assert upstream is not None and upstream.rstrip("/").endswith(("/v1", "/api/v1"))
