"""Errors of model calls.

Every failure of a model call is a :class:`ModelError`, so the runner can turn
any of them into a stop reason with one clause. ``retryable`` is decided where
the failure is understood (the client), not where it is caught::

    ContextGovernorError
    └── ModelError                 retryable, status, retry_after
        ├── ModelHTTPError         the server answered with an error status
        ├── ModelConnectionError   the server could not be reached, or hung up
        ├── ModelTimeoutError      no answer in time
        └── ModelResponseError     an answer we cannot read (not JSON, no choices, ...)
"""

from __future__ import annotations

from ..errors import ContextGovernorError

__all__ = [
    "RETRYABLE_STATUSES",
    "ModelConnectionError",
    "ModelError",
    "ModelHTTPError",
    "ModelResponseError",
    "ModelTimeoutError",
    "is_retryable_status",
]


class ModelError(ContextGovernorError):
    """A model call failed. ``str(err)`` is one line that says what and where."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        #: seconds the server asked us to wait before trying again (Retry-After)
        self.retry_after = retry_after


class ModelHTTPError(ModelError):
    """The server answered with an HTTP error status (``status``)."""


class ModelConnectionError(ModelError):
    """The server could not be reached, or closed the connection mid-answer."""


class ModelTimeoutError(ModelError):
    """The server did not answer within the client's timeout."""


class ModelResponseError(ModelError):
    """The server answered, but not with a chat completion we can read."""


#: Statuses worth a retry: the request may well succeed later as it is.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or status >= 500
