"""Shared fixtures. The fake upstream is a real HTTP server, started once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_upstream import FakeUpstream


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
