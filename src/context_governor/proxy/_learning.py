"""What the upstream taught the proxy about each model: its window, and how its
tokenizer counts against our estimate.

Two sources, both the upstream's own word:

- **A refusal** ("prompt is too long: 215000 tokens > 200000 maximum", refusals.py)
  states the model's window: it is remembered as the model's *learned* window, used for
  every later request of the model (``window_source`` "learned") when it is smaller than
  what we had. The app governs the refused request again to it and retries once.
- **Usage**: every answer says how many input tokens the upstream counted (usage.py),
  which is what we forwarded, exactly, in the target's tokenizer. Its ratio to our
  count of the same body (``report.tokens_after``) is smoothed per model
  (``SMOOTHING``), and, when above 1, budgets shrink by it: the window is governed as
  ``window / ratio``, so the upstream's count of what we send stays inside the window.
  The ratio is rounded *up* to a multiple of ``RATIO_STEP`` and only lowered when the
  smoothed figure falls a whole step below it (so that it does not move on every
  request: a window that moved would move compaction and cost cache reads), and capped
  at ``MAX_RATIO`` (one odd answer cannot halve every budget). Requests under
  ``MIN_SAMPLE`` tokens are not taken as samples: the upstream's fixed additions (a
  tool-use system prompt of a few hundred tokens) would dominate the ratio.

Both are kept per process and, with ``--count-store``, in the count store (as the
entries ``window:v1:<model>`` and ``ratio:v1:<model>`` in thousandths), so every
replica uses what one of them learned: a model's entries are read again at most
every ``REFRESH_SECONDS``, off the event loop, and written in the background (a ratio
once it moved ``WRITE_STEP`` thousandths). With a store, each replica governs with the
ratio as stored, the one learned there included, so all of them apply the same. The
store's retention (``--count-retention``) applies to them too, so an upstream that
later grew its window is heard again.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..counting import in_background
from ..counting.store import CountLink
from ..providers.windows import WindowSource, default_window

__all__ = [
    "KEY_VERSION",
    "MAX_RATIO",
    "MIN_OBSERVED",
    "MIN_SAMPLE",
    "RATIO_STEP",
    "REFRESH_SECONDS",
    "SMOOTHING",
    "WRITE_STEP",
    "Hints",
    "Known",
    "Learner",
    "Window",
    "applied_ratio",
    "governed_window",
    "ratio_key",
    "request_window",
    "window_key",
]

RATIO_STEP = 0.05
MAX_RATIO = 2.0
#: below 0.5 an answer is not believed (a count of something else)
MIN_OBSERVED = 0.5
MIN_SAMPLE = 1_000
#: weight of a new sample in the smoothed ratio
SMOOTHING = 0.3
REFRESH_SECONDS = 2.0
KEY_VERSION = "v1"
#: a smoothed ratio is written to the store again once it moved this much (thousandths)
WRITE_STEP = 10


@dataclass(frozen=True, slots=True)
class Known:
    """What governing a request of one model takes from what was learned: the learned
    window (None: none) and the ratio budgets are divided by (1.0: none)."""

    window: int | None = None
    ratio: float = 1.0


@dataclass(frozen=True, slots=True)
class Hints:
    """What a governing pass takes besides the body and the config: what was learned,
    by model, and the request's ``anthropic-beta`` values (the 1M window)."""

    learned: Mapping[str, Known] = field(default_factory=dict)
    betas: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Window:
    """The window a request is governed to (``governed``), the window it stands for
    and where that came from, and a note for the report when they differ."""

    window: int | None
    source: WindowSource
    governed: int | None
    note: str | None = None
    #: the learned ratio of the upstream's count to ours the window was governed with
    ratio: float = 1.0


def request_window(configured: int | None, model: str | None, hints: Hints | None) -> Window:
    """The window of one request: the configured one ("given"), else the model's
    (default_window: the 1M header, the table, the family); a learned window wins when
    it is smaller (the upstream's word over ours); a learned ratio above 1 shrinks the
    window governed to (governed_window), said in the note."""
    hints = hints or Hints()
    window: int | None
    source: WindowSource
    if configured is not None:
        window, source = configured, "given"
    else:
        window, source = default_window(model, betas=hints.betas)
    known = hints.learned.get(model or "", Known())
    if known.window is not None and (window is None or known.window < window):
        window, source = known.window, "learned"
    if window is None or known.ratio <= 1.0:
        return Window(window, source, window)
    governed = governed_window(window, known.ratio)
    note = (
        f"window {window:,} governed as {governed:,}: the upstream counts "
        f"{known.ratio:g}x this proxy's count for {model} (learned from its usage)"
    )
    return Window(window, source, governed, note, known.ratio)


def window_key(model: str) -> str:
    return f"window:{KEY_VERSION}:{model}"


def ratio_key(model: str) -> str:
    return f"ratio:{KEY_VERSION}:{model}"


def applied_ratio(smoothed: float | None, previous: float = 1.0) -> float:
    """The ratio budgets are governed with, from the smoothed one: rounded up to a
    RATIO_STEP, 1.0 at least (an estimate that errs high is left alone), MAX_RATIO at
    most; ``previous`` is kept while the new one is less than a step below it."""
    if smoothed is None or smoothed <= 1.0:
        candidate = 1.0
    else:
        steps = math.ceil(min(smoothed, MAX_RATIO) / RATIO_STEP - 1e-9)
        candidate = round(steps * RATIO_STEP, 2)
    if previous - RATIO_STEP < candidate < previous:
        return previous
    return candidate


def governed_window(window: int, ratio: float) -> int:
    """The window a request is governed to so that ``ratio`` x our count fits ``window``."""
    return window if ratio <= 1.0 else max(1, math.floor(window / ratio))


@dataclass(slots=True)
class _Model:
    window: int | None = None
    smoothed: float | None = None
    applied: float = 1.0
    read_at: float = -math.inf
    written: int | None = None


class _Job:
    def __init__(self, link: CountLink, items: dict[str, int]) -> None:
        self._link = link
        self._items = items

    def run(self) -> None:
        try:
            self._link.put(self._items)  # put itself never raises; belt and braces
        except Exception:
            return


class Learner:
    """The learned windows and ratios of one proxy process (thread-safe), shared
    through ``link`` (a count store) when given."""

    def __init__(self, link: CountLink | None = None, refresh: float = REFRESH_SECONDS) -> None:
        self._link = link
        self._refresh = refresh
        self._models: dict[str, _Model] = {}
        self._lock = threading.Lock()

    def _known(self, state: _Model) -> Known:
        return Known(state.window, state.applied)

    def get(self, model: str | None) -> Known:
        if not model:
            return Known()
        with self._lock:
            state = self._models.get(model)
            return Known() if state is None else self._known(state)

    def snapshot(self) -> dict[str, Known]:
        """Every model's Known, for a governing pass (it crosses to a worker process)."""
        with self._lock:
            return {model: self._known(state) for model, state in self._models.items()}

    def due(self, model: str | None) -> bool:
        """Whether the store should be read again for ``model``."""
        if self._link is None or not model:
            return False
        with self._lock:
            state = self._models.get(model)
            return state is None or time.monotonic() - state.read_at >= self._refresh

    def refresh(self, model: str) -> bool:
        """Read ``model``'s entries from the store (blocking: call it off the event loop);
        whether what governing takes from them changed. A failing store changes nothing
        (the count store's link reports and rests it)."""
        if self._link is None:
            return False
        try:
            found = self._link.store.get_many([window_key(model), ratio_key(model)])
        except Exception:
            found = {}
        with self._lock:
            state = self._models.setdefault(model, _Model())
            before = self._known(state)
            state.read_at = time.monotonic()
            window = found.get(window_key(model))
            if isinstance(window, int) and window > 0:
                state.window = window
            ratio = found.get(ratio_key(model))
            if isinstance(ratio, int) and ratio > 0:
                state.smoothed, state.written = ratio / 1000, ratio
                state.applied = applied_ratio(state.smoothed, state.applied)
            return self._known(state) != before

    def learn_window(self, model: str, limit: int) -> bool:
        """The upstream said ``model``'s window is ``limit``; whether that changed ours."""
        with self._lock:
            state = self._models.setdefault(model, _Model())
            changed = state.window != limit
            state.window = limit
            state.read_at = time.monotonic()
        if changed:
            self._write({window_key(model): limit})
        return changed

    def observe(self, model: str, upstream_tokens: int, our_tokens: int) -> bool:
        """The upstream counted ``upstream_tokens`` for a body we counted ``our_tokens``;
        whether the ratio budgets are governed with changed."""
        if our_tokens < MIN_SAMPLE or upstream_tokens <= 0:
            return False
        sample = min(MAX_RATIO, max(MIN_OBSERVED, upstream_tokens / our_tokens))
        with self._lock:
            state = self._models.setdefault(model, _Model())
            old = state.smoothed
            state.smoothed = sample if old is None else old + SMOOTHING * (sample - old)
            before = state.applied
            stored = round(state.smoothed * 1000)
            moved = state.written is None or abs(stored - state.written) >= WRITE_STEP
            if moved:
                state.written = stored
            # With a store, govern with the ratio as the store holds it (what every
            # replica reads, refresh): the smoothed figure itself is finer than the
            # store's thousandths and moves between writes, so a replica governing with
            # it would differ from the others near a step, and flip back at each refresh.
            basis = state.smoothed
            if self._link is not None and state.written is not None:
                basis = state.written / 1000
            state.applied = applied_ratio(basis, before)
        if moved:
            self._write({ratio_key(model): stored})
        return state.applied != before

    def _write(self, items: Mapping[str, int]) -> None:
        if self._link is not None:
            in_background(_Job(self._link, dict(items)))
