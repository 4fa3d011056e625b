"""GET /<slug>: the redirect itself."""


def test_redirects_with_302(client, make_link):
    slug = make_link(url="https://example.com/target")["slug"]
    resp = client.get(f"/{slug}")
    assert resp.status_code == 302
    assert resp.headers["Location"] == "https://example.com/target"


def test_unknown_slug_is_404(client):
    resp = client.get("/doesnotexist")
    assert resp.status_code == 404


def test_redirect_counts_a_click(client, make_link):
    slug = make_link()["slug"]
    client.get(f"/{slug}")
    client.get(f"/{slug}")
    assert client.get(f"/api/links/{slug}").get_json()["clicks"] == 2


def test_redirect_keeps_query_and_fragment(client, make_link):
    slug = make_link(url="https://example.com/p?utm_source=x#top")["slug"]
    assert client.get(f"/{slug}").headers["Location"] == "https://example.com/p?utm_source=x#top"


def test_healthz(client):
    resp = client.get("/healthz")
    assert resp.status_code == 200
    assert resp.get_json()["status"] == "ok"


def test_post_to_slug_is_405(client, make_link):
    slug = make_link()["slug"]
    assert client.post(f"/{slug}").status_code == 405
