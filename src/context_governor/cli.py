"""The ``context-governor`` command line.

Exit codes: 0 success; 1 the result is not usable as it stands (``govern``: over
the budget or a provider rule still broken; ``lint``: violations; ``run``: no
answer); 2 bad input or usage (one line on stderr that points at the problem,
never a traceback).

Every command names its target ``--profile`` (``--provider`` is kept as a hidden
alias) and finds the context window the same way: ``--context-window``, else
the model's published window (windows.py), else none, which a line on stderr
says.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import click
from click.core import ParameterSource

from . import __version__
from .cli_io import Body, dumps, read_bodies
from .counting import pool as count_pool
from .errors import ContextGovernorError
from .pipeline import GovernResult, govern
from .profiles import PROFILES
from .providers import CATALOG
from .report import render_report

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_NOT_OK",
    "EXIT_VIOLATIONS",
    "GOVERN_EXIT_HELP",
    "LINT_HELP",
    "count_workers_option",
    "govern_command",
    "lint_command",
    "main",
    "profile_option",
    "window_note",
]

EXIT_VIOLATIONS = 1
#: govern: a governed body is over its budget or still breaks a rule of its provider.
EXIT_NOT_OK = 1
EXIT_BAD_INPUT = 2

GOVERN_EXIT_HELP = """\b
Exit status:
  0  every governed body fits its budget and passes its provider's rules
  1  a body is over budget or still breaks a rule (output printed anyway;
     the report's notes say why)
  2  bad input or usage (a one-line error on stderr)"""


def _apply_count_workers(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
    """Put ``--count-workers`` in the environment: count_pool reads it there, and so do
    the processes this one starts (the proxy's workers)."""
    if value is not None:
        os.environ[count_pool.WORKERS_ENV] = str(value)


#: ``--count-workers`` of the commands that may govern a long history (govern, run, proxy).
count_workers_option = click.option(
    "--count-workers",
    type=click.IntRange(min=0),
    default=None,
    envvar=count_pool.WORKERS_ENV,
    show_envvar=True,
    expose_value=False,
    callback=_apply_count_workers,
    metavar="N",
    help="Processes that count a long history's tokens alongside this one (used when over "
    f"{count_pool.MIN_CHARS // 1_000_000} million characters are not counted yet; started "
    "on first need, then kept). Default: one fewer than the cores, at most "
    f"{count_pool.MAX_WORKERS}; 0 counts in this process only.",
)


def profile_option(
    choices: Sequence[str], help: str, default: str = "openai"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--profile`` with ``--provider`` as a hidden alias: one name in every command's
    help, while commands written with the other name keep working."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(*args: Any, provider_alias: str | None = None, **kwargs: Any) -> Any:
            if provider_alias is not None:
                source = click.get_current_context().get_parameter_source("profile")
                if source is ParameterSource.COMMANDLINE and kwargs["profile"] != provider_alias:
                    raise click.UsageError("give --profile or its old name --provider, not both")
                kwargs["profile"] = provider_alias
            return command(*args, **kwargs)

        hidden = click.option(
            "--provider", "provider_alias", type=click.Choice(list(choices)), hidden=True
        )
        shown = click.option(
            "--profile",
            type=click.Choice(list(choices)),
            default=default,
            show_default=True,
            help=help,
        )
        return shown(hidden(wrapper))

    return decorate


def window_note(reports: Sequence[Any]) -> str | None:
    """The stderr line for reports governed without any window (nothing was cut), or None."""
    models = sorted({r.model or "" for r in reports if r.window_source == "none"})
    if not models:
        return None
    named = ", ".join(repr(m) for m in models if m)
    why = f"no known window for model {named}" if named else "no model given"
    return f"note: no context window ({why}): nothing was cut; set --context-window"


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _open_input(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return Path(path).open("rb")
    except OSError as exc:
        _fail(f"{path}: {exc.strerror or exc}")
        raise  # unreachable: _fail exits


def _read_input(path: str) -> list[Body]:
    """Every body in FILE (or stdin), or exit 2 with the reader's one-line error."""
    stream = _open_input(path)
    try:
        return read_bodies(stream)
    except ContextGovernorError as exc:
        _fail(str(exc))
        raise  # unreachable: _fail exits
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _read_tools(path: str) -> Any:
    """The JSON in FILE for ``--tools`` (validate() checks that it is a list of objects)."""
    stream = _open_input(path)
    try:
        return json.loads(stream.read().decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        _fail(f"--tools {path}: not valid JSON ({exc})")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _govern_body(body: Body, options: dict[str, Any]) -> GovernResult:
    data = body.data
    max_output = options["max_output"]
    if max_output is None:
        max_output = data.get("max_tokens", data.get("max_completion_tokens"))
    try:
        return govern(
            data["messages"],
            tools=data.get("tools"),
            profile=options["profile"],
            model=options["model"] or data.get("model"),
            context_window=options["context_window"],
            max_output=max_output,
            max_tool_result_chars=options["max_tool_result_chars"],
            compaction=options.get("compaction", "cache"),
        )
    except ContextGovernorError as exc:
        # Settings that came from the body are named by their field.
        text = str(exc).replace("max_output must", "max_tokens must", 1)
        _fail(f"{body.where}{text}")
        raise  # unreachable


def _write_html(path: str, file: str, bodies: list[Body], results: list[GovernResult]) -> None:
    """The offline page of these requests (observe/page.py), one file."""
    from .observe.page import offline_data, offline_page

    requests = [
        ({"messages": b.data["messages"]}, {"messages": r.messages}, r.report)
        for b, r in zip(bodies, results, strict=True)
    ]
    name = "stdin" if file == "-" else Path(file).name
    try:
        Path(path).write_text(offline_page(offline_data(requests, name=name)), encoding="utf-8")
    except OSError as exc:
        _fail(f"{path}: {exc.strerror or exc}")


def _output_body(body: Body, result: GovernResult) -> Any:
    return result.messages if body.bare else {**body.data, "messages": result.messages}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="context-governor")
def main() -> None:
    """Govern an LLM agent's context before each model request.

    Keeps the message list legal for the target provider and inside the token
    budget, reports every change, and never modifies the history it was given.
    """


@main.command("govern", epilog=GOVERN_EXIT_HELP)
@click.argument("file", default="-", metavar="[FILE|-]")
@profile_option(
    sorted(PROFILES),
    help="Target rules and policy. 'nanobot' reproduces Nanobot 0.2.2 exactly.",
)
@click.option(
    "--model",
    default=None,
    help="Model name (selects the tokenizer, the rules and the known window); "
    "default: the body's 'model'.",
)
@click.option(
    "--context-window",
    type=click.IntRange(min=0),
    default=None,
    help="Model context window in tokens; default: the model's published window when it "
    "is a well-known model, else none (nothing is cut; a note on stderr says so). "
    "0 means no window with --profile nanobot (the seed's reading); other profiles refuse it.",
)
@click.option(
    "--max-output",
    type=click.IntRange(min=0),
    default=None,
    help="Tokens reserved for the answer; default: the body's max_tokens, else 4096.",
)
@click.option(
    "--max-tool-result-chars",
    type=click.IntRange(min=100),
    default=None,
    help="Truncate any single tool result longer than this (off by default).",
)
@click.option(
    "--compaction",
    type=click.Choice(["cache", "seed"]),
    default="cache",
    show_default=True,
    help="How the budget is spent: 'cache' compacts rarely and in big steps so the "
    "provider's prompt cache keeps hitting; 'seed' is Nanobot's microcompact + snip on "
    "every call. The nanobot profile always uses 'seed'.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the governed body (or bodies) as JSON."
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the full report(s) as JSON to this file.",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write a self-contained page of the requests: sizes before and after, each "
    "request's report, and what was sent beside what the model gets, changes marked.",
)
@count_workers_option
@click.option("-v", "--verbose", is_flag=True, help="List every action, not a summary.")
def govern_command(
    file: str,
    profile: str,
    model: str | None,
    context_window: int | None,
    max_output: int | None,
    max_tool_result_chars: int | None,
    compaction: str,
    as_json: bool,
    report_path: str | None,
    verbose: bool,
    html_path: str | None = None,
) -> None:
    """Govern a chat-completions request read from FILE (or stdin).

    FILE holds a request body (an object with 'messages' and optional 'tools',
    'max_tokens', 'model'), a bare list of messages, or JSON Lines of bodies.
    By default prints what was changed and the token figures; --json prints the
    governed request instead.

    \b
    Examples:
      context-governor govern examples/coding-session.json --context-window 32000
      context-governor govern session.json --json > governed.json
      cat bodies.jsonl | context-governor govern - --profile nanobot --report r.json
    """
    options = {
        "profile": profile,
        "model": model,
        "context_window": context_window,
        "max_output": max_output,
        "max_tool_result_chars": max_tool_result_chars,
        "compaction": compaction,
    }
    bodies = _read_input(file)
    results = [_govern_body(body, options) for body in bodies]

    if report_path is not None:
        reports = [r.report.to_dict() for r in results]
        payload = reports[0] if len(reports) == 1 and bodies[0].line is None else reports
        try:
            Path(report_path).write_text(dumps(payload, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            _fail(f"{report_path}: {exc.strerror or exc}")

    if html_path is not None:
        _write_html(html_path, file, bodies, results)

    if as_json:
        jsonl = bodies[0].line is not None
        for body, result in zip(bodies, results, strict=True):
            click.echo(dumps(_output_body(body, result), indent=None if jsonl else 1))
    else:
        for body, result in zip(bodies, results, strict=True):
            if len(bodies) > 1:
                click.echo(f"── {body.where.rstrip(': ') or 'body'}")
            click.echo(render_report(result.report, verbose=verbose))
    note = window_note([r.report for r in results])
    if note is not None:
        click.echo(note, err=True)
    if not all(r.report.ok for r in results):
        sys.exit(EXIT_NOT_OK)


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


@main.command("lint", help=LINT_HELP)
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

    from .lint_render import (
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
    tools = None if tools_file is None else _read_tools(tools_file)
    results = []
    for number, body in enumerate(_read_input(file), 1):
        try:
            results.append(lint_body(body, number, provider, model, tools))
        except ContextGovernorError as exc:
            _fail(f"{body.where}{exc}")
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


# The agent commands (run, demo) and the proxy register themselves on `main`.
from . import cli_agent, cli_proxy  # noqa: E402, F401

if __name__ == "__main__":  # pragma: no cover
    main()
