"""A real headless browser for the page's tests: Debian's chromium, driven from the
command line (``--dump-dom`` gives the DOM once the page's scripts have run,
``--screenshot`` a PNG). ``make test`` installs chromium when it is missing (the
Makefile's ``chromium`` target); without it the tests FAIL saying so, never skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]  # fmt: skip


def chromium() -> str:
    """The browser's path ($CG_CHROMIUM, else the first of NAMES on PATH); fails loudly."""
    given = os.environ.get("CG_CHROMIUM")
    found = given or next((p for p in map(shutil.which, NAMES) if p), None)
    if not found:
        raise AssertionError(
            "chromium not found: the page's browser tests need it. Install it with "
            "`apt-get install -y chromium` (`make test` does this), or set CG_CHROMIUM to a "
            "Chrome/Chromium binary."
        )
    return found


def _run(args: list[str], timeout: float = 90) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="cg-chromium-") as profile:
        command = [chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done


def dom(url: str, budget_ms: int = 8000) -> str:
    """The page's DOM after its scripts ran (virtual time lets the fetches finish)."""
    return _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", url]).stdout


def screenshot(url: str, out: Path, size: tuple[int, int] = (1400, 1000), budget_ms: int = 8000) -> Path:
    _run([f"--virtual-time-budget={budget_ms}", f"--window-size={size[0]},{size[1]}",
          f"--screenshot={out}", url])  # fmt: skip
    assert out.exists() and out.stat().st_size > 10_000, "chromium wrote no screenshot"
    return out
