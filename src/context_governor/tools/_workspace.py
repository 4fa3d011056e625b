"""The directory the built-in file tools are confined to.

Every path the model gives is resolved the way the operating system would
(``..`` and symlinks followed) and must land inside the resolved workspace root;
otherwise the tool answers "path escapes the workspace". Directory walks never
follow symbolic links, so a link inside the workspace pointing outside cannot be
searched through; opening such a link by name is refused by :meth:`resolve`.

Known limit: the check and the later open are two steps, so a process that swaps
a directory for a symlink in between could still redirect a read. Only something
already running in the workspace (such as a command started by ``exec``, which is
not a sandbox) can do that.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from ..errors import ConfigError
from ._lines import Deadline
from ._registry import ToolError

__all__ = ["NOISE_DIRS", "Workspace", "glob_matcher", "glob_matches"]

#: Directory entries read between two deadline checks.
_CHECK_EVERY = 1024

#: Directories a recursive search skips: tool caches and VCS internals, never what
#: the model is looking for, and often most of the files. They can still be
#: listed and searched by naming them as ``path``.
NOISE_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


class Workspace:
    """A resolved root directory and the rules for reaching paths under it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        try:
            resolved = Path(root).resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ConfigError(f"workspace {str(root)!r} cannot be resolved: {exc}") from exc
        if not resolved.is_dir():
            raise ConfigError(f"workspace {str(root)!r} is not a directory")
        self.root = resolved

    def contains(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)

    def resolve(self, path: str) -> Path:
        """The real path of an existing file or directory inside the workspace.

        Relative paths start at the root; absolute paths are accepted when they
        resolve inside it. Escaping is checked before existence, so the answer
        for an outside path never reveals whether it exists.
        """
        if not path:
            raise ToolError("path is empty; use '.' for the workspace root")
        if "\x00" in path:
            raise ToolError("path contains a NUL character")
        candidate = Path(path) if os.path.isabs(path) else self.root / path
        if not self.contains(Path(os.path.realpath(candidate))):
            raise ToolError(f"path escapes the workspace: {path}")
        try:
            real = candidate.resolve(strict=True)
        except FileNotFoundError:
            raise ToolError(f"no such file or directory: {path}") from None
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (3.11)
            reason = getattr(exc, "strerror", None) or exc
            raise ToolError(f"cannot resolve {path}: {reason}") from None
        if not self.contains(real):
            raise ToolError(f"path escapes the workspace: {path}")
        return real

    def display(self, path: Path) -> str:
        """A path as the model should write it back: relative to the root, '/'-separated."""
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    def files(self, start: Path, deadline: Deadline | None = None) -> Iterator[Path]:
        """Regular files under ``start`` in sorted order, without following symlinks.

        Noise directories are pruned below ``start`` (not ``start`` itself), and
        unreadable directories are skipped silently, as ``find`` would report and
        carry on. With a ``deadline``, OutOfTime is raised once it passes, checked
        between directory entries too, so one huge directory cannot hold the walk
        (it still holds that directory's names while they are sorted).
        """
        if start.is_file():
            yield start
            return
        stack = [start]
        while stack:
            current = stack.pop()
            dirnames, filenames = _entries(current, deadline)
            for name in filenames:
                yield current / name
            stack.extend(current / d for d in reversed(dirnames))


def _entries(directory: Path, deadline: Deadline | None) -> tuple[list[str], list[str]]:
    """Sorted (subdirectories, regular files) of one directory, links left out."""
    dirnames: list[str] = []
    filenames: list[str] = []
    try:
        with os.scandir(directory) as it:
            for count, entry in enumerate(it, start=1):
                if deadline is not None and count % _CHECK_EVERY == 0:
                    deadline.check()
                if entry.is_dir(follow_symlinks=False):
                    dirnames.append(entry.name)
                elif entry.is_file(follow_symlinks=False):
                    filenames.append(entry.name)
    except OSError:
        return [], []
    return sorted(d for d in dirnames if d not in NOISE_DIRS), sorted(filenames)


@lru_cache(maxsize=64)
def glob_matcher(pattern: str) -> re.Pattern[str]:
    """Compile a glob: ``*`` and ``?`` stay within one directory, ``**`` spans several.

    A pattern without ``/`` is matched against the file name alone (``*.py``
    finds Python files at any depth, as in ripgrep and .gitignore); otherwise
    against the path relative to the searched directory.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body[0] in "!^"
            body = (body[1:] if negate else body).replace("\\", "\\\\")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise ToolError(f"invalid glob {pattern!r}: {exc}") from None


def glob_matches(pattern: str, relative: str) -> bool:
    """Whether a '/'-separated relative path matches ``pattern`` (see :func:`glob_matcher`)."""
    subject = relative if "/" in pattern else relative.rsplit("/", 1)[-1]
    return glob_matcher(pattern).match(subject) is not None
