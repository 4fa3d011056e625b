"""What the read-only built-in tools do: read_file, list_dir, grep and find_files.

Plain functions of a :class:`Workspace` and their arguments, returning the text
the model reads; expected failures raise ToolError. Each one bounds its own
output and says how to get more (``offset=``, a narrower ``path`` or ``glob``),
because a generic cut in the middle would leave the model guessing.
"""

from __future__ import annotations

import io
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

from .registry import ToolError
from .workspace import Workspace, glob_matches

__all__ = ["find_files", "grep", "list_dir", "read_file"]

#: How much of a file decides whether it is binary (a NUL byte), as git and grep do.
_SNIFF_BYTES = 8192
#: A matching line longer than this is shown around the match only.
_MAX_LINE_CHARS = 300


def _is_binary(path: Path) -> bool:
    with path.open("rb") as fh:
        return b"\x00" in fh.read(_SNIFF_BYTES)


def _text_lines(path: Path) -> Iterator[str]:
    """Lines without their endings; undecodable bytes become U+FFFD rather than failing."""
    with path.open("rb") as raw, io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            yield line.rstrip("\r\n")


def _regular_file(ws: Workspace, path: str) -> Path:
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory; use list_dir or find_files")
    if not target.is_file():  # a FIFO or device would block or never end
        raise ToolError(f"{path} is not a regular file")
    return target


# --------------------------------------------------------------------------- read_file


def read_file(
    ws: Workspace, path: str, offset: int = 1, limit: int | None = None, *, max_chars: int
) -> str:
    """Lines ``offset``.. of a text file, numbered ``N|text``, within ``max_chars``.

    Reading stops at ``limit`` lines or when the next line would pass
    ``max_chars``; a closing note then gives the ``offset`` to continue from. The
    file is streamed, so a huge file costs only what is shown.
    """
    if offset < 1:
        raise ToolError(f"offset must be 1 or more (lines are numbered from 1), got {offset}")
    if limit is not None and limit < 1:
        raise ToolError(f"limit must be 1 or more, got {limit}")
    target = _regular_file(ws, path)
    if _is_binary(target):
        raise ToolError(f"{path} is a binary file ({target.stat().st_size} bytes); not shown")
    shown: list[str] = []
    used = 0
    number = 0
    for number, line in enumerate(_text_lines(target), start=1):
        if number < offset:
            continue
        entry = f"{number}|{line}"
        if (limit is not None and len(shown) >= limit) or (shown and used + len(entry) > max_chars):
            shown.append(f"[more lines follow; continue with offset={number}]")
            return "\n".join(shown)
        if len(entry) > max_chars:  # a single huge line (minified code): show its start
            entry = f"{entry[:max_chars]}[... line {number} cut at {max_chars} characters]"
        shown.append(entry)
        used += len(entry) + 1
    if not shown:
        if number == 0:
            return f"({path} is empty)"
        raise ToolError(f"offset {offset} is past the end of {path} ({number} lines)")
    return "\n".join(shown)


# --------------------------------------------------------------------------- list_dir


def list_dir(ws: Workspace, path: str = ".", *, max_entries: int) -> str:
    """Entries of one directory, sorted: ``name/`` for directories, ``name -> target`` for links."""
    target = ws.resolve(path)
    if not target.is_dir():
        raise ToolError(f"{path} is not a directory; use read_file for files")
    try:
        with os.scandir(target) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise ToolError(f"cannot list {path}: {exc.strerror or exc}") from None
    if not entries:
        return f"({ws.display(target)} is empty)"
    lines = [_entry_line(e) for e in entries[:max_entries]]
    if len(entries) > max_entries:
        lines.append(f"[... {len(entries) - max_entries} more entries not shown]")
    return "\n".join(lines)


def _entry_line(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        try:
            return f"{entry.name} -> {os.readlink(entry.path)}"
        except OSError:
            return f"{entry.name} -> ?"
    return f"{entry.name}/" if entry.is_dir(follow_symlinks=False) else entry.name


# --------------------------------------------------------------------------- searching


def _search_root(ws: Workspace, path: str) -> Path:
    target = ws.resolve(path)
    if not (target.is_dir() or target.is_file()):
        raise ToolError(f"{path} is neither a directory nor a regular file")
    return target


def _candidates(ws: Workspace, start: Path, glob: str | None) -> Iterator[Path]:
    """Files under ``start`` whose path relative to it matches ``glob`` (all when None)."""
    for file in ws.files(start):
        relative = file.name if file == start else file.relative_to(start).as_posix()
        if glob is None or glob_matches(glob, relative):
            yield file


def _clip(line: str, match: re.Match[str]) -> str:
    """A long line shown around its match, so minified files do not flood the output."""
    if len(line) <= _MAX_LINE_CHARS:
        return line
    begin = max(0, match.start() - _MAX_LINE_CHARS // 3)
    end = begin + _MAX_LINE_CHARS
    return f"{'...' if begin else ''}{line[begin:end]}{'...' if end < len(line) else ''}"


def grep(
    ws: Workspace,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    ignore_case: bool = False,
    max_matches: int = 100,
    *,
    time_budget: float,
) -> str:
    """Lines matching a Python regex, as ``file:line:text``, stopping at ``max_matches``.

    Binary files are skipped. The walk stops after ``time_budget`` seconds with a
    note, since a thread cannot be interrupted once the call's timeout expires.
    """
    if max_matches < 1:
        raise ToolError(f"max_matches must be 1 or more, got {max_matches}")
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    start = _search_root(ws, path)
    deadline = time.monotonic() + time_budget
    found: list[str] = []
    for file in _candidates(ws, start, glob):
        if time.monotonic() > deadline:
            found.append(f"[search stopped after {time_budget:g}s; narrow path or glob]")
            break
        if _grep_file(ws, file, regex, found, max_matches):
            found.append(f"[stopped at {max_matches} matches; narrow the pattern, path or glob]")
            break
    return "\n".join(found) if found else f"No matches for {pattern!r} (searched {path!r})."


def _grep_file(
    ws: Workspace, file: Path, regex: re.Pattern[str], found: list[str], cap: int
) -> bool:
    """Append the file's matches to ``found``; True once ``cap`` is exceeded."""
    try:
        if _is_binary(file):
            return False
        name = ws.display(file)
        for number, line in enumerate(_text_lines(file), start=1):
            match = regex.search(line)
            if match is None:
                continue
            if len(found) >= cap:
                return True
            found.append(f"{name}:{number}:{_clip(line, match)}")
    except OSError:  # unreadable (permissions, vanished): skip it, as grep -s does
        return False
    return False


def find_files(
    ws: Workspace, pattern: str, path: str = ".", *, max_results: int, time_budget: float
) -> str:
    """Workspace-relative paths of the files under ``path`` that match a glob."""
    start = _search_root(ws, path)
    deadline = time.monotonic() + time_budget
    paths: list[str] = []
    more = 0
    for file in _candidates(ws, start, pattern):
        if time.monotonic() > deadline:
            paths.append(f"[search stopped after {time_budget:g}s; narrow path or pattern]")
            break
        if len(paths) < max_results:
            paths.append(ws.display(file))
        else:
            more += 1
    if more:
        paths.append(f"[... {more} more files not shown; narrow path or pattern]")
    return "\n".join(paths) if paths else f"No files match {pattern!r} (searched {path!r})."
