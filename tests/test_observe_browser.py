"""The page in a real browser (Debian's chromium, headless; tests/browser.py), after a
scripted session through the proxy that compacts: what a person would look for is
there (the totals, the chart with its compactions marked, the diff with the cleared
and cut parts), and the cache figures on the page and in /metrics equal the sums of
what the caching fake upstream reported. 40 steps by default, the 300-step session
at the full level (CG_TEST_LEVEL=full, as CI runs). Fails, never skips, without
chromium (`make test` installs it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser import dom, screenshot
from fake_cache import FakeCache
from levels import examples
from observe_session import metric, run
from test_proxy import Served

from context_governor.proxy import PageConfig, ProxyConfig, create_app

STEPS = examples(300, 80)  # long enough that a request both clears and cuts (clearing alone fits 60)


@pytest.fixture(scope="module")
def session() -> Iterator[tuple[str, FakeCache]]:
    fake = FakeCache().start()
    served = Served(create_app(ProxyConfig(upstream=fake.base_url, context_window=12_000, page=PageConfig(content=True, content_bytes=256 * 1024 * 1024))))
    run(served.url, "openai", STEPS)
    yield served.url, fake
    served.stop()
    fake.stop()


def value(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}" data-value="([^"]*)"', html)
    assert found, f"#{element_id} is not on the page"
    return found.group(1)


def test_the_list_shows_the_providers_cache_figures(session: tuple[str, FakeCache]) -> None:
    root, fake = session
    totals = fake.totals()
    assert len(fake.reported) == STEPS
    html = dom(f"{root}/ui/")
    assert 'data-ready="1"' in html, html[-2000:]
    assert int(value(html, "cache-read-total")) == totals["read"] > 0
    assert int(value(html, "input-total")) == totals["input"]
    assert float(value(html, "cached-share")) == pytest.approx(totals["read"] / totals["input"])
    assert metric(root, "context_governor_upstream_cache_read_tokens_total") == totals["read"]
    assert metric(root, "context_governor_upstream_input_tokens_total") == totals["input"]
    assert metric(root, "context_governor_requests_total", outcome="ok") == STEPS
    saved = metric(root, "context_governor_saved_tokens_total")
    assert saved > 0 and int(value(html, "client-total")) - int(value(html, "forwarded-total")) <= saved


def test_the_chart_is_drawn_with_the_compactions_marked(session: tuple[str, FakeCache]) -> None:
    root, fake = session
    conversation = httpx.get(f"{root}/ui/api/conversations").json()[0]
    rows = httpx.get(f"{root}/ui/api/conversations/{conversation['id']}").json()["rows"]
    assert [(r["input"], r["cache_read"]) for r in rows] == [(r["input"], r["read"]) for r in fake.reported]
    compacted = [r["index"] for r in rows if r["compacted"]]
    assert compacted
    html = dom(f"{root}/ui/#c={conversation['id']}")
    assert '<svg id="chart"' in html
    for series in ("series-client", "series-forwarded", "series-cached"):
        points = re.search(rf'class="{series}" points="([^"]+)"', html)
        assert points and len(points.group(1).split()) == STEPS, series
    marks = [int(i) for i in re.findall(r'class="compaction-mark" data-index="(\d+)"', html)]
    assert marks == compacted
    assert int(value(html, "conv-cache-read")) == fake.totals()["read"]
    assert int(value(html, "conv-compactions")) == len(compacted)


def test_each_compaction_says_what_it_took_off_and_made_the_provider_re_read(session: tuple[str, FakeCache]) -> None:
    root, _ = session
    conversation = httpx.get(f"{root}/ui/api/conversations").json()[0]
    rows = httpx.get(f"{root}/ui/api/conversations/{conversation['id']}").json()["rows"]
    costly = [r for r in rows if r["removed"]]
    assert costly
    html = dom(f"{root}/ui/#c={conversation['id']}")
    assert int(value(html, "conv-compaction-cost")) == conversation["compaction_rewritten"] > 0
    for row in costly:
        assert f"−{row['removed']:,} a request; {row['rewritten']:,} re-sent" in html


def test_the_diff_shows_the_cleared_result_and_the_cut(session: tuple[str, FakeCache]) -> None:
    root, _ = session
    conversation = httpx.get(f"{root}/ui/api/conversations").json()[0]
    rows = httpx.get(f"{root}/ui/api/conversations/{conversation['id']}").json()["rows"]
    target = None
    for row in reversed(rows):
        detail = httpx.get(f"{root}/ui/api/requests/{row['seq']}").json()
        if detail["view"] and detail["view"]["counts"].get("cleared") and detail["view"]["counts"].get("cut"):
            target = detail
            break
    assert target is not None, "no request with both a cleared result and a cut"
    html = dom(f"{root}/ui/#r={target['seq']}")
    client_side = html[html.index('id="client-side"') : html.index('id="model-side"')]
    model_side = html[html.index('id="model-side"') :]
    assert client_side.count('data-mark="cut"') == target["view"]["counts"]["cut"]
    assert model_side.count('data-mark="cleared"') == target["view"]["counts"]["cleared"]
    assert '<span class="tag">cleared</span>' in model_side
    assert "Refactor the handlers module" in client_side  # the content itself is shown


def test_the_offline_page_renders_too(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner
    from observe_session import body

    from context_governor.cli import main

    source = tmp_path / "s.jsonl"
    source.write_text("\n".join(json.dumps(body("openai", n)[1]) for n in range(1, 41)) + "\n")
    out = tmp_path / "s.html"
    CliRunner().invoke(main, ["govern", str(source), "--context-window", "16000", "--html", str(out)])
    html = dom(out.as_uri() + "#c=s.jsonl")
    assert '<svg id="chart"' in html and 'class="compaction-mark"' in html
    shot = screenshot(out.as_uri() + "#c=s.jsonl", tmp_path / "s.png")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_with_a_token_the_page_loads_and_shows_a_forgotten_report_by_its_figures() -> None:
    """With --ui-token every load needs the token, and a browser sends it only with the
    page's own load (?token=): the page must bring its style and script in that load.
    A request whose report the proxy forgot (--ui-reports-mb) still shows its figures."""
    fake = FakeCache().start()
    token = "t0ken-for-the-page-0123"
    config = ProxyConfig(upstream=fake.base_url, context_window=12_000, page=PageConfig(token=token, report_bytes=15_000))
    served = Served(create_app(config))
    try:
        run(served.url, "openai", 20)
        first = httpx.get(f"{served.url}/ui/api/requests/1", headers={"authorization": f"Bearer {token}"}).json()
        assert first["report"] is None  # forgotten: the oldest go first
        html = dom(f"{served.url}/ui/?token={token}")
        assert 'data-ready="1"' in html and 'id="input-total"' in html, html[-2000:]
        html = dom(f"{served.url}/ui/?token={token}#r=1")
        assert 'data-ready="1"' in html and 'id="no-report"' in html, html[-2000:]
        assert f"{first['row']['tokens_before']:,}" in html  # the row's figures stand in
    finally:
        served.stop()
        fake.stop()
