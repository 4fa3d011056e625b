"""Expiry: expires_in / expires_at on create, 410 Gone once expired."""

import pytest
from freezegun import freeze_time


@pytest.mark.parametrize("ttl", [60, 600, 86400])
def test_link_with_ttl_redirects(client, make_link, ttl):
    link = make_link(expires_in=ttl)
    resp = client.get(f"/{link['slug']}")
    assert resp.status_code == 302


@pytest.mark.parametrize("duration", ["30m", "2h", "1d", "1h30m"])
def test_duration_strings_are_accepted(client, make_link, duration):
    link = make_link(expires_in=duration)
    assert link["expires_at"].endswith("Z")
    assert client.get(f"/{link['slug']}").status_code == 302


def test_expires_in_seconds_is_reported(make_link):
    link = make_link(expires_in=3600)
    assert 3590 <= link["expires_in_seconds"] <= 3600


def test_expired_link_returns_410(client, make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_in=60)
    with freeze_time("2024-03-01 12:01:01"):
        resp = client.get(f"/{link['slug']}")
    assert resp.status_code == 410
    assert resp.get_json()["error"] == "expired"


def test_expired_link_does_not_count_clicks(client, make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_in="1m")
    with freeze_time("2024-03-01 13:00:00"):
        client.get(f"/{link['slug']}")
        body = client.get(f"/api/links/{link['slug']}").get_json()
    assert body["clicks"] == 0
    assert body["expired"] is True


def test_expires_at_with_offset_is_stored_in_utc(make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_at="2024-03-01T15:00:00+02:00")
    assert link["expires_at"] == "2024-03-01T13:00:00Z"


def test_naive_expires_at_is_taken_as_utc(make_link):
    with freeze_time("2024-03-01 12:00:00"):
        link = make_link(expires_at="2024-03-02T08:30:00")
    assert link["expires_at"] == "2024-03-02T08:30:00Z"


def test_expires_at_in_the_past_is_422(client):
    with freeze_time("2024-03-01 12:00:00"):
        resp = client.post(
            "/api/links",
            json={"url": "https://example.com/", "expires_at": "2024-03-01T11:59:00Z"},
        )
    assert resp.status_code == 422
    assert resp.get_json()["error"] == "invalid_expiry"


def test_both_expiry_fields_is_422(client):
    resp = client.post(
        "/api/links",
        json={
            "url": "https://example.com/",
            "expires_in": 60,
            "expires_at": "2030-01-01T00:00:00Z",
        },
    )
    assert resp.status_code == 422


@pytest.mark.parametrize("bad", [0, -5, "soon", "", True, 1.5, [60]])
def test_bad_expires_in_is_422(client, bad):
    resp = client.post("/api/links", json={"url": "https://example.com/", "expires_in": bad})
    assert resp.status_code == 422
    assert resp.get_json()["error"] == "invalid_expiry"


def test_expiry_beyond_max_ttl_is_422(client):
    resp = client.post("/api/links", json={"url": "https://example.com/", "expires_in": "400d"})
    assert resp.status_code == 422
    assert "too far" in resp.get_json()["message"]
