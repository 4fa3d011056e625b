"""Finding classes that are known and open, each owned by an area being fixed.

The CI slice (tests/test_fuzz_slice.py) does not fail on these; `make fuzz` still
counts and prints them, marked "known". Remove an entry as soon as its fix lands:
the slice then guards the fix.

A not-idempotent signature is the sorted list of stage/kind pairs the second pass
acted with, joined by commas; it is known when every pair is.
"""

from __future__ import annotations

#: (kind, signature part, owner and reproducer in words)
KNOWN: list[tuple[str, str, str]] = []


def is_known(kind: str, signature: str) -> bool:
    parts = [p for p in signature.split(",") if p]
    known = [part for k, part, _ in KNOWN if k == kind]
    return bool(parts) and all(any(p.startswith(k) for k in known) for p in parts)
