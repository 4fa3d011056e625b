"""Clearing in the cache's rhythm: what a Claude-Code-like session costs behind the proxy.

    .venv/bin/python -m bench.rhythm [--steps 161] [--window 200000] [--out docs/benchmarks.md]

A coding session with whole-file reads (bench/shapes.py's *big reads*: reads of 20-60k
characters with line numbers, many edits, greps and test runs), sent as Anthropic
Messages bodies the way Claude Code sends them: the client marks its system prompt and
the last block of the last message, one request per model call. Each body is governed
as the proxy governs it (``govern_request(api="anthropic")``, stateless, our
breakpoints next to the client's) and billed by bench/anthropic_cache.py's simulated
prompt cache (Anthropic's rules: a mark writes its prefix, a request reads the longest
written prefix found from one of its marks looking back 20 blocks; reads at 0.1x,
writes at 1.25x).

Per configuration, over the session:

* **effective cost**: uncached + 0.1 x read + 1.25 x written input tokens, in millions;
* **written** / **read**: tokens written to and read from the cache;
* **prefix breaks**: requests that do not repeat the whole previous request (compared
  block by block without ``cache_control``): each makes the provider write again
  everything after the first changed block that no mark lets it find;
* **over the window**: requests whose input (counted as the proxy counts Anthropic
  bodies) is over the window less ``max_tokens``: the provider refuses them;
* **newest result whole**: requests whose newest tool result is sent unchanged, or in
  its lossless shrink alone (``whole``: the same terminal text, the same JSON data);
* **agent's messages kept**: the share of the history's assistant messages sent
  unchanged, mean over the requests;
* **added p50**: the median time governing one request took (what the proxy adds).

**The floor** under the table: what no governance that keeps every message of the agent
and the newest ``keep`` tool results whole can go below on this session: each request
as small as those constraints allow (every older result's block left with no content),
no prefix ever broken, each block written at 1.25x the first time it is sent (a block
is only read from a prefix a mark wrote) and read at 0.1x after.
Our default keeps the newest ``CompactionPolicy.keep_recent`` (10). **The best schedule**
beside it: the cheapest choice of the requests that clear (each emptying every result
but the newest ``keep`` and reading back what precedes its first edit), made knowing
the whole session in advance (``best_schedule``): what clearing in the best rhythm
there is could reach.

``client alone`` is the body as the client made it, ungoverned; bench/headroom_side.py
measures headroom on this session too where ``headroom-ai`` is installed
(``make bench-headroom``).

The same session as Codex sends it (``--codex``'s rows): OpenAI Responses bodies
(instructions, function calls and their outputs as items, model gpt-5), governed with
``govern_request(api="responses")`` and billed as OpenAI's automatic prefix cache bills:
a request reads the longest item prefix it shares with the request before it (at least
1,024 tokens), at 0.1x, and pays the rest in full (no write premium). Prefix breaks and
the agent's messages kept are judged on the items.
"""

from __future__ import annotations

import bisect
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from context_governor import CompactionPolicy, govern_request
from context_governor.counting import exact_counter
from context_governor.stages import shrink_text

from .anthropic_cache import MAX_TOKENS, PromptCache, blocks, mark_last, to_body, tools_of
from .section import section_main
from .sessions import Message, Replay

HEADING = "## Clearing in the cache's rhythm"
CODEX_MODEL = "gpt-5"
#: OpenAI's automatic prefix cache: the least prefix it caches, in tokens
MIN_CACHED = 1024
STEPS = 161
WINDOW = 200_000
READ_PRICE = 0.1
WRITE_PRICE = 1.25

#: One configuration: a client body in, the body sent out.
Sender = Callable[[dict[str, Any]], dict[str, Any]]


def session(steps: int = STEPS) -> Replay:
    """The Claude-Code-like session: bench/shapes.py's big reads."""
    from .shapes import SHAPES  # imported late: shapes pulls in the whole bench

    shape = next(s for s in SHAPES if s.key == "big-reads")
    return shape.make(steps)


def client_bodies(replay: Replay) -> Iterator[tuple[list[Message], dict[str, Any]]]:
    """(history, body) per model call after the opening: the body as Claude Code sends it."""
    tools = tools_of(replay)
    for number, history in enumerate(replay.histories()):
        if number:
            yield history, mark_last(to_body(history, tools))


def responses_body(history: list[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat history as a Responses body, as Codex sends it (instructions, items)."""
    instructions = "\n\n".join(m["content"] for m in history if m.get("role") == "system")
    items: list[dict[str, Any]] = []
    for m in history:
        role = m.get("role")
        if role == "user":
            items.append({"role": "user", "content": m["content"]})
        elif role == "assistant":
            if m.get("content"):
                items.append({"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": m["content"], "annotations": []}]})  # fmt: skip
            for call in m.get("tool_calls") or ():
                items.append({"type": "function_call", "call_id": call["id"],
                              "name": call["function"]["name"],
                              "arguments": call["function"]["arguments"]})  # fmt: skip
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"],
                          "output": m["content"]})  # fmt: skip
    functions = [{"type": "function", "name": t["function"]["name"],
                  "parameters": t["function"].get("parameters", {})} for t in tools]  # fmt: skip
    return {"model": CODEX_MODEL, "instructions": instructions, "input": items,
            "tools": functions, "max_output_tokens": MAX_TOKENS, "store": False}  # fmt: skip


def ours(window: int) -> Sender:
    """What the proxy sends: the body governed for Anthropic at ``window``."""

    def send(body: dict[str, Any]) -> dict[str, Any]:
        return govern_request(body, api="anthropic", context_window=window).body

    return send


def client_alone(body: dict[str, Any]) -> dict[str, Any]:
    return body


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _keys(body: dict[str, Any]) -> list[str]:
    return [key for key, _ in blocks(body)]


def _assistants(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(_clean(m.get("content")), sort_keys=True)
        for m in body.get("messages") or ()
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]


def whole(sent: Any, content: Any) -> bool:
    """Whether a result's ``content`` was sent whole: unchanged, or as the lossless shrink
    alone leaves it (stages/_shrink.py: colours and redraws rendered, JSON compacted,
    runs folded, trailing blanks; what it says is the same)."""
    if sent == content:
        return True
    return isinstance(content, str) and isinstance(sent, str) and sent == shrink_text(content)[0]


def _newest_result(history: list[Message]) -> Message | None:
    return next((m for m in reversed(history) if m.get("role") == "tool"), None)


def _result_content(body: dict[str, Any], call_id: str) -> Any:
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("tool_use_id") == call_id
            ):
                return _clean(block.get("content"))
    return None


def _input_tokens(body: dict[str, Any], window: int) -> int:
    """The body's input tokens as the proxy counts an Anthropic body (its report's
    figure before governing)."""
    return govern_request(body, api="anthropic", context_window=window).report.tokens_before


@dataclass(slots=True)
class Row:
    """One configuration over the session."""

    label: str
    requests: int = 0
    tokens: int = 0
    read: int = 0
    written: int = 0
    breaks: int = 0
    over: int = 0
    newest: int = 0
    results: int = 0
    kept: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    @property
    def cost(self) -> float:
        return effective_cost(self.tokens, self.read, self.written)


def effective_cost(tokens: int, read: int, written: int) -> float:
    """Input tokens as billed: uncached at 1x, read at ``READ_PRICE``, written at
    ``WRITE_PRICE``."""
    return tokens - read - written + READ_PRICE * read + WRITE_PRICE * written


def measure(label: str, send: Sender, replay: Replay, window: int) -> Row:
    """Send every request of ``replay`` through ``send`` and bill it."""
    counter = exact_counter(None)
    cache = PromptCache(counter.text_tokens)
    row = Row(label)
    limit = window - MAX_TOKENS
    previous: list[str] = []
    for history, body in client_bodies(replay):
        start = time.perf_counter()
        out = send(body)
        row.times.append(time.perf_counter() - start)
        tokens, read, written = cache.send(out)
        row.requests += 1
        row.tokens += tokens
        row.read += read
        row.written += written
        keys = _keys(out)
        row.breaks += bool(previous) and keys[: len(previous)] != previous
        previous = keys
        row.over += _input_tokens(out, window) > limit
        newest = _newest_result(history)
        if newest is not None:
            row.results += 1
            sent_content = _result_content(out, newest["tool_call_id"])
            row.newest += whole(sent_content, newest["content"])
        sent = set(_assistants(out))
        mine = _assistants(to_body(history, []))
        if mine:
            row.kept.append(sum(a in sent for a in mine) / len(mine))
    return row


def _item_key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, ensure_ascii=False)


def _items(body: dict[str, Any]) -> list[str]:
    """A Responses body as the keys of what its prefix is made of, in order."""
    head = [_item_key({"instructions": body.get("instructions")}), _item_key(body.get("tools"))]
    return head + [_item_key(item) for item in body.get("input") or ()]


def _codex_assistants(body: dict[str, Any]) -> list[str]:
    return [
        _item_key(item)
        for item in body.get("input") or ()
        if isinstance(item, dict)
        and (item.get("type") == "function_call" or item.get("role") == "assistant")
    ]


def _codex_output(body: dict[str, Any], call_id: str) -> Any:
    return next(
        (
            item.get("output")
            for item in body.get("input") or ()
            if isinstance(item, dict)
            and item.get("type") == "function_call_output"
            and item.get("call_id") == call_id
        ),
        None,
    )


def codex_ours(window: int) -> Sender:
    """What the proxy sends Codex's Responses body as: governed for Responses."""

    def send(body: dict[str, Any]) -> dict[str, Any]:
        return govern_request(body, api="responses", context_window=window).body

    return send


def measure_codex(label: str, send: Sender, replay: Replay, window: int) -> Row:
    """The session as Responses bodies through ``send``, billed by an automatic prefix
    cache (the module docstring)."""
    counter = exact_counter(CODEX_MODEL)
    row = Row(label)
    limit = window - MAX_TOKENS
    previous: list[str] = []
    for number, history in enumerate(replay.histories()):
        if not number:
            continue
        body = responses_body(history, replay.tools)
        start = time.perf_counter()
        out = send(body)
        row.times.append(time.perf_counter() - start)
        keys = _items(out)
        sizes = [counter.text_tokens(key) for key in keys]
        pairs = enumerate(zip(keys, previous, strict=False))
        shared = next((k for k, (a, b) in pairs if a != b), min(len(keys), len(previous)))
        read = sum(sizes[:shared])
        row.requests += 1
        row.tokens += sum(sizes)
        row.read += read if read >= MIN_CACHED else 0
        row.breaks += bool(previous) and shared < len(previous)
        previous = keys
        report = govern_request(out, api="responses", context_window=window).report
        row.over += report.tokens_before > limit
        newest = _newest_result(history)
        if newest is not None:
            row.results += 1
            row.newest += whole(_codex_output(out, newest["tool_call_id"]), newest["content"])
        sent = set(_codex_assistants(out))
        mine = _codex_assistants(body)
        if mine:
            row.kept.append(sum(a in sent for a in mine) / len(mine))
    return row


#: The newest results kept whole in the floor's rows: our default, and fewer.
FLOOR_KEEPS = (CompactionPolicy().keep_recent, 4, 1)
#: What an older result's block holds in the floor's requests: nothing.
FLOOR_PLACEHOLDER = ""


@dataclass(frozen=True, slots=True)
class Floor:
    """The least any governance keeping the agent's messages and the newest ``keep``
    results whole could cost on the session (see the module docstring), and the best
    schedule of clearings (``best_schedule``)."""

    keep: int
    written: float  # cost, millions
    mean_tokens: float  # the mean request, tokens
    best: float = 0.0  # the best schedule's cost, millions
    clearings: int = 0  # its clearings


def floor(replay: Replay, keep: int) -> Floor:
    """The session's floor for ``keep`` newest results whole."""
    counter = exact_counter(None)
    counts: dict[str, int] = {}

    def tokens(key: str) -> int:
        count = counts.get(key)
        if count is None:
            count = counts[key] = counter.text_tokens(key)
        return count

    seen: set[str] = set()
    written = 0.0
    sizes: list[int] = []
    for _, body in client_bodies(replay):
        units = [key for key, _ in blocks(body)]
        results = [i for i, key in enumerate(units) if _is_result(key)]
        older = set(results[: max(0, len(results) - keep)])
        size = new = 0
        for i, key in enumerate(units):
            count = tokens(_cleared(key) if i in older else key)
            size += count
            new += count if key not in seen else 0
        seen.update(units)
        written += WRITE_PRICE * new + READ_PRICE * (size - new)
        sizes.append(size)
    return Floor(keep, written / 1e6, statistics.mean(sizes) if sizes else 0.0)


class Trail:
    """The client's requests as block counts over one final body (they only append),
    for ``keep`` newest results whole: what a request costs when it only appends and
    when it clears (best_schedule's model). Made once, asked for many schedules."""

    def __init__(self, replay: Replay, keep: int, window: int) -> None:
        keys = [[key for key, _ in blocks(body)] for _, body in client_bodies(replay)]
        final = keys[-1] if keys else []
        if any(k != final[: len(k)] for k in keys):
            raise ValueError("the client's requests do not only append")
        counter = exact_counter(None)
        tokens = [counter.text_tokens(key) for key in final]
        self.results = [i for i, key in enumerate(final) if _is_result(key)]
        self.before = [0, *itertools.accumulate(tokens)]  # tokens of final[:i]
        self.saved = [0]  # what emptying the first m results saves
        for i in self.results:
            self.saved.append(self.saved[-1] + tokens[i] - counter.text_tokens(_cleared(final[i])))
        self.ends = [len(k) for k in keys]
        #: results a clearing at each request empties: all but the newest ``keep``
        self.masked = [max(0, bisect.bisect_left(self.results, e) - keep) for e in self.ends]
        self.limit = window - MAX_TOKENS

    def size(self, t: int, m: int) -> int:
        return self.before[self.ends[t]] - self.saved[m]

    def appended(self, t: int, m: int) -> float:
        new = self.before[self.ends[t]] - (self.before[self.ends[t - 1]] if t else 0)
        return WRITE_PRICE * new + READ_PRICE * (self.size(t, m) - new)

    def cleared(self, t: int, old: int) -> float:
        new = self.masked[t]
        if t == 0 or new == old:
            return self.appended(t, new)
        read = self.before[self.results[old]] - self.saved[old]  # before the first edit
        return WRITE_PRICE * (self.size(t, new) - read) + READ_PRICE * read

    def between(self, start: int, stop: int, m: int) -> float | None:
        """Requests start+1..stop-1 only appending (``m`` results emptied), or None if
        one is over the window."""
        total = 0.0
        for t in range(start + 1, stop):
            if self.size(t, m) > self.limit:
                return None
            total += self.appended(t, m)
        return total


def schedule_cost(trail: Trail, clearings: Sequence[int]) -> float | None:
    """What best_schedule's model bills for clearing at the requests ``clearings``
    (millions), or None if a request is then over the window."""
    total, last, m = 0.0, -1, 0
    for t in sorted(set(clearings)):
        between = trail.between(last, t, m)
        if between is None or trail.size(t, trail.masked[t]) > trail.limit:
            return None
        total += between + trail.cleared(t, m)
        last, m = t, trail.masked[t]
    tail = trail.between(last, len(trail.ends), m)
    return None if tail is None else (total + tail) / 1e6


def best_schedule(replay: Replay, keep: int, window: int) -> tuple[float, list[int]]:
    """The cheapest schedule of clearings knowing the whole session in advance: (its cost
    in millions, the requests that clear). A clearing empties every result but the newest
    ``keep`` (clearing more after its first edit costs nothing more: what follows that
    edit is written again anyway) and reads back everything before its first edit, as our
    breakpoints let a request do; between clearings each request only appends (its new
    blocks written, the rest read); no request may be over ``window`` less ``MAX_TOKENS``.
    Exact over that family of schedules (dynamic programming over the last clearing)."""
    trail = Trail(replay, keep, window)
    n = len(trail.ends)
    best: dict[int, tuple[float, int | None]] = {-1: (0.0, None)}
    state = {-1: 0}
    finishes: list[tuple[float, int]] = []
    for p in [-1, *range(n)]:
        if p >= 0:
            options = []
            if trail.size(p, trail.masked[p]) <= trail.limit:
                for q, (cost, _) in best.items():
                    between = trail.between(q, p, state[q])
                    if between is not None:
                        options.append((cost + between + trail.cleared(p, state[q]), q))
            if not options:
                continue
            best[p] = min(options)
            state[p] = trail.masked[p]
        tail = trail.between(p, n, state[p])
        if tail is not None:
            finishes.append((best[p][0] + tail, p))
    if not finishes:
        raise ValueError("no schedule keeps every request inside the window")
    total, last = min(finishes)
    chosen: list[int] = []
    at: int | None = last
    while at is not None and at >= 0:
        chosen.append(at)
        at = best[at][1]
    return total / 1e6, sorted(chosen)


def _is_result(key: str) -> bool:
    role, _, block = json.loads(key)
    return role == "user" and isinstance(block, dict) and block.get("type") == "tool_result"


def _cleared(key: str) -> str:
    """A tool_result block's key with its content replaced by the floor's placeholder."""
    role, first, block = json.loads(key)
    small = {"type": "tool_result", "tool_use_id": block.get("tool_use_id"),
             "content": FLOOR_PLACEHOLDER}  # fmt: skip
    return json.dumps([role, first, small], sort_keys=True, ensure_ascii=False)


def floors(steps: int, window: int, keeps: Sequence[int] = FLOOR_KEEPS) -> list[Floor]:
    """The floor and the best schedule of clearings for each of ``keeps``."""
    replay = session(steps)
    out = []
    for keep in keeps:
        best, clearings = best_schedule(replay, keep, window)
        out.append(replace(floor(replay, keep), best=best, clearings=len(clearings)))
    return out


def run(steps: int, window: int, extra: Sequence[tuple[str, Sender]] = ()) -> list[Row]:
    replay = session(steps)
    configs: list[tuple[str, Sender]] = [
        ("client alone (no governance)", client_alone),
        ("context-governor (proxy, default)", ours(window)),
        *extra,
    ]
    rows = []
    for label, send in configs:
        print(f"[bench] rhythm: {label}", file=sys.stderr, flush=True)
        rows.append(measure(label, send, replay, window))
    codex: list[tuple[str, Sender]] = [
        ("Codex: client alone (no governance)", client_alone),
        ("Codex: context-governor (proxy, default)", codex_ours(window)),
    ]
    for label, send in codex:
        print(f"[bench] rhythm: {label}", file=sys.stderr, flush=True)
        rows.append(measure_codex(label, send, replay, window))
    return rows


def render_floors(items: Sequence[Floor]) -> list[str]:
    """The floor's paragraph (empty without floors)."""
    if not items:
        return []
    parts = [
        f"the newest {f.keep} whole: floor {f.written:.2f}M (mean request "
        f"{f.mean_tokens:,.0f} tokens), best schedule {f.best:.2f}M ({f.clearings} clearings)"
        for f in items
    ]
    return [
        "**The floor and the best schedule.** No governance that sends every message of "
        "the agent unchanged can cost less on this session than requests as small as "
        "that allows (every older result's block left with no content) that never break "
        f"a prefix, each block written at {WRITE_PRICE}x the first time it is sent and "
        f"read at {READ_PRICE}x after (a block is only read from a prefix a mark wrote): "
        "the *floor*. Emptying old results is an edit, though, and the provider writes "
        "again what follows it: the *best schedule* is the cheapest choice of the "
        "requests that clear, made knowing the whole session in advance (each clearing "
        "empties every result but the newest ones and reads back what precedes its "
        "first edit; `best_schedule`, exact by dynamic programming): "
        + "; ".join(parts)
        + f". Our default keeps the newest {CompactionPolicy().keep_recent} results whole "
        "and decides without knowing what comes.",
        "",
    ]


def render(rows: Sequence[Row], steps: int, window: int, floor_rows: Sequence[Floor] = ()) -> str:
    lines = [
        HEADING,
        "",
        f"A Claude-Code-like session ({steps} steps: bench/shapes.py's big reads) as "
        f"Anthropic Messages bodies with Claude Code's two marks, window {window:,}, "
        f"`max_tokens` {MAX_TOKENS:,}, billed by a simulated Claude prompt cache (reads "
        f"{READ_PRICE}x, writes {WRITE_PRICE}x, 20-block lookback). *Cost* = uncached + "
        f"{READ_PRICE} x read + {WRITE_PRICE} x written, millions of input tokens. "
        "`python -m bench.rhythm --out docs/benchmarks.md` reruns this section.",
        "",
        "Codex's rows: the same session as OpenAI Responses bodies (model gpt-5), billed by "
        "an automatic prefix cache (the longest item prefix shared with the previous "
        "request, at least 1,024 tokens, read at 0.1x; nothing written at a premium).",
        "",
        "| configuration | requests | cost (M) | written (M) | read (M) | prefix breaks "
        "| over the window | newest result whole | agent's messages kept | added p50 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        kept = statistics.mean(r.kept) if r.kept else 1.0
        p50 = statistics.median(r.times) * 1000 if r.times else 0.0
        lines.append(
            f"| {r.label} | {r.requests} | {r.cost / 1e6:.2f} | {r.written / 1e6:.2f} "
            f"| {r.read / 1e6:.2f} | {r.breaks} | {r.over} | {r.newest}/{r.results} "
            f"| {kept:.2f} | {p50:.1f} ms |"
        )
    return "\n".join([*lines, "", *render_floors(floor_rows)])


def main(argv: Sequence[str] | None = None) -> int:
    def build(args: Any) -> str:
        rows = run(args.steps, args.window)
        return render(rows, args.steps, args.window, floors(args.steps, args.window))

    return section_main(__doc__, argv, {"steps": STEPS, "window": WINDOW}, build)


if __name__ == "__main__":
    sys.exit(main())
