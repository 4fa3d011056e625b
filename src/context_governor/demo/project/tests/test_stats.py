"""GET /api/links/<slug>/stats."""

from freezegun import freeze_time


def test_stats_need_owner(client, make_link):
    slug = make_link()["slug"]
    assert client.get(f"/api/links/{slug}/stats").status_code == 401


def test_stats_of_someone_elses_link_is_404(client, make_link):
    slug = make_link()["slug"]
    resp = client.get(f"/api/links/{slug}/stats", headers={"X-Owner-Token": "not-me"})
    assert resp.status_code == 404


def test_stats_count_clicks(client, make_link, owner):
    slug = make_link()["slug"]
    for _ in range(3):
        client.get(f"/{slug}")
    body = client.get(f"/api/links/{slug}/stats", headers=owner).get_json()
    assert body["clicks"] == 3


def test_stats_last_click_at(client, make_link, owner):
    with freeze_time("2024-03-01 12:00:00"):
        slug = make_link()["slug"]
    with freeze_time("2024-03-02 08:15:30"):
        client.get(f"/{slug}")
    body = client.get(f"/api/links/{slug}/stats", headers=owner).get_json()
    assert body["last_click_at"] == "2024-03-02T08:15:30Z"


def test_stats_daily_histogram(client, make_link, owner):
    with freeze_time("2024-03-01 12:00:00"):
        slug = make_link()["slug"]
    for day, clicks in (("2024-03-03", 2), ("2024-03-05", 1)):
        with freeze_time(f"{day} 09:00:00"):
            for _ in range(clicks):
                client.get(f"/{slug}")
    with freeze_time("2024-03-05 18:00:00"):
        daily = client.get(f"/api/links/{slug}/stats", headers=owner).get_json()["daily"]
    assert len(daily) == 30
    assert daily["2024-03-03"] == 2
    assert daily["2024-03-04"] == 0
    assert daily["2024-03-05"] == 1
    assert list(daily)[-1] == "2024-03-05"
