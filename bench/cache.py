"""Cache friendliness: what each governed request shares with the one before it.

For every step of a replay, each configuration governs the full persisted history
and we look at the request it would send:

* **tokens**: the request's messages counted with the o200k_base counter
  (``context_governor``'s exact counter: a message's text plus 4 tokens); tool
  definitions are left out (they are the same in every request and every
  configuration);
* **cached-prefix tokens**: the tokens of the longest common prefix of this
  request and the previous one, at message granularity -- messages are equal when
  their JSON (``json.dumps(sort_keys=True)``) is equal. The first request has none.
  This is what a provider's prompt cache can serve when each request is cached;
* **cached-prefix share**: cached-prefix tokens / tokens, summed over the requests
  up to a mark (token-weighted);
* **effective input cost**: sum over requests of uncached + 0.1 x cached tokens
  (cached input at a tenth of the price: ``pricing.FLAT``); ``Run.cost(pricing)`` prices
  the same requests under one provider's read and write prices (bench/pricing.py);
* **within budget**: the governor's own report (its own counter) says the request
  fits ``context_window - max_output - 1024``;
* **valid**: ``context_governor.providers.validate`` finds no rule of the target
  provider broken;
* **recent history kept verbatim**: how many of the newest tool results of the
  history appear in the request unmodified (counted from the newest back, up to
  the first one that does not), and the share of the last N messages of the
  history that appear in the request unmodified;
* **fidelity** (bench/fidelity.py): the share of the history's assistant messages and
  user prompts the request carries unchanged, of its tool results verbatim, masked
  (a placeholder for the same call) or gone, and the step each was first lost.

A configuration is one line in ``CONFIGS``: a label, the provider its requests are
validated for, and a factory of per-step functions.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from context_governor import CompactionPolicy, Governor
from context_governor.counting import ExactCounter, exact_counter
from context_governor.providers import validate

from .fidelity import Fidelity, StepFidelity, fidelity_of, step_fidelity
from .pricing import FLAT, CachePricing
from .sessions import Message, Replay

MAX_OUTPUT = 4096
SAFETY_BUFFER = 1024
CACHED_PRICE = FLAT.read
RECENT_WINDOWS = (20, 50)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one configuration sends for one step."""

    messages: list[Message]
    #: the configuration's own verdict; None when it has no report (then o200k decides)
    within_budget: bool | None = None


StepFn = Callable[[list[Message]], Outcome]


@dataclass(frozen=True, slots=True)
class Config:
    label: str
    make: Callable[[Replay, int], StepFn]
    provider: str = "openai"


def governor(label: str, provider: str = "openai", **settings: Any) -> Config:
    """A configuration that runs one ``Governor(**settings)`` per conversation."""

    def make(replay: Replay, window: int) -> StepFn:
        gov = Governor(
            model=replay.model,
            tools=replay.tools,
            context_window=window,
            max_output=MAX_OUTPUT,
            **settings,
        )

        def step(history: list[Message]) -> Outcome:
            result = gov.govern(history)
            return Outcome(result.messages, result.report.within_budget)

        return step

    return Config(label, make, provider)


def _ungoverned(replay: Replay, window: int) -> StepFn:
    return lambda history: Outcome(list(history))


#: The default cache policy as a model whose cached reads cost 0.1x gets it (gpt-5,
#: Claude, Gemini 2.5, DeepSeek, any unknown model): the replay's own model (gpt-4o,
#: reads at 0.5x) gets a lower, price-aware trigger; this row is what the others get.
READS_AT_TENTH = "openai, cache policy for reads at 0.1× (price_aware=False)"

#: The compared configurations; add a policy with one line.
CONFIGS: list[Config] = [
    Config("full history (no governance)", _ungoverned),
    governor("nanobot (seed)", profile="nanobot"),
    governor("openai, compaction='seed'", profile="openai", compaction="seed"),
    governor("openai (default: compaction='cache')", profile="openai"),
    governor(
        READS_AT_TENTH,
        profile="openai",
        compaction=CompactionPolicy(price_aware=False),
    ),
]


# ----------------------------------------------------------------------------- measures


def serialize(message: Message) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False)


def common_prefix(previous: Sequence[str], current: Sequence[str]) -> int:
    """Length of the longest common prefix of two serialized requests, in messages."""
    n = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        n += 1
    return n


def effective_cost(uncached: float, cached: float, cached_price: float = CACHED_PRICE) -> float:
    return uncached + cached_price * cached


def recent_tool_results_kept(history: Sequence[str], roles: Sequence[str], sent: set[str]) -> int:
    """How many of the newest tool results of ``history`` are in ``sent`` unmodified,
    counted from the newest back up to the first that is not."""
    kept = 0
    for text, role in zip(reversed(history), reversed(roles), strict=True):
        if role != "tool":
            continue
        if text not in sent:
            break
        kept += 1
    return kept


def recent_share_kept(history: Sequence[str], sent: set[str], n: int) -> float:
    """Share of the last ``n`` messages of ``history`` that are in ``sent`` unmodified."""
    tail = history[-n:]
    return sum(text in sent for text in tail) / len(tail) if tail else 1.0


class Meter:
    """Serializes and counts messages once (by identity, then by JSON text)."""

    def __init__(self, counter: ExactCounter | None = None) -> None:
        self.counter = counter or exact_counter("gpt-4o")
        self._by_id: dict[int, tuple[Message, str]] = {}
        self._tokens: dict[str, int] = {}

    def text(self, message: Message) -> str:
        hit = self._by_id.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        text = serialize(message)
        # Holding the message keeps its id from being reused by another object.
        self._by_id[id(message)] = (message, text)
        return text

    def tokens(self, message: Message, text: str) -> int:
        count = self._tokens.get(text)
        if count is None:
            count = self._tokens[text] = self.counter.message_tokens(message)
        return count


@dataclass(slots=True)
class StepMetrics:
    step: int
    messages: int
    tokens: int
    cached: int
    within_budget: bool
    violations: int
    recent_tool_results: int
    recent_share: dict[int, float]
    fidelity: StepFidelity | None = None


@dataclass(slots=True)
class Run:
    config: str
    window: int
    budget: int
    steps: list[StepMetrics] = field(default_factory=list)

    def fidelity(self) -> Fidelity:
        """What of the history reached the model over the whole run (bench/fidelity.py)."""
        return fidelity_of([s.fidelity for s in self.steps])

    def cost(self, pricing: CachePricing, mark: int | None = None) -> float:
        """Input cost of steps 1..mark (all) under ``pricing``, in uncached-token units."""
        return sum(pricing.request_cost(s.tokens, s.cached) for s in self.steps[:mark])

    def at(self, mark: int) -> dict[str, Any]:
        """Figures over steps 1..mark (cumulative) and at step ``mark``."""
        upto = self.steps[:mark]
        last = upto[-1]
        tokens = sum(s.tokens for s in upto)
        cached = sum(s.cached for s in upto)
        return {
            "mark": mark,
            "tokens": tokens,
            "cached": cached,
            "share": cached / tokens if tokens else 0.0,
            "cost": sum(effective_cost(s.tokens - s.cached, s.cached) for s in upto),
            "breaks": sum(1 for s in upto[1:] if s.cached < _prev_tokens(upto, s)),
            "over_budget": sum(not s.within_budget for s in upto),
            "invalid": sum(s.violations > 0 for s in upto),
            "request_tokens": last.tokens,
            "request_messages": last.messages,
            "recent_tool_results": last.recent_tool_results,
            # lowest over the second half of the steps so far (early on there is no history)
            "min_recent_tool_results": min(s.recent_tool_results for s in upto[mark // 2 :]),
            "mean_recent_tool_results": statistics.mean(s.recent_tool_results for s in upto),
            "recent_share": dict(last.recent_share),
            "mean_recent_share": {
                n: statistics.mean(s.recent_share[n] for s in upto) for n in RECENT_WINDOWS
            },
        }


def _prev_tokens(steps: list[StepMetrics], current: StepMetrics) -> int:
    """Tokens of the request before ``current`` (a break: less than all of it was reused)."""
    return steps[current.step - 2].tokens


def measure(config: Config, replay: Replay, window: int, meter: Meter | None = None) -> Run:
    """Govern every step of ``replay`` with ``config`` and measure each request."""
    meter = meter or Meter()
    budget = window - MAX_OUTPUT - SAFETY_BUFFER
    step_fn = config.make(replay, window)
    run = Run(config.label, window, budget)
    previous: list[str] = []
    history_texts: list[str] = []
    roles: list[str] = []
    for number, (history, new) in enumerate(zip(replay.histories(), replay.steps, strict=True), 1):
        history_texts.extend(meter.text(m) for m in new)
        roles.extend(str(m.get("role")) for m in new)
        outcome = step_fn(history)
        texts = [meter.text(m) for m in outcome.messages]
        counts = [meter.tokens(m, t) for m, t in zip(outcome.messages, texts, strict=True)]
        tokens = sum(counts)
        cached = sum(counts[: common_prefix(previous, texts)])
        within = outcome.within_budget
        if within is None:
            within = tokens <= budget
        sent = set(texts)
        run.steps.append(
            StepMetrics(
                step=number,
                messages=len(texts),
                tokens=tokens,
                cached=cached,
                within_budget=within,
                violations=len(validate(outcome.messages, provider=config.provider)),
                recent_tool_results=recent_tool_results_kept(history_texts, roles, sent),
                recent_share={n: recent_share_kept(history_texts, sent, n) for n in RECENT_WINDOWS},
                fidelity=step_fidelity(history, history_texts, outcome.messages, texts),
            )
        )
        previous = texts
    return run


def marks(steps: int) -> list[int]:
    """The 10-, 100- and 300-step marks that a replay of ``steps`` reaches, and its end."""
    return sorted({m for m in (10, 100, 300) if m <= steps} | {steps})


def run_cache(
    replay: Replay,
    windows: Sequence[int] = (128_000, 32_000),
    configs: Sequence[Config] | None = None,
) -> list[Run]:
    meter = Meter()
    runs = []
    for window in windows:
        for config in CONFIGS if configs is None else configs:
            print(f"[bench] cache: {config.label} at {window:,}", file=sys.stderr, flush=True)
            runs.append(measure(config, replay, window, meter))
    return runs
