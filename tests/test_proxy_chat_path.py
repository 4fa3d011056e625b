"""One path for a Chat Completions body: the proxy's chat route sends exactly the bytes
``govern_request(body, api="openai")`` returns for the same settings, and refuses exactly
what it refuses, with its words.

The bodies are the ones the proxy's chat tests send (their builders, imported: the
damaged history and the long sessions of test_proxy.py, the legacy-functions session,
the observability session, the windows tests' conversations, the bench's coding
session) plus the bodies where the proxy's own chat code once decided otherwise than
the library (a trailing assistant message, a null reserve beside a set one, no
reserve at all, a reserve the window cannot give, unreadable values). Each is run
under the configs those tests use.
"""

from __future__ import annotations

import json
import random
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from observe_session import body as observe_body
from test_legacy_functions import FUNCTIONS, legacy_session
from test_proxy import DAMAGED, MODEL, TOOLS, _long_history
from test_proxy_windows import _body as windows_body

from context_governor import (
    ConfigError,
    ContextGovernorError,
    InputError,
    govern_request,
    validate_request,
)
from context_governor.cli._run import APIS as CLI_APIS
from context_governor.formats import APIS
from context_governor.proxy import ProxyConfig
from context_governor.proxy._apis import ROUTES
from context_governor.proxy._governing import BadRequest, encode, govern_body

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.proxy_cost import bodies as bench_bodies  # noqa: E402

UPSTREAM = "http://upstream.invalid/v1"
USER = {"role": "user", "content": "hi"}


def _chat_bodies() -> list[tuple[str, Any]]:
    """(name, body) of every chat body below; a body may be raw bytes (not JSON)."""
    rng = random.Random(9)
    legacy = legacy_session(rng, 40)
    out: list[tuple[str, Any]] = [
        ("damaged+tools", {"model": MODEL, "messages": DAMAGED, "tools": TOOLS, "max_tokens": 200}),
        ("damaged", {"model": MODEL, "messages": DAMAGED}),
        ("damaged-stream", {"model": MODEL, "messages": DAMAGED, "stream": True}),
        ("both-reserves", {"model": MODEL, "messages": DAMAGED, "max_tokens": 100, "max_completion_tokens": 1000}),
        ("both-128k", {"model": MODEL, "messages": _long_history(40), "max_tokens": 128_000, "max_completion_tokens": 128_000}),
        ("long-300", {"model": MODEL, "messages": _long_history(60), "max_tokens": 300}),
        ("legacy-functions", {"model": MODEL, "messages": legacy, "functions": FUNCTIONS, "max_tokens": 500}),
        ("guard", {"model": MODEL, "messages": [USER]}),
        ("temperature", {"model": MODEL, "messages": [USER], "temperature": 0.2}),
        ("developer", {"model": MODEL, "messages": [{"role": "developer", "content": "Be brief."}, USER], "tools": TOOLS}),
        # where the proxy's own chat code differed from the library's
        ("prefill", {"model": MODEL, "messages": [USER, {"role": "assistant", "content": "Sure, "}]}),
        ("prefill-mistral", {"model": "mistral-large-latest", "messages": [USER, {"role": "assistant", "content": "Sure, "}]}),
        ("null-beside-set", {"model": MODEL, "messages": [USER], "max_completion_tokens": None, "max_tokens": 300}),
        ("no-reserve-long", {"model": MODEL, "messages": _long_history(60)}),
        ("reserve-over-window", {"model": "gpt-4o", "messages": _long_history(30), "max_tokens": 100_000}),
        ("unknown-model-big-reserve", {"model": "my-local-model", "messages": [USER], "max_tokens": 100_000}),
        ("no-model", {"messages": [USER], "max_tokens": 50}),
        # refused
        ("reserve-string", {"model": MODEL, "messages": DAMAGED, "max_tokens": "lots"}),
        ("reserve-negative", {"model": MODEL, "messages": [USER], "max_tokens": -5}),
        ("reserve-bool", {"model": MODEL, "messages": [USER], "max_completion_tokens": True}),
        ("model-number", {"model": 5, "messages": [USER]}),
        ("unknown-role", {"model": MODEL, "messages": [{"role": "wizard", "content": "x"}]}),
        ("messages-string", {"model": MODEL, "messages": "hi"}),
        ("bad-tools", {"model": MODEL, "messages": [USER], "tools": "read_file"}),
    ]
    for steps in (1, 6, 13, 30):
        out.append((f"observe-{steps}", observe_body("openai", steps)[1]))
    out.append(("observe-stream", observe_body("openai", 8, stream=True)[1]))
    for turns in (1, 20):
        out.append((f"windows-{turns}", windows_body("openai", "gpt-6", turns=turns)))
    out.append(("windows-stream", windows_body("openai", "gpt-6", turns=1, words=5, stream=True)))
    raws = bench_bodies(target=20_000)
    out += [(f"bench-{n}", json.loads(raws[n])) for n in range(0, len(raws), max(1, len(raws) // 6))]
    out.append(("bench-last", json.loads(raws[-1])))
    return out


BODIES = _chat_bodies()
#: the configs the proxy's chat tests run under
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "window-16000": {"context_window": 16_000},
    "window-3000": {"context_window": 3_000},
    "model-window": {"model_windows": {"gpt-4o": 12_000, "gpt-6": 20_000}},
    "max-output-1000": {"max_output": 1_000, "context_window": 16_000},
    "seed": {"compaction": "seed", "context_window": 8_000},
    "mistral": {"profile": "mistral", "context_window": 16_000},
    "anthropic": {"profile": "anthropic", "context_window": 16_000},
    "1M": {"context_window": 1_000_000},
}


def _library(data: Any, config: ProxyConfig) -> bytes:
    """The library's body for ``data`` under the same settings as the proxy's, as a
    user of govern_request would pass them."""
    model = data.get("model") if isinstance(data, dict) and isinstance(data.get("model"), str) else None
    result = govern_request(
        data,
        api="openai",
        profile=config.profile,
        model=model,
        context_window=config.window_for(model),
        max_output=config.max_output,
        compaction=config.compaction,
    )
    return encode(result.body)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_chat_route_sends_what_govern_request_makes(name: str) -> None:
    config = ProxyConfig(upstream=UPSTREAM, **CONFIGS[name])
    differ = []
    for label, body in BODIES:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            proxied: Any = govern_body(raw, config, "openai").body
        except BadRequest as exc:
            proxied = ("refused", exc.message)
        try:
            direct: Any = _library(json.loads(raw), config)
        except ContextGovernorError as exc:
            direct = ("refused", str(exc))
        if proxied != direct:
            differ.append(label)
    assert not differ, f"under {name}: the proxy and govern_request differ on {differ}"


def test_the_bodies_cover_what_the_paths_once_decided_differently() -> None:
    """The proxy now keeps a prefill where the target takes one (it dropped it), fits a
    reserve to the model's published window when none is configured (it sent it as
    asked), reads a null field as absent, and refuses a model that is not a string."""
    config = ProxyConfig(upstream=UPSTREAM, profile="mistral")
    body = dict(BODIES)["prefill-mistral"]
    sent = json.loads(govern_body(json.dumps(body).encode(), config, "openai").body)
    assert sent["messages"][-1] == {"role": "assistant", "content": "Sure, ", "prefix": True}
    plain = ProxyConfig(upstream=UPSTREAM)
    big = dict(BODIES)["reserve-over-window"]
    governed = govern_body(json.dumps(big).encode(), plain, "openai")
    assert json.loads(governed.body)["max_tokens"] < 100_000
    assert any(a.stage == "reserve" for a in governed.report.actions)
    null = govern_body(json.dumps(dict(BODIES)["null-beside-set"]).encode(), plain, "openai")
    assert null.report.max_output == 300
    with pytest.raises(BadRequest) as refused:
        govern_body(json.dumps(dict(BODIES)["model-number"]).encode(), plain, "openai")
    assert refused.value.param == "model"


def test_an_unreadable_reserve_is_named_by_its_field_on_both_paths() -> None:
    body = dict(BODIES)["reserve-string"]
    with pytest.raises(InputError) as library:
        govern_request(body, api="openai")
    assert str(library.value) == "max_tokens must be a non-negative integer, got 'lots'"
    assert library.value.path == "max_tokens"
    with pytest.raises(BadRequest) as proxy:
        govern_body(json.dumps(body).encode(), ProxyConfig(upstream=UPSTREAM), "openai")
    assert (proxy.value.message, proxy.value.param) == (str(library.value), "max_tokens")


@pytest.mark.parametrize(
    ("route", "body"),
    [
        ("openai", {"model": "gpt-4o", "messages": [USER]}),
        ("responses", {"model": "gpt-4o", "input": "hi"}),
        ("gemini", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
    ],
)
def test_max_output_is_the_reserve_of_a_body_that_names_none_on_every_route(
    route: str, body: dict[str, Any]
) -> None:
    config = ProxyConfig(upstream=UPSTREAM, max_output=1_000, context_window=16_000)
    governed = govern_body(json.dumps(body).encode(), config, route, model="gemini-2.5-flash" if route == "gemini" else None)
    assert governed.report.max_output == 1_000
    library = govern_request(body, api=route, context_window=16_000, max_output=1_000)  # type: ignore[arg-type]
    assert library.report.max_output == 1_000


def test_api_is_required_and_named_once() -> None:
    body = {"model": "gpt-4o", "messages": [USER]}
    named = ", ".join(repr(api) for api in APIS)  # every name, in the one table's order
    with pytest.raises(ConfigError, match=rf"needs api=.*{re.escape(named)}"):
        govern_request(body)
    with pytest.raises(ConfigError, match=r"validate_request\(\) needs api="):
        validate_request(body)
    with pytest.raises(ConfigError, match="unknown api 'chat'"):
        govern_request(body, api="chat")  # type: ignore[arg-type]
    # the names given so far stay (a new wire format adds its own: formats/_registry.py)
    assert len(set(APIS)) == len(APIS) and {"anthropic", "openai", "responses", "gemini"} <= set(APIS)
    assert {route.api for route in ROUTES} == set(APIS)  # the proxy's routes
    assert set(CLI_APIS) <= set(APIS)  # context-governor run --api


def test_run_reads_its_old_api_name_with_a_warning() -> None:
    from context_governor.cli._run import _ApiChoice

    with pytest.warns(DeprecationWarning, match="--api chat is deprecated: use --api openai"):
        assert _ApiChoice(CLI_APIS).convert("chat", None, None) == "openai"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _ApiChoice(CLI_APIS).convert("openai", None, None) == "openai"
