"""bench/first_call.py and the load test's pass-through relay: sane figures, in seconds.

The figures are not asserted (they depend on the machine); what is asserted is that
they are computed from what they claim (the parallel counts equal the serial ones, the
relay answers every request with its own marker), so the reports cannot quietly say
nonsense.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import pytest  # noqa: E402

from bench import first_call, load, run, sessions  # noqa: E402
from bench.speed import governor_fn  # noqa: E402


@pytest.fixture(scope="module")
def results() -> list[first_call.FirstCall]:
    return [
        first_call.measure(size, 1, 128_000, {first_call.GOVERNOR: governor_fn})
        for size in (120, 240)
    ]


def test_first_call_rows_and_render(results: list[first_call.FirstCall]) -> None:
    for result in results:
        assert set(result.times) >= {
            first_call.GOVERNOR,
            first_call.DUMPS,
            first_call.REST,
            first_call.RESUMED,
            *first_call.BREAKDOWN,
        }
        assert all(ns > 0 for times in result.times.values() for ns in times)
    table = first_call.render_table(results)
    assert "| 120 messages (median of 1) | vs json.dumps | 240 messages" in table
    rows = first_call.target_rows(results)
    resumed = "history, resumed (its counts in a SQLite count store, an empty memo)"
    assert [r[0] for r in rows] == [
        "first call on a 120-message history",
        f"first call on a 120-message {resumed}",
        "first call on a 240-message history",
        f"first call on a 240-message {resumed}",
    ]
    assert all(r[1] == "≤ 5× json.dumps of it" for r in rows)


def test_parallel_counts_equal_the_serial_ones() -> None:
    history = sessions.long_history(300, variant=3)
    serial = first_call._count_all(history.model, history.messages)
    assert first_call._threads(history.model, history.messages) == serial
    assert first_call._forked(history.model, history.messages) == serial
    assert first_call._forked(history.model, history.messages[:1], n=3) == serial[:1]


def test_relay_passes_every_request_through() -> None:
    specs = [s for s in load.build_specs(20, seed=3) if s.fault is None][:8]
    log = Path(tempfile.mkdtemp(prefix="cg-relay-test-")) / "servers.log"
    with load.served(lambda port: ["-m", "bench.load_upstream", str(port)], log) as (up, _):
        relay = load.run_relayed("relay", f"{up}/v1", specs, log)
    assert relay.count("errors") == 0 and relay.count("mixed") == 0
    assert sum(o.spec.stream for o in relay.outcomes) > 0  # streams are relayed too
    assert load.throughput(relay) > 0
    lines = load.comparison(relay, relay, [relay])
    assert lines[0].startswith("## Governing proxy against a plain pass-through proxy")
    assert lines[-1].endswith("| +0 / +0 | +0 / +0 |")


OLD_REPORT = """# Benchmarks

## Targets

| target | goal | measured | verdict |
|---|---|---|---|
| steady-state median per step | ≤ 0.1× | 0.81× | **MISS** |
| first call on a 10,000-message history | ≤ 10× json.dumps of it | 9.57× (old run) | **PASS** |
| memory kept by a Governor after the replay | ≤ 1× | 0.51× | **PASS** |

## Speed

### 300-step replay

a table

### First call on a 10,000-message history (19.3 MB of request JSON)

| contender | first call | vs json.dumps |
| Governor | 967 ms (old run) | 9.57× |

### Memory

kept
"""


def test_splice_replaces_only_the_first_call_rows_and_section(
    results: list[first_call.FirstCall],
) -> None:
    new = first_call.splice(OLD_REPORT, results)
    # "old run" marks the old rows: a measured ratio may well print as 9.57× itself
    assert "old run" not in new and "10,000-message" not in new
    for kept in ("| steady-state median per step |", "| memory kept by a Governor", "a table",
                 "### Memory\n\nkept"):  # fmt: skip
        assert kept in new
    lines = new.split("\n")
    start = lines.index("| steady-state median per step | ≤ 0.1× | 0.81× | **MISS** |")
    assert lines[start + 1 : start + 5] == first_call.target_lines(results)
    assert first_call.section(results) + "\n\n### Memory" in new
    with pytest.raises(ValueError):
        first_call.splice("# nothing to replace\n", results)


def test_first_call_only_splices_a_whole_report_and_writes_a_page_otherwise(
    tmp_path: Path,
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text(OLD_REPORT, encoding="utf-8")
    page = tmp_path / "first-call.md"
    for out in (report, page):
        assert run.main(["--first-call-only", "--history", "60,90", "--repeats", "1",
                         "--out", str(out)]) == 0  # fmt: skip
    spliced = report.read_text(encoding="utf-8")
    assert spliced.startswith("# Benchmarks") and "| first call on a 90-message history" in spliced
    standalone = page.read_text(encoding="utf-8")
    assert standalone.startswith("# First call on a long history")
    assert "| first call on a 60-message history" in standalone
