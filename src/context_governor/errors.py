"""One exception hierarchy, so callers can catch everything we raise with one clause.

Every exception class of the package, in one place (module paths are under
``context_governor``; a name in parentheses is another base, or for the root its
base; a test checks these drawings against the real classes)::

    ContextGovernorError (Exception)        errors
    ├── InputError (ValueError)             errors
    ├── ConfigError (ValueError)            errors
    ├── ModelError                          llm._errors
    │   ├── ModelHTTPError                  llm._errors
    │   ├── ModelConnectionError            llm._errors
    │   ├── ModelTimeoutError               llm._errors
    │   └── ModelResponseError              llm._errors
    ├── ToolDefinitionError (TypeError)     tools._registry
    └── CountError                          proxy._count_tokens

The others are not ContextGovernorError: each is caught inside the package and
becomes an answer, a note or a tool result (or, for ToolError, is raised by a tool
for the model to read)::

    Exception
    ├── ToolError                           tools._registry
    ├── SummarizerError                     summary._summarizer
    ├── Invalid                             tools._schema
    ├── OutOfTime                           tools._lines
    ├── TooLarge                            proxy._body
    ├── BadRequest                          proxy._governing
    ├── _BadArguments                       tools._registry
    ├── _Stopped                            tools._files
    ├── _ClientGone                         proxy._guard
    └── _NoBody                             runner._loop
    OSError
    └── OffloadRefused                      stages._offload
    ValueError
    └── BadPath                             proxy._paths
    TypeError
    └── UnsupportedType                     tools._schema

- ToolError: a tool's expected failure; the registry sends ``"Error: " + str(exc)``
  to the model as the call's result.
- SummarizerError: the summarizer gave no usable summary; the cut gets its note.
- Invalid, _BadArguments: a tool call's arguments do not fit its parameters; the
  model reads what was wrong.
- OutOfTime, _Stopped: a file tool's deadline passed; its result says so.
- TooLarge, BadRequest, BadPath: the proxy answers 413, 400 and 400.
- _ClientGone: a client left while sending its body; nothing is answered.
- _NoBody: a native model client could not build a request body; the run stops
  with ``model_error``.
- OffloadRefused: the offload store is not safe to write; the output is cleared
  without naming a file, with a note.
- UnsupportedType: an annotation with no JSON schema; registration raises
  ToolDefinitionError from it.
"""

from __future__ import annotations

__all__ = ["BRIEF_LIMIT", "ConfigError", "ContextGovernorError", "InputError", "brief"]

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
