"""The receipt's scan for error lines gives the same lines however it is made.

``_hinted`` finds the lines of a tool result that may read like errors; with the
``fast`` extra's ahocorasick-rs it finds every hint in one pass, without it one
``str.find`` pass per hint. Both must give exactly the lines the scan gave before it was
made faster (``_reference`` below, the earlier code kept as the oracle): the receipt of a
cut is part of the request, so a line more or less would change governed bodies.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor.stages import _receipt
from context_governor.stages._receipt import (
    _ANY_ERROR_LINE,
    _DETAIL_HINTS,
    _ERROR_HINTS,
    _ERROR_LINES,
    _hint_automaton,
    _hinted,
    _hinted_by_find,
    error_lines,
)


def _reference(text: str) -> list[int]:
    """The scan as it was: one find pass per hint over the lowered text, then the detail
    hints over the text with a line break before it."""
    starts: set[int] = set()
    lower = text.lower()
    for where, hints in ((lower, _ERROR_HINTS), ("\n" + text, _DETAIL_HINTS)):
        shift = len(where) - len(text)
        for hint in hints:
            at = where.find(hint)
            while at >= 0:
                starts.add(max(0, text.rfind("\n", 0, at - shift + 1) + 1))
                stop = where.find("\n", at + 1)
                at = -1 if stop < 0 else where.find(hint, stop)
    return sorted(starts)


#: Pieces that make hints, near-hints, line starts and letters whose lower case is
#: longer (the dotted capital I) or changes (the Kelvin sign).
PIECES = st.sampled_from(
    [
        *_ERROR_HINTS,
        *(h.upper() for h in _ERROR_HINTS),
        "Error", "ERROR", "FAILED tests/x.py::t", "ValueError: bad", "E   assert 1", "E\tx",
        "\n", "\nE ", "E ", "err", "fai", "exi", " ", "\t", "İ", "K", "ß", "é", "日本",
        "Traceback (most recent call last):", "exit code 2", "fatal: no", "panic: x",
        "a.c:3:1: error: y", "command not found", "word", "🙂", "\r\n", "FAILED ", "x.y",
        "KeyboardInterrupt", "Failure", "Exit", ":", "12", "No such file or directory",
        "exited with code 3", "EXIT STATUS 1", "fatal[E1]:", "Permission denied", "_",
    ]
)  # fmt: skip
TEXTS = st.one_of(
    st.lists(PIECES, max_size=40).map("".join),
    st.text(max_size=200),
)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_both_scans_find_the_lines_the_scan_found_before(text: str) -> None:
    expected = _reference(text)
    assert _hinted_by_find(text, text.lower()) == expected
    assert _hinted(text) == expected


@settings(max_examples=150, deadline=None)
@given(TEXTS)
def test_error_lines_are_the_same_with_and_without_the_automaton(text: str) -> None:
    with_automaton = error_lines(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_receipt, "_hint_automaton", lambda: None)
        without = error_lines(text)
    assert with_automaton == without


def test_the_fast_extra_brings_the_automaton() -> None:
    """The test environment installs the fast extra: the one-pass scan is what runs (a
    silently missing automaton would leave the property above comparing the slow path
    with itself)."""
    assert _hint_automaton() is not None


def test_a_failing_test_run_gives_its_failures_first() -> None:
    log = "\n".join(
        [
            "collected 3 items",
            "tests/test_a.py ..F",
            "E       assert 1 == 2",
            "FAILED tests/test_a.py::test_three - assert 1 == 2",
            "exit code 1",
        ]
    )
    assert error_lines(log) == [
        "FAILED tests/test_a.py::test_three - assert 1 == 2",
        "E assert 1 == 2",
    ]


@settings(max_examples=600, deadline=None)
@given(st.lists(PIECES.filter(lambda p: "\n" not in p), max_size=12).map("".join))
def test_the_one_search_before_the_seven_misses_no_error_line(line: str) -> None:
    """``_rank`` tries the seven patterns only on a line the one search matches: that
    search must match every line any of the seven matches."""
    line = line.strip()
    if any(pattern.search(line) for pattern in _ERROR_LINES):
        assert _ANY_ERROR_LINE.search(line) is not None
