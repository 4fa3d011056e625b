"""The proxy's added latency per request on a warm conversation with a ~128k-token body.

    .venv/bin/python -m bench.proxy_cost [--steps N] [--out docs/benchmarks.md]

The proxy is stateless: each request is governed from scratch. What it keeps across
requests is pure: the token count of each message payload, by digest, in the one
counter per encoding the process holds (tokens.ExactCounter's LRU memo). This bench
replays the benchmark's coding session as Chat Completions bodies, one request per
model call, through ``governing.govern_body`` (what the proxy runs per request,
HTTP excluded), and times in the same run, per request:

* **governed**: ``govern_body(raw)``: parse, govern, re-serialize;
* **parse + re-serialize**: ``encode(parse(raw))``, what any JSON-rewriting proxy pays;
* **added**: governed − parse + re-serialize, the cost of governance itself.

The *warm* rows are the last ``--measure`` requests of the conversation (the counts
of earlier requests' messages are memoised, as in a proxy serving the conversation);
the *cold* row governs the last body once more in a process whose memo was emptied
(every message counted), median of 3.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from context_governor import profiles
from context_governor.counting import exact_counter
from context_governor.proxy._config import ProxyConfig
from context_governor.proxy._governing import encode, govern_body, parse

from .section import section_main
from .sessions import coding_session

HEADING = "## Proxy per-request cost"
MODEL = "gpt-4.1"  # a 1M-token window: the 128k body is governed, never cut
TARGET_TOKENS = 128_000
TARGET_RATIO = 2.0


def bodies(target: int = TARGET_TOKENS) -> list[bytes]:
    """The conversation's request bodies, one per model call, until one holds ``target``
    tokens (o200k, by the exact counter)."""
    replay = coding_session(2_000)
    counter = exact_counter(MODEL)
    history: list[dict[str, object]] = []
    out: list[bytes] = []
    for step in replay.steps:
        history.extend(step)
        body = {"model": MODEL, "messages": history, "tools": replay.tools, "max_tokens": 4096}
        out.append(json.dumps(body).encode())
        if counter.prompt_tokens(history, replay.tools) >= target:
            break
    return out


def _ms(run: Callable[[], object], repeats: int = 1) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _round_trip(raw: bytes) -> object:
    """Parse and re-encode a body: what the proxy pays whatever governance does."""
    return encode(parse(raw))


@dataclass(frozen=True, slots=True)
class Row:
    what: str
    requests: int
    governed_ms: float
    roundtrip_ms: float

    @property
    def added_ms(self) -> float:
        return self.governed_ms - self.roundtrip_ms

    @property
    def ratio(self) -> float:
        return self.added_ms / self.roundtrip_ms


def measure(measure_last: int = 10) -> tuple[list[Row], int, int]:
    config = ProxyConfig(upstream="http://upstream.invalid/v1", context_window=1_000_000)
    raws = bodies()
    profiles._cached_exact_counter.cache_clear()  # an empty memo, as a fresh proxy has
    first = len(raws) - measure_last
    for raw in raws[:first]:  # the conversation so far, through the same process
        govern_body(raw, config)
    governed, roundtrip = [], []
    for raw in raws[first:]:
        governed.append(_ms(partial(govern_body, raw, config)))
        roundtrip.append(_ms(partial(_round_trip, raw), 3))
    rows = [Row("warm conversation", measure_last, statistics.median(governed),
                statistics.median(roundtrip))]  # fmt: skip
    last = raws[-1]

    def cold() -> None:
        profiles._cached_exact_counter.cache_clear()
        govern_body(last, config)

    exact_counter(MODEL)  # the encoding stays loaded: a cold memo, not a cold process
    rows.append(Row("cold memo (every message counted)", 1, _ms(cold, 3),
                    _ms(lambda: encode(parse(last)), 3)))  # fmt: skip
    data = json.loads(last)
    tokens = exact_counter(MODEL).prompt_tokens(data["messages"], data["tools"])
    return rows, tokens, len(last)


#: Where the proxy's cost under load is (another run: ``make load``).
LOAD_POINTER = (
    "Under load (500 concurrent requests on 2 cores, faults included), the proxy's "
    "throughput and added p50/p99 next to a plain pass-through proxy with the same server "
    "stack, measured in the same run: docs/load.md, *Governing proxy against a plain "
    "pass-through proxy* (`make load`)."
)


def render(rows: Sequence[Row], tokens: int, size: int) -> str:
    warm = rows[0]
    verdict = "PASS" if warm.ratio <= TARGET_RATIO else "MISS"
    lines = [
        HEADING,
        "",
        f"A Chat Completions conversation (the replay's coding session, model `{MODEL}`) "
        f"through `govern_body`, the proxy's per-request work without HTTP; the last body "
        f"holds {tokens:,} tokens ({size / 2**20:.1f} MiB). *Added* = governed − (parse + "
        "re-serialize of the same body), measured in the same run. Target: added ≤ "
        f"{TARGET_RATIO:g}× parse + re-serialize on a warm conversation: **{verdict}** "
        f"({warm.ratio:.2f}×). `python -m bench.proxy_cost --out docs/benchmarks.md` "
        "reruns this section. "
        f"Load average at the end of the run: {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs (a busy machine slows every contender; compare ratios).",
        "",
        LOAD_POINTER,
        "",
        "| requests | governed (median) | parse + re-serialize | added | added / parse + "
        "re-serialize |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.what} ({r.requests}) | {r.governed_ms:.1f} ms | {r.roundtrip_ms:.1f} ms | "
            f"{r.added_ms:.1f} ms | {r.ratio:.2f}× |"
        )
    return "\n".join([*lines, ""])


def main(argv: Sequence[str] | None = None) -> int:
    return section_main(__doc__, argv, {"measure": 10}, lambda args: render(*measure(args.measure)))


if __name__ == "__main__":
    sys.exit(main())
