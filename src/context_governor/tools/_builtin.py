"""The seed's file and shell tools, confined to one workspace directory.

The names and parameters follow Nanobot's tools (read_file, list_dir, grep,
find_files, exec), so the seed's list of compactable tools applies to their
results unchanged. The docstrings of the inner functions are what the model
reads: their first paragraph is the tool description and their ``Args:`` the
parameter descriptions.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from ..errors import ConfigError
from . import _files as files
from ._registry import ToolError, ToolRegistry
from ._shell import run_command
from ._workspace import Workspace

__all__ = ["builtin_tools"]

#: Caps on how many entries a listing or search returns before saying "narrow it".
_MAX_ENTRIES = 500
_MAX_MATCHES = 1000
#: Room kept for the continuation note that read_file appends after its last line.
_NOTE_ROOM = 80
#: Extra seconds the registry allows exec beyond its own timeout, to kill and reap.
_EXEC_GRACE = 10.0

_EXEC_DOC = """Run a shell command with /bin/sh in the workspace root and return its exit code, stdout and stderr.

    Args:
        command: The command line, e.g. "pytest -q tests/test_x.py".
        timeout: Seconds before the command and everything it started are killed (default and maximum: {limit:g}).
    """  # noqa: E501


def builtin_tools(
    workspace: str | os.PathLike[str],
    *,
    max_output_chars: int = 16000,
    exec_timeout: float = 30.0,
    allow_exec: bool = True,
) -> ToolRegistry:
    """A registry with read_file, list_dir, grep, find_files and (optionally) exec.

    Every path argument must resolve, symlinks followed, inside ``workspace``;
    anything else is answered with "path escapes the workspace". Outputs are cut
    to ``max_output_chars``; a tool call lasts at most ``exec_timeout`` seconds
    (searches stop early with a note, exec kills the command's process group).

    ``exec`` is not a sandbox: the shell runs as this process's user and can read
    and write outside the workspace (``cat /etc/passwd``, ``cd ..``). Pass
    ``allow_exec=False`` to leave it out when the model must stay inside the
    workspace; the four file tools are read-only and confined.
    """
    _check_settings(max_output_chars, exec_timeout)
    ws = Workspace(workspace)
    # No registry-wide timeout: limits are caps, and exec needs a longer one than
    # the file tools so that its own timer (which kills the command) fires first.
    registry = ToolRegistry(max_output_chars=max_output_chars)
    budget = exec_timeout * 0.8  # searches end with a note before the call's timeout

    @registry.tool(timeout=exec_timeout)
    def read_file(path: str, offset: int = 1, limit: int | None = None) -> str:
        """Read a text file from the workspace; each line is shown as "N|text".

        Long files come in pages: the last line then says which offset to continue from.

        Args:
            path: File path relative to the workspace root (an absolute path must lie inside it).
            offset: Number of the first line to show; lines are numbered from 1.
            limit: Maximum number of lines to show (default: as many as fit in the output limit).
        """
        room = max(1, max_output_chars - _NOTE_ROOM)
        return files.read_file(ws, path, offset, limit, max_chars=room, time_budget=budget)

    @registry.tool(timeout=exec_timeout)
    def list_dir(path: str = ".") -> str:
        """List a directory of the workspace: "name/" marks directories, "name -> target" symlinks.

        Args:
            path: Directory path relative to the workspace root.
        """
        return files.list_dir(ws, path, max_entries=_MAX_ENTRIES, time_budget=budget)

    @registry.tool(timeout=exec_timeout)
    def grep(
        pattern: str,
        path: str = ".",
        glob: str | None = None,
        ignore_case: bool = False,
        max_matches: int = 100,
    ) -> str:
        """Search file contents with a regular expression and show each matching line as "path:line:text".

        Binary files, symbolic links and tool directories such as .git and node_modules are skipped.

        Args:
            pattern: Regular expression (Python syntax) to search for.
            path: File or directory to search, relative to the workspace root.
            glob: Only search files matching this glob, e.g. "*.py" (file name) or "src/**/*.ts" (path).
            ignore_case: Match regardless of letter case.
            max_matches: Stop after this many matching lines (at most 1000).
        """  # noqa: E501
        cap = min(max_matches, _MAX_MATCHES)
        return files.grep(ws, pattern, path, glob, ignore_case, cap, time_budget=budget)

    @registry.tool(timeout=exec_timeout)
    def find_files(pattern: str, path: str = ".") -> str:
        """Find files whose path matches a glob and list them relative to the workspace root.

        Args:
            pattern: Glob such as "*.py" (matches file names at any depth) or "src/**/test_*.py" (matches paths); "*" stays within a directory, "**" spans directories.
            path: Directory to search, relative to the workspace root.
        """  # noqa: E501
        return files.find_files(ws, pattern, path, max_results=_MAX_ENTRIES, time_budget=budget)

    if allow_exec:
        registry.register(
            _exec_tool(ws, exec_timeout, max_output_chars),
            name="exec",
            timeout=exec_timeout + _EXEC_GRACE,
        )
    return registry


def _exec_tool(ws: Workspace, exec_timeout: float, keep: int) -> Callable[..., Awaitable[str]]:
    async def exec_(command: str, timeout: float | None = None) -> str:
        if not command.strip():
            raise ToolError("command is empty")
        if timeout is not None and not timeout > 0:
            raise ToolError(f"timeout must be positive, got {timeout:g}")
        limit = exec_timeout if timeout is None else min(timeout, exec_timeout)
        return await run_command(command, cwd=ws.root, timeout=limit, keep_bytes=keep)

    exec_.__doc__ = _EXEC_DOC.format(limit=exec_timeout)
    return exec_


def _check_settings(max_output_chars: int, exec_timeout: float) -> None:
    if isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int):
        raise ConfigError(f"max_output_chars must be an int, got {max_output_chars!r}")
    if max_output_chars < 200:
        raise ConfigError(f"max_output_chars must be at least 200, got {max_output_chars}")
    if not exec_timeout > 0:
        raise ConfigError(f"exec_timeout must be positive, got {exec_timeout!r}")
