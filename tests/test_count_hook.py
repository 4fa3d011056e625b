"""A provider's own token counter plugs in (``count_tokens``) and is used everywhere."""

from __future__ import annotations

import pytest

from context_governor import ConfigError, Governor, govern
from context_governor.counting import seed_message_payload


def words(text: str) -> int:
    return len(text.split())


HISTORY = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "one two three four five"},
    {"role": "assistant", "content": "six seven"},
    {"role": "user", "content": "eight nine ten " * 50},
]


def test_the_hook_counts_every_message() -> None:
    result = govern(HISTORY, count_tokens=words)
    assert result.report.counter == "custom:words"
    expected = sum(max(4, words(seed_message_payload(m)) + 4) for m in HISTORY)
    assert result.report.tokens_before == expected


def test_the_hook_drives_the_budget() -> None:
    # 150 words in the last message: a window that fits it under the words counter
    # but not under o200k (each "eight nine ten " is ~4 tokens there).
    window = 1024 + 10 + 300
    by_words = govern(HISTORY, context_window=window, max_output=10, count_tokens=words)
    assert by_words.report.within_budget
    assert by_words.messages is HISTORY


def test_governor_with_the_hook_equals_govern() -> None:
    gov = Governor(context_window=1400, max_output=10, count_tokens=words)
    history = list(HISTORY)
    for extra in range(3):
        history = [*history, {"role": "assistant", "content": f"a{extra}"},
                   {"role": "user", "content": f"u{extra} " * 40}]  # fmt: skip
        a = gov.govern(history)
        b = govern(history, context_window=1400, max_output=10, count_tokens=words)
        assert a.messages == b.messages and a.report.to_dict() == b.report.to_dict()


@pytest.mark.parametrize("bad", [lambda t: -1, lambda t: 1.5, lambda t: "3", lambda t: True])
def test_a_bad_count_is_a_clear_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="count_tokens must return"):
        govern(HISTORY, count_tokens=bad)  # type: ignore[arg-type]


def test_a_non_callable_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="count_tokens must be a callable"):
        govern(HISTORY, count_tokens=42)  # type: ignore[arg-type]
