"""One exception hierarchy, so callers can catch everything we raise with one clause."""

from __future__ import annotations

#: Longest rendering of a user value inside an error message.
BRIEF_LIMIT = 60


def brief(value: object) -> str:
    """A short, always-safe rendering of a user value for an error message.

    ``repr()`` of user data is neither: a list nested 10^5 levels deep makes it raise
    RecursionError, and a 10 MB string makes a 10 MB message. Scalars are shown as
    ``repr`` (cut at BRIEF_LIMIT characters), anything else by its type name.
    """
    if value is None or isinstance(value, bool | int | float):
        text = repr(value)
    elif isinstance(value, str):
        text = repr(value[: BRIEF_LIMIT + 1])
    else:
        return f"a {type(value).__name__}"
    return text if len(text) <= BRIEF_LIMIT else text[: BRIEF_LIMIT - 3] + "..."


class ContextGovernorError(Exception):
    """Base class of every error context-governor raises on purpose."""


class InputError(ContextGovernorError, ValueError):
    """The input cannot be governed; ``path`` points at the offending part.

    ``str(err)`` is a one-line message such as ``messages[3].tool_calls: expected a
    list, got str`` that the CLI prints as is.
    """

    def __init__(self, path: str, problem: str, *, message: str | None = None) -> None:
        """``message``: the one line to say instead of ``path: problem``, where a
        sentence reads better (``max_tokens must be a non-negative integer, got -5``)."""
        self.path = path
        self.problem = problem
        if message is None:
            message = f"{path}: {problem}" if path else problem
        super().__init__(message)


class ConfigError(ContextGovernorError, ValueError):
    """A setting passed to govern() or the CLI is not usable (unknown profile, bad window)."""
