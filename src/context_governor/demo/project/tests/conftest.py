from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner

from shortlink import create_app

OWNER = "test-owner-token-0001"


@pytest.fixture
def app(tmp_path) -> Iterator[Flask]:
    app = create_app(
        {
            "database": str(tmp_path / "shortlink.sqlite3"),
            "base_url": "https://sho.rt",
            # generous limits: only test_ratelimit.py wants to hit them
            "rate_limit_per_minute": 60_000,
            "rate_limit_burst": 1_000,
        }
    )
    app.config.update(TESTING=True)
    yield app


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    return app.test_cli_runner()


@pytest.fixture
def owner() -> dict[str, str]:
    return {"X-Owner-Token": OWNER}


@pytest.fixture
def make_link(client: FlaskClient, owner: dict[str, str]) -> Callable[..., dict[str, Any]]:
    """POST /api/links and return the JSON body; fails the test on anything but 201."""

    def _make(url: str = "https://example.com/", **fields: Any) -> dict[str, Any]:
        resp = client.post("/api/links", json={"url": url, **fields}, headers=owner)
        assert resp.status_code == 201, resp.get_json()
        body: dict[str, Any] = resp.get_json()
        return body

    return _make
