"""How a bench module that measures one section of docs/benchmarks.md runs on its own.

``python -m bench.X [--option N ...] [--out FILE]`` measures, prints the section and,
with ``--out``, puts it into that Markdown file in place of its previous version.
bench.run calls the same modules' measure and render functions to write the whole
file; :func:`section_main` is the command-line part they all shared.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def write_section(path: Path, section: str) -> None:
    """Put ``section`` into the Markdown file in place of its previous version (from its
    heading, its first line, to the next ``## `` heading), else before ``## Method``,
    else at the end."""
    heading = section.splitlines()[0]
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line == heading), None)
    if start is not None:
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
        del lines[start:end]
        at = start
    else:
        at = next((i for i, line in enumerate(lines) if line == "## Method"), len(lines))
    lines[at:at] = [*section.rstrip("\n").splitlines(), ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def section_of(text: str, heading: str) -> str:
    """The section of Markdown ``text`` that starts with the line ``heading``, to the next
    ``## `` heading; "" when there is none."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line == heading), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end]).rstrip("\n") + "\n"


def section_main(
    doc: str | None,
    argv: Sequence[str] | None,
    options: Mapping[str, int],
    build: Callable[[argparse.Namespace], str],
    *,
    echo: bool = True,
) -> int:
    """Parse ``argv`` (the module's ``--name N`` integer ``options`` with their
    defaults, then ``--out FILE``), build the section from the parsed arguments, print
    it (unless ``echo`` is off: the module prints its own lines while measuring) and
    write it with ``--out``. ``doc`` is the module's docstring: its first line
    describes the command."""
    parser = argparse.ArgumentParser(description=(doc or "").partition("\n")[0])
    for name, default in options.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    section = build(args)
    if echo:
        print(section)
    if args.out is not None:
        write_section(args.out, section)
    return 0
