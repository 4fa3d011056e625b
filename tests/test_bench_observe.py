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


def _target(name: str, group: str, times: list[float]) -> oc.Target:
    target = oc.Target(name, "http://x", None, 1, oc.Variant(name, (), group))  # type: ignore[arg-type]
    target.times["w"] = times
    return target


def _kinds(off: list[float], on: list[float], noise: float = 0.0) -> list[oc.Target]:
    """Two processes of each kind; the second off ``noise`` s slower than the first."""
    return [_target("off #1", oc.OFF, off), _target("on #1", oc.ON, on),
            _target("off #2", oc.OFF, [t + noise for t in off]), _target("on #2", oc.ON, on)]


def test_a_change_at_p50_is_measurable_only_past_the_interval_the_margin_and_the_noise() -> None:
    rng = random.Random(5)
    direct = oc.Target("direct", "http://x", None)  # type: ignore[arg-type]
    direct.times["w"] = [0.001] * 2000
    off = [0.004 + rng.uniform(0, 0.002) for _ in range(2000)]
    same = [t + rng.gauss(0, 0.0002) for t in off]
    slower = [t + 0.0005 for t in off]  # +0.5 ms on a ~4 ms p50
    tiny = [t + 0.00001 for t in off]  # +0.01 ms: measurable, but within 1% of p50
    faster = [t - 0.0005 for t in off]  # not a gain: noise between processes
    for times, expected in ((same, True), (slower, False), (tiny, True), (faster, True)):
        found = oc.latency("w", direct, _kinds(off, times))
        assert found.unmeasurable is expected, found.compared
    found = oc.latency("w", direct, _kinds(off, slower))
    target = next(c for c in found.compared if c["kind"] == "target")
    assert abs(target["diff"] - 0.5) < 0.01 and target["r50"] > 1.05
    assert [r["name"] for r in found.rows] == ["off #1", "on #1", "off #2", "on #2"]
    # keeping the most (opt-in content) is shown, not judged
    shown = oc.latency("w", direct, [*_kinds(off, same), _target("most", oc.MOST, slower)])
    assert shown.unmeasurable and any(c["group"] == oc.MOST and c["ci"][0] > 0.4 for c in shown.compared)
    # two off processes 0.6 ms apart: on's +0.5 ms over their mean is no more than that
    noisy = oc.latency("w", direct, _kinds(off, [t + 0.0008 for t in off], noise=0.0006))
    assert noisy.unmeasurable and 0.59 < noisy.margin < 0.61, noisy.compared


def _result(on_rss: list[float], kept: dict[str, Any]) -> oc.Result:
    rows = [{"name": "off #1", "group": "off", "p50": 3.0, "p90": 5.0}]
    compared = [
        {"name": "on − off", "kind": "target", "group": "on", "diff": 0.0, "ci": (-0.1, 0.1), "r50": 1.0, "r90": 1.0},
        {"name": "noise: off #2 − off #1", "kind": "noise", "group": "off", "diff": 0.0, "ci": (-0.05, 0.05), "r50": 1.0, "r90": 1.0},
    ]
    session = oc.Latency("session", rows, compared, 3.0)
    off = [100.0, 101, 101, 102]
    return oc.Result(
        steps=10, conversations=2000, session=session, short=session, checkpoints=[500, 1000, 2000],
        rss={"off #1": off, "on #1": on_rss, "off #2": off, "on #2": on_rss},
        peaks={"off #1": 102, "on #1": max(on_rss), "off #2": 102, "on #2": max(on_rss)},
        kept={"off #1": None, "on #1": kept, "off #2": None, "on #2": kept},
        scrape={"on #1": (11_000, 1.5)}, cpu={"off #1": 2.0, "on #1": 2.1, "off #2": 2.0, "on #2": 2.1}, groups={"off #1": "off", "on #1": "on", "off #2": "off", "on #2": "on"},
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
    assert "| on (as shipped) − off (means) | +3 | +3 | +3 | +3 | – | – |" in text
    assert "| noise: off #2 − off #1 | +0 | +0 | +0 | +0 | – | – |" in text
    assert "500 conversations (bound 500); 500 requests" in text
    assert "on (as shipped) − off +0.100 ms" in text and "noise: off #2 − off #1 +0.000 ms" in text
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
