"""One table per fact (issue 28, item 5): where a page restates a table the code holds
(the context windows, the cache prices), each figure on the page is checked against the
code's table, which stays the one source."""

from __future__ import annotations

import re
from pathlib import Path

from context_governor.targets.prices import PRICES
from context_governor.targets.windows import KNOWN_WINDOWS, family_window

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _rows(text: str, header: str) -> list[list[str]]:
    """The cells of the rows of the Markdown table whose header line starts with ``header``."""
    lines = text.split(header, 1)[1].splitlines()[2:]  # the rest of the header, the rule
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _number(text: str) -> int:
    found = re.search(r"\d[\d,]*", text)
    assert found, text
    return int(found.group().replace(",", ""))


def _names(text: str) -> list[str]:
    """The names in backquotes, but for suffixes (``-air``) and what "(and ...)" adds."""
    text = re.sub(r"\(and [^)]*\)", "", text)
    return [n for n in re.findall(r"`([^`]+)`", text) if not n.startswith("-")]


def test_the_known_windows_on_the_windows_page_are_the_tables() -> None:
    text = (DOCS / "windows.md").read_text(encoding="utf-8")
    checked = 0
    for _family, entries in _rows(text, "| family | entries"):
        for part in entries.split(";"):
            names, colon, figure = part.rpartition(":")
            if not colon:
                continue  # "see targets/windows.py", "by their names"
            for name in _names(names):
                assert KNOWN_WINDOWS[name] == _number(figure), name
                checked += 1
    assert checked >= 12


def test_the_family_windows_on_the_windows_page_are_the_tables() -> None:
    text = (DOCS / "windows.md").read_text(encoding="utf-8")
    checked = 0
    for names, windows in _rows(text, "| names starting with | window |"):
        groups, figures = names.split(" / "), windows.split(" / ")
        assert len(groups) == len(figures), names
        for group, figure in zip(groups, figures, strict=True):
            for name in _names(group):
                assert family_window(name) == _number(figure), name
                checked += 1
    assert checked >= 25


def test_the_cache_prices_on_the_session_shapes_page_are_the_tables() -> None:
    text = (DOCS / "session-shapes.md").read_text(encoding="utf-8")
    rows = _rows(text, "| pricing | models | caching |")
    assert len(rows) == len(PRICES)
    for row, price in zip(rows, PRICES.values(), strict=True):
        _, _, caching, read, write, smallest = row
        assert caching == price.caching, row
        assert float(read.rstrip("×")) == price.read, row
        assert (1.0 if write == "none" else float(write.rstrip("×"))) == price.write, row
        assert _number(smallest) == price.min_cached, row
