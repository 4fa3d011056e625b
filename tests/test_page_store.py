"""The page's lasting record (issue 38 item 4): what /ui shows, and the savings it adds
up, survive a restart of the proxy, in SQLite (one machine) or Redis (replicas), bounded
as the page is."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from fake_upstream import FakeUpstream, Reply
from redis_server import redis_url
from test_proxy import DAMAGED, MODEL, Served

from context_governor.proxy import CountingConfig, PageConfig, ProxyConfig, create_app

__all__ = ["redis_url"]  # the fixture, used by name


def _serve(upstream: FakeUpstream, **config: object) -> Served:
    return Served(create_app(ProxyConfig(upstream=upstream.base_url, **config)))  # type: ignore[arg-type]


def _chat(root: str, conversation: str, turn: int) -> None:
    body = {"model": MODEL, "messages": [*DAMAGED, {"role": "user", "content": f"turn {turn}"}]}
    headers = {"x-context-governor-conversation": conversation}
    assert httpx.post(f"{root}/v1/chat/completions", json=body, headers=headers, timeout=30).status_code == 200


def _page(root: str) -> dict[str, dict[str, object]]:
    return {c["id"]: c for c in httpx.get(f"{root}/ui/api/conversations", timeout=10).json()}


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_the_page_survives_a_restart(upstream: FakeUpstream, tmp_path: Path, kind: str, request: pytest.FixtureRequest) -> None:
    url = f"sqlite:///{tmp_path / 'page.db'}" if kind == "sqlite" else request.getfixturevalue("redis_url")
    page = PageConfig(store=url, requests=5)
    first = _serve(upstream, page=page)
    root = f"http://127.0.0.1:{first.port}"
    upstream.push(*[Reply.text("ok") for _ in range(7)])
    for turn in range(4):
        _chat(root, "alpha", turn)
    for turn in range(3):
        _chat(root, "beta", turn)
    before = _page(root)
    first.stop()  # a graceful stop writes what is still queued
    second = _serve(upstream, page=page)
    again = _page(f"http://127.0.0.1:{second.port}")
    second.stop()
    assert set(again) == {"alpha", "beta"}
    for cid in ("alpha", "beta"):
        for figure in ("requests", "client_tokens", "forwarded_tokens", "input", "compactions"):
            assert again[cid][figure] == before[cid][figure], (cid, figure)
    # bounded as the page is: at most 5 rows kept in all, the newest
    shown = sum(int(c["shown"]) for c in again.values())  # type: ignore[call-overload]
    assert shown == 5


def test_the_count_store_is_the_page_store_by_default(upstream: FakeUpstream, tmp_path: Path) -> None:
    counting = CountingConfig(store=f"sqlite:///{tmp_path / 'counts.db'}")
    first = _serve(upstream, counting=counting)
    upstream.push(Reply.text("ok"))
    _chat(f"http://127.0.0.1:{first.port}", "gamma", 0)
    first.stop()
    second = _serve(upstream, counting=counting)
    assert "gamma" in _page(f"http://127.0.0.1:{second.port}")
    second.stop()
    third = _serve(upstream)  # no store at all: memory only
    assert _page(f"http://127.0.0.1:{third.port}") == {}
    third.stop()
