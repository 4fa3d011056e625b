"""Slugs: the short part of a short link."""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable

# Base62 without the characters people confuse when they type a link from a
# screenshot: 0/O, 1/l/I.
ALPHABET = "23456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"

RESERVED = frozenset({"api", "healthz", "static", "admin", "login", "logout", "favicon.ico"})

_CUSTOM = re.compile(r"^[A-Za-z0-9_-]{3,64}$")


def generate_slug(length: int = 7, choice: Callable[[str], str] = secrets.choice) -> str:
    """A random slug of ``length`` characters from :data:`ALPHABET`."""
    if length < 1:
        raise ValueError("slug length must be positive")
    return "".join(choice(ALPHABET) for _ in range(length))


def is_valid_custom_slug(slug: object) -> bool:
    """Custom slugs: 3-64 of letters, digits, '-' and '_', and not a reserved path."""
    return (
        isinstance(slug, str)
        and bool(_CUSTOM.match(slug))
        and slug.lower() not in RESERVED
    )


def keyspace(length: int) -> int:
    """How many distinct generated slugs of this length exist."""
    return int(len(ALPHABET) ** length)
