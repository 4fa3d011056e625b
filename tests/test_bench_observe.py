"""bench.observe_cost's figures without its servers: the confidence interval of a median,
the verdicts (a measurable change, a store past its bound, an RSS that keeps growing),
the table; and bench.section.section_of, with which `make bench` keeps the section that
`make load` wrote."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import observe_cost as oc  # noqa: E402
from bench.section import section_of, write_section  # noqa: E402


def test_the_median_interval_holds_the_median_and_narrows_with_more_requests() -> None:
    rng = random.Random(3)
    small = [rng.gauss(0.001, 0.002) for _ in range(100)]
    large = [rng.gauss(0.001, 0.002) for _ in range(10_000)]
    for diffs in (small, large):
        median, low, high = oc.median_ci(diffs)
        assert low <= median <= high
    assert (oc.median_ci(large)[2] - oc.median_ci(large)[1]) < (oc.median_ci(small)[2] - oc.median_ci(small)[1]) / 5
    _, low, high = oc.median_ci(large)
    assert low < 1.0 < high  # the true median, 1 ms, inside


def _target(name: str, times: list[float]) -> oc.Target:
    target = oc.Target(name, "http://x", None, 1)  # type: ignore[arg-type]
    target.times["w"] = times
    return target


def test_a_change_at_p50_is_measurable_only_past_the_interval_and_the_margin() -> None:
    rng = random.Random(5)
    direct = _target("direct", [0.001] * 2000)
    off = [0.004 + rng.uniform(0, 0.002) for _ in range(2000)]
    same = [t + rng.gauss(0, 0.0002) for t in off]
    slower = [t + 0.0005 for t in off]  # +0.5 ms on a ~4 ms p50
    tiny = [t + 0.00001 for t in off]  # +0.01 ms: measurable, but within 1% of p50
    faster = [t - 0.0005 for t in off]  # not a gain: noise between processes
    for times, expected in ((same, True), (slower, False), (tiny, True), (faster, True)):
        found = oc.latency("w", direct, [_target("off", off), _target("on", times)])
        assert found.unmeasurable is expected, found.rows
    found = oc.latency("w", direct, [_target("off", off), _target("on", slower)])
    assert abs(found.rows[1]["diff"] - 0.5) < 0.01 and found.rows[1]["r50"] > 1.05
    twin = _target("off again", slower)
    twin.variant = oc.Variant("off again", (), observing=False, twin=True)
    found = oc.latency("w", direct, [_target("off", off), twin, _target("on", same)])
    assert found.unmeasurable and found.rows[1]["twin"]  # the noise row is shown, not judged
    # on as slow as the twin: no more than two identical processes differ by
    found = oc.latency("w", direct, [_target("off", off), twin, _target("on", [t + 0.0004 for t in off])])
    assert found.unmeasurable and 0.49 < found.margin < 0.51


def _result(rss_on: list[float], kept: dict[str, Any]) -> oc.Result:
    session = oc.Latency("session", [
        {"name": "off", "n": 10, "p50": 3.0, "p90": 5.0, "r50": 1.0, "r90": 1.0, "ci": None, "diff": None, "twin": False},
        {"name": "on", "n": 10, "p50": 3.0, "p90": 5.0, "r50": 1.0, "r90": 1.0, "ci": (-0.1, 0.1), "diff": 0.0, "twin": False},
    ])  # fmt: skip
    return oc.Result(
        steps=10, conversations=2000, session=session, short=session, checkpoints=[500, 1000, 2000],
        rss={"off": [100, 101, 101, 102], "on": rss_on}, peaks={"off": 102, "on": max(rss_on)},
        kept={"off": None, "on": kept}, scrape={"on": (11_000, 1.5)}, levels_off=["on"],
        load=(1.0, 1.0), seconds=60,
    )


def test_memory_is_bounded_only_within_the_bounds_and_levelled_off() -> None:
    bounds = {"conversations": 500, "records": 20_000, "report_bytes": 64 << 20, "content_bytes": 64 << 20}
    kept = {"conversations": 500, "records": 500, "reports": 500, "report_bytes": 1 << 19, "contents": 0, "content_bytes": 0}
    flat = _result([103, 104, 104, 105], {"kept": kept, "bounds": bounds})
    assert oc.bounded(flat) == (True, [])
    growing = _result([103, 104, 110, 130], {"kept": kept, "bounds": bounds})
    ok, why = oc.bounded(growing)
    assert not ok and "grew 19 MB" in why[0]
    over = _result([103, 104, 104, 105], {"kept": {**kept, "records": 20_001}, "bounds": bounds})
    assert not oc.bounded(over)[0]
    text = oc.render(flat, "python -m bench.observe_cost")
    assert text.startswith(oc.HEADING + "\n") and "**PASS**" in text
    assert "| on − off | +3 | +3 | +3 | +3 | – | – |" in text
    assert "500 conversations (bound 500); 500 requests" in text
    assert "**MISS**" in oc.render(growing, "x")


def test_make_bench_keeps_the_section_make_load_wrote(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n## Speed\n\nfast\n\n## Method\n\nhow\n")
    write_section(doc, "## Proxy observation overhead\n\nsmall\n")
    before = doc.read_text()
    kept = section_of(before, "## Proxy observation overhead")
    assert kept == "## Proxy observation overhead\n\nsmall\n"
    assert section_of(before, "## Nothing") == ""
    doc.write_text("# Benchmarks\n\n## Speed\n\nfaster\n\n## Method\n\nhow\n")  # what bench.run writes
    write_section(doc, kept)
    assert doc.read_text() == before.replace("fast\n", "faster\n")
