"""Maintenance commands, registered on the Flask CLI (``flask --app shortlink ...``)."""

from __future__ import annotations

from datetime import datetime, timedelta

import click
from flask import Flask
from flask.cli import with_appcontext

from . import models
from .db import get_db, init_db, schema_version
from .timeutil import ExpiryError, format_ts, parse_duration


def humanize(delta: timedelta) -> str:
    """``timedelta(hours=26, minutes=5)`` -> ``"1d 2h"``; coarse on purpose."""
    seconds = int(delta.total_seconds())
    if seconds < 0:
        return "expired"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m" if minutes else f"{seconds}s"


@click.command("init-db")
@click.option("--force", is_flag=True, help="Recreate the schema even if it exists.")
@with_appcontext
def init_db_command(force: bool) -> None:
    """Create the database schema."""
    conn = get_db()
    if schema_version(conn) and not force:
        click.echo(f"schema version {schema_version(conn)} already present (use --force)")
        return
    init_db(conn)
    click.echo("initialised the database")


@click.command("purge-expired")
@click.option("--grace", default="0s", show_default=True, help="Keep links this long after expiry.")
@with_appcontext
def purge_expired_command(grace: str) -> None:
    """Delete links that have expired."""
    try:
        older_than = parse_duration(grace) if grace not in ("0", "0s") else timedelta(0)
    except ExpiryError as exc:
        raise click.BadParameter(str(exc), param_hint="--grace") from None
    count = models.purge_expired(older_than)
    click.echo(f"purged {count} expired link{'s' if count != 1 else ''}")


@click.command("list-expiring")
@click.option("--within", default="24h", show_default=True, help="Look this far ahead.")
@with_appcontext
def list_expiring_command(within: str) -> None:
    """Show links that expire soon, soonest first."""
    try:
        horizon = datetime.utcnow() + parse_duration(within)  # noqa: DTZ003
    except ExpiryError as exc:
        raise click.BadParameter(str(exc), param_hint="--within") from None
    found = 0
    for link in models.iter_expiring(before=horizon):
        assert link.expires_at is not None
        remaining = link.expires_at - datetime.utcnow()  # noqa: DTZ003
        click.echo(f"{link.slug}\t{format_ts(link.expires_at)}\t{humanize(remaining)}\t{link.url}")
        found += 1
    if not found:
        click.echo(f"no links expire within {within}")


def register_commands(app: Flask) -> None:
    app.cli.add_command(init_db_command)
    app.cli.add_command(purge_expired_command)
    app.cli.add_command(list_expiring_command)


def main() -> None:
    """Entry point of the ``shortlink`` script: ``flask --app shortlink`` in disguise."""
    from flask.cli import FlaskGroup

    from . import create_app

    FlaskGroup(create_app=create_app)()
