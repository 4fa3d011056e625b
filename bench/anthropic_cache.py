"""Prompt caching on the Messages API: the share of input a Claude-style cache would read.

    .venv/bin/python -m bench.anthropic_cache [--steps 300] [--out docs/benchmarks.md]

The coding session of bench/sessions.py, sent as Anthropic Messages bodies (its
chat history converted block for block), is governed at every step by
``govern_request(api="anthropic")`` and each governed body goes through a
simulated prompt cache with Anthropic's documented semantics:

* a request is a sequence of blocks: tools, system blocks, then each message's
  content blocks (string content is one text block); a block is compared without
  its ``cache_control``, which moves between requests without changing the prefix;
* a breakpoint (a block with ``cache_control``) writes the prefix that ends with
  it, if that prefix holds at least ``MIN_CACHEABLE`` tokens (1,024: Sonnet and
  Opus);
* a request reads, for each of its breakpoints, the longest prefix written
  before that ends at the breakpoint or at one of the ``LOOKBACK`` (20) blocks
  before it; what it reads is the longest of those;
* billing: read tokens at 0.1×, the tokens after the read up to the request's
  last breakpoint are written at 1.25×, the rest at 1×. Entries do not expire
  (the replay has no clock: a 5-minute TTL holds in a busy agent loop).

Tokens are the blocks' JSON counted with cl100k_base (the share is a ratio, so
the tokenizer matters little). The configurations differ only in where the
breakpoints are: none; the client's own (the system prompt only; or system plus
the last message, as Claude Code does) with our placement off; ours
(``cache_breakpoints=True``, the default); ours next to Claude Code's marks.
The section is written into ``--out`` in place (bench/run.py renders it too).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from context_governor import govern_request
from context_governor.counting import exact_counter

from .section import section_main

# write_section lived here first: bench.shapes and the tests still import it from here.
from .section import write_section as write_section
from .sessions import Message, Replay, coding_session

MODEL = "claude-sonnet-4-5"
MAX_TOKENS = 8192
MIN_CACHEABLE = 1024
LOOKBACK = 20
READ_PRICE = 0.1
WRITE_PRICE = 1.25
WINDOWS = (200_000, 64_000)
HEADING = "## Prompt caching on the Messages API"
MARK = {"type": "ephemeral"}


# -- the session as Messages bodies -----------------------------------------------------------


def tools_of(replay: Replay) -> list[dict[str, Any]]:
    """The session's function tools as Messages tool definitions."""
    return [
        {
            "name": t["function"]["name"],
            "description": t["function"].get("description", ""),
            "input_schema": t["function"].get("parameters", {"type": "object"}),
        }
        for t in replay.tools
    ]


def assistant_message(message: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        blocks.append(
            {
                "type": "tool_use",
                "id": call["id"],
                "name": call["function"]["name"],
                "input": json.loads(call["function"]["arguments"] or "{}"),
            }
        )
    return {"role": "assistant", "content": blocks}


def to_body(history: Sequence[Message], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A chat history as a Messages body: the tool results of a turn in one user message,
    a user message right after them joined to it (results first)."""
    system = "\n\n".join(m["content"] for m in history if m.get("role") == "system")
    messages: list[dict[str, Any]] = []
    for message in history:
        role = message.get("role")
        if role == "assistant":
            messages.append(assistant_message(message))
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
        elif role == "user":
            block = {"type": "text", "text": message["content"]}
        else:
            continue
        last = messages[-1] if messages else None
        if last is not None and last["role"] == "user" and isinstance(last["content"], list):
            last["content"].append(block)
        elif role == "user":
            messages.append({"role": "user", "content": message["content"]})
        else:
            messages.append({"role": "user", "content": [block]})
    return {"model": MODEL, "max_tokens": MAX_TOKENS, "system": system, "tools": tools,
            "messages": messages}  # fmt: skip


def mark_system(body: dict[str, Any]) -> dict[str, Any]:
    """A client that marks its system prompt."""
    return {**body, "system": [{"type": "text", "text": body["system"], "cache_control": MARK}]}


def mark_last(body: dict[str, Any]) -> dict[str, Any]:
    """A client that marks its system prompt and the last block of the last message
    (Claude Code's marks)."""
    body = mark_system(body)
    messages = list(body["messages"])
    last = messages[-1]
    content = last["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    content = [*content[:-1], {**content[-1], "cache_control": MARK}]
    messages[-1] = {**last, "content": content}
    return {**body, "messages": messages}


# -- the simulated cache ----------------------------------------------------------------------


def blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """The request as (block key without cache_control, marked) in prompt order."""
    out: list[tuple[str, bool]] = []

    def add(role: str, first: bool, block: Any) -> None:
        clean = _strip(block)
        key = json.dumps([role, first, clean], sort_keys=True, ensure_ascii=False)
        out.append((key, _marked(block)))

    for tool in body.get("tools") or ():
        add("tools", False, tool)
    system = body.get("system")
    for j, block in enumerate(_as_blocks(system)):
        add("system", j == 0, block)
    for message in body.get("messages") or ():
        for j, block in enumerate(_as_blocks(message.get("content"))):
            add(str(message.get("role")), j == 0, block)
    return out


def _marked(block: Any) -> bool:
    """Whether a block, or a part of its content, carries a cache_control marker."""
    if not isinstance(block, dict):
        return False
    content = block.get("content")
    parts = content if isinstance(content, list) else []
    return "cache_control" in block or any(
        isinstance(b, dict) and "cache_control" in b for b in parts
    )


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


@dataclass(slots=True)
class PromptCache:
    """Prefix hashes written so far; ``send`` bills one request (see the module docstring)."""

    count: Callable[[str], int]
    written: set[bytes] = field(default_factory=set)

    def send(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(input tokens, read from the cache, written to it) for one request."""
        units = blocks(body)
        hashes: list[bytes] = []
        totals: list[int] = []
        digest = b""
        total = 0
        for key, _ in units:
            digest = hashlib.sha256(digest + key.encode()).digest()
            total += self.count(key)
            hashes.append(digest)
            totals.append(total)
        marks = [i for i, (_, marked) in enumerate(units) if marked]
        read = 0
        for p in marks:
            for k in range(p, max(-1, p - LOOKBACK - 1), -1):
                if hashes[k] in self.written:
                    read = max(read, totals[k])
                    break
        for p in marks:
            if totals[p] >= MIN_CACHEABLE:
                self.written.add(hashes[p])
        last = totals[marks[-1]] if marks else 0
        return total, read, max(0, last - read)


# -- the configurations -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Config:
    label: str
    client: Callable[[dict[str, Any]], dict[str, Any]]
    ours: bool


CONFIGS = (
    Config("no breakpoints", lambda b: b, False),
    Config("client: system prompt only", mark_system, False),
    Config("client: system + last message (Claude Code)", mark_last, False),
    Config("ours (default), client none", lambda b: b, True),
    Config("ours + client's Claude Code marks", mark_last, True),
)


#: The width of the fan-out scenario: each model call makes this many parallel tool
#: calls, so each request appends 2 x 12 = 24 blocks, more than the lookback reaches.
FAN_OUT = 12


def fan_out(replay: Replay, width: int = FAN_OUT) -> Replay:
    """The session as an agent that calls ``width`` tools in parallel per model call: the
    calls of consecutive steps (up to ``width``) are merged into one assistant message,
    their results following it; a step with a user message is kept as it is."""
    steps: list[list[Message]] = [replay.steps[0]]
    calls: list[Any] = []
    results: list[Message] = []

    def flush() -> None:
        if calls:
            steps.append([{"role": "assistant", "content": None, "tool_calls": list(calls)},
                          *results])  # fmt: skip
            calls.clear()
            results.clear()

    for step in replay.steps[1:]:
        plain = all(m.get("role") in ("assistant", "tool") for m in step) and step[0].get(
            "tool_calls"
        )
        if not plain:
            flush()
            steps.append(step)
            continue
        if len(calls) + len(step[0]["tool_calls"]) > width:
            flush()
        calls.extend(step[0]["tool_calls"])
        results.extend(step[1:])
    flush()
    return Replay(replay.name + f"-fan-out-{width}", replay.model, replay.tools, steps)


@dataclass(slots=True)
class Result:
    label: str
    window: int
    scenario: str = "one call per step"
    steps: int = 0
    tokens: int = 0
    read: int = 0
    written: int = 0
    invalid: int = 0
    placed: int = 0

    @property
    def share(self) -> float:
        return self.read / self.tokens if self.tokens else 0.0

    @property
    def cost(self) -> float:
        """Effective input cost over sending everything uncached."""
        uncached = self.tokens - self.read - self.written
        paid = uncached + READ_PRICE * self.read + WRITE_PRICE * self.written
        return paid / self.tokens if self.tokens else 0.0


def measure(config: Config, replay: Replay, window: int, scenario: str = "") -> Result:
    counter = exact_counter(None)
    cache = PromptCache(counter.text_tokens)
    tools = tools_of(replay)
    result = Result(config.label, window, scenario or "one call per step")
    for number, history in enumerate(replay.histories()):
        if number == 0:
            continue
        body = config.client(to_body(history, tools))
        governed = govern_request(
            body, api="anthropic", context_window=window, cache_breakpoints=config.ours
        )
        tokens, read, written = cache.send(governed.body)
        result.steps += 1
        result.tokens += tokens
        result.read += read
        result.written += written
        result.invalid += bool(governed.report.violations)
        result.placed += sum(1 for a in governed.report.actions if a.stage == "cache"
                             and a.kind == "replace")  # fmt: skip
    return result


def run(steps: int, windows: Sequence[int] = WINDOWS) -> list[Result]:
    replay = coding_session(steps)
    results = []
    scenarios = [("one call per step", replay),
                 (f"{FAN_OUT} parallel calls per step", fan_out(replay))]  # fmt: skip
    for scenario, session in scenarios:
        for window in windows:
            for config in CONFIGS:
                print(f"[bench] messages cache: {config.label} at {window:,}, {scenario}",
                      file=sys.stderr, flush=True)  # fmt: skip
                results.append(measure(config, session, window, scenario))
    return results


def render(results: Sequence[Result], steps: int) -> str:
    rows = [
        f"| {r.scenario} | {r.window:,} "
        f"| {r.label} | {r.share:.1%} | {r.cost:.2f} | {r.placed / max(1, r.steps):.1f} "
        f"| {r.invalid} |"
        for r in results
    ]
    return "\n".join(
        [
            HEADING,
            "",
            f"The {steps}-step session as Anthropic Messages bodies (model `{MODEL}`, "
            f"`max_tokens` {MAX_TOKENS}), governed by `govern_request` at each step, through "
            f"a simulated Claude prompt cache: a breakpoint writes the prefix up to it (at "
            f"least {MIN_CACHEABLE:,} tokens); a request reads the longest written prefix that "
            f"ends at one of its breakpoints or up to {LOOKBACK} blocks before one; blocks are "
            "compared without `cache_control`; no expiry. *Read share* = tokens read from the "
            "cache over all input tokens; *cost* = (uncached + 0.1 × read + 1.25 × written) "
            f"over all input tokens uncached. *{FAN_OUT} parallel calls per step*: the same "
            f"tool calls and results, made {FAN_OUT} at a time in one model call, so each "
            f"request appends {2 * FAN_OUT} blocks, more than the lookback reaches. "
            "`python -m bench.anthropic_cache --out docs/benchmarks.md` reruns this section.",
            "",
            "| session | window | breakpoints | read share | cost vs no cache "
            "| ours placed / request | invalid requests |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    return section_main(
        __doc__, argv, {"steps": 300}, lambda args: render(run(args.steps), args.steps)
    )


if __name__ == "__main__":
    sys.exit(main())
