"""The ``--summary-*`` options of ``run`` and ``proxy``, defined once.

Both commands take the same summary flags with the same names, defaults and order, so
one definition keeps them from drifting apart. What differs is said here side by side
in :data:`RUN` and :data:`PROXY`: how the summary model is reached (``run`` uses its
own API and server; the proxy speaks Chat Completions to a server of its own), where
summaries may be kept (one run, or every process behind the proxy), how strict the
timeout is, and the two options only a long-lived proxy needs (the summary server
and a retention time).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

__all__ = ["PROXY", "RUN", "Decorator", "SummaryFlags", "summary_options"]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

_MODEL_HELP = (
    "Replace each block of turns the cache policy cuts by one summary written by this model"
)


@dataclass(frozen=True)
class SummaryFlags:
    """What one command's summary options say and accept beyond the shared part.

    ``reached`` follows "written by this model" in --summary-model's help (how that
    model is reached); ``timeout`` is what --summary-timeout accepts; ``metavars`` names
    the values URL and SECONDS (else click shows the type); ``server`` adds
    --summary-base-url and --summary-retention.
    """

    reached: str
    store_help: str
    timeout_help: str
    timeout: click.FloatRange
    metavars: bool
    server: bool


RUN = SummaryFlags(
    reached=" (same --api and server; see docs/summaries.md). Default: no summaries.",
    store_help="Where summaries are kept: sqlite:///file.db (relative; sqlite:////abs/file.db), "
    "redis://host:port/db or memory:// (the default: this run only).",
    timeout_help="Seconds a request waits for a new summary before it cuts without one.",
    timeout=click.FloatRange(min=0.1),
    metavars=False,
    server=False,
)
PROXY = SummaryFlags(
    reached=", over Chat Completions at --summary-base-url (default: the upstream) with "
    "--api-key, else $OPENAI_API_KEY (docs/summaries.md).",
    store_help="Where summaries are kept: sqlite:///file.db (relative; sqlite:////abs.db) for "
    "one machine, redis://host:port/db for replicas on several; default: memory of "
    "each process.",
    timeout_help="How long a request waits for a new summary before it is cut without one.",
    timeout=click.FloatRange(min=0, min_open=True),
    metavars=True,
    server=True,
)


def _options(flags: SummaryFlags) -> list[Decorator]:
    """The click options of ``flags``, in the order --help lists them."""
    seconds = "SECONDS" if flags.metavars else None
    options: list[Decorator] = [
        click.option("--summary-model", default=None, help=_MODEL_HELP + flags.reached),
        click.option(
            "--summary-store",
            default=None,
            metavar="URL" if flags.metavars else None,
            help=flags.store_help,
        ),
    ]
    if flags.server:
        options.append(
            click.option("--summary-base-url", default=None, help="Server of --summary-model.")
        )
    options.append(
        click.option(
            "--summary-timeout",
            type=flags.timeout,
            default=60.0,
            show_default=True,
            metavar=seconds,
            help=flags.timeout_help,
        )
    )
    if flags.server:
        options.append(
            click.option(
                "--summary-retention",
                type=click.FloatRange(min=0, min_open=True),
                default=None,
                metavar=seconds,
                help="Drop stored summaries older than this (default: keep them).",
            )
        )
    return options


def summary_options(flags: SummaryFlags) -> Decorator:
    """Decorate a command with its summary options: ``summary_model``, ``summary_store``,
    ``summary_timeout`` (and with ``flags.server``, ``summary_base_url`` and
    ``summary_retention``) become its keyword arguments."""
    options = _options(flags)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):  # click lists the last applied first
            command = option(command)
        return command

    return decorate
