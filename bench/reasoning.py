"""The reasoning shape: a coding session with reasoning on, on the two wire formats that
send reasoning back (OpenAI Responses' encrypted ``reasoning`` items, as Codex sends them;
Anthropic's ``thinking`` blocks with their signatures, as Claude Code sends them).

The session is bench/sessions.py's coding replay; before each assistant turn the model
"thought" a number of tokens drawn per step (100-3,000, log-uniform), carried as:

* **Responses**: a ``reasoning`` item before the turn's ``function_call`` items, with an
  ``encrypted_content`` of 1,029 characters plus 5.8 per reasoning token (the fit over
  356 reasoning items of six real Codex sessions, docs/token-counting.md) and, one step
  in three, a short summary. Model ``gpt-5-codex``.
* **Messages**: a ``thinking`` block (the thinking text) and its ``signature`` at the
  head of the assistant message. Model ``claude-sonnet-4-5``, which strips earlier turns'
  thinking from the window.

What the provider counts, per its documentation: the visible items as we count them, plus
the reasoning of the current turn (after the newest user message: the tool loop in
progress); reasoning of earlier turns counts nothing. For each request we report:

* **count / provider**: ``govern_request``'s ``tokens_before`` at an unlimited window
  against that figure, now and as reasoning was counted before (its ciphertext and earlier
  thinking as text: measured by renaming the keys so they read as plain fields);
* **fidelity** at each window: agent items (assistant messages and calls) and tool outputs
  the governed request keeps unchanged, outputs masked, requests over the window;
* **cost**: tokens sent and the cached-prefix share (items equal to the previous request's,
  from the start), effective input cost at cached reads of a tenth;
* **time**: median ``govern_request`` time of the session's last 20 requests.

Run: ``python -m bench.reasoning [--steps N] [--out docs/benchmarks.md]``.
"""

from __future__ import annotations

import base64
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from context_governor.counting import counting_encoding
from context_governor.formats import govern_request

from .anthropic_cache import assistant_message, tools_of
from .section import section_main
from .sessions import Message, Replay, coding_session

HEADING = "## Reasoning sessions"
#: ``encrypted_content``: an envelope, then characters per reasoning token (the fit over
#: real Codex sessions' reasoning items against their responses' reasoning tokens)
CIPHER_ENVELOPE = 1029
CIPHER_RATIO = 5.8
SIGNATURE_CHARS = 400
WINDOWS = (128_000, 32_000)
MAX_OUTPUT = 8192
STEPS = 150
TIMED = 20
UNLIMITED = 1 << 40

Body = dict[str, Any]


def _thought(rng: random.Random) -> int:
    """Reasoning tokens of one turn: log-uniform over 100-3,000."""
    return round(math.exp(rng.uniform(math.log(100), math.log(3000))))


def _cipher(rng: random.Random, chars: int) -> str:
    return base64.b64encode(rng.randbytes(chars * 3 // 4 + 3)).decode()[:chars]


@dataclass(frozen=True, slots=True)
class Turn:
    """One step's reasoning: its tokens, and its text (for the thinking block)."""

    tokens: int
    text: str


def _turns(replay: Replay, encode: Callable[[str], list[int]]) -> list[Turn]:
    """A reasoning per step, deterministic in the replay's name; its text is prose cut to
    exactly ``tokens`` tokens of the counting encoding."""
    rng = random.Random(f"{replay.name}:reasoning")
    words = ("check", "the", "test", "fails", "because", "cache", "key", "is", "stale", "so")
    out = []
    for _ in replay.steps:
        tokens = _thought(rng)
        text = " ".join(rng.choice(words) for _ in range(tokens))
        ids = encode(text)[:tokens]
        out.append(Turn(len(ids), text[: len(" ".join(text.split()[: len(ids)]))]))
    return out


# -- the session as Responses bodies --------------------------------------------------------


def _responses_step(
    step: list[Message], turn: Turn, rng: random.Random, *, renamed: bool
) -> list[Body]:
    items: list[Body] = []
    key = "encrypted_text" if renamed else "encrypted_content"
    for message in step:
        role = message.get("role")
        if role == "assistant":
            summary = (
                [{"type": "summary_text", "text": turn.text[:300]}] if rng.random() < 1 / 3 else []
            )
            cipher = _cipher(rng, CIPHER_ENVELOPE + round(turn.tokens * CIPHER_RATIO))
            items.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{rng.getrandbits(48):012x}",
                    "summary": summary,
                    key: cipher,
                }
            )
            if message.get("content"):
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": message["content"]}],
                    }
                )
            for call in message.get("tool_calls") or ():
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": call["function"]["name"],
                        "arguments": call["function"]["arguments"],
                    }
                )
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": message["content"],
                }
            )
        elif role == "user":
            items.append({"role": "user", "content": message["content"]})
    return items


def responses_bodies(replay: Replay, turns: Sequence[Turn], *, renamed: bool = False) -> list[Body]:
    """The request of each step (the history so far) as a Responses body."""
    rng = random.Random(f"{replay.name}:responses")
    instructions = "\n\n".join(m["content"] for m in replay.steps[0] if m.get("role") == "system")
    tools = [{"type": "function", **t["function"]} for t in replay.tools]
    history: list[Body] = []
    out = []
    for step, turn in zip(replay.steps, turns, strict=True):
        history = history + _responses_step(
            [m for m in step if m.get("role") != "system"], turn, rng, renamed=renamed
        )
        out.append(
            {
                "model": "gpt-5-codex",
                "instructions": instructions,
                "tools": tools,
                "max_output_tokens": MAX_OUTPUT,
                "input": history,
            }
        )
    return out


# -- the session as Messages bodies ---------------------------------------------------------


def _anthropic_step(
    step: list[Message], turn: Turn, rng: random.Random, *, renamed: bool
) -> list[Body]:
    """Assistant messages with a thinking block first; results (and a user message after
    them) in one user message."""
    out: list[Body] = []
    for message in step:
        role = message.get("role")
        if role == "assistant":
            think = {
                "type": "thinking_text" if renamed else "thinking",
                "thinking": turn.text,
                "signature": _cipher(rng, SIGNATURE_CHARS),
            }
            blocks: list[Body] = [think, *assistant_message(message)["content"]]
            out.append({"role": "assistant", "content": blocks})
            continue
        if role == "tool":
            block: Body = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
        else:
            block = {"type": "text", "text": message["content"]}
        if out and out[-1]["role"] == "user":
            out[-1]["content"].append(block)
        else:
            out.append({"role": "user", "content": [block]})
    return out


def anthropic_bodies(replay: Replay, turns: Sequence[Turn], *, renamed: bool = False) -> list[Body]:
    rng = random.Random(f"{replay.name}:anthropic")
    system = "\n\n".join(m["content"] for m in replay.steps[0] if m.get("role") == "system")
    tools = tools_of(replay)
    history: list[Body] = []
    out = []
    for step, turn in zip(replay.steps, turns, strict=True):
        new = _anthropic_step(
            [m for m in step if m.get("role") != "system"], turn, rng, renamed=renamed
        )
        if history and new and history[-1]["role"] == new[0]["role"] == "user":
            joined = {"role": "user", "content": history[-1]["content"] + new[0]["content"]}
            history = [*history[:-1], joined, *new[1:]]
        else:
            history = history + new
        out.append(
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": MAX_OUTPUT,
                "thinking": {"type": "enabled", "budget_tokens": 4096},
                "system": system,
                "tools": tools,
                "messages": history,
            }
        )
    return out


# -- measures -------------------------------------------------------------------------------


def _read_reasoning(api: str, body: Body, turns: Sequence[Turn]) -> int:
    """Reasoning tokens the provider counts in ``body``: those after its newest user
    prompt (the turn in progress); the k-th reasoning is step k+1's (step 0 opens)."""
    items = body["input"] if api == "responses" else body["messages"]
    last = _last_prompt(items)
    kind = "reasoning" if api == "responses" else "assistant"
    found = [i for i, item in enumerate(items) if item.get("type", item.get("role")) == kind]
    return sum(turns[k + 1].tokens for k, i in enumerate(found) if i > last)


def _last_prompt(items: Sequence[Body]) -> int:
    return max(
        (i for i, item in enumerate(items) if item.get("role") == "user" and _is_prompt(item)),
        default=-1,
    )


def _is_prompt(item: Body) -> bool:
    content = item.get("content")
    if isinstance(content, str):
        return True
    return any(isinstance(b, dict) and b.get("type") == "text" for b in content or ())


@dataclass(frozen=True, slots=True)
class Accuracy:
    api: str
    now: tuple[float, float, float]  # median, min, max of ours / provider
    before: tuple[float, float, float]


def _spread(values: Sequence[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def _without_reasoning(api: str, body: Body) -> Body:
    if api == "responses":
        return {**body, "input": [i for i in body["input"] if i.get("type") != "reasoning"]}
    messages = [
        {**m, "content": [b for b in m["content"] if b.get("type") != "thinking"]}
        if m["role"] == "assistant"
        else m
        for m in body["messages"]
    ]
    return {**body, "messages": messages}


def _earlier_thinking_dropped(body: Body) -> Body:
    """The Messages body as the provider's window sees it: thinking blocks of turns
    before the newest user prompt removed (its context-windows page)."""
    last = _last_prompt(body["messages"])
    messages = [
        {**m, "content": [b for b in m["content"] if b.get("type") != "thinking"]}
        if m["role"] == "assistant" and i < last
        else m
        for i, m in enumerate(body["messages"])
    ]
    return {**body, "messages": messages}


def provider_count(api: str, body: Body, turns: Sequence[Turn]) -> int:
    """What the provider counts, by its documentation. Responses: the visible items as we
    count them and the reasoning tokens of the turn in progress (known here: the session
    made them). Messages: the body with earlier turns' thinking removed, as we count it
    (the Claude tokenizer is not public; only the accounting rule is under test)."""
    if api == "responses":
        return _count(api, _without_reasoning(api, body)) + _read_reasoning(api, body, turns)
    return _count(api, _earlier_thinking_dropped(body))


def accuracy(
    api: str, now: Sequence[Body], before: Sequence[Body], turns: Sequence[Turn]
) -> Accuracy:
    """Ours / provider per request, now and as reasoning was counted before."""
    ratios, old = [], []
    for body, renamed in zip(now, before, strict=True):
        provider = provider_count(api, body, turns)
        ratios.append(_count(api, body) / provider)
        old.append(_count(api, renamed) / provider)
    return Accuracy(api, _spread(ratios), _spread(old))


def _count(api: str, body: Body) -> int:
    return govern_request(body, api=api, context_window=UNLIMITED).report.tokens_before  # type: ignore[arg-type]


def _items(api: str, body: Body) -> list[str]:
    items = body["input"] if api == "responses" else body["messages"]
    return [json.dumps(i, sort_keys=True) for i in items]


def _agent(api: str, item: Body) -> bool:
    if api == "responses":
        return item.get("type") in {"function_call", "message"} and item.get("role") != "user"
    return item.get("role") == "assistant"


def _output(api: str, item: Body) -> list[tuple[str, str]]:
    """The tool outputs ``item`` holds: (call id, JSON)."""
    if api == "responses":
        if item.get("type") != "function_call_output":
            return []
        return [(item["call_id"], json.dumps(item, sort_keys=True))]
    if item.get("role") != "user" or isinstance(item.get("content"), str):
        return []
    return [
        (b["tool_use_id"], json.dumps(b, sort_keys=True))
        for b in item["content"]
        if b.get("type") == "tool_result"
    ]


@dataclass(frozen=True, slots=True)
class Fit:
    api: str
    window: int
    agent_kept: float
    outputs_kept: float
    outputs_masked: float
    over: int
    tokens: int
    cached_share: float
    cost: float
    ms: float


def fit(api: str, bodies: Sequence[Body], window: int) -> Fit:
    """Each request governed at ``window``: what it keeps, sends and costs."""
    agent_kept = agent_all = out_kept = out_all = masked = over = 0
    tokens = cached = 0
    previous: list[str] = []
    times = []
    for n, body in enumerate(bodies):
        started = time.perf_counter()
        result = govern_request(body, api=api, context_window=window)  # type: ignore[arg-type]
        if n >= len(bodies) - TIMED:
            times.append((time.perf_counter() - started) * 1000)
        report = result.report
        reserve = result.body.get("max_output_tokens", result.body.get("max_tokens", 0))
        over += report.tokens_after + reserve > window
        items = body["input"] if api == "responses" else body["messages"]
        sent = result.body["input"] if api == "responses" else result.body["messages"]
        sent_json = {json.dumps(i, sort_keys=True) for i in sent}
        sent_outputs = dict(o for i in sent for o in _output(api, i))
        for item in items:
            if _agent(api, item):
                agent_all += 1
                agent_kept += _kept_agent(api, item, sent_json)
            for call_id, text in _output(api, item):
                out_all += 1
                out_kept += sent_outputs.get(call_id) == text
                masked += call_id in sent_outputs and sent_outputs[call_id] != text
        current = _items(api, result.body)
        common = 0
        for a, b in zip(previous, current, strict=False):
            if a != b:
                break
            common += 1
        share = common / len(current) if current else 0.0
        tokens += report.tokens_after
        cached += round(report.tokens_after * share)
        previous = current
    return Fit(
        api,
        window,
        agent_kept / max(1, agent_all),
        out_kept / max(1, out_all),
        masked / max(1, out_all),
        over,
        tokens,
        cached / max(1, tokens),
        (tokens - cached) + 0.1 * cached,
        statistics.median(times),
    )


def _kept_agent(api: str, item: Body, sent: set[str]) -> bool:
    if api == "responses":
        return json.dumps(item, sort_keys=True) in sent
    # an assistant message is kept when its text and calls are (thinking may be dropped)
    wanted = [b for b in item["content"] if b.get("type") != "thinking"]
    for text in sent:
        if text.startswith('{"content": [') and all(
            json.dumps(b, sort_keys=True) in text for b in wanted
        ):
            return True
    return False


# -- report ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Result:
    steps: int
    accuracy: list[Accuracy]
    fits: list[Fit]


def run(steps: int = STEPS, windows: Sequence[int] = WINDOWS) -> Result:
    replay = coding_session(steps)
    encoding = counting_encoding("o200k_base")
    assert encoding is not None
    turns = _turns(replay, lambda t: encoding.encode(t, disallowed_special=()))
    makers = {"responses": responses_bodies, "anthropic": anthropic_bodies}
    acc, fits = [], []
    for api, make in makers.items():
        print(f"[bench] reasoning: {api}", file=sys.stderr, flush=True)
        bodies = make(replay, turns)
        acc.append(accuracy(api, bodies, make(replay, turns, renamed=True), turns))
        fits += [fit(api, bodies, window) for window in windows]
    return Result(steps, acc, fits)


def _r(spread: tuple[float, float, float]) -> str:
    return f"{spread[0]:.2f} ({spread[1]:.2f}-{spread[2]:.2f})"


def render(result: Result) -> str:
    lines = [
        HEADING,
        "",
        f"bench/sessions.py's coding session of {result.steps} requests with reasoning on "
        "(100-3,000 reasoning tokens a turn): as Codex sends it (Responses, `gpt-5-codex`, "
        "encrypted reasoning items of 1,029 characters plus 5.8 a token, as real Codex "
        "sessions show) and as Claude Code sends it "
        "(Messages, `claude-sonnet-4-5`, thinking blocks with signatures). The provider "
        "counts the visible items and the reasoning of the turn in progress only "
        "(docs/token-counting.md). Before: the ciphertext and earlier thinking counted as "
        "text.",
        "",
        "| API | ours / provider, median (range) | before |",
        "| --- | --- | --- |",
    ]
    for a in result.accuracy:
        lines.append(f"| {a.api} | {_r(a.now)} | {_r(a.before)} |")
    lines += [
        "",
        "Governed at each window (`govern_request`, output reserve 8,192): agent items "
        "(assistant messages and calls) and tool outputs kept unchanged, outputs sent "
        "masked (a placeholder for the same call), requests over the window, "
        "tokens sent, cached-prefix share (items equal to the previous request's), "
        "effective input cost (cached reads at a tenth), median time of the last 20.",
        "",
        "| API | window | agent items kept | outputs kept | outputs masked | over | "
        "tokens sent | cached share | effective cost | time |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in result.fits:
        lines.append(
            f"| {f.api} | {f.window:,} | {f.agent_kept:.2f} | {f.outputs_kept:.2f} | "
            f"{f.outputs_masked:.2f} | {f.over} | {f.tokens:,} | {f.cached_share:.2f} | "
            f"{f.cost:,.0f} | {f.ms:.1f} ms |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    return section_main(__doc__, argv, {"steps": STEPS}, lambda a: render(run(a.steps)))


if __name__ == "__main__":
    raise SystemExit(main())
