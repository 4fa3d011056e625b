"""The README is a front page and the docs hold the rest (issue 28, item 8): every
relative link in README.md and docs/*.md points at a file that exists (and at a heading
that exists, when it names one), and the README's library example runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: ``[text](target)`` outside code; the target stops at whitespace or ``)``.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    return CODE.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces
    to hyphens, a repeated one numbered."""
    found: set[str] = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        heading = re.match(r"^#{1,6} (.+?)\s*#*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower()).replace(" ", "-")
        n, unique = 0, slug
        while unique in found:
            n += 1
            unique = f"{slug}-{n}"
        found.add(unique)
    return found


def relative_links(page: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(_prose(page.read_text(encoding="utf-8")))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_pages_have_links() -> None:
    assert len(relative_links(ROOT / "README.md")) >= 20
    assert anchors(ROOT / "docs" / "proxy.md") >= {"agent-clis", "security", "tested-with"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or ROOT not in file.parents:
            broken.append(f"{target}: no such file in the repository")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert broken == []


def test_the_readme_is_a_front_page() -> None:
    """What a newcomer reads in two minutes; the rest lives in docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    for line in ("make run    #", "make test   #", "Claude Code", "Codex", "Gemini CLI", "opencode"):
        assert line in readme
    documented = {p.name for p in PAGES[1:]} - {"gen_providers.py"}
    linked = {Path(t.partition("#")[0]).name for t in relative_links(ROOT / "README.md")}
    # Every page is reachable from the front page, directly or from a page it links.
    reachable = set(linked)
    for page in sorted(linked & documented):
        reachable |= {Path(t.partition("#")[0]).name for t in relative_links(ROOT / "docs" / page)}
    assert documented <= reachable


def test_the_readme_library_example_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```python\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Read a.py"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}},
        ]},
    ]  # fmt: skip
    namespace: dict[str, Any] = {
        "messages": messages,
        "tools": [],
        "history": messages,
        "body": {"model": "claude-sonnet-4-5", "max_tokens": 1024,
                 "messages": [{"role": "user", "content": "hello"}]},
    }  # fmt: skip
    exec(compile(block, "README.md", "exec"), namespace)
    result = namespace["result"]
    assert result.body["messages"][0]["role"] == "user" and result.report.ok  # governed body
    assert namespace["gov"].govern(messages).messages[-1]["role"] == "tool"  # backfilled
