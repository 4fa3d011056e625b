"""The proxy's Prometheus metrics (``GET /metrics``), documented in docs/observability.md.

Every figure comes from one place: the report (observe/_figures.py) for what governance
did, the upstream's own usage (usage.py) for what it counted, cached and billed.

Labels are bounded, so a scrape stays small whatever the traffic: ``api`` (four
values), ``model`` (at most ``MAX_MODELS`` distinct names per process, the rest
``"other"``), ``stage``, ``effect``, ``outcome``, ``reason``, ``cause`` and ``rule``
(fixed sets, the latter capped like models). Never a conversation or a client id.

``--workers N`` runs N processes: prometheus-client's multiprocess mode then keeps
each worker's values in files under ``$PROMETHEUS_MULTIPROC_DIR`` (the CLI makes one
when it is not set) and every scrape, whichever worker answers, sums them. The mode
is chosen when prometheus-client is first imported, so the directory must be in the
environment before the workers start (the CLI sees to it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from typing import Any

from ..observe import Figures
from ._usage import Usage

__all__ = [
    "CONTENT_TYPE",
    "MAX_MODELS",
    "MAX_RULES",
    "MULTIPROC_ENV",
    "OTHER",
    "PREFIX",
    "TIME_BUCKETS",
    "LabelCap",
    "Metrics",
    "available",
]

PREFIX = "context_governor"
MAX_MODELS = 50
MAX_RULES = 100
OTHER = "other"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: seconds: governance takes ms on short histories and up to seconds on huge ones
TIME_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class LabelCap:
    """At most ``limit`` distinct values of a label; later new ones become ``"other"``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        value = value or "unknown"
        with self._lock:
            if value in self._seen:
                return value
            if len(self._seen) < self._limit:
                self._seen.add(value)
                return value
        return OTHER


def available() -> bool:
    """Whether prometheus-client is installed (the ``proxy`` extra brings it)."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


class Metrics:
    """The metrics of one proxy process, in a registry of their own (several apps in one
    process, as in tests, do not collide), or summed over workers in multiprocess mode."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self._registry = CollectorRegistry(auto_describe=True)
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.model = LabelCap(MAX_MODELS)
        self.rule = LabelCap(MAX_RULES)
        r = self._registry

        def counter(name: str, doc: str, labels: Iterable[str]) -> Any:
            return Counter(f"{PREFIX}_{name}", doc, list(labels), registry=r)

        am = ("api", "model")
        self.requests = counter(
            "requests", "Governed requests by API, model and outcome.", (*am, "outcome")
        )
        self.client_tokens = counter(
            "client_tokens", "Prompt tokens the clients sent (our count).", am
        )
        self.forwarded_tokens = counter(
            "forwarded_tokens", "Prompt tokens forwarded after governance (our count).", am
        )
        self.saved_tokens = counter(
            "saved_tokens", "Prompt tokens removed, by the stage that removed them.",
            (*am, "stage"),
        )  # fmt: skip
        self.inserted_tokens = counter(
            "inserted_tokens", "Prompt tokens added (notes, summaries, placeholders) by stage.",
            (*am, "stage"),
        )  # fmt: skip
        self.actions = counter(
            "actions", "Governance actions by stage and effect "
            "(cut, cleared, truncated, inserted, repaired).", ("stage", "effect"),
        )  # fmt: skip
        self.messages_cut = counter("messages_cut", "Messages cut, by stage.", ("stage",))
        self.results_cleared = counter(
            "results_cleared", "Tool results cleared (placeholder), by stage.", ("stage",)
        )
        self.results_truncated = counter(
            "results_truncated", "Tool results truncated, by stage.", ("stage",)
        )
        self.compactions = counter(
            "compactions", "Requests compacted, by the stage that compacted "
            "(compact: a new cache-policy compaction; squeeze, snip, microcompact).",
            (*am, "reason"),
        )  # fmt: skip
        self.compaction_removed = counter(
            "compaction_removed_tokens", "Tokens the cache policy's compactions took off the "
            "request they were made at (and off every later one until the next).", am,
        )  # fmt: skip
        self.compaction_rewritten = counter(
            "compaction_rewritten_tokens", "Tokens after each compaction's first edit: no "
            "longer in the provider's prompt cache, so read uncached or written again once.",
            am,
        )  # fmt: skip
        self.summaries = counter(
            "summaries", "Summaries of cut history: made, reused (stored), failed.", ("outcome",)
        )
        self.violations = counter(
            "rule_violations", "Provider rules the forwarded request still breaks, by rule.",
            ("rule",),
        )  # fmt: skip
        self.over_budget = counter("over_budget", "Requests forwarded over their budget.", am)
        self.ungoverned = counter(
            "ungoverned", "Requests (or parts) not governed, by reason "
            "(previous_response_id, conversation: server-side state; passthrough: a path "
            "not governed).", ("api", "reason"),
        )  # fmt: skip
        self.windows_learned = counter(
            "windows_learned", "Windows learned from the upstream's refusals.", ("model",)
        )
        self.upstream_input = counter(
            "upstream_input_tokens",
            "Input tokens the upstream counted and bills (cached included, and the further "
            "steps of a request it compacted on the server).",
            am,
        )
        self.upstream_output = counter(
            "upstream_output_tokens", "Answer tokens the upstream counted.", am
        )
        self.cache_read = counter(
            "upstream_cache_read_tokens", "Prompt tokens the upstream read from its cache.", am
        )
        self.cache_write = counter(
            "upstream_cache_write_tokens",
            "Prompt tokens the upstream wrote to its cache (Anthropic).", am,
        )  # fmt: skip
        self.usage_missing = counter(
            "upstream_usage_missing", "Successful answers that reported no usage.", am
        )
        self.cache_busts = counter(
            "cache_busts", "Requests that read markedly less cache than their "
            "conversation's previous one (cause: compaction, or other).", (*am, "cause"),
        )  # fmt: skip
        self.cache_bust_tokens = counter(
            "cache_bust_tokens", "Cached tokens the busts lost (previous read less this read).",
            (*am, "cause"),
        )  # fmt: skip
        # what a request was governed to, so learned state is visible (issue 38): the
        # newest request's figures per model (the highest over workers)
        self.window = Gauge(
            f"{PREFIX}_window_tokens", "The window the newest request of a model stands for, "
            "by where it came from (given, model, family, learned).",
            [*am, "source"], registry=r, multiprocess_mode="max",
        )  # fmt: skip
        self.window_governed = Gauge(
            f"{PREFIX}_window_governed_tokens", "The window the newest request of a model "
            "was governed to (the window divided by the learned upstream ratio).",
            list(am), registry=r, multiprocess_mode="max",
        )  # fmt: skip
        self.upstream_ratio = Gauge(
            f"{PREFIX}_upstream_ratio", "The learned ratio of the upstream's token count to "
            "ours the newest request of a model was governed with (1: none learned).",
            list(am), registry=r, multiprocess_mode="max",
        )  # fmt: skip
        self.governance_seconds = Histogram(
            f"{PREFIX}_governance_seconds", "Time spent governing a request.",
            ["api"], buckets=TIME_BUCKETS, registry=r,
        )  # fmt: skip
        self.added_seconds = Histogram(
            f"{PREFIX}_added_seconds", "Time the proxy adds before the upstream gets the "
            "request (reading, governing, forwarding).",
            ["api"], buckets=TIME_BUCKETS, registry=r,
        )  # fmt: skip

    def child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, remembered: prometheus-client checks and hashes
        the labels under a lock on every call, a few microseconds each, a dozen times a
        request. Bounded as the labels are (models and rules capped, the rest fixed sets);
        a race makes the same child twice (labels() returns the one it keeps)."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def governed(self, api: str, model: str, found: Figures) -> None:
        """A governed request's figures (before it is forwarded)."""
        self.child(self.client_tokens, api, model).inc(found.tokens_before)
        self.child(self.forwarded_tokens, api, model).inc(found.tokens_after)
        for stage, saved in found.saved_by_stage.items():
            if saved > 0:
                self.child(self.saved_tokens, api, model, stage).inc(saved)
            elif saved < 0:
                self.child(self.inserted_tokens, api, model, stage).inc(-saved)
        for (stage, effect), n in found.effects.items():
            self.child(self.actions, stage, effect).inc(n)
            if effect == "cut":
                self.child(self.messages_cut, stage).inc(n)
            elif effect == "cleared":
                self.child(self.results_cleared, stage).inc(n)
            elif effect == "truncated":
                self.child(self.results_truncated, stage).inc(n)
        for outcome, n in (
            ("made", found.summaries_made),
            ("reused", found.summaries_reused),
            ("failed", found.summaries_failed),
        ):
            if n:
                self.child(self.summaries, outcome).inc(n)
        for rule in found.violations:
            self.child(self.violations, self.rule(rule)).inc()
        if found.over_budget:
            self.child(self.over_budget, api, model).inc()

    def usage(self, api: str, model: str, usage: Usage | None) -> None:
        if usage is None:
            self.child(self.usage_missing, api, model).inc()
            return
        self.child(self.upstream_input, api, model).inc(usage.billed_input_tokens)
        self.child(self.upstream_output, api, model).inc(usage.output_tokens or 0)
        self.child(self.cache_read, api, model).inc(usage.cache_read_tokens)
        self.child(self.cache_write, api, model).inc(usage.cache_write_tokens)

    def exposition(self) -> bytes:
        """The text a scrape gets: this process's registry, or every worker's values
        summed when multiprocess mode is on."""
        from prometheus_client import CollectorRegistry, generate_latest

        if os.environ.get(MULTIPROC_ENV):
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self._registry)
