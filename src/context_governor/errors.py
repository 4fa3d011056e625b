"""One exception hierarchy, so callers can catch everything we raise with one clause."""

from __future__ import annotations


class ContextGovernorError(Exception):
    """Base class of every error context-governor raises on purpose."""


class InputError(ContextGovernorError, ValueError):
    """The input cannot be governed; ``path`` points at the offending part.

    ``str(err)`` is a one-line message such as ``messages[3].tool_calls: expected a
    list, got str`` that the CLI prints as is.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}" if path else problem)


class ConfigError(ContextGovernorError, ValueError):
    """A setting passed to govern() or the CLI is not usable (unknown profile, bad window)."""
