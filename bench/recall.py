"""Recall: do facts planted in a session still reach the model when they are needed?

Three of bench/shapes.py's sessions (coding, research, chat) get facts planted at known
steps, each a unique random token (``the staging deploy key is K-7f3a9c5d``) so that
"the request carries it" is a substring check:

* **result**: in a tool result (half of them restated by the agent in its next message);
* **conclusion**: in the agent's own text (what it worked out);
* **instruction**: in a user message (the task's and every follow-up's, chat's every
  20th), an order that holds from then on ("always answer in French ...");
* what the cut note's receipt lists (stages/_receipt.py), planted by a second pass with
  its own random stream, so the facts above keep their tokens and steps: **file** (the
  path a ``read_file``/``edit_file``/``write_file`` call names, coding only), **command**
  (an ``exec`` call's command, coding only) and **error** (an ``Error:`` line at the end
  of a tool result, every shape).

Each fact is needed ``GAPS`` steps after it was planted. At those steps the governed
request is searched, and the fact counts as carried, in this order of preference:
**verbatim** (in a message of the role it was planted in), in the agent's **own words**
(an assistant message or call restating it), in a **summary** (the summary block the
cache policy's summary option puts where it cuts; here a scripted summarizer that
keeps user requests and the agent's text, never tool output), in the cut note's
**receipt**, or only behind a **placeholder** (a tool result for the same call is
there, its content cleared: the agent can call again). A fact is *behind a cut* at a
step when the message it was planted in is not in the request at all (neither
verbatim nor as a placeholder): recall after a cut is the share of those the request
still carries. A request over the window (its tokens plus ``MAX_OUTPUT``) would
be refused by the provider: it carries nothing.

Compared at the same budget (window − 4,096 − 1,024): ours (the default policy, as a
0.1×-reads model and as gpt-4o gets it; and with scripted summaries), the seed policy
(Nanobot's profile), LangChain ``trim_messages`` (the agent recipe, exact o200k counts),
LiteLLM ``trim_messages`` (``max_tokens`` = the budget; its own counts, memoized per
message: they are additive, which ``tests/test_bench_recall.py`` checks), and
Anthropic's ``clear_tool_uses_20250919`` at its documented defaults, reimplemented
here (``clear_tool_uses``).

Run: ``python -m bench.recall [--steps N] [--quick] [--shape KEY] [--window N]
[--out docs/benchmarks.md]`` (``--out`` replaces only this section of the file).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_governor import CompactionPolicy
from context_governor.providers import validate
from context_governor.stages._receipt import RECEIPT_HEAD, RECEIPT_TAIL
from context_governor.stages._summary import PREVIOUS_HEAD, SUMMARY_TAIL
from context_governor.summary import Summaries

from .cache import MAX_OUTPUT, SAFETY_BUFFER, Config, Meter, Outcome, StepFn, governor
from .fidelity import Fidelity, StepFidelity, content_text, step_fidelity
from .pricing import OPENAI_5
from .section import write_section
from .sessions import Message, Replay
from .shapes import SEED_CONFIG, SHAPES, Shape

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never download litellm's map

KINDS = ("result", "conclusion", "instruction", "file", "command", "error")
HOWS = ("verbatim", "own words", "summary", "receipt", "placeholder")
#: steps after planting at which a fact is needed (those inside the replay)
GAPS = (3, 10, 30, 100, 250)
RESULT_EVERY = 12
CONCLUSION_EVERY = 15
CHAT_INSTRUCTION_EVERY = 20
#: steps between two facts of the receipt's kinds (file, command, error), each kind
WORK_EVERY = 16
WINDOWS = (128_000, 32_000)
RECALL_SHAPES = ("coding", "research", "chat")
QUICK_STEPS = 40
PLANT_SEED = 26

# ----------------------------------------------------------------------------- planting

RESULT_FACTS = (
    "the staging deploy key is {t}",
    "the build id of the last green run is {t}",
    "the on-call escalation code is {t}",
    "the dataset's access token is {t}",
    "the migration checksum is {t}",
    "the vendor's support case number is {t}",
)
RESTATED = "Noted from that output: {fact}; I will need it later."
CONCLUSIONS = (
    "Conclusion so far: the failure comes from the retry budget named {t}, not the config.",
    "What I worked out: the two sources disagree because of revision {t} of the method.",
    "Decision: we keep the old parser behind the flag {t} until the tests are green.",
    "Finding: the slow path is only taken for tenants of shard {t}.",
)
ERRORS = (
    "Error: the artifact upload to bucket {t} failed (403 Forbidden); nothing was published.",
    "Error: migration {t} aborted: relation already exists; the schema was rolled back.",
    "Error: the cache warm-up job {t} timed out after 300 s; the old entries were kept.",
)
INSTRUCTIONS = (
    "From now on, always answer in French and quote the ticket {t} in every reply.",
    "Whatever you do next, never push to main: every branch name must start with {t}.",
    "Rule for the rest of this session: use metric units only and tag the report {t}.",
    "Please remember: sign every summary you write with the code {t}.",
)


@dataclass(frozen=True, slots=True)
class Fact:
    """A planted fact: its token, kind, the replay step that added it, the tool call
    whose result carries it (results), and the requests (1-based) that need it."""

    token: str
    kind: str
    step: int
    needed: tuple[int, ...]
    call_id: str | None = None


def _token(rng: random.Random, taken: set[str], text: str) -> str:
    while True:
        token = f"{rng.choice('KBTXQZ')}-{rng.getrandbits(32):08x}"
        if token not in taken and token not in text:
            taken.add(token)
            return token


def _needed(step: int, steps: int) -> tuple[int, ...]:
    """Requests needing a fact added by replay step ``step``: request ``n`` carries
    steps 0..n-1, so the fact is first sent in request ``step + 1``."""
    return tuple(step + 1 + gap for gap in GAPS if step + 1 + gap <= steps)


def _prefix(message: Message, text: str) -> None:
    old = message.get("content")
    message["content"] = text if not old else f"{text}\n\n{old}"


def _insert_middle(content: str, line: str) -> str:
    """``line`` on a line of its own near the middle of ``content``."""
    at = content.find("\n", len(content) // 2)
    at = len(content) if at < 0 else at
    return f"{content[:at]}\n{line}{content[at:]}"


def plant(
    replay: Replay, *, chat: bool = False, seed: int = PLANT_SEED
) -> tuple[Replay, list[Fact]]:
    """A copy of ``replay`` with facts planted, and the facts. The same replay and seed
    give the same facts."""
    rng = random.Random(f"{seed}:{replay.name}")
    steps: list[list[Message]] = copy.deepcopy(replay.steps)
    text = json.dumps(steps)
    taken: set[str] = set()
    facts: list[Fact] = []
    n = len(steps)
    next_result, next_conclusion, results = RESULT_EVERY, CONCLUSION_EVERY, 0
    for k, step in enumerate(steps):
        head = step[0] if step else {}
        for message in step:
            if message.get("role") != "user":
                continue
            if k and chat and k % CHAT_INSTRUCTION_EVERY:
                continue
            t = _token(rng, taken, text)
            _prefix(message, INSTRUCTIONS[len(facts) % len(INSTRUCTIONS)].format(t=t))
            facts.append(Fact(t, "instruction", k, _needed(k, n)))
        if head.get("role") != "assistant":
            continue
        if k >= next_result and head.get("tool_calls"):
            next_result = k + RESULT_EVERY
            result = next(m for m in step if m.get("role") == "tool")
            t = _token(rng, taken, text)
            fact = rng.choice(RESULT_FACTS).format(t=t)
            result["content"] = _insert_middle(content_text(result["content"]), f"NOTE: {fact}.")
            facts.append(Fact(t, "result", k, _needed(k, n), result["tool_call_id"]))
            results += 1
            after = steps[k + 1][0] if k + 1 < n and steps[k + 1] else {}
            if results % 2 == 0 and after.get("role") == "assistant":
                _prefix(after, RESTATED.format(fact=fact))
        elif k >= next_conclusion:
            next_conclusion = k + CONCLUSION_EVERY
            t = _token(rng, taken, text)
            _prefix(head, rng.choice(CONCLUSIONS).format(t=t))
            facts.append(Fact(t, "conclusion", k, _needed(k, n)))
    taken.update(f.token for f in facts)
    facts += plant_work(steps, random.Random(f"{seed}:{replay.name}:work"), taken, text)
    return Replay(f"{replay.name}-planted", replay.model, replay.tools, steps), facts


FILE_TOOLS = frozenset({"read_file", "edit_file", "write_file"})


def _call_named(step: list[Message], names: frozenset[str]) -> dict[str, Any] | None:
    """The first call of ``step``'s assistant message to a tool in ``names``."""
    for call in step[0].get("tool_calls") or ():
        if call["function"]["name"] in names:
            return dict(call)
    return None


def _set_args(step: list[Message], call_id: str, args: dict[str, Any]) -> None:
    head = step[0]
    head["tool_calls"] = [
        {**c, "function": {**c["function"], "arguments": json.dumps(args)}}
        if c["id"] == call_id
        else c
        for c in head["tool_calls"]
    ]


def _plant_file(step: list[Message], t: str) -> bool:
    """Put ``t`` in the path a file call of ``step`` names (and in its result's text)."""
    call = _call_named(step, FILE_TOOLS)
    if call is None:
        return False
    args = json.loads(call["function"]["arguments"])
    old = str(args["path"])
    folder, _, base = old.rpartition("/")
    args["path"] = f"{folder}/{t}-{base}" if folder else f"{t}-{base}"
    _set_args(step, call["id"], args)
    for m in step[1:]:
        if m.get("tool_call_id") == call["id"]:
            m["content"] = content_text(m["content"]).replace(old, args["path"])
    return True


def _plant_command(step: list[Message], t: str) -> bool:
    """Run ``step``'s shell call with a run id ``t`` in its environment."""
    call = _call_named(step, frozenset({"exec"}))
    if call is None:
        return False
    args = json.loads(call["function"]["arguments"])
    args["command"] = f"RUN_ID={t} {args['command']}"
    _set_args(step, call["id"], args)
    return True


def plant_work(
    steps: list[list[Message]], rng: random.Random, taken: set[str], text: str
) -> list[Fact]:
    """Plant the receipt's kinds in ``steps`` (in place): a file path, a command and an
    error line, each every ``WORK_EVERY`` steps where the step has such a call."""
    facts: list[Fact] = []
    n = len(steps)
    due = {"file": WORK_EVERY // 3, "command": 2 * WORK_EVERY // 3, "error": WORK_EVERY}
    for k, step in enumerate(steps):
        if not step or not step[0].get("tool_calls"):
            continue
        for kind in [kind for kind, at in due.items() if k >= at]:
            fact = _plant_one(kind, step, k, n, rng, _token(rng, taken, text))
            if fact is not None:
                due[kind] = k + WORK_EVERY
                facts.append(fact)
                break
    return facts


def _plant_one(
    kind: str, step: list[Message], k: int, n: int, rng: random.Random, t: str
) -> Fact | None:
    """One fact of ``kind`` (file, command, error) planted in ``step`` (replay step ``k``
    of ``n``), or None where the step has no call to carry it."""
    if kind == "file":
        return Fact(t, kind, k, _needed(k, n)) if _plant_file(step, t) else None
    if kind == "command":
        return Fact(t, kind, k, _needed(k, n)) if _plant_command(step, t) else None
    result = [m for m in step if m.get("role") == "tool"][-1]
    line = rng.choice(ERRORS).format(t=t)
    result["content"] = f"{content_text(result['content'])}\n{line}"
    return Fact(t, kind, k, _needed(k, n), result["tool_call_id"])


# ----------------------------------------------------------------------------- finding

_SUMMARY = re.compile(r"\[Summary of [^\n]*\n(.*?)" + re.escape(SUMMARY_TAIL), re.S)
_RECEIPT = re.compile(re.escape(RECEIPT_HEAD) + "(.*?)" + re.escape(RECEIPT_TAIL), re.S)


@dataclass(frozen=True, slots=True)
class View:
    """A request's text by where it sits: each role's text (summary and receipt blocks
    taken out of the user text), the summaries, the receipts, and the call ids of the
    tool results it carries."""

    by_role: dict[str, str]
    summary: str
    result_ids: frozenset[str]
    receipt: str = ""


def view(messages: Sequence[Message]) -> View:
    parts: dict[str, list[str]] = {"tool": [], "assistant": [], "user": []}
    summaries: list[str] = []
    receipts: list[str] = []
    ids: set[str] = set()
    for m in messages:
        role = str(m.get("role"))
        text = content_text(m.get("content"))
        if role == "tool":
            ids.add(str(m.get("tool_call_id")))
        if role == "assistant":
            for call in m.get("tool_calls") or ():
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict):
                    text += "\n" + str(fn.get("arguments"))
        if role in ("user", "system"):
            receipts += _RECEIPT.findall(text)
            text = _RECEIPT.sub("", text)
            summaries += _SUMMARY.findall(text)
            text = _SUMMARY.sub("", text)
            role = "user"
        parts.setdefault(role, []).append(text)
    return View(
        {r: "\n".join(t) for r, t in parts.items()},
        "\n".join(summaries),
        frozenset(ids),
        "\n".join(receipts),
    )


PLANTED_ROLE = {
    "result": "tool",
    "conclusion": "assistant",
    "instruction": "user",
    "file": "assistant",  # the call's arguments
    "command": "assistant",
    "error": "tool",
}


def behind_cut(fact: Fact, v: View) -> bool:
    """Whether the message ``fact`` was planted in is gone from the request ``v``: not
    there verbatim, nor its result as a placeholder (a cut removed it)."""
    if fact.token in v.by_role.get(PLANTED_ROLE[fact.kind], ""):
        return False
    return fact.call_id is None or fact.call_id not in v.result_ids


def carried(fact: Fact, v: View) -> str | None:
    """How the request ``v`` carries ``fact`` (one of ``HOWS``), None if it does not."""
    if fact.token in v.by_role.get(PLANTED_ROLE[fact.kind], ""):
        return "verbatim"
    if fact.token in v.by_role.get("assistant", ""):
        return "own words"
    if fact.token in v.summary:
        return "summary"
    if fact.token in v.receipt:
        return "receipt"
    if fact.call_id is not None and fact.call_id in v.result_ids:
        return "placeholder"
    return None


# ----------------------------------------------------------------------------- contenders

SUMMARY_CHARS = 3600  # about 900 tokens: inside the summary option's 1,024
LINE_CHARS = 600


class Extractive:
    """A scripted summarizer: keeps each user request and each text the agent wrote (one
    line each, at most ``LINE_CHARS`` characters), folds a previous summary in, and never
    quotes tool output; over ``SUMMARY_CHARS`` the oldest agent lines go first. What a
    careful model keeps of the task and the reasoning, made deterministic."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: list[Message]) -> str:
        self.calls += 1
        lines: list[str] = []
        for m in messages:
            text = content_text(m.get("content"))
            if text.startswith(PREVIOUS_HEAD):
                lines += text[len(PREVIOUS_HEAD) :].splitlines()
            elif m.get("role") in ("user", "assistant") and text.strip():
                who = "User" if m.get("role") == "user" else "Agent"
                lines.append(f"{who}: {' '.join(text.split())[:LINE_CHARS]}")
        while len(lines) > 1 and sum(len(line) + 1 for line in lines) > SUMMARY_CHARS:
            at = next((i for i, line in enumerate(lines) if line.startswith("Agent:")), 0)
            del lines[at]
        return "\n".join(lines) or "(nothing to keep)"


def with_summaries() -> Config:
    summaries = Summaries(Extractive(), name="bench-recall-extractive", max_tokens=1024)
    return governor(
        "ours + scripted summaries, reads 0.1×",
        profile="openai",
        compaction=CompactionPolicy(summary=summaries, cache_price=OPENAI_5),
    )


def _budget(window: int) -> int:
    return window - MAX_OUTPUT - SAFETY_BUFFER


def _langchain(meter: Meter) -> Config:
    def make(replay: Replay, window: int) -> StepFn:
        from langchain_core.messages import (
            BaseMessage,
            convert_to_messages,
            convert_to_openai_messages,
            trim_messages,
        )

        converted: list[BaseMessage] = []
        back: dict[int, tuple[BaseMessage, Message, int]] = {}

        def tokens(m: BaseMessage) -> int:
            hit = back.get(id(m))
            if hit is not None and hit[0] is m:
                return hit[2]
            d = convert_to_openai_messages(m)
            return meter.tokens(d, meter.text(d))

        def step(history: list[Message]) -> Outcome:
            for d in history[len(converted) :]:
                (lc,) = convert_to_messages([d])
                converted.append(lc)
                back[id(lc)] = (lc, d, meter.tokens(d, meter.text(d)))
            out = trim_messages(
                converted,
                max_tokens=_budget(window),
                token_counter=lambda ms: sum(tokens(m) for m in ms),
                strategy="last",
                include_system=True,
                start_on="human",
                end_on=("human", "tool"),
            )
            sent = []
            for m in out:
                hit = back.get(id(m))
                sent.append(
                    hit[1] if hit is not None and hit[0] is m else convert_to_openai_messages(m)
                )
            return Outcome(sent)

        return step

    return Config("LangChain trim_messages", make)


class LitellmCounts:
    """Memoized per-message counts for LiteLLM's counter (see ``litellm_memo``). Kept
    across the steps of one replay: a message's key is its string values by identity
    (trim_messages deep-copies the history, which copies no string) and its other
    values by JSON; the strings are held, so no identity is reused while it lives."""

    def __init__(self, original: Callable[..., int]) -> None:
        self.original = original
        self.base = original(model="gpt-4o", messages=[])
        self.counts: dict[tuple[Any, ...], tuple[int, list[str]]] = {}
        #: id -> (message, its content, count): the same object within one trim
        self.seen: dict[int, tuple[Message, Any, int]] = {}

    def one(self, m: Message, model: str) -> int:
        same = self.seen.get(id(m))
        if same is not None and same[0] is m and same[1] is m.get("content"):
            return same[2]
        parts: list[tuple[str, Any]] = []
        held: list[str] = []
        for k, v in m.items():
            if isinstance(v, str):
                parts.append((k, id(v)))
                held.append(v)
            else:
                parts.append((k, json.dumps(v, sort_keys=True, default=str)))
        key = tuple(sorted(parts))
        hit = self.counts.get(key)
        if hit is None:
            hit = self.counts[key] = (self.original(model=model, messages=[m]) - self.base, held)
        self.seen[id(m)] = (m, m.get("content"), hit[0])
        return hit[0]

    def __call__(self, model: str = "", messages: Any = None, **kwargs: Any) -> int:
        if messages is None or kwargs or model != "gpt-4o":
            return int(self.original(model=model, messages=messages, **kwargs))
        return int(self.base + sum(self.one(m, model) for m in messages))


@contextmanager
def litellm_memo(counts: LitellmCounts | None = None) -> Iterator[LitellmCounts]:
    """LiteLLM's trim_messages recounts the messages it has kept after each one it adds
    (quadratic: half a minute a step on a 300-step history). Its count of a list is a
    constant plus each message's own count, so the same counts come from a memo per
    message; this swaps its counter for ``counts`` (a new one by default) while the
    block runs."""
    import litellm.utils as lu

    original = lu.token_counter
    memo = counts or LitellmCounts(original)
    setattr(lu, "token_counter", memo)  # noqa: B010 (a module attribute swapped for a while)
    try:
        yield memo
    finally:
        setattr(lu, "token_counter", original)  # noqa: B010
        memo.seen.clear()  # the trim's copies: their ids are free again


def _litellm(replay: Replay, window: int) -> StepFn:
    """LiteLLM's trim_messages at the budget. When it has to shorten an assistant message
    whose content is None (a tool call without text), it fails inside and returns the
    history untrimmed (its non-blocking fallback, logged with a traceback, which is
    silenced here): that is what its users get, so it is measured as it is."""
    import logging

    import litellm.utils as lu
    from litellm.utils import trim_messages

    logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)
    counts = LitellmCounts(lu.token_counter)

    def step(history: list[Message]) -> Outcome:
        with litellm_memo(counts):
            out = trim_messages(history, model="gpt-4o", max_tokens=_budget(window))
        return Outcome(list(out))

    return step


#: Anthropic's documented defaults for clear_tool_uses_20250919 (docs/benchmarks.md
#: cites the page): trigger at 100,000 input tokens, keep the 3 most recent tool uses,
#: clear_at_least none, exclude_tools none, clear_tool_inputs false.
CLEAR_TRIGGER = 100_000
CLEAR_KEEP = 3
CLEARED = "[cleared]"


def clear_tool_uses(
    history: Sequence[Message],
    tokens: Sequence[int],
    trigger: int = CLEAR_TRIGGER,
    keep: int = CLEAR_KEEP,
) -> list[Message]:
    """The request after clear_tool_uses: when the prompt exceeds ``trigger`` tokens,
    every tool result but the ``keep`` newest has its content replaced by a placeholder
    (the calls and their inputs stay). Applied to each request as sent, like the API
    does server-side; nothing else is cut, so a long enough session goes over the window."""
    if sum(tokens) <= trigger:
        return list(history)
    results = [i for i, m in enumerate(history) if m.get("role") == "tool"]
    clear = set(results[: max(0, len(results) - keep)])
    return [{**m, "content": CLEARED} if i in clear else m for i, m in enumerate(history)]


def _clear_tool_uses(meter: Meter) -> Config:
    def make(replay: Replay, window: int) -> StepFn:
        def step(history: list[Message]) -> Outcome:
            tokens = [meter.tokens(m, meter.text(m)) for m in history]
            return Outcome(clear_tool_uses(history, tokens))

        return step

    return Config("Anthropic clear_tool_uses (defaults)", make)


def ours(label: str, **policy: Any) -> Config:
    return governor(label, profile="openai", **policy)


def contenders(meter: Meter) -> list[Config]:
    """Ours first (the targets compare it with the rest), then the anchors."""
    return [
        ours("ours, reads 0.1× or unknown", compaction=CompactionPolicy(cache_price=OPENAI_5)),
        ours("ours, gpt-4o (reads 0.5×)"),
        ours(
            NO_RECEIPT[0],
            compaction=CompactionPolicy(cache_price=OPENAI_5, receipt=False),
        ),
        ours(NO_RECEIPT[1], compaction=CompactionPolicy(receipt=False)),
        with_summaries(),
        SEED_CONFIG,
        _langchain(meter),
        Config("LiteLLM trim_messages", _litellm),
        _clear_tool_uses(meter),
    ]


#: the rows the targets hold to account, and the anchors they are compared with
OURS = ("ours, reads 0.1× or unknown", "ours, gpt-4o (reads 0.5×)")
#: the same two with the cut note's receipt off (CompactionPolicy(receipt=False))
NO_RECEIPT = ("ours, reads 0.1×, no receipt", "ours, gpt-4o, no receipt")
SEED = SEED_CONFIG.label

# ----------------------------------------------------------------------------- measuring


@dataclass(slots=True)
class RecallRun:
    label: str
    shape: str
    window: int
    steps: int
    #: (fact kind, how it was carried or None) for every (fact, step that needs it)
    found: list[tuple[str, str | None]] = field(default_factory=list)
    #: of those, the ones whose planted message a cut removed from the request
    cut: list[tuple[str, str | None]] = field(default_factory=list)
    fidelity: list[StepFidelity] = field(default_factory=list)
    over_budget: int = 0
    refused: int = 0
    invalid: int = 0
    seconds: float = 0.0

    def reachable(self, kind: str | None = None) -> float:
        rows = [how for k, how in self.found if kind is None or k == kind]
        return sum(how is not None for how in rows) / len(rows) if rows else 1.0

    def how(self, how: str) -> float:
        return sum(h == how for _, h in self.found) / len(self.found) if self.found else 0.0

    def own(self) -> float:
        return Fidelity(tuple(self.fidelity)).share("own")

    def after_cut(self) -> float | None:
        """The share of (fact, step) behind a cut that the request still carries (None:
        no fact was needed behind a cut)."""
        if not self.cut:
            return None
        return sum(how is not None for _, how in self.cut) / len(self.cut)


def measure(
    config: Config,
    replay: Replay,
    facts: Sequence[Fact],
    window: int,
    shape: str,
    meter: Meter,
) -> RecallRun:
    """Govern every step of ``replay`` with ``config``; at each step, the fidelity of the
    request, and how it carries each fact needed there."""
    needs: dict[int, list[Fact]] = {}
    for fact in facts:
        for n in fact.needed:
            needs.setdefault(n, []).append(fact)
    budget = _budget(window)
    step_fn = config.make(replay, window)
    run = RecallRun(config.label, shape, window, len(replay.steps))
    texts: list[str] = []
    started = time.perf_counter()
    for number, (history, new) in enumerate(zip(replay.histories(), replay.steps, strict=True), 1):
        texts.extend(meter.text(m) for m in new)
        outcome = step_fn(history)
        sent = [meter.text(m) for m in outcome.messages]
        tokens = sum(meter.tokens(m, t) for m, t in zip(outcome.messages, sent, strict=True))
        within = outcome.within_budget if outcome.within_budget is not None else tokens <= budget
        run.over_budget += not within
        refused = tokens + MAX_OUTPUT > window
        run.refused += refused
        run.invalid += bool(validate(outcome.messages, provider=config.provider))
        run.fidelity.append(step_fidelity(history, texts, outcome.messages, sent))
        due = needs.get(number, ())
        if due:
            v = view(outcome.messages)
            found = [(f.kind, None if refused else carried(f, v)) for f in due]
            run.found += found
            run.cut += [k for f, k in zip(due, found, strict=True) if behind_cut(f, v)]
    run.seconds = time.perf_counter() - started
    return run


def recall_shapes(keys: Sequence[str] = RECALL_SHAPES) -> list[Shape]:
    return [s for s in SHAPES if s.key in keys]


def run(
    steps: int,
    shapes: Sequence[Shape] | None = None,
    windows: Sequence[int] = WINDOWS,
    make_contenders: Callable[[Meter], list[Config]] = contenders,
) -> list[RecallRun]:
    out: list[RecallRun] = []
    for shape in recall_shapes() if shapes is None else shapes:
        replay, facts = plant(shape.make(steps), chat=shape.key == "chat")
        meter = Meter()
        for window in windows:
            for config in make_contenders(meter):
                print(
                    f"[bench] recall: {shape.label} at {window:,}: {config.label}",
                    file=sys.stderr,
                    flush=True,
                )
                out.append(measure(config, replay, facts, window, shape.label, meter))
    return out


# ----------------------------------------------------------------------------- targets


def misses(group: Sequence[RecallRun]) -> list[str]:
    """Issue 26's targets for one shape and window: for each of our rows, the agent's own
    messages kept ≥ the seed policy's; instructions and conclusions reachable ≥ every
    anchor's; nothing over budget."""
    by = {r.label: r for r in group}
    out: list[str] = []
    anchors = [r for r in group if r.label not in OURS and not r.label.startswith("ours")]
    for label in OURS:
        r = by.get(label)
        if r is None:
            continue
        seed = by.get(SEED)
        if seed is not None and r.own() < seed.own():
            out.append(
                f"{label}: agent's own messages {r.own():.2f} < the seed policy's {seed.own():.2f}"
            )
        for kind in ("instruction", "conclusion"):
            better = [a for a in anchors if a.reachable(kind) > r.reachable(kind)]
            if better:
                names = ", ".join(f"{a.label} {a.reachable(kind):.2f}" for a in better)
                out.append(f"{label}: {kind}s reachable {r.reachable(kind):.2f} < {names}")
        if r.over_budget:
            out.append(f"{label}: {r.over_budget} requests over budget")
    return out


# ----------------------------------------------------------------------------- report

HEADING = "## Recall of planted facts"


def _groups(results: Sequence[RecallRun]) -> list[list[RecallRun]]:
    groups: dict[tuple[str, int], list[RecallRun]] = {}
    for r in results:
        groups.setdefault((r.shape, r.window), []).append(r)
    return list(groups.values())


def render(results: Sequence[RecallRun], facts: dict[str, Counter[str]] | None = None) -> str:
    steps = results[0].steps if results else 0
    lines = [
        HEADING,
        "",
        f"Facts planted at known steps of three {steps}-step sessions (bench/recall.py: "
        "coding, research and chat from bench/shapes.py), each a unique random token, and "
        f"needed {', '.join(map(str, GAPS))} steps later: in tool results (half restated "
        "by the agent), in the agent's own conclusions, in user instructions, and of the "
        "kinds the cut note's receipt lists: a file path a file call names, a command an "
        "`exec` call runs (coding only: the other shapes have no such tools), an `Error:` "
        "line at the end of a tool result. *Reachable* is "
        "the share of (fact, step that needs it) whose request carries the token, verbatim "
        "(in a message of the role it was planted in), in the agent's own words, in a summary "
        "(scripted: user requests and the agent's text, never tool output), in the cut "
        "note's receipt, or only behind a placeholder for its call (results, errors); a "
        "request over the window (tokens + 4,096) carries nothing. *After a cut* is the "
        "share of the (fact, step) whose planted message is not in the request at all (a "
        "cut removed it) that the request still carries, with how many there were; the "
        'rows "no receipt" are ours with `CompactionPolicy(receipt=False)`. '
        "Every contender has the same budget (window − 5,120 tokens); "
        "Anthropic's `clear_tool_uses_20250919` runs at its documented defaults (trigger "
        "100,000 input tokens, keep 3 tool uses, clear_at_least, exclude_tools none, "
        "clear_tool_inputs false; "
        "https://docs.claude.com/en/docs/build-with-claude/context-editing), which cut "
        "nothing else. *Agent kept* is the mean over the steps of the share of the agent's "
        "own messages the request carries unchanged (bench/fidelity.py). Targets (each of "
        "our rows): agent kept ≥ the seed policy's; instructions and conclusions reachable "
        "≥ every anchor's; nothing over budget. `python -m bench.recall --out "
        "docs/benchmarks.md` reruns it (`--quick`: 40 steps).",
        "",
    ]
    if facts:
        lines += [
            "Planted: "
            + "; ".join(
                f"{shape} {c['result']} results, {c['conclusion']} conclusions, "
                f"{c['instruction']} instructions, {c['file']} files, {c['command']} commands, "
                f"{c['error']} errors"
                for shape, c in facts.items()
            )
            + ".",
            "",
        ]
    verdicts: list[str] = []
    receipts: list[str] = []
    for group in _groups(results):
        shape, window = group[0].shape, group[0].window
        lines += [
            f"**{shape}, {window:,}-token window**",
            "",
            "| contender | reachable: result / conclusion / instruction / file / command / "
            "error / all | after a cut | "
            "how: verbatim / own words / summary / receipt / placeholder | agent kept | "
            "over budget / refused / invalid | seconds |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in group:
            reach = " / ".join(_share(r, k) for k in (*KINDS, None))
            how = " / ".join(f"{r.how(h):.2f}" for h in HOWS)
            after = r.after_cut()
            cut = "—" if after is None else f"{after:.2f} of {len(r.cut)}"
            lines.append(
                f"| {r.label} | {reach} | {cut} | {how} | {r.own():.2f} | "
                f"{r.over_budget} / {r.refused} / {r.invalid} | {r.seconds:.1f} |"
            )
        failed = misses(group)
        verdicts.append(
            f"- {shape} at {window:,}: "
            + ("**PASS**" if not failed else "**MISS**: " + "; ".join(failed))
        )
        receipts.append(receipt_verdict(group))
        lines.append("")
    lines += ["Targets:", "", *verdicts, "", "The receipt (recall after a cut, with / without):"]
    lines += ["", *receipts]
    return "\n".join(lines) + "\n"


def _share(r: RecallRun, kind: str | None) -> str:
    """A kind's reachable share, "—" where no fact of it was needed (none planted)."""
    if kind is not None and not any(k == kind for k, _ in r.found):
        return "—"
    return f"{r.reachable(kind):.2f}"


def receipt_verdict(group: Sequence[RecallRun]) -> str:
    """One line per table: recall after a cut for each of our rows with the receipt and
    without, and whether it is higher with it (no fact behind a cut: nothing to say)."""
    by = {r.label: r for r in group}
    shape, window = group[0].shape, group[0].window
    parts: list[str] = []
    for on, off in zip(OURS, NO_RECEIPT, strict=True):
        a, b = by.get(on), by.get(off)
        if a is None or b is None:
            continue
        x, y = a.after_cut(), b.after_cut()
        if x is None and y is None:
            parts.append(f"{on}: no fact needed behind a cut")
            continue
        mark = "higher" if (x or 0.0) > (y or 0.0) else "**not higher**"
        parts.append(f"{on}: {_ratio(a)} / {_ratio(b)} ({mark})")
    return f"- {shape} at {window:,}: " + "; ".join(parts)


def _ratio(r: RecallRun) -> str:
    after = r.after_cut()
    return "—" if after is None else f"{after:.2f} of {len(r.cut)}"


def planted_counts(shapes: Sequence[Shape], steps: int) -> dict[str, Counter[str]]:
    return {
        s.label: Counter(f.kind for f in plant(s.make(steps), chat=s.key == "chat")[1])
        for s in shapes
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall", description=__doc__)
    parser.add_argument("--steps", type=int, default=None, help="model calls per session (300)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS} steps")
    parser.add_argument("--shape", action="append", default=None, help="only these shapes")
    parser.add_argument("--window", action="append", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None, help="replace the section here")
    args = parser.parse_args(argv)
    steps = args.steps or (QUICK_STEPS if args.quick else 300)
    shapes = recall_shapes(args.shape or RECALL_SHAPES)
    if not shapes:
        parser.error(f"--shape must be among {', '.join(RECALL_SHAPES)}")
    section = render(run(steps, shapes, args.window or WINDOWS), planted_counts(shapes, steps))
    print(section)
    if args.out is not None:
        write_section(args.out, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
