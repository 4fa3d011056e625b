"""Who may use the proxy: the pure rules behind guard.py, and the checks of their options.

The proxy may hold the owner's key (``--api-key``), so every request that reaches
the upstream spends the owner's money. Three kinds of caller must not:

- a web page open in the owner's browser: it can POST cross-site to
  ``127.0.0.1:8787`` without a preflight (a "simple" ``text/plain`` request), so a
  request carrying an ``Origin`` (or ``Sec-Fetch-Site: cross-site``) is refused
  unless its origin was allowed (``--allow-origin``);
- the same page after a DNS rebinding (its name now resolves to 127.0.0.1, so the
  browser calls it same-origin and lets it read the answers): it still sends its
  own name as ``Host``, so a proxy on a loopback address serves loopback names only
  (``--allow-host`` adds names);
- anyone on the network, once the proxy listens on a public address: then clients
  present a client key (``--client-key``), and the CLI refuses to start with an
  ``--api-key`` and none (open_relay_refusal).

Everything here is a pure function of strings, so each rule is tested on its own.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote

from ..errors import ConfigError

__all__ = [
    "CLIENT_KEY_HEADER",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_MAX_IN_FLIGHT_PER_CLIENT",
    "KEY_HEADERS",
    "MIN_CLIENT_KEY_LENGTH",
    "QUERY_KEY",
    "bearer",
    "check_client_keys",
    "client_keys",
    "digest",
    "host_allowed",
    "host_name",
    "is_json",
    "is_loopback",
    "is_loopback_listen",
    "matching_name",
    "normalize_host",
    "normalize_origin",
    "open_relay_refusal",
    "origin_refusal",
    "parse_client_key",
    "query_keys",
    "shown",
    "without_query_values",
]

#: Requests in flight per client key, and in all, in each server process (guard.py).
DEFAULT_MAX_IN_FLIGHT_PER_CLIENT = 64
DEFAULT_MAX_IN_FLIGHT = 256
#: Shorter client keys are refused: a key that can be guessed over the network is none.
MIN_CLIENT_KEY_LENGTH = 16
#: Our own header for a client key, for clients that send their own provider key in
#: the usual header (a proxy without --api-key); never forwarded.
CLIENT_KEY_HEADER = "x-context-governor-client-key"
#: Where a client key may be presented: the headers the SDKs send their key in.
KEY_HEADERS = (CLIENT_KEY_HEADER, "authorization", "x-api-key", "x-goog-api-key")
#: The place ``?key=`` (Gemini's query key) is named by in presented_keys.
QUERY_KEY = "?key"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: Printable ASCII without spaces: what a header value or a query value carries as is.
_KEY = re.compile(r"[\x21-\x7e]+")
_ORIGIN = re.compile(r"(https?)://([^/?#\s@]+)")
_HOST_NAME = re.compile(r"[a-z0-9*]([a-z0-9.*-]{0,252})")
_DEFAULT_PORTS = {"http": ":80", "https": ":443"}


# ----------------------------------------------------------------------------- options


def parse_client_key(entry: str, index: int) -> tuple[str, str]:
    """``NAME:KEY`` or a bare ``KEY`` (then named ``client-INDEX``): the name shows in
    the log instead of the key. A key that itself holds a ``:`` needs a name."""
    name, sep, key = entry.strip().partition(":")
    if sep and key and _NAME.fullmatch(name):
        return name, key
    return f"client-{index}", entry.strip()


def client_keys(entries: Iterable[str]) -> dict[str, str]:
    """Named keys from ``--client-key`` entries and key-file lines (blank lines and
    ``#`` comments skipped); a repeated name or key is a ConfigError."""
    keys: dict[str, str] = {}
    for entry in entries:
        if not entry.strip() or entry.lstrip().startswith("#"):
            continue
        name, key = parse_client_key(entry, len(keys) + 1)
        if name in keys:
            raise ConfigError(f"client key name {name!r} is given twice")
        keys[name] = key
    check_client_keys(keys)
    return keys


def check_client_keys(keys: Mapping[str, str]) -> None:
    """Each name a plain word, each key long enough and sendable in a header; no key twice.
    The messages name the key by its name, never show it."""
    seen: set[str] = set()
    for name, key in keys.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"client key name {name!r} must be letters, digits, '_', '.' or '-' (at most 64)"
            )
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise ConfigError(f"client key {name!r} must be printable ASCII without spaces")
        if len(key) < MIN_CLIENT_KEY_LENGTH:
            raise ConfigError(
                f"client key {name!r} is shorter than {MIN_CLIENT_KEY_LENGTH} characters; make "
                "one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        if key in seen:
            raise ConfigError(f"client key {name!r} is the same key as another one")
        seen.add(key)


def normalize_origin(origin: str) -> str:
    """An ``--allow-origin`` as browsers send it: ``scheme://host[:port]`` in lower case,
    no path, no default port; ``null`` (sandboxed frames, ``file://`` pages) as is."""
    text = origin.strip().lower().rstrip("/")
    if text == "null":
        return text
    match = _ORIGIN.fullmatch(text)
    if match is None:
        raise ConfigError(
            f"allowed origin {origin!r} must be scheme://host[:port], e.g. http://localhost:3000"
        )
    return text.removesuffix(_DEFAULT_PORTS[match.group(1)])


def normalize_host(host: str) -> str:
    """An ``--allow-host`` name: lower case, without port or trailing dot; ``*`` allows any
    name (a proxy that only a load balancer reaches)."""
    text = host_name(host)
    if text == "*":
        return text
    if not _HOST_NAME.fullmatch(text) and not _ip(text):
        raise ConfigError(f"allowed host {host!r} must be a host name, e.g. llm.example.com")
    return text


# ----------------------------------------------------------------------------- hosts


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip("[]").partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def host_name(header: str) -> str:
    """The name a ``Host`` header (or an address) names: lower case, without port,
    brackets or trailing dot (``[::1]:8787`` → ``::1``, ``LocalHost.:80`` → ``localhost``)."""
    text = header.strip().lower()
    if text.startswith("["):  # [v6]:port
        return text[1:].partition("]")[0]
    if text.count(":") == 1:  # name:port (a bare v6 address has several)
        text = text.partition(":")[0]
    return text.rstrip(".")


def is_loopback(name: str) -> bool:
    """Whether ``name`` (a host name or address) can only mean this machine:
    ``localhost`` and ``*.localhost`` (RFC 6761: browsers resolve them to loopback
    themselves), 127.0.0.0/8, ``::1``."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = _ip(name)
    return address is not None and address.is_loopback


def host_allowed(host: str | None, server: str | None, allowed: Sequence[str]) -> bool:
    """Whether a request for ``Host: host``, arriving on the local address ``server``
    (None: a Unix socket), is served.

    On a loopback address a browser page can only have come through a DNS name it
    controls, so only loopback names (and ``--allow-host`` names) are served there. On
    any other address, IP literals are served too, and any name unless ``--allow-host``
    lists the names (then only those). A request without ``Host`` (HTTP/1.0) comes from
    no browser and is served."""
    if host is None or "*" in allowed:
        return True
    name = host_name(host)
    if name in allowed or is_loopback(name):
        return True
    if server is None or is_loopback(host_name(server)):
        return False
    return _ip(name) is not None or not allowed


def is_loopback_listen(host: str) -> bool:
    """Whether listening on ``host`` (the CLI's ``--host``) is reachable from this
    machine only; ``0.0.0.0``, ``::`` and any other name are not."""
    return is_loopback(host_name(host) if not host.startswith("[") else host.strip("[]"))


def open_relay_refusal(host: str, api_key: bool, client_keys: bool) -> str | None:
    """Why the proxy must not start, or None: on an address others can reach, holding
    the owner's key, with no client key asked, it spends the key for anyone."""
    if not api_key or client_keys or is_loopback_listen(host):
        return None
    return (
        f"refusing to listen on {host} with --api-key and no --client-key: anyone who "
        "can reach the port would spend the key (add --client-key, or --allow-open-relay "
        "if every machine that can reach it is trusted; see docs/proxy.md#security)"
    )


# ----------------------------------------------------------------------------- browsers


def origin_refusal(
    origin: str | None, fetch_site: str | None, allowed: Iterable[str]
) -> str | None:
    """Why a request is refused as coming from a web page, or None.

    A browser sends ``Origin`` on every cross-origin request and every POST, and
    ``Sec-Fetch-Site`` on every request: a request carrying an origin not allowed, or
    said to come from another site without one (a no-cors request, a form), is a page's.
    ``same-origin`` and ``none`` (typed in the address bar) are left to the Host check."""
    if origin is not None:
        if origin.strip().lower().rstrip("/") in allowed:
            return None
        return f"requests from web pages are refused (Origin {shown(origin)} is not allowed)"
    site = (fetch_site or "").strip().lower()
    if site in ("cross-site", "same-site"):
        return f"requests from web pages are refused (Sec-Fetch-Site: {shown(site)})"
    return None


def is_json(content_type: str | None) -> bool:
    """``application/json`` or a ``+json`` type, any parameters: what a browser cannot
    send cross-site without a preflight (its simple requests are text/plain, forms)."""
    if content_type is None:
        return False
    media = content_type.partition(";")[0].strip().lower()
    kind, _, subtype = media.partition("/")
    return kind == "application" and (subtype == "json" or subtype.endswith("+json"))


def shown(value: str, limit: int = 100) -> str:
    """A client's header value for a message or a log line: quoted, cut at ``limit``."""
    return repr(value if len(value) <= limit else value[:limit] + "...")


# ----------------------------------------------------------------------------- keys


def digest(key: str) -> bytes:
    """What keys are compared by: equal-length digests, so compare_digest's time says
    nothing about a key's length or its first differing character."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def matching_name(candidate: str, keys: Sequence[tuple[str, bytes]]) -> str | None:
    """The name of the client key ``candidate`` is, or None; every key is compared (in
    constant time), whichever matches."""
    presented = digest(candidate)
    found: str | None = None
    for name, expected in keys:
        if hmac.compare_digest(presented, expected) and found is None:
            found = name
    return found


def bearer(value: str) -> str:
    """The token of an ``Authorization: Bearer ...`` value (else the value itself)."""
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else value.strip()


def query_keys(query: str) -> list[str]:
    """The values of every ``key=`` parameter of a (still encoded) query."""
    return [
        unquote(value)
        for piece in query.split("&")
        for name, _, value in [piece.partition("=")]
        if unquote(name) == "key"
    ]


def without_query_values(query: str, values: set[str]) -> str:
    """``query`` without the ``key=`` parameters whose value is one of ``values``."""
    return "&".join(
        piece
        for piece in query.split("&")
        if piece
        and not (
            unquote(piece.partition("=")[0]) == "key" and unquote(piece.partition("=")[2]) in values
        )
    )
