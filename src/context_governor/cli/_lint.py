"""``context-governor lint``: check request bodies against a provider's rules."""

from __future__ import annotations

import sys

import click

from ..errors import ContextGovernorError
from ..providers import CATALOG
from ._common import dumps, fail, profile_option, read_input, read_tools

__all__ = ["EXIT_VIOLATIONS", "LINT_HELP", "lint_command"]

#: lint: at least one violation.
EXIT_VIOLATIONS = 1


def _providers_help() -> str:
    """The provider list for ``lint --help``, built from the catalog so it never drifts."""
    width = max(len(name) for name in CATALOG)
    return "\n".join(f"  {p.name:<{width}}  {p.title}" for p in CATALOG.values())


LINT_HELP = f"""Check request bodies in FILE (or stdin) against a provider's rules.

FILE holds the same inputs as govern: a request body, a bare list of messages,
or JSON Lines of bodies. The model is --model, else each body's 'model' (some
rules hold for some models only). Prints a table of violations (message index,
rule, the provider's own error text, the fix) and a one-line summary; --json
prints one JSON document instead. When stdout is not a terminal (a pipe, a
file) the table is plain text: one violation per line, never wrapped.

The message number is the message's position (from 0) in the list you gave.
A provider error quoting its own index ("messages.1") counts the provider's
wire format, where system messages are sent apart: the row says so.

\b
Exit status:
  0  no violations
  1  at least one violation
  2  bad input or usage (a one-line error on stderr)

\b
Providers:
{_providers_help()}

\b
Examples:
  context-governor lint examples/coding-session.json
  context-governor govern s.json --profile anthropic --json \\
    | context-governor lint - --profile anthropic
  context-governor lint --list-rules --profile anthropic --model claude-opus-4-6
"""


@click.command("lint", help=LINT_HELP)
@click.argument("file", default="-", metavar="[FILE|-]")
@profile_option(list(CATALOG), help="Whose rules to check (the provider of a govern profile).")
@click.option("--model", default=None, help="Model name; default: each body's 'model'.")
@click.option("--json", "as_json", is_flag=True, help="Print the violations as JSON.")
@click.option(
    "--tools",
    "tools_file",
    default=None,
    metavar="FILE",
    help="JSON list of the request's tool definitions; default: each body's 'tools' (none "
    "for a bare message list: the rules that depend on them are not checked).",
)
@click.option(
    "--list-rules",
    is_flag=True,
    help="Print the rules checked for --profile/--model (and those not checked, with why); "
    "reads no input.",
)
def lint_command(
    file: str,
    profile: str,
    model: str | None,
    as_json: bool,
    tools_file: str | None,
    list_rules: bool,
) -> None:
    provider = profile
    # Imported here so that rich's import time is not paid by every govern call.
    from rich.console import Console

    from ._lint_render import (
        lint_body,
        lint_json,
        lint_lines,
        lint_summary,
        lint_table,
        render_rules,
        rules_heading,
        rules_json,
        rules_lines,
    )

    # A table for a person at a terminal; plain lines (no box, no wrapping) for a pipe.
    console = Console()
    if list_rules:
        listing = rules_json(provider, model)
        if as_json:
            click.echo(dumps(listing, indent=1))
        else:
            click.echo(rules_heading(listing))  # one line even in a narrow terminal
            if console.is_terminal:
                console.print(render_rules(listing))
            else:
                click.echo("\n".join(rules_lines(listing)))
        return
    tools = None if tools_file is None else read_tools(tools_file)
    results = []
    for number, body in enumerate(read_input(file), 1):
        try:
            results.append(lint_body(body, number, provider, model, tools))
        except ContextGovernorError as exc:
            fail(f"{body.where}{exc}")
    failed = any(r.violations for r in results)
    if as_json:
        click.echo(dumps(lint_json(results), indent=1))
    else:
        if failed and console.is_terminal:
            console.print(lint_table(results))
        elif failed:
            click.echo("\n".join(lint_lines(results)))
        click.echo(lint_summary(results))  # never wrapped: scripts grep this line
    if failed:
        sys.exit(EXIT_VIOLATIONS)
