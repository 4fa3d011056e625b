"""URL validation and normalisation for links people submit."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}


class UrlError(ValueError):
    """The submitted URL cannot be shortened; the message says why."""


def _is_private_host(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_reserved
        or address.is_multicast
    )


def normalize_url(
    raw: object,
    *,
    max_length: int = 2048,
    blocked_hosts: tuple[str, ...] = (),
) -> str:
    """Return ``raw`` as a canonical http(s) URL, or raise UrlError.

    Canonical means: scheme and host lower-cased, IDNA-encoded host, default
    port removed, empty path turned into ``/``. Query and fragment are kept
    as they are (people shorten tracking links on purpose).
    """
    if not isinstance(raw, str) or not raw.strip():
        raise UrlError("url is required")
    text = raw.strip()
    if len(text) > max_length:
        raise UrlError(f"url is longer than {max_length} characters")
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise UrlError("only http and https URLs can be shortened")
    if not parts.hostname:
        raise UrlError("url has no host")
    try:
        host = parts.hostname.encode("idna").decode("ascii")
    except UnicodeError:
        raise UrlError(f"invalid host name: {parts.hostname!r}") from None
    if _is_private_host(host):
        raise UrlError("links to private or local addresses are not allowed")
    if host in blocked_hosts or any(host.endswith("." + b) for b in blocked_hosts):
        raise UrlError(f"links to {host} are not allowed")
    try:
        port = parts.port
    except ValueError:
        raise UrlError("url has an invalid port") from None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc = f"{netloc}:{port}"
    if parts.username or parts.password:
        raise UrlError("urls with credentials are not allowed")
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, parts.fragment))
