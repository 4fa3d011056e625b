"""bench.section: the command line every section module shares (its integer options,
--out, printing) and write_section, which replaces a section in place."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import anthropic_cache, messages_request, section  # noqa: E402

DOC = """Measure a thing.

More prose that is not the description."""


def _build(seen: list[argparse.Namespace]) -> Callable[[argparse.Namespace], str]:
    def build(args: argparse.Namespace) -> str:
        seen.append(args)
        return f"## Thing\n\nsteps {args.steps}, cold {args.cold}\n"

    return build


def test_options_reach_the_build_with_their_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[argparse.Namespace] = []
    options = {"steps": 300, "cold": 5}
    assert section.section_main(DOC, [], options, _build(seen)) == 0
    assert section.section_main(DOC, ["--steps", "7"], options, _build(seen)) == 0
    assert [(a.steps, a.cold, a.out) for a in seen] == [(300, 5, None), (7, 5, None)]
    assert (
        capsys.readouterr().out
        == "## Thing\n\nsteps 300, cold 5\n\n## Thing\n\nsteps 7, cold 5\n\n"
    )
    with pytest.raises(SystemExit):
        section.section_main(DOC, ["--steps", "many"], options, _build(seen))
    assert "invalid int value: 'many'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        section.section_main(DOC, ["--help"], options, _build(seen))
    help_text = capsys.readouterr().out
    assert "Measure a thing." in help_text and "More prose" not in help_text
    assert "--steps STEPS" in help_text and "--out OUT" in help_text


def test_out_replaces_the_section_in_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "benchmarks.md"
    out.write_text(
        "# B\n\n## Thing\n\nold\n\n## Other\n\nkept\n\n## Method\n\nm\n", encoding="utf-8"
    )
    args = ["--cold", "1", "--out", str(out)]
    assert section.section_main(DOC, args, {"steps": 3, "cold": 5}, _build([]), echo=False) == 0
    assert capsys.readouterr().out == ""  # echo off: nothing printed
    assert out.read_text(encoding="utf-8") == (
        "# B\n\n## Thing\n\nsteps 3, cold 1\n\n## Other\n\nkept\n\n## Method\n\nm\n"
    )


def test_write_section_is_still_importable_from_anthropic_cache() -> None:
    assert anthropic_cache.write_section is section.write_section


def test_messages_request_main_prints_its_lines_and_writes_its_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b.md"
    assert messages_request.main(["--turns", "2", "--repeats", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all(line.startswith("5 messages, window ") for line in printed)
    text = out.read_text(encoding="utf-8")
    assert text.startswith(messages_request.HEADING + "\n") and text.count("\n| 200,000 | 5 |") == 1
