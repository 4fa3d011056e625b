"""What observing costs the proxy: the latency and the memory ``/metrics`` and ``/ui`` add.

    make load                                   # also runs bench.load; a few minutes
    .venv/bin/python -m bench.observe_cost --quick           # under a minute
    .venv/bin/python -m bench.observe_cost [--steps N] [--conversations N] [--out FILE]

Real ``context-governor proxy`` processes (uvicorn, as the CLI runs them) in front of one
scripted upstream in its own process (bench/observe_upstream.py: it answers at once,
with usage that includes cached tokens, so every part of the observer runs):

- **off**: ``--no-metrics --no-ui``: the observer does nothing past a request's start;
- **on**: as shipped: ``/metrics`` and the page, their bounds at their defaults;
- **on, keeping the most**: also ``ui-content = true``, and ``ui-conversations`` as many
  as the run has conversations (in its config file's ``[proxy]`` table): every request's
  record, report and content kept, as far as the bounds in bytes allow (the page's
  largest footprint at this traffic).

*Off* and *on* run in two processes each: two identical processes differ, for no reason
of ours (where each landed in memory, which core, what else ran), by as much as 0.2 ms
at p50 on a busy machine, about what observing costs; so *on* − *off* is taken between
the means of their two processes, and what each pair's two processes differ by is the
noise it is read against. Every server gets the same ``PYTHONHASHSEED``, which removes
one source of it (string hashing, hence dict layouts, differs from process to process).

Every request goes to each proxy and straight to the upstream, one at a time, in an
order that rotates from one request to the next, so that load from elsewhere on a
shared machine falls on all of them alike. A request's **proxy-added time** is its
latency through a proxy less its latency straight to the upstream. Answers are JSON
(not streamed): the observer files a JSON answer before it is returned, so its work is
on the request's path (a stream's is filed after its last byte).

1. **Latency on a growing agent session**: the replay's coding session
   (bench/sessions.py) as Chat Completions bodies, one per model call, governed at a
   32k window (so compactions, and reports of hundreds of actions: the observer's
   heaviest requests).
2. **Memory with many conversations**: ``--conversations`` conversations (10,000), one
   request each, each with its own first user message (so its own conversation id),
   ~7 KB of history. The RSS of each proxy process at checkpoints, and what the page
   keeps (``/ui/api/memory``) against its bounds; the latency of these short requests
   is the second latency workload, and each server's CPU time over them (/proc) what
   observing costs wherever it runs. A scrape of ``/metrics`` is timed at the end.

Targets: no measurable change at p50 (the 95% confidence interval of the median of the
per-request differences on - off does not lie wholly above ``MARGIN`` of off's p50, or
above what two processes of the same kind differed by, whichever is more: an
equivalence margin, since with enough requests any cost at all becomes "measurable";
one-sided, since observing only adds work), and bounded memory (what the
page keeps within its bounds; the RSS the observer adds as shipped, on - off, no larger
at the end than at half way, within ``FLAT_MB``). Progress goes to stderr; the section
is printed and, with ``--out``, written into that Markdown file (bench/section.py).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from .load import Setting, config_file, rss_mb, served, toml_value
from .section import write_section
from .sessions import coding_session
from .speed import source_info

HEADING = "## Proxy observation overhead"
MODEL = "gpt-4o"
WINDOW = 32_000
#: how much the observer's RSS (on - off) may grow from half way to the end and still
#: count as flat: allocator noise, not a store that grows with the traffic
FLAT_MB = 8.0
#: a change at p50 smaller than this share of the off proxy's p50 counts as none
MARGIN = 0.01
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-observe"}


def progress(message: str) -> None:
    print(f"[observe] {message}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- requests


def session_bodies(steps: int) -> list[bytes]:
    """The coding session's request bodies, one per model call (step 1 onwards)."""
    replay = coding_session(steps + 1)
    bodies = []
    for n, history in enumerate(replay.histories()):
        if n == 0:
            continue  # the opening alone: no model call has answered yet
        body = {"model": MODEL, "messages": history, "tools": replay.tools, "max_tokens": 1024}
        bodies.append(json.dumps(body).encode())
    return bodies


def conversation_body(i: int) -> bytes:
    """Conversation ``i``'s one request: its own first user message, then three tool
    calls and their results (~7 KB in all)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Keep the tests green."},
        {"role": "user", "content": f"Task {i}: fix the failing test in module_{i}.py."},
    ]
    for k in range(3):
        call_id = f"call_{i}_{k}"
        args = json.dumps({"path": f"src/module_{i}_{k}.py"})
        function = {"name": "read_file", "arguments": args}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": function}]},
            {"role": "tool", "tool_call_id": call_id, "content": "\n".join(
                f"def f_{i}_{k}_{n}(x): return x + {n}  # line {n}" for n in range(50))},
        ]  # fmt: skip
    messages.append({"role": "user", "content": "Go on."})
    return json.dumps({"model": MODEL, "messages": messages, "max_tokens": 512}).encode()


# ----------------------------------------------------------------------------- servers


@dataclass(frozen=True)
class Variant:
    name: str
    flags: tuple[str, ...]
    #: the kind: "off", "on" or "most"; a kind's processes are averaged
    group: str
    observing: bool = True
    #: its bounds bind at this traffic: the RSS it adds must level off (``bounded``)
    levels_off: bool = False
    #: its [proxy] settings, in a config file (options that are no longer flags)
    settings: Mapping[str, Setting] = field(default_factory=dict)


OFF, ON, MOST = "off", "on", "most"
GROUP_NAMES = {
    OFF: "off (`--no-metrics --no-ui`)",
    ON: "on (as shipped)",
    MOST: "on, keeping the most",
}


def variants(conversations: int) -> list[Variant]:
    off = ("--no-metrics", "--no-ui")
    most: dict[str, Setting] = {"ui-content": True, "ui-conversations": conversations}
    shown = ", ".join(f"{key} = {toml_value(value)}" for key, value in most.items())
    return [
        Variant("off #1", off, OFF, observing=False),
        Variant("on #1", (), ON, levels_off=True),
        Variant(f"keeping the most (`{shown}`)", (), MOST, settings=most),
        Variant("off #2", off, OFF, observing=False),
        Variant("on #2", (), ON, levels_off=True),
    ]


def proxy_args(upstream: str, variant: Variant, log: Path) -> Callable[[int], list[str]]:
    """The variant's proxy: its flags, and its settings in a config file beside ``log``."""
    config = config_file("proxy", variant.settings, log.parent) if variant.settings else None
    flags = [*variant.flags, *(("--config", str(config)) if config else ())]

    def args(port: int) -> list[str]:
        return [
            "-m", "context_governor", "proxy", "--upstream", upstream, "--port", str(port),
            "--model-window", f"{MODEL}={WINDOW}", *flags,
        ]  # fmt: skip

    return args


@dataclass
class Target:
    """Somewhere the requests go: straight to the upstream, or a proxy (its process)."""

    name: str
    base: str
    client: httpx.Client
    pid: int | None = None
    variant: Variant | None = None
    times: dict[str, list[float]] = field(default_factory=dict)

    def send(self, workload: str, body: bytes) -> None:
        """One request, timed to the end of its answer; anything but a 200 stops the run."""
        started = time.perf_counter()
        response = self.client.post(f"{self.base}/v1/chat/completions", content=body)
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            raise RuntimeError(f"{self.name}: {response.status_code} {response.text[:300]}")
        if self.pid is not None and "x-context-governor-tokens-after" not in response.headers:
            raise RuntimeError(f"{self.name}: the answer did not come through the proxy")
        self.times.setdefault(workload, []).append(elapsed)

    def memory(self) -> dict[str, Any] | None:
        """What the page keeps now against its bounds (None without the page)."""
        if self.variant is None or not self.variant.observing:
            return None
        found: dict[str, Any] = self.client.get(f"{self.base}/ui/api/memory").json()
        return found


def client() -> httpx.Client:
    """The benchmark's client: one keep-alive connection per server, as an agent's SDK
    keeps it (the proxy must answer without waiting on the client's delayed ACK: see
    cli/_proxy.py, _bind)."""
    return httpx.Client(headers=HEADERS, timeout=120)


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used so far (Linux /proc): what
    the observer costs wherever it runs (on the request's path or after it, in a
    collection of garbage), which latency alone would not show."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send_all(targets: Sequence[Target], workload: str, bodies: Sequence[bytes],
             every: int = 0, checkpoint: Callable[[int], None] | None = None) -> None:
    """Each body to every target, one request at a time; the order of the targets turns
    by one from a body to the next. ``checkpoint(n)`` after every ``every`` bodies."""
    n = len(targets)
    for i, body in enumerate(bodies):
        for k in range(n):
            targets[(i + k) % n].send(workload, body)
        if every and checkpoint is not None and (i + 1) % every == 0:
            checkpoint(i + 1)  # fmt: skip


def check_switches(target: Target) -> None:
    """The off proxy really has no /metrics and no /ui; the others have both."""
    want = 404 if target.variant is not None and not target.variant.observing else 200
    for path in ("/metrics", "/ui/api/memory"):
        status = target.client.get(f"{target.base}{path}").status_code
        if status != want:
            raise RuntimeError(f"{target.name}: GET {path} answered {status}, not {want}")


# ----------------------------------------------------------------------------- figures


def pct(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (nearest rank), in ms."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000


def median_ci(diffs: Sequence[float]) -> tuple[float, float, float]:
    """The median of ``diffs`` (ms) and its 95% confidence interval, distribution-free
    (order statistics of the binomial: no assumption about the shape of the noise)."""
    ordered = sorted(diffs)
    n = len(ordered)
    k = max(0, math.floor((n - 1.96 * math.sqrt(n)) / 2))
    return statistics.median(ordered) * 1000, ordered[k] * 1000, ordered[n - 1 - k] * 1000


@dataclass
class Latency:
    workload: str
    #: per process: name, group, p50, p90 (ms)
    rows: list[dict[str, Any]]
    #: comparisons: name, kind ("target" or "noise"), diff, ci, r50, r90
    compared: list[dict[str, Any]]
    off_p50: float

    @property
    def margin(self) -> float:
        """The largest difference (ms) that is no change: ``MARGIN`` of off's p50, or what
        two processes of the same kind differed by, whichever is more."""
        noise = [abs(x) for c in self.compared if c["kind"] == "noise" for x in c["ci"]]
        return float(max([MARGIN * self.off_p50, *noise]))

    @property
    def unmeasurable(self) -> bool:
        """The proxy as shipped did not rise measurably over off at p50: the CI of the
        median difference does not lie wholly above ``margin``. One-sided: observing only
        adds work, so a kind measurably *faster* than off shows the noise, not a gain.
        *Keeping the most* (opt-in content, every conversation) is shown, not judged."""
        margin = self.margin
        return all(c["ci"][0] <= margin for c in self.compared if c["group"] == ON)


def _mean(series: Sequence[Sequence[float]]) -> list[float]:
    return [sum(values) / len(values) for values in zip(*series, strict=True)]


def latency(workload: str, direct: Target, proxies: Sequence[Target]) -> Latency:
    """Each process's proxy-added times; each observing kind against off (the per-request
    mean of each kind's processes), and each kind's two processes against each other."""
    base = direct.times[workload]
    added = {
        p.name: [t - d for t, d in zip(p.times[workload], base, strict=True)] for p in proxies
    }
    groups: dict[str, list[list[float]]] = {}
    for p in proxies:
        assert p.variant is not None
        groups.setdefault(p.variant.group, []).append(added[p.name])
    rows = [
        {"name": p.name, "group": p.variant.group if p.variant else "",
         "p50": pct(added[p.name], 0.5), "p90": pct(added[p.name], 0.9)}
        for p in proxies
    ]  # fmt: skip
    pooled = {g: [t for series in members for t in series] for g, members in groups.items()}
    off = _mean(groups[OFF])
    compared = []
    for group in (ON, MOST):
        if group not in groups:
            continue
        diff, low, high = median_ci([a - b for a, b in zip(_mean(groups[group]), off, strict=True)])
        compared.append({
            "name": f"{GROUP_NAMES[group]} − off", "kind": "target", "group": group, "diff": diff,
            "ci": (low, high), "r50": pct(pooled[group], 0.5) / pct(pooled[OFF], 0.5),
            "r90": pct(pooled[group], 0.9) / pct(pooled[OFF], 0.9),
        })  # fmt: skip
    for group, members in groups.items():
        if len(members) == 2:
            pairs = zip(members[1], members[0], strict=True)
            diff, low, high = median_ci([a - b for a, b in pairs])
            compared.append({
                "name": f"noise: {group} #2 − {group} #1", "kind": "noise", "group": group,
                "diff": diff,
                "ci": (low, high), "r50": pct(members[1], 0.5) / pct(members[0], 0.5),
                "r90": pct(members[1], 0.9) / pct(members[0], 0.9),
            })  # fmt: skip
    return Latency(workload, rows, compared, pct(pooled[OFF], 0.5))


# ----------------------------------------------------------------------------- the run


@dataclass
class Result:
    steps: int
    conversations: int
    session: Latency
    short: Latency
    checkpoints: list[int]
    rss: dict[str, list[float]]
    peaks: dict[str, float]
    kept: dict[str, dict[str, Any] | None]
    scrape: dict[str, tuple[int, float]]
    #: process name -> CPU ms per request over the conversations
    cpu: dict[str, float]
    #: process name -> its kind (Variant.group)
    groups: dict[str, str]
    load: tuple[float, float]
    seconds: float


def checkpoints_for(conversations: int) -> list[int]:
    marks = [m for m in (500, 1000, 2500, 5000, 10_000, 20_000) if m < conversations]
    return sorted({*marks, conversations // 2, conversations})


def measure(steps: int, conversations: int) -> Result:
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    os.environ["PYTHONHASHSEED"] = "0"  # every server alike (the module docstring)
    log = Path(tempfile.mkdtemp(prefix="cg-observe-")) / "servers.log"
    progress(f"server logs: {log}")
    plan = variants(conversations)
    marks = checkpoints_for(conversations)
    progress(f"the session's {steps} bodies")
    bodies = session_bodies(steps)
    with (
        served(lambda port: ["-m", "bench.observe_upstream", str(port)], log) as (up, _),
        ExitStack() as stack,
        client() as http,
    ):
        direct = Target("direct", up, http)
        proxies = []
        for v in plan:
            base, process = stack.enter_context(served(proxy_args(f"{up}/v1", v, log), log))
            proxies.append(Target(v.name, base, http, process.pid, v))
        targets = [direct, *proxies]
        for p in proxies:
            check_switches(p)
        progress("warm-up: 20 requests to each")
        send_all(targets, "warm-up", [conversation_body(-1 - i) for i in range(20)])
        progress(f"latency: the coding session's {len(bodies)} requests through each")
        send_all(targets, "session", bodies)
        rss: dict[str, list[float]] = {p.name: [rss_mb(p.pid or 0)] for p in proxies}

        def checkpoint(n: int) -> None:
            if n not in marks:
                return
            for p in proxies:
                rss[p.name].append(rss_mb(p.pid or 0))
            shown = ", ".join(f"{rss[p.name][-1]:.0f}" for p in proxies)
            progress(f"memory: {n} conversations; RSS MB: {shown}")

        progress(f"memory: {conversations} conversations, one request each, through each")
        cpu_before = {p.name: cpu_seconds(p.pid or 0) for p in proxies}
        send_all(
            targets,
            "conversations",
            [conversation_body(i) for i in range(conversations)],
            every=math.gcd(*marks),
            checkpoint=checkpoint,
        )
        cpu = {
            p.name: (cpu_seconds(p.pid or 0) - cpu_before[p.name]) / conversations * 1000
            for p in proxies
        }
        peaks = {p.name: rss_mb(p.pid or 0, peak=True) for p in proxies}
        kept = {p.name: p.memory() for p in proxies}
        scrape = {}
        for p in proxies:
            if p.variant is None or not p.variant.observing:
                continue
            t = time.perf_counter()
            text = http.get(f"{p.base}/metrics").content
            scrape[p.name] = (len(text), (time.perf_counter() - t) * 1000)
        session = latency("session", direct, proxies)
        short = latency("conversations", direct, proxies)
    return Result(
        steps, conversations, session, short, marks, rss, peaks, kept, scrape, cpu,
        {v.name: v.group for v in plan}, (load_before, os.getloadavg()[0]),
        time.perf_counter() - started,
    )  # fmt: skip


# ----------------------------------------------------------------------------- report


def group_rss(result: Result, group: str) -> list[float]:
    """The mean RSS of a kind's processes at each checkpoint."""
    return _mean([rss for name, rss in result.rss.items() if result.groups[name] == group])


def bounded(result: Result) -> tuple[bool, list[str]]:
    """Whether memory stayed bounded (module docstring), and why not."""
    why = []
    for name, memory in result.kept.items():
        if memory is None:
            continue
        kept, bounds = memory["kept"], memory["bounds"]
        for key in ("conversations", "records", "report_bytes", "content_bytes"):
            if kept[key] > bounds[key]:
                why.append(f"{name}: {key} {kept[key]} over its bound {bounds[key]}")
    off, on = group_rss(result, OFF), group_rss(result, ON)
    half = result.checkpoints.index(result.conversations // 2) + 1  # rss[0]: before
    grew = (on[-1] - off[-1]) - (on[half] - off[half])
    if grew > FLAT_MB:
        why.append(f"on: the RSS it adds grew {grew:.0f} MB in the second half")
    return not why, why


def _kept_text(memory: dict[str, Any] | None) -> str:
    if memory is None:
        return "nothing"
    kept, bounds = memory["kept"], memory["bounds"]
    parts = [
        f"{kept['conversations']:,} conversations (bound {bounds['conversations']:,})",
        f"{kept['records']:,} requests",
        f"{kept['reports']:,} reports, {kept['report_bytes'] / 2**20:.1f} MiB "
        f"(bound {bounds['report_bytes'] / 2**20:.0f})",
    ]
    if kept["contents"]:
        parts.append(
            f"content of {kept['contents']:,}, {kept['content_bytes'] / 2**20:.1f} MiB "
            f"(bound {bounds['content_bytes'] / 2**20:.0f})"
        )
    return "; ".join(parts)


def render(result: Result, command: str) -> str:
    ok_memory, why = bounded(result)
    ok_latency = result.session.unmeasurable and result.short.unmeasurable
    verdict = "**PASS**" if ok_latency and ok_memory else "**MISS**"
    load = result.load
    lines = [
        HEADING,
        "",
        f"What `/metrics` and the page at `/ui` cost the proxy, measured by `{command}` "
        f"on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC ({os.cpu_count()} CPUs, shared: load "
        f"average {load[0]:.1f} at the start, {load[1]:.1f} at the end; {source_info()}; "
        f"{result.seconds / 60:.1f} min). `make load` reruns it "
        "(`python -m bench.observe_cost --out docs/benchmarks.md`; `--quick` in about a "
        "minute). Real proxy processes (uvicorn, as the CLI runs them) in front of one "
        "upstream that answers at once with usage, cached tokens included "
        "(bench/observe_upstream.py): *off* is `--no-metrics --no-ui`, *on* the proxy as "
        "shipped, *keeping the most* adds `ui-content = true` (a config-file setting) and "
        "keeps every conversation. Off "
        "and on run in two processes each: two identical processes differ by up to ~0.2 ms "
        "at p50 on a busy machine for no reason of ours, about what observing costs, so "
        "each kind is the mean of its two and their difference is the noise it is read "
        "against. Each request goes to every proxy and straight to the upstream, one at a "
        "time, in a rotating order; its *proxy-added time* is its latency through the proxy "
        "less its latency straight to the upstream. JSON answers (the observer files one "
        "right after its last byte is written).",
        "",
        f"Targets, for the proxy as shipped: no measurable change at p50 (the 95% "
        f"confidence interval of the median "
        f"of the per-request differences, on − off, not wholly above {MARGIN:.0%} of off's "
        f"p50 or the noise, whichever is more; one-sided, since observing only adds work: "
        f"a kind measurably faster than off shows the noise) and bounded memory with "
        f"{result.conversations:,} conversations (what the page keeps within its bounds; "
        f"the RSS the observer adds as shipped, on − off, grows less than {FLAT_MB:.0f} MB "
        f"from half way to the end): {verdict}."
        + ("" if ok_memory else " " + "; ".join(why) + "."),
        "",
        "| requests | comparison | median of the differences ms (95% CI) | p50 ratio "
        "| p90 ratio | no change: ≤ ms | measurable |",
        "|---|---|---|---|---|---|---|",
    ]
    workloads = [
        (f"coding session, {result.steps} steps ({WINDOW // 1000}k window: compactions)",
         result.session),
        (f"{result.conversations:,} conversations, 1 request each (~7 KB)", result.short),
    ]  # fmt: skip
    for label, found in workloads:
        for i, c in enumerate(found.compared):
            target = c["kind"] == "target"
            judged = ("yes" if c["ci"][0] > found.margin else "no") if target else "–"
            lines.append(
                f"| {label if i == 0 else ''} | {c['name']} | {c['diff']:+.3f} "
                f"({c['ci'][0]:+.3f} to {c['ci'][1]:+.3f}) | {c['r50']:.3f}× "
                f"| {c['r90']:.3f}× | {f'{found.margin:.3f}' if i == 0 else ''} | {judged} |"
            )
    lines += [
        "",
        "Each process's proxy-added time (the ratios above are of the kinds' pooled times):",
        "",
        "| requests | proxy | added p50 ms | added p90 ms |",
        "|---|---|---|---|",
    ]
    for label, found in workloads:
        for i, row in enumerate(found.rows):
            lines.append(
                f"| {label if i == 0 else ''} | {row['name']} | {row['p50']:.2f} "
                f"| {row['p90']:.2f} |"
            )
    mean_cpu = {
        g: statistics.mean(v for n, v in result.cpu.items() if result.groups[n] == g)
        for g in dict.fromkeys(result.groups.values())
    }
    lines += [
        "",
        f"CPU per request over the {result.conversations:,} conversations (the server "
        "process's user + system time, /proc; wherever the work runs, on the request's "
        "path or after it): "
        + ", ".join(f"{name} {ms:.3f} ms" for name, ms in result.cpu.items())
        + "; "
        + ", ".join(
            f"{GROUP_NAMES[g]} − off {mean_cpu[g] - mean_cpu[OFF]:+.3f} ms"
            for g in (ON, MOST)
            if g in mean_cpu
        )
        + " (means of each kind's processes)"
        + "".join(
            f"; noise: {g} #2 − {g} #1 {result.cpu[f'{g} #2'] - result.cpu[f'{g} #1']:+.3f} ms"
            for g in (OFF, ON)
            if f"{g} #1" in result.cpu and f"{g} #2" in result.cpu
        )
        + ".",
    ]
    marks = result.checkpoints
    lines += [
        "",
        f"Memory: RSS of each proxy process (MB) before the {result.conversations:,} "
        "conversations (after the session above) and after the first N of them; *peak* is "
        "the process's high-water mark. Python rarely gives freed memory back to the "
        "system, so RSS shows the most a process has held, not what it holds now; "
        "*kept by the page* is what `/ui/api/memory` reported at the end (report bytes are "
        "the proxy's estimate, tests/test_observe.py checks it against tracemalloc).",
        "",
        "| proxy | before | "
        + " | ".join(f"{m:,}" for m in marks)
        + " | peak | kept by the page |",
        "|---|---|" + "---|" * len(marks) + "---|---|",
    ]
    for name, rss in result.rss.items():
        cells = " | ".join(f"{v:.0f}" for v in rss)
        lines.append(
            f"| {name} | {cells} | {result.peaks[name]:.0f} | {_kept_text(result.kept[name])} |"
        )
    off = group_rss(result, OFF)
    differences = [
        (f"{GROUP_NAMES[g]} − off (means)", group_rss(result, g), off)
        for g in (ON, MOST)
        if g in result.groups.values()
    ]
    members = [rss for name, rss in result.rss.items() if result.groups[name] == OFF]
    if len(members) == 2:
        differences.append(("noise: off #2 − off #1", members[1], members[0]))
    for name, mine, base in differences:
        cells = " | ".join(f"{a - b:+.0f}" for a, b in zip(mine, base, strict=True))
        lines.append(f"| {name} | {cells} | – | – |")
    lines += [
        "",
        "A scrape of `/metrics` after the run: "
        + "; ".join(
            f"{name}: {size / 1024:.1f} KiB in {ms:.1f} ms"
            for name, (size, ms) in result.scrape.items()
        )
        + " (labels are bounded: models, not conversations, so its size does not grow "
        "with the conversations).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="40 steps, 2,000 conversations")
    parser.add_argument("--steps", type=int, default=None, help="the session's steps (150)")
    parser.add_argument("--conversations", type=int, default=None, help="(10,000)")
    parser.add_argument("--out", type=Path, default=None, help="write the section here")
    args = parser.parse_args(argv)
    steps = args.steps or (40 if args.quick else 150)
    conversations = args.conversations or (2_000 if args.quick else 10_000)
    if steps < 10 or conversations < 100:
        parser.error("--steps must be at least 10 and --conversations at least 100")
    result = measure(steps, conversations)
    command = "python -m bench.observe_cost" + (" --quick" if args.quick else "")
    text = render(result, command)
    print(text)
    if args.out is not None:
        write_section(args.out, text)
        progress(f"wrote {args.out}")
    return 0 if bounded(result)[0] else 1


if __name__ == "__main__":
    sys.exit(main())
