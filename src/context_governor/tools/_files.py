"""What the read-only built-in tools do: read_file, list_dir, grep and find_files.

Plain functions of a :class:`Workspace` and their arguments, returning the text
the model reads; expected failures raise ToolError. Each one bounds its own
output and says how to get more (``offset=``, a narrower ``path`` or ``glob``),
because a generic cut in the middle would leave the model guessing.
"""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from ._lines import Deadline, LineReader, OutOfTime
from ._registry import ToolError
from ._workspace import Workspace, glob_matches

__all__ = ["find_files", "grep", "list_dir", "read_file"]

#: How much of a file decides whether it is binary (a NUL byte), as git and grep do.
_SNIFF_BYTES = 8192
#: A matching line longer than this is shown around the match only.
_MAX_LINE_CHARS = 300
#: grep searches this much of each line; the rest of a longer line is skipped unread.
_GREP_LINE_BYTES = 1 << 20
#: How far past a cut line read_file looks for the next line before saying "may follow".
_LOOKAHEAD_BYTES = 8 << 20
#: Entries between two deadline checks while a directory is listed.
_CHECK_EVERY = 1024


def _sniff_binary(fh: BinaryIO) -> bool:
    """A NUL byte near the start means binary; the stream is rewound either way."""
    binary = b"\x00" in fh.read(_SNIFF_BYTES)
    fh.seek(0)
    return binary


def _decode(head: bytes) -> str:
    """Undecodable bytes become U+FFFD rather than failing (a cut may split a character)."""
    return head.decode("utf-8", errors="replace")


def _regular_file(ws: Workspace, path: str) -> Path:
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolError(f"{path} is a directory; use list_dir or find_files")
    if not target.is_file():  # a FIFO or device would block or never end
        raise ToolError(f"{path} is not a regular file")
    return target


# --------------------------------------------------------------------------- read_file


def read_file(
    ws: Workspace,
    path: str,
    offset: int = 1,
    limit: int | None = None,
    *,
    max_chars: int,
    time_budget: float,
) -> str:
    """Lines ``offset``.. of a text file, numbered ``N|text``, within ``max_chars``.

    Reading stops at ``limit`` lines or when the next line would pass
    ``max_chars``; a closing note then gives the ``offset`` to continue from. The
    file is read in chunks and no line is held beyond what can be shown, so a
    huge file (even one huge line) costs only what is shown plus the lines
    skipped to reach ``offset``; skipping stops with an error after ``time_budget``
    seconds.
    """
    if offset < 1:
        raise ToolError(f"offset must be 1 or more (lines are numbered from 1), got {offset}")
    if limit is not None and limit < 1:
        raise ToolError(f"limit must be 1 or more, got {limit}")
    target = _regular_file(ws, path)
    deadline = Deadline(time_budget)
    with target.open("rb") as fh:
        if _sniff_binary(fh):
            size = os.fstat(fh.fileno()).st_size
            raise ToolError(f"{path} is a binary file ({size} bytes); not shown")
        # 4 bytes per character at most: enough bytes for max_chars characters.
        reader = LineReader(fh, keep=4 * (max_chars + 1), deadline=deadline)
        shown: list[str] = []
        try:
            number = _page(reader, offset, limit, max_chars, shown)
        except _Stopped as stop:
            if not shown:
                raise ToolError(
                    f"reading {path} stopped after {time_budget:g}s before reaching line "
                    f"{offset}; the file is too large to page through this far"
                ) from None
            shown.append(
                f"[reading stopped after {time_budget:g}s; continue with offset={stop.next}]"
            )
            return "\n".join(shown)
    if not shown:
        if number == 0:
            return f"({path} is empty)"
        raise ToolError(f"offset {offset} is past the end of {path} ({number} lines)")
    return "\n".join(shown)


class _Stopped(Exception):
    """The deadline passed while paging; ``next`` is the line to continue from."""

    def __init__(self, next_line: int) -> None:
        self.next = next_line


def _page(
    reader: LineReader, offset: int, limit: int | None, max_chars: int, shown: list[str]
) -> int:
    """Append the page's entries and closing note to ``shown``; return the number of
    lines read. Raises _Stopped when the deadline passes."""
    used = 0
    number = 0
    try:
        while (item := reader.next_line()) is not None:
            number += 1
            if number < offset:
                continue
            head, cut = item
            entry = f"{number}|{_decode(head)}"
            if (limit is not None and len(shown) >= limit) or (
                shown and used + len(entry) > max_chars
            ):
                shown.append(f"[more lines follow; continue with offset={number}]")
                return number
            if cut or len(entry) > max_chars:  # a single huge line (minified code): its start
                shown.append(
                    f"{entry[:max_chars]}[... line {number} cut at {max_chars} characters]"
                )
                # The output is full. Say whether more lines follow without reading an
                # endless line to its end: look a bounded distance ahead.
                if not reader.finish_line(_LOOKAHEAD_BYTES):
                    shown.append(f"[more lines may follow; continue with offset={number + 1}]")
                elif not reader.at_end():
                    shown.append(f"[more lines follow; continue with offset={number + 1}]")
                return number
            shown.append(entry)
            used += len(entry) + 1
    except OutOfTime:
        raise _Stopped(number + 1) from None
    return number


# --------------------------------------------------------------------------- list_dir


def list_dir(ws: Workspace, path: str = ".", *, max_entries: int, time_budget: float) -> str:
    """Entries of one directory, sorted: ``name/`` for directories, ``name -> target`` for links.

    Only the first ``max_entries`` names are held while the directory is read (a
    directory of millions of files costs a count, not a sorted copy), and reading
    stops with an error after ``time_budget`` seconds.
    """
    target = ws.resolve(path)
    if not target.is_dir():
        raise ToolError(f"{path} is not a directory; use read_file for files")
    deadline = Deadline(time_budget)
    counted = [0]
    try:
        with os.scandir(target) as it:
            entries = heapq.nsmallest(
                max_entries, _counting(it, counted, deadline), key=lambda e: e.name
            )
    except OutOfTime:
        raise ToolError(
            f"listing {path} stopped after {time_budget:g}s ({counted[0]} entries read); "
            "use find_files with a pattern"
        ) from None
    except OSError as exc:
        raise ToolError(f"cannot list {path}: {exc.strerror or exc}") from None
    if not entries:
        return f"({ws.display(target)} is empty)"
    lines = [_entry_line(e) for e in entries]
    if counted[0] > max_entries:
        lines.append(f"[... {counted[0] - max_entries} more entries not shown]")
    return "\n".join(lines)


def _counting(
    entries: Iterator[os.DirEntry[str]], counted: list[int], deadline: Deadline
) -> Iterator[os.DirEntry[str]]:
    """``entries``, counted in ``counted[0]``, with a deadline check every few entries."""
    for entry in entries:
        counted[0] += 1
        if counted[0] % _CHECK_EVERY == 0:
            deadline.check()
        yield entry


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


def _candidates(ws: Workspace, start: Path, glob: str | None, deadline: Deadline) -> Iterator[Path]:
    """Files under ``start`` whose path relative to it matches ``glob`` (all when None)."""
    for file in ws.files(start, deadline):
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

    Binary files are skipped, and only the first MiB of a longer line is searched.
    The search stops after ``time_budget`` seconds with a note (checked between
    chunks of a file and entries of a directory, so a huge file or directory
    cannot hold it), since a thread cannot be interrupted once the call's timeout
    expires. One regex search on one line cannot be interrupted either.
    """
    if max_matches < 1:
        raise ToolError(f"max_matches must be 1 or more, got {max_matches}")
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    start = _search_root(ws, path)
    deadline = Deadline(time_budget)
    found: list[str] = []
    try:
        for file in _candidates(ws, start, glob, deadline):
            if _grep_file(ws, file, regex, found, max_matches, deadline):
                found.append(
                    f"[stopped at {max_matches} matches; narrow the pattern, path or glob]"
                )
                break
    except OutOfTime:
        found.append(f"[search stopped after {time_budget:g}s; narrow path or glob]")
    return "\n".join(found) if found else f"No matches for {pattern!r} (searched {path!r})."


def _grep_file(
    ws: Workspace,
    file: Path,
    regex: re.Pattern[str],
    found: list[str],
    cap: int,
    deadline: Deadline,
) -> bool:
    """Append the file's matches to ``found``; True once ``cap`` is exceeded."""
    try:
        with file.open("rb") as fh:
            if _sniff_binary(fh):
                return False
            name = ws.display(file)
            reader = LineReader(fh, keep=_GREP_LINE_BYTES, deadline=deadline)
            number = 0
            while (item := reader.next_line()) is not None:
                number += 1
                line = _decode(item[0])
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
    deadline = Deadline(time_budget)
    paths: list[str] = []
    more = 0
    try:
        for file in _candidates(ws, start, pattern, deadline):
            if len(paths) < max_results:
                paths.append(ws.display(file))
            else:
                more += 1
    except OutOfTime:
        paths.append(f"[search stopped after {time_budget:g}s; narrow path or pattern]")
    if more:
        paths.append(f"[... {more} more files not shown; narrow path or pattern]")
    return "\n".join(paths) if paths else f"No files match {pattern!r} (searched {path!r})."
