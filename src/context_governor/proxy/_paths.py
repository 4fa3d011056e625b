"""Which client paths may be forwarded, and how they are spelled upstream.

The proxy's ``/v1/X`` goes to ``<upstream base>/X``. A client controls X, and
the ASGI server hands it over percent-decoded, so ``..%2f``, ``%2e%2e`` or a raw
``../`` would walk out of the base path once an HTTP client normalizes the URL
(with our ``--api-key`` attached), ``%23`` would cut the path and ``%3F`` start a
query. So X is taken from the raw request target, checked segment by segment
after decoding, and re-encoded: what reaches the upstream is always a plain path
under its base, or nothing (the client gets a 400).
"""

from __future__ import annotations

from urllib.parse import quote, quote_from_bytes, unquote

__all__ = ["BadPath", "forward_path", "forward_query"]

#: Characters a path segment may carry unescaped (RFC 3986 pchar, minus '%').
_SEGMENT_SAFE = "!$&'()*+,;=:@-._~"
#: Characters a query may carry unescaped: everything printable but '#' and space;
#: existing escapes ('%') are kept as the client sent them.
_QUERY_SAFE = "!$&'()*+,;=:@-._~/?%[]"
_FORBIDDEN = frozenset("/\\?#")


class BadPath(ValueError):
    """A path we refuse to forward; the message says which segment and why."""


def _segment(raw: str, index: int, last: bool) -> str:
    try:
        decoded = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        raise BadPath(f"path segment {raw!r} is not valid UTF-8 once decoded") from None
    if decoded in (".", ".."):
        raise BadPath(f"path segment {raw!r} is a dot segment")
    if decoded == "" and not last:
        raise BadPath("the path has an empty segment ('//')")
    bad = sorted({c for c in decoded if c in _FORBIDDEN or ord(c) < 0x20 or ord(c) == 0x7F})
    if bad:
        raise BadPath(f"path segment {raw!r} decodes to reserved characters {''.join(bad)!r}")
    return quote(decoded, safe=_SEGMENT_SAFE)


def forward_path(raw_path: bytes, prefix: str = "/v1/") -> str:
    """The part of ``raw_path`` below ``prefix``, each segment checked and re-encoded.

    ``raw_path`` is the request target's path exactly as the client sent it (still
    percent-encoded). Raises BadPath for anything that could leave the base path
    or change the URL's structure.
    """
    try:
        text = raw_path.decode("ascii")
    except UnicodeDecodeError:
        raise BadPath("the path has bytes outside ASCII") from None
    if not text.startswith(prefix):
        raise BadPath(f"the path must start with {prefix}")
    segments = text[len(prefix) :].split("/")
    return "/".join(_segment(raw, i, last=i == len(segments) - 1) for i, raw in enumerate(segments))


def forward_query(raw_query: bytes) -> str:
    """The client's query string as sent, with anything that would end it (a raw '#',
    spaces, bytes outside ASCII) escaped."""
    return quote_from_bytes(raw_query, safe=_QUERY_SAFE)
