"""What the proxy saw of each request, for /metrics, the traces and the page.

The app tells an :class:`Observation` what happens to one request (governed,
forwarded, answered with this usage, or refused); the observation updates the
metrics (metrics.py), ends its span (tracing.py) and files a :class:`Record` under
its conversation (conversation.py) in the :class:`Journal` the page reads.

Bounded, because it lives in the proxy's memory, and every bound holds whatever the
traffic (tests/test_observe.py checks each; ``make load`` drives 10,000 conversations
through a real proxy and reports its memory):

- at most ``max_conversations`` conversations (the least recently active dropped
  first, with their records): ``--ui-conversations``;
- at most ``max_requests`` records in all (the oldest dropped first), and
  ``PER_CONVERSATION`` of any one conversation: ``--ui-requests``. A record without
  its report is a few hundred bytes;
- the reports, whose size grows with the history (one action per message cut or
  cleared: tens of KB on a long session), within about ``report_bytes`` in all, the
  oldest report forgotten first (its record stays, so the tables and the chart do not
  change): ``--ui-reports-mb``. Each is kept as governance made it and turned into
  JSON only when the page asks, so keeping it costs the request nothing;
- message content (only with ``--ui-content``) within ``content_bytes`` in all, the
  oldest forgotten first (its record stays): ``--ui-content-mb``.

Without the page (``--no-ui``) no record is kept, only each conversation's last
figures, which the metrics' compactions and cache busts are judged against; without
the page and the metrics (``--no-metrics``), and no spans, nothing at all. Per
process: under ``--workers N`` each worker's page shows the requests that worker
served (the metrics are summed over workers).

A **cache bust** is a request that reads markedly less of the provider's cache than
its conversation's previous request did: at least ``BUST_MIN_TOKENS`` and
``BUST_SHARE`` of what that one read. Its lost tokens (the previous read less this
one's) are counted, with the cause ``compaction`` when this request was compacted
(the governor moved the prefix, knowingly) and ``other`` otherwise (a client that
edited an old message, a cache that expired, a replica the cache did not follow).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any, cast

from ..formats import DEFAULT_PROFILES, Api
from ..observe import Figures, figures, new_compaction
from ..providers.prices import cache_price
from ..report import Report
from ._config import (
    DEFAULT_UI_CONTENT_BYTES,
    DEFAULT_UI_CONVERSATIONS,
    DEFAULT_UI_REPORT_BYTES,
    DEFAULT_UI_REQUESTS,
)
from ._conversation import from_headers
from ._governing import Governed
from ._metrics import Metrics
from ._page_store import PageStore, Saved
from ._tracing import Tracer
from ._usage import Usage

__all__ = [
    "BUST_MIN_TOKENS",
    "BUST_SHARE",
    "CONTENT_BYTES",
    "MAX_CONVERSATIONS",
    "MAX_REQUESTS",
    "Conversation",
    "Journal",
    "Observation",
    "Observer",
    "Record",
    "cost_units",
    "outcome_of",
    "provider_of",
    "report_size",
]

BUST_MIN_TOKENS = 1024
BUST_SHARE = 0.2
MAX_CONVERSATIONS = DEFAULT_UI_CONVERSATIONS
MAX_REQUESTS = DEFAULT_UI_REQUESTS
#: records kept of one conversation (a 300-step session fits whole)
PER_CONVERSATION = 2000
REPORT_BYTES = DEFAULT_UI_REPORT_BYTES
CONTENT_BYTES = DEFAULT_UI_CONTENT_BYTES
#: what a kept report takes besides its texts (measured with tracemalloc on the
#: coding sessions of tests/observe_session.py: about 200 bytes per action)
REPORT_BASE = 1000
ACTION_BYTES = 200
NOTE_BYTES = 80


def report_size(report: Report) -> int:
    """About the memory ``report`` holds (its actions and notes), for ``report_bytes``:
    cheap enough to reckon on every request (one pass over the actions)."""
    return (
        REPORT_BASE
        + sum(ACTION_BYTES + len(a.detail) for a in report.actions)
        + sum(NOTE_BYTES + len(n) for n in report.notes)
        + NOTE_BYTES * len(report.violations)
    )


def provider_of(api: str, model: str | None) -> str:
    """The provider whose prices apply (prices.cache_price's names): the API's own
    provider (formats.base.DEFAULT_PROFILES, the one table of it), else OpenAI's."""
    if model and model.lower().rsplit("/", 1)[-1].startswith("deepseek"):
        return "deepseek"
    return DEFAULT_PROFILES.get(cast(Api, api), "openai")


def cost_units(api: str, model: str | None, usage: Usage) -> float | None:
    """The prompt's cost in uncached-input-token units at the model's cache prices
    (providers/prices.py), from the provider's own figures; None for a model without prices."""
    price = cache_price(provider_of(api, model), model)
    if price is None:
        return None
    return (
        usage.uncached_tokens
        + price.read * usage.cache_read_tokens
        + price.write * usage.cache_write_tokens
    )


def outcome_of(status: int, complete: bool = True) -> str:
    """A request's outcome label: ok, client_error / upstream_error (the upstream's
    4xx / 5xx), incomplete (a stream that broke off or ended without its last event)."""
    if status >= 500:
        return "upstream_error"
    if status >= 400:
        return "client_error"
    return "ok" if complete else "incomplete"


@dataclass(slots=True)
class Record:
    """One request as the page shows it."""

    seq: int
    conversation: str
    index: int
    api: str
    model: str | None
    started: float
    status: int = 0
    outcome: str = "pending"
    tokens_before: int = 0
    tokens_after: int = 0
    budget: int | None = None
    usage: Usage | None = None
    compacted: bool = False
    compacting: tuple[str, ...] = ()
    bust_tokens: int | None = None
    governance_ms: float | None = None
    added_ms: float | None = None
    total_ms: float | None = None
    #: governance's report, None once forgotten (Journal: report_bytes)
    report: Report | None = None
    #: (what the client sent, what was forwarded): only with --ui-content
    content: tuple[bytes, bytes] | None = None
    #: the window the request stands for, where it came from, the learned ratio of the
    #: upstream's count to ours and the window governed to (learning.Window)
    window: int | None = None
    window_source: str = ""
    ratio: float = 1.0
    window_governed: int | None = None
    #: the cache policy's compaction at this request (report.CompactionCost): tokens taken
    #: off this and every later request, and tokens after its first edit, which the
    #: provider's cache no longer holds (None: no compaction at this request)
    removed: int | None = None
    rewritten: int | None = None

    def row(self) -> dict[str, Any]:
        """The record without its report and content (the conversation's table)."""
        usage = self.usage
        return {
            "seq": self.seq, "index": self.index, "status": self.status,
            "outcome": self.outcome, "model": self.model,
            "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
            "budget": self.budget,
            "input": None if usage is None else usage.billed_input_tokens,
            "output": None if usage is None else usage.output_tokens,
            "cache_read": None if usage is None else usage.cache_read_tokens,
            "cache_write": None if usage is None else usage.cache_write_tokens,
            "cost": None if usage is None else cost_units(self.api, self.model, usage),
            "compacted": self.compacted, "compacting": list(self.compacting),
            "bust_tokens": self.bust_tokens, "governance_ms": self.governance_ms,
            "added_ms": self.added_ms, "total_ms": self.total_ms, "started": self.started,
            "window": self.window, "window_source": self.window_source, "ratio": self.ratio,
            "window_governed": self.window_governed,
            "removed": self.removed, "rewritten": self.rewritten,
        }  # fmt: skip


@dataclass(slots=True)
class Conversation:
    id: str
    api: str
    model: str | None
    records: deque[Record]
    count: int = 0
    last_figures: Figures | None = None
    last_read: int | None = None
    busts: int = 0
    compactions: int = 0
    totals: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, value: float | None) -> None:
        if value is not None:
            self.totals[name] = self.totals.get(name, 0) + value

    def summary(self) -> dict[str, Any]:
        t = self.totals
        read, total = t.get("cache_read", 0), t.get("input", 0)
        return {
            "id": self.id, "api": self.api, "model": self.model, "requests": self.count,
            "shown": len(self.records),
            "client_tokens": t.get("client", 0), "forwarded_tokens": t.get("forwarded", 0),
            "input": total, "cache_read": read, "cache_write": t.get("cache_write", 0),
            "output": t.get("output", 0),
            "cached_share": read / total if total else None,
            "cost": t.get("cost"), "uncached_cost": t.get("priced_input"),
            "compactions": self.compactions, "busts": self.busts,
            "bust_tokens": t.get("bust_tokens", 0),
            "compaction_removed": t.get("compaction_removed", 0),
            "compaction_rewritten": t.get("compaction_rewritten", 0),
            "last": self.records[-1].started if self.records else None,
        }  # fmt: skip


class Journal:
    """The bounded in-memory store of conversations and their records (module docstring).

    Records are dropped in the order they were filed (``_by_seq`` is that order), so
    the oldest record in all is always the first of its conversation's deque. The
    reports and contents kept are tallied by record, in the same order, so the oldest
    is forgotten first and a dropped record gives its bytes back at once.
    """

    def __init__(
        self,
        max_conversations: int = MAX_CONVERSATIONS,
        max_requests: int = MAX_REQUESTS,
        content_bytes: int = CONTENT_BYTES,
        report_bytes: int = REPORT_BYTES,
        per_conversation: int = PER_CONVERSATION,
        keep_records: bool = True,
        store: PageStore | None = None,
    ) -> None:
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._by_seq: OrderedDict[int, Record] = OrderedDict()
        #: seq -> bytes, oldest first: the reports and the contents still kept
        self._reports: OrderedDict[int, int] = OrderedDict()
        self._contents: OrderedDict[int, int] = OrderedDict()
        self._report_size = 0
        self._content_size = 0
        self._max_conversations = max_conversations
        self._max_requests = max_requests
        self._per_conversation = min(per_conversation, max_requests)
        self._report_bytes = report_bytes
        self._content_bytes = content_bytes
        self.keep_records = keep_records
        self._seq = 0
        self.lock = threading.Lock()
        self.store = store if keep_records else None
        if self.store is not None:
            self._restore(self.store.load())

    def _restore(self, saved: Saved) -> None:
        """What a page store kept from before this process: conversations with their
        totals, and rows (renumbered from 1, as this process numbers its own after
        them; reports and content are not kept)."""
        for state in saved.conversations:
            conv = Conversation(state["id"], state["api"], state.get("model"), deque())
            conv.count = int(state.get("count", 0))
            conv.busts = int(state.get("busts", 0))
            conv.compactions = int(state.get("compactions", 0))
            conv.totals = {k: float(v) for k, v in state.get("totals", {}).items()}
            self._conversations[conv.id] = conv
        for row in saved.rows:
            owner = self._conversations.get(row.get("conversation", ""))
            if owner is None:
                continue
            conv = owner
            self._seq += 1
            record = _record_of(self._seq, row)
            conv.records.append(record)
            self._by_seq[record.seq] = record
            if len(conv.records) > self._per_conversation:
                self._by_seq.pop(conv.records.popleft().seq, None)

    def conversation(self, cid: str, api: str, model: str | None) -> Conversation:
        """The conversation ``cid`` (made, and the oldest dropped, as needed); call
        with ``lock`` held."""
        found = self._conversations.get(cid)
        if found is None:
            found = Conversation(cid, api, model, deque())
            self._conversations[cid] = found
            while len(self._conversations) > self._max_conversations:
                _, dropped = self._conversations.popitem(last=False)
                for record in dropped.records:
                    self._drop(record)
                dropped.records.clear()
        else:
            self._conversations.move_to_end(cid)
        return found

    def file(self, conv: Conversation, record: Record) -> None:
        """Add ``record`` to ``conv``, then drop what the bounds no longer allow (lock
        held). Without records (``keep_records`` off) only the conversation is kept."""
        if not self.keep_records:
            return
        if self.store is not None:
            row = {**record.row(), "conversation": conv.id, "api": conv.api}
            self.store.save(_state_of(conv), row)
        conv.records.append(record)
        self._by_seq[record.seq] = record
        if record.report is not None:
            size = report_size(record.report)
            self._reports[record.seq] = size
            self._report_size += size
        if record.content is not None:
            size = sum(len(c) for c in record.content)
            self._contents[record.seq] = size
            self._content_size += size
        if len(conv.records) > self._per_conversation:
            self._drop(conv.records.popleft())
        while len(self._by_seq) > self._max_requests:
            _, oldest = self._by_seq.popitem(last=False)
            owner = self._conversations.get(oldest.conversation)
            if owner is not None and owner.records and owner.records[0] is oldest:
                owner.records.popleft()
            self._drop(oldest)
        while self._report_size > self._report_bytes and self._reports:
            seq, size = self._reports.popitem(last=False)
            self._report_size -= size
            self._by_seq[seq].report = None
        while self._content_size > self._content_bytes and self._contents:
            seq, size = self._contents.popitem(last=False)
            self._content_size -= size
            self._by_seq[seq].content = None

    def _drop(self, record: Record) -> None:
        """Forget ``record`` and what it kept (lock held; its conversation's deque is
        the caller's)."""
        self._by_seq.pop(record.seq, None)
        self._report_size -= self._reports.pop(record.seq, 0)
        self._content_size -= self._contents.pop(record.seq, 0)

    def sizes(self) -> dict[str, int]:
        """What is kept now, against the bounds: for a look at the journal's memory
        (bench/observe_cost.py) and the tests of its bounds."""
        with self.lock:
            return {
                "conversations": len(self._conversations),
                "records": len(self._by_seq),
                "reports": len(self._reports),
                "report_bytes": self._report_size,
                "contents": len(self._contents),
                "content_bytes": self._content_size,
            }

    def bounds(self) -> dict[str, int]:
        """What :meth:`sizes` may reach (the options in the module docstring)."""
        return {
            "conversations": self._max_conversations,
            "records": self._max_requests if self.keep_records else 0,
            "records_per_conversation": self._per_conversation if self.keep_records else 0,
            "report_bytes": self._report_bytes if self.keep_records else 0,
            "content_bytes": self._content_bytes if self.keep_records else 0,
        }

    def next_seq(self) -> int:
        with self.lock:
            self._seq += 1
            return self._seq

    def conversations(self) -> list[dict[str, Any]]:
        with self.lock:
            return [c.summary() for c in reversed(self._conversations.values())]

    def detail(self, cid: str) -> dict[str, Any] | None:
        with self.lock:
            conv = self._conversations.get(cid)
            if conv is None:
                return None
            return {**conv.summary(), "rows": [r.row() for r in conv.records]}

    def record(self, seq: int) -> Record | None:
        with self.lock:
            return self._by_seq.get(seq)


def _state_of(conv: Conversation) -> dict[str, Any]:
    """A conversation's totals as a page store keeps them."""
    return {
        "id": conv.id, "api": conv.api, "model": conv.model, "count": conv.count,
        "busts": conv.busts, "compactions": conv.compactions, "totals": dict(conv.totals),
    }  # fmt: skip


def _window_of(governed: Governed) -> tuple[int | None, str, float, int | None]:
    """A record's window fields from the governed request's window (none: blank)."""
    window = governed.window
    if window is None:
        return None, "", 1.0, None
    return window.window, window.source, window.ratio, window.governed


def _cost_of(report: Report) -> tuple[int | None, int | None]:
    """(removed, rewritten) of the compaction at this request, (None, None) without one."""
    cost = report.compaction_cost
    return (None, None) if cost is None else (cost.removed, cost.rewritten)


def _record_of(seq: int, row: dict[str, Any]) -> Record:
    """A record read back from its row (Record.row): its figures, no report or content."""
    has_usage = row.get("input") is not None
    usage = (
        Usage(int(row["input"]), row.get("output"), int(row.get("cache_read") or 0),
              int(row.get("cache_write") or 0))
        if has_usage
        else None
    )  # fmt: skip
    return Record(
        seq, row["conversation"], int(row.get("index", 0)), row.get("api", ""), row.get("model"),
        float(row.get("started", 0.0)), int(row.get("status", 0)), row.get("outcome", "ok"),
        int(row.get("tokens_before", 0)), int(row.get("tokens_after", 0)), row.get("budget"),
        usage, bool(row.get("compacted")), tuple(row.get("compacting") or ()),
        row.get("bust_tokens"), row.get("governance_ms"), row.get("added_ms"),
        row.get("total_ms"), None, None, row.get("window"), row.get("window_source", ""),
        float(row.get("ratio", 1.0)), row.get("window_governed"), row.get("removed"),
        row.get("rewritten"),
    )  # fmt: skip


class Observer:
    """Makes an :class:`Observation` per request; owns the journal, metrics and tracer."""

    def __init__(
        self,
        metrics: Metrics | None,
        tracer: Tracer,
        keep_content: bool = False,
        journal: Journal | None = None,
    ) -> None:
        self.metrics = metrics
        self.tracer = tracer
        self.journal = journal if journal is not None else Journal()
        self.keep_content = keep_content and self.journal.keep_records

    @property
    def active(self) -> bool:
        """Whether anything watches the requests (metrics, spans or the page's records):
        when nothing does, a request costs the observer nothing past its start."""
        return self.metrics is not None or self.tracer.on or self.journal.keep_records

    def begin(self, api: str, headers: Any) -> Observation:
        return Observation(self, api, from_headers(headers))

    def passthrough(self, api: str) -> None:
        if self.metrics is not None:
            self.metrics.child(self.metrics.ungoverned, api, "passthrough").inc()

    def window_learned(self, model: str) -> None:
        if self.metrics is not None:
            self.metrics.child(self.metrics.windows_learned, self.metrics.model(model)).inc()


class Observation:
    """One request's life: ``governed`` → ``sending`` → ``finish`` (or ``refused``)."""

    def __init__(self, observer: Observer, api: str, conversation: str | None) -> None:
        self._o = observer
        self.api = api
        self._header_conversation = conversation
        self._started = time.perf_counter()
        self._started_ns = time.time_ns()
        self._governed: Governed | None = None
        self._raw = b""
        self._governance: float | None = None
        self._added: float | None = None
        self._done = False

    def governed(self, governed: Governed, raw: bytes, seconds: float) -> None:
        self._governed, self._raw, self._governance = governed, raw, seconds

    def sending(self) -> None:
        """The request is about to go upstream: what the proxy added ends here."""
        if self._added is None:
            self._added = time.perf_counter() - self._started

    def refused(self, status: int) -> None:
        """Refused before forwarding (a 400 or 413 of ours)."""
        if self._done:
            return
        self._done = True
        metrics = self._o.metrics
        if metrics is not None:
            metrics.child(metrics.requests, self.api, "unknown", "rejected").inc()

    def finish(
        self,
        status: int,
        usage: Usage | None = None,
        complete: bool = True,
        outcome: str | None = None,
        governed: Governed | None = None,
    ) -> None:
        """The answer is over (relayed whole, or its stream ended); ``outcome`` overrides
        the one read from the status (``unreachable``); ``governed``: the body actually
        forwarded (a retried request's second governing)."""
        if self._done:
            return
        self._done = True
        governed = governed or self._governed
        o = self._o
        if governed is None or not o.active:
            return
        outcome = outcome or outcome_of(status, complete)
        found = figures(governed.report)
        cid = self._header_conversation or governed.conversation or "unknown"
        model = governed.model
        label = o.metrics.model(model) if o.metrics is not None else ""
        keep = (self._raw, governed.body) if o.keep_content else None
        now = time.perf_counter()
        journal = o.journal
        seq = journal.next_seq()
        with journal.lock:
            conv = journal.conversation(cid, self.api, model)
            before = governed.report.messages_before
            compacted_new = new_compaction(found, conv.last_figures, before)
            compacting = tuple(
                s for s in found.compacting_stages if s != "compact" or compacted_new
            )
            bust, cause = self._bust(conv, usage, bool(compacting)) if status < 400 else (None, "")
            record = Record(
                seq, cid, conv.count, self.api, model, time.time() - (now - self._started),
                status, outcome, found.tokens_before, found.tokens_after,
                governed.report.budget, usage, bool(compacting), compacting, bust,
                _ms(self._governance), _ms(self._added), _ms(now - self._started),
                governed.report, keep, *_window_of(governed), *_cost_of(governed.report),
            )  # fmt: skip
            conv.count += 1
            conv.add("compaction_removed", record.removed)
            conv.add("compaction_rewritten", record.rewritten)
            conv.last_figures = found
            conv.compactions += bool(compacting)
            conv.add("client", found.tokens_before)
            conv.add("forwarded", found.tokens_after)
            if usage is not None:
                for name, value in (
                    ("input", usage.billed_input_tokens), ("cache_read", usage.cache_read_tokens),
                    ("cache_write", usage.cache_write_tokens), ("output", usage.output_tokens),
                ):  # fmt: skip
                    conv.add(name, value)
                cost = cost_units(self.api, model, usage)
                if cost is not None:
                    conv.add("cost", cost)
                    conv.add("priced_input", usage.billed_input_tokens)
            if bust is not None:
                conv.busts += 1
                conv.add("bust_tokens", bust)
            journal.file(conv, record)
        if o.metrics is not None:
            self._metrics(o.metrics, label, status, outcome, usage, found, compacting, bust, cause)
        if o.tracer.on:
            span = o.tracer.start(self.api, model, self._started_ns)
            o.tracer.end(span, self._attributes(record, found, governed), _error(outcome))

    def _bust(
        self, conv: Conversation, usage: Usage | None, compacted: bool
    ) -> tuple[int | None, str]:
        """The cached tokens this request lost against the conversation's previous one,
        when markedly fewer (module docstring); and the cause. Lock held."""
        if usage is None:
            return None, ""
        before, conv.last_read = conv.last_read, usage.cache_read_tokens
        if before is None:
            return None, ""
        lost = before - usage.cache_read_tokens
        if lost >= BUST_MIN_TOKENS and lost >= BUST_SHARE * before:
            return lost, "compaction" if compacted else "other"
        return None, ""

    def _metrics(
        self,
        metrics: Metrics,
        model: str,
        status: int,
        outcome: str,
        usage: Usage | None,
        found: Figures,
        compacting: tuple[str, ...],
        bust: int | None,
        cause: str,
    ) -> None:
        api = self.api
        metrics.child(metrics.requests, api, model, outcome).inc()
        metrics.governed(api, model, found)
        window = None if self._governed is None else self._governed.window
        if window is not None and window.window is not None:
            metrics.child(metrics.window, api, model, window.source).set(window.window)
            metrics.child(metrics.window_governed, api, model).set(window.governed or 0)
            metrics.child(metrics.upstream_ratio, api, model).set(window.ratio)
        for reason in compacting:
            metrics.child(metrics.compactions, api, model, reason).inc()
        cost = None if self._governed is None else self._governed.report.compaction_cost
        if cost is not None:
            metrics.child(metrics.compaction_removed, api, model).inc(cost.removed)
            metrics.child(metrics.compaction_rewritten, api, model).inc(cost.rewritten)
        governed = self._governed
        for item in governed.ungoverned if governed is not None else ():
            metrics.child(metrics.ungoverned, api, item.split("=", 1)[0]).inc()
        if status < 400:
            metrics.usage(api, model, usage)
        if bust is not None:
            metrics.child(metrics.cache_busts, api, model, cause).inc()
            metrics.child(metrics.cache_bust_tokens, api, model, cause).inc(bust)
        if self._governance is not None:
            metrics.child(metrics.governance_seconds, api).observe(self._governance)
        if self._added is not None:
            metrics.child(metrics.added_seconds, api).observe(self._added)

    def _attributes(self, record: Record, found: Figures, governed: Governed) -> dict[str, Any]:
        usage = record.usage
        attributes: dict[str, Any] = {
            "gen_ai.conversation.id": record.conversation,
            "gen_ai.conversation.compacted": record.compacted,
            "http.response.status_code": record.status,
            "context_governor.outcome": record.outcome,
            "context_governor.tokens_before": found.tokens_before,
            "context_governor.tokens_after": found.tokens_after,
            "context_governor.budget": record.budget,
            "context_governor.window_source": governed.report.window_source,
            "context_governor.compacted_by": ",".join(record.compacting) or None,
            "context_governor.cache_bust_tokens": record.bust_tokens,
            "context_governor.violations": len(found.violations),
            "context_governor.governance_ms": record.governance_ms,
            "context_governor.added_ms": record.added_ms,
        }
        for stage, saved in found.saved_by_stage.items():
            attributes[f"context_governor.saved.{stage}"] = saved
        for (stage, effect), n in found.effects.items():
            key = f"context_governor.actions.{stage}"
            attributes[key] = attributes.get(key, 0) + n
            attributes[f"context_governor.{effect}.{stage}"] = n
        if usage is not None:
            attributes.update({
                "gen_ai.usage.input_tokens": usage.billed_input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
            })  # fmt: skip
        return attributes


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 3)


def _error(outcome: str) -> str | None:
    return None if outcome == "ok" else outcome
