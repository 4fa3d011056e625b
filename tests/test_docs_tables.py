"""One table per fact (issue 28, item 5): where a page restates a table the code holds
(the context windows, the cache prices), each figure on the page is checked against the
code's table, which stays the one source."""

from __future__ import annotations

import re
from pathlib import Path

from context_governor.providers.prices import PRICES
from context_governor.providers.windows import KNOWN_WINDOWS, family_window

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
                continue  # "see providers/_openai.py, ...", "by their names"
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


def test_the_proxys_config_tables_on_the_cli_page_are_the_commands() -> None:
    """cli.md's table of [proxy] and its tables: each table's settings are the ones
    the command reads there (cli/_proxy.py's TABLES), and [proxy]'s are the rest."""
    from context_governor.cli import _proxy as proxy_cli

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    rows = {table.strip("`"): _names(keys) for table, keys in _rows(text, "| table | settings |")}
    assert {t: set(k) for t, k in rows.items() if t != "[proxy]"} == {
        f"[proxy.{t}]": set(k) for t, k in proxy_cli.TABLES.items()
    }
    options = {
        opt[2:]
        for p in proxy_cli.proxy_command.params
        for opt in p.opts
        if opt.startswith("--") and p.name not in ("provider_alias", "config")
    }
    grouped = {k for keys in proxy_cli.TABLES.values() for k in keys}
    assert set(rows["[proxy]"]) == options - grouped


def test_the_proxyconfig_groups_on_the_proxy_page_are_the_code() -> None:
    from dataclasses import fields

    from context_governor.proxy._config import GROUPS

    text = (DOCS / "proxy.md").read_text(encoding="utf-8")
    rows = _rows(text, "| group | class | its settings |")
    assert [r[0].strip("`") for r in rows] == list(GROUPS)
    for group, cls, settings, table in rows:
        code = GROUPS[group.strip("`")]
        assert cls.strip("`") == code.__name__
        assert _names(settings) == [f.name for f in fields(code)], group
        assert table == f"`[proxy.{group.strip('`')}]`"


def test_the_proxyconfig_example_on_the_proxy_page_runs() -> None:
    text = (DOCS / "proxy.md").read_text(encoding="utf-8")
    section = text.split("### In Python: ProxyConfig", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    scope: dict[str, object] = {}
    exec(code.group(1), scope)
    config = scope["config"]
    assert config.timeouts.read == 300 and config.limits.max_in_flight == 512  # type: ignore[attr-defined]
