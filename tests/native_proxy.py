"""Helpers for the native-route proxy tests: a proxy in front of the fake native upstream.

``Served`` (from test_proxy) runs the proxy app on a free port; ``ProxyStarter``
starts proxies pointed at a FakeNative and stops them all at the end.
"""

from __future__ import annotations

from typing import Any

from fake_native import FakeNative
from test_proxy import Served

from context_governor.proxy import ProxyConfig, create_app

CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-5-mini"
CLIENT_KEY = "sk-ant-client-secret-0123456789"
#: headers an Anthropic client sends (the SDK itself sends its key as a bearer token;
#: Claude-style clients send x-api-key): forwarded unchanged, never logged
ANTHROPIC_HEADERS = {
    "x-api-key": CLIENT_KEY,
    "anthropic-version": "2023-06-01",
    "anthropic-beta": "interleaved-thinking-2025-05-14",
}


class ProxyStarter:
    """Start proxies (ProxyConfig keywords; the upstream defaults to the fake)."""

    def __init__(self, native: FakeNative) -> None:
        self._native = native
        self._served: list[Served] = []

    def __call__(self, **config: Any) -> str:
        """The proxy's root URL (an Anthropic client's base URL; an OpenAI one adds /v1)."""
        config.setdefault("upstream", self._native.base_url)
        served = Served(create_app(ProxyConfig(**config)))
        self._served.append(served)
        return served.url

    def stop(self) -> None:
        for served in self._served:
            served.stop()


def tool_result_text(step: int, size: int) -> str:
    """A file's worth of text for a tool result, different at every step."""
    lines = [f"def handler_{step}_{i}(v): return v * {step + i}  # {i % 7}" for i in range(size // 45)]
    return "\n".join(lines)
