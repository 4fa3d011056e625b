"""What the counters remember: the per-process LRU memo of text counts, and the
per-call memo of message counts that keeps one governance call from counting a
message object more than once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from bench.sessions import coding_session
from context_governor import counting as tokens
from context_governor import govern


def test_the_count_memo_forgets_the_least_recently_used_count_first() -> None:
    """A full memo used to be cleared whole, so a proxy's live conversations lost every
    count at once; now only the least recently used counts go."""
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text)

    counter = tokens.ExactCounter(None, cache_size=3, count=count)
    for text in ("a", "bb", "ccc", "a", "dddd"):  # "a" used again just before "dddd"
        counter.text_tokens(text)
    assert counted == ["a", "bb", "ccc", "dddd"]
    assert counter.text_tokens("a") == 1 and counter.text_tokens("ccc") == 3
    assert counted == ["a", "bb", "ccc", "dddd"]  # still memoised
    assert counter.text_tokens("bb") == 2  # the least recently used one went
    assert counted == ["a", "bb", "ccc", "dddd", "bb"]


@pytest.mark.parametrize("window", [1_000_000, 12_000])
def test_one_govern_call_counts_each_message_once(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """govern() asked the counter about each message six times (before, while fitting,
    after): each ask rebuilt the payload and hashed it. Now each message object is
    counted once per call; the counts, and so the result, are the same."""
    replay = coding_session(30)
    history = [m for step in replay.steps for m in step]
    settings: dict[str, Any] = {
        "tools": replay.tools, "profile": "openai", "model": "gpt-4o", "context_window": window
    }
    expected = govern(history, **settings)
    asked: Counter[int] = Counter()
    alive: list[Any] = []  # every message asked about, so that no id is reused
    real = tokens.ExactCounter.message_tokens

    def spy(self: tokens.ExactCounter, message: Any) -> int:
        alive.append(message)
        asked[id(message)] += 1
        return real(self, message)

    monkeypatch.setattr(tokens.ExactCounter, "message_tokens", spy)
    result = govern(history, **settings)
    assert max(asked.values()) == 1
    assert all(asked[id(m)] == 1 for m in history)
    assert result.messages == expected.messages
    assert result.report.to_dict() == expected.report.to_dict()


def test_the_seed_counter_is_not_summed() -> None:
    """The seed's whole-prompt count is not the sum of its message counts, so a call
    with the nanobot profile counts through it unchanged (pipeline.run wraps only an
    ExactCounter in KnownCounts)."""
    assert not isinstance(tokens.seed_counter(), tokens.ExactCounter)
    assert isinstance(tokens.exact_counter("gpt-4o"), tokens.ExactCounter)
