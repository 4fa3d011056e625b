from freezegun import freeze_time


def test_init_db_is_idempotent(runner):
    result = runner.invoke(args=["init-db"])
    assert result.exit_code == 0
    assert "already present" in result.output


def test_purge_expired(runner, make_link, client):
    with freeze_time("2024-03-01 12:00:00"):
        old = make_link(expires_in="1h")["slug"]
        keep = make_link(expires_in="7d")["slug"]
        forever = make_link()["slug"]
    with freeze_time("2024-03-02 12:00:00"):
        result = runner.invoke(args=["purge-expired"])
    assert result.exit_code == 0, result.output
    assert "purged 1 expired link" in result.output
    assert client.get(f"/api/links/{old}").status_code == 404
    assert client.get(f"/api/links/{keep}").status_code == 200
    assert client.get(f"/api/links/{forever}").status_code == 200


def test_purge_bad_grace(runner):
    result = runner.invoke(args=["purge-expired", "--grace", "soon"])
    assert result.exit_code == 2
    assert "Invalid value for --grace" in result.output


def test_list_expiring(runner, make_link):
    with freeze_time("2024-03-01 12:00:00"):
        soon = make_link(url="https://example.com/soon", expires_in="3h")["slug"]
        make_link(url="https://example.com/later", expires_in="3d")
        result = runner.invoke(args=["list-expiring", "--within", "1d"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{soon}\t2024-03-01T15:00:00Z\t3h 0m\t")


def test_list_expiring_none(runner):
    result = runner.invoke(args=["list-expiring"])
    assert result.output.strip() == "no links expire within 24h"


def test_humanize():
    from datetime import timedelta

    from shortlink.cli import humanize

    assert humanize(timedelta(hours=26, minutes=5)) == "1d 2h"
    assert humanize(timedelta(minutes=90)) == "1h 30m"
    assert humanize(timedelta(seconds=42)) == "42s"
    assert humanize(timedelta(seconds=-1)) == "expired"
