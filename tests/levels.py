"""How thorough a test run is: fast by default, the long budgets with CG_TEST_LEVEL=full.

The default (``make test``) keeps every test and every property but draws fewer
random examples, so a new contributor's run takes minutes, not ten; CI
(``.ci/run``) sets ``CG_TEST_LEVEL=full`` and runs the long budgets. The
examples are derandomized either way (tests/conftest.py), so a fast run draws
a prefix of what the full run would.
"""

from __future__ import annotations

import os

LEVEL = os.environ.get("CG_TEST_LEVEL", "fast").strip().lower() or "fast"
if LEVEL not in ("fast", "full"):
    raise RuntimeError(f"CG_TEST_LEVEL must be 'fast' or 'full', got {LEVEL!r}")
FULL = LEVEL == "full"


def examples(full: int, fast: int) -> int:
    """The number of random examples (or cases) to draw at this level."""
    return full if FULL else fast
