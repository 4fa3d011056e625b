"""Keeping credentials out of what the proxy prints and logs.

An upstream URL may carry a password (``https://user:secret@host/v1``) or a key
in its query (``?key=...``), and ``--api-key`` is a secret too. Anything that
shows a URL or an exception text to a person goes through here first.

A client's own key may be in a query too (Gemini's ``?key=``): it is not known in
advance, so every URL query in a log line has its secret-named values masked
(mask_query_secrets), by the loggers that print request URLs (httpx, uvicorn's
access log, ours) before any handler sees the record (QuerySecretFilter).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

__all__ = [
    "MASK",
    "URL_LOGGERS",
    "QuerySecretFilter",
    "RedactingFilter",
    "Redactor",
    "is_secret_param",
    "mask_logged_query_secrets",
    "mask_query_secrets",
    "redact_url",
    "url_secrets",
]

MASK = "***"
#: Query parameter names whose values are treated as secrets (matched as substrings,
#: case-insensitively: ``api_key``, ``X-Amz-Signature``, ``access_token``, ...).
_SECRET_NAME_PARTS = ("key", "token", "secret", "password", "passwd", "signature", "sig", "auth")


#: ``name=value`` after ``?`` or ``&``; the value runs to the next separator, quote,
#: space or fragment.
_QUERY_PAIR = re.compile(r"([?&])([^=&\s\"'#?]+)=([^&\s\"'#]*)")


def _masked_pair(match: re.Match[str]) -> str:
    sep, name, value = match.groups()
    # decoded, as the server reads it: ``?k%65y=...`` is a key too
    return f"{sep}{name}={MASK}" if value and is_secret_param(unquote(name)) else match[0]


def mask_query_secrets(text: str) -> str:
    """``text`` with the value of every secret-named query parameter of any URL in it
    masked (``...?alt=sse&key=***``), whoever's the key."""
    return _QUERY_PAIR.sub(_masked_pair, text)


def is_secret_param(name: str) -> bool:
    lowered = name.lower()
    return any(part in lowered for part in _SECRET_NAME_PARTS)


def url_secrets(url: str) -> list[str]:
    """The credential strings ``url`` carries: userinfo and secret query values."""
    parts = urlsplit(url)
    found: list[str] = []
    if parts.username:
        found.append(parts.username)
    if parts.password:
        found.append(parts.password)
    found += [value for name, value in parse_qsl(parts.query) if is_secret_param(name) and value]
    return found


def redact_url(url: str) -> str:
    """``url`` with its userinfo and secret query values replaced by ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = "&".join(
        f"{name}={MASK}" if is_secret_param(unquote(name)) and value else piece
        for piece in parts.query.split("&")
        if piece
        for name, _, value in [piece.partition("=")]
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class Redactor:
    """Scrubs known secret strings (and their percent-encoded forms) out of any text."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        found = {s for s in secrets if s}
        found |= {unquote(s) for s in found}
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = sorted(found, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return mask_query_secrets(text)


class RedactingFilter(logging.Filter):
    """A handler filter that formats each record and scrubs it, whoever logged it
    (httpx logs every request URL at INFO, uvicorn logs exceptions)."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg = self._redactor(message)
        record.args = None
        if record.exc_text:
            record.exc_text = self._redactor(record.exc_text)
        record.exc_info = None
        return True


def _masked_arg(arg: object) -> object:
    """A log record's argument, as a masked string if its text shows a secret query
    value, else itself (so ``%d`` and formatters that unpack the args keep working)."""
    if arg is None or isinstance(arg, int | float):
        return arg
    try:
        text = str(arg)
    except Exception:  # an object whose str() fails is the handler's problem, not ours
        return arg
    masked = mask_query_secrets(text)
    return arg if masked == text else masked


class QuerySecretFilter(logging.Filter):
    """A logger filter masking secret query values (mask_query_secrets) in each record
    the logger makes, before any handler (a test's capture included) sees it.

    The message and each argument are masked in place, keeping the record's shape:
    uvicorn's access formatter unpacks its five arguments, so they cannot be merged
    into the message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = mask_query_secrets(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_masked_arg(arg) for arg in record.args)
        elif isinstance(record.args, Mapping):
            record.args = {key: _masked_arg(arg) for key, arg in record.args.items()}
        return True


#: The loggers that print request URLs with their query: httpx (each upstream request),
#: uvicorn's access log (each client request), uvicorn's errors, ours.
URL_LOGGERS = ("httpx", "uvicorn.access", "uvicorn.error", "context_governor.proxy")


def mask_logged_query_secrets() -> None:
    """Install QuerySecretFilter on URL_LOGGERS, once per process."""
    for name in URL_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuerySecretFilter) for f in logger.filters):
            logger.addFilter(QuerySecretFilter())
