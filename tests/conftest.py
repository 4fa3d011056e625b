"""Shared fixtures. The fake upstream is a real HTTP server, started once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from fake_native import FakeNative
from fake_upstream import FakeUpstream
from hypothesis import settings
from levels import FULL, LEVEL, examples

# The differential test against nanobot-ai reads its case count from DIFF_CASES; an
# explicit DIFF_CASES still wins over the level.
os.environ.setdefault("DIFF_CASES", str(examples(full=400, fast=100)))

# CI must not fail at random: by default the property tests draw the same examples on
# every run. HYPOTHESIS_PROFILE=explore draws new ones (run it to hunt for bugs).
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def upstream_server() -> Iterator[FakeUpstream]:
    server = FakeUpstream().start()
    yield server
    server.stop()


@pytest.fixture
def upstream(upstream_server: FakeUpstream) -> Iterator[FakeUpstream]:
    """The fake upstream, reset; the test fails if any request it got broke a provider rule."""
    upstream_server.reset()
    yield upstream_server
    assert not upstream_server.violations, upstream_server.violations
    assert not upstream_server.replies, f"{len(upstream_server.replies)} scripted replies unused"


@pytest.fixture(scope="module")
def native_server() -> Iterator[FakeNative]:
    server = FakeNative().start()
    yield server
    server.stop()


@pytest.fixture
def native(native_server: FakeNative) -> Iterator[FakeNative]:
    """The fake native upstream (Messages, Responses), reset; the test fails if it
    refused any request."""
    native_server.reset()
    yield native_server
    assert not native_server.rejections, native_server.rejections
    assert not native_server.replies, f"{len(native_server.replies)} scripted replies unused"


def pytest_report_header() -> str:
    """Say which level ran, so that a fast run is never mistaken for CI's full one."""
    how = "long property and differential budgets" if FULL else "set CG_TEST_LEVEL=full for CI's"
    return f"test level: {LEVEL} ({how})"
