"""POST /api/links and GET /api/links/<slug>."""

import pytest


def test_create_returns_201_and_short_url(client, owner):
    resp = client.post("/api/links", json={"url": "https://example.com/a/b?c=d"}, headers=owner)
    assert resp.status_code == 201
    body = resp.get_json()
    assert body["url"] == "https://example.com/a/b?c=d"
    assert body["short_url"] == f"https://sho.rt/{body['slug']}"
    assert resp.headers["Location"] == f"https://sho.rt/api/links/{body['slug']}"
    assert body["expires_at"] is None
    assert body["clicks"] == 0


def test_create_generates_owner_token_when_missing(client):
    resp = client.post("/api/links", json={"url": "https://example.com/"})
    assert resp.status_code == 201
    assert len(resp.get_json()["owner_token"]) >= 24


def test_create_keeps_given_owner_token(make_link, owner):
    assert make_link()["owner_token"] == owner["X-Owner-Token"]


@pytest.mark.parametrize("payload", [None, [], "https://example.com", 42])
def test_create_rejects_non_object_body(client, payload):
    resp = client.post("/api/links", json=payload)
    assert resp.status_code == 400
    assert resp.get_json()["error"] == "bad_request"


def test_create_with_custom_slug(make_link):
    body = make_link(slug="launch-2024")
    assert body["slug"] == "launch-2024"


def test_custom_slug_taken_is_409(client, make_link, owner):
    make_link(slug="taken")
    resp = client.post(
        "/api/links", json={"url": "https://example.org/", "slug": "taken"}, headers=owner
    )
    assert resp.status_code == 409
    assert resp.get_json()["error"] == "slug_taken"


@pytest.mark.parametrize("slug", ["ab", "has space", "api", "healthz", "x" * 65, "émoji"])
def test_invalid_custom_slug_is_422(client, slug):
    resp = client.post("/api/links", json={"url": "https://example.com/", "slug": slug})
    assert resp.status_code == 422
    assert resp.get_json()["error"] == "invalid_slug"


def test_generated_slugs_differ(make_link):
    slugs = {make_link(url=f"https://example.com/{n}")["slug"] for n in range(25)}
    assert len(slugs) == 25


def test_get_link_returns_the_link(client, make_link):
    created = make_link(url="https://example.com/x")
    resp = client.get(f"/api/links/{created['slug']}")
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["url"] == "https://example.com/x"
    assert body["expired"] is False


def test_get_unknown_link_is_404(client):
    resp = client.get("/api/links/nope123")
    assert resp.status_code == 404
    assert resp.get_json() == {"error": "not_found", "message": "No such link."}


def test_created_at_is_utc_with_z(make_link):
    assert make_link()["created_at"].endswith("Z")


def test_list_links_needs_owner(client):
    assert client.get("/api/links").status_code == 401


def test_list_links_paginates(client, make_link, owner):
    for n in range(5):
        make_link(url=f"https://example.com/{n}")
    first = client.get("/api/links?limit=2", headers=owner).get_json()
    assert len(first["links"]) == 2
    assert first["next_offset"] == 2
    rest = client.get("/api/links?limit=10&offset=2", headers=owner).get_json()
    assert len(rest["links"]) == 3
    assert rest["next_offset"] is None


def test_delete_link(client, make_link, owner):
    slug = make_link()["slug"]
    assert client.delete(f"/api/links/{slug}", headers=owner).status_code == 204
    assert client.get(f"/api/links/{slug}").status_code == 404


def test_delete_needs_the_right_owner(client, make_link):
    slug = make_link()["slug"]
    resp = client.delete(f"/api/links/{slug}", headers={"X-Owner-Token": "someone-else"})
    assert resp.status_code == 404
