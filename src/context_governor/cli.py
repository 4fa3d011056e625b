"""The ``context-governor`` command line.

Exit codes: 0 success, 2 bad input or usage (one line on stderr that points at
the problem, never a traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, BinaryIO

import click

from . import __version__
from .cli_io import Body, dumps, read_bodies
from .errors import ContextGovernorError
from .pipeline import GovernResult, govern
from .profiles import PROFILES
from .render import render_report

EXIT_BAD_INPUT = 2


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
        )
    except ContextGovernorError as exc:
        # Settings that came from the body are named by their field.
        text = str(exc).replace("max_output must", "max_tokens must", 1)
        _fail(f"{body.where}{text}")
        raise  # unreachable


def _output_body(body: Body, result: GovernResult) -> Any:
    return result.messages if body.bare else {**body.data, "messages": result.messages}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="context-governor")
def main() -> None:
    """Govern an LLM agent's context before each model request.

    Keeps the message list legal for the target provider and inside the token
    budget, reports every change, and never modifies the history it was given.
    """


@main.command("govern")
@click.argument("file", default="-", metavar="[FILE|-]")
@click.option(
    "--profile",
    type=click.Choice(sorted(PROFILES)),
    default="openai",
    show_default=True,
    help="Target rules and policy. 'nanobot' reproduces Nanobot 0.2.2 exactly.",
)
@click.option(
    "--model", default=None, help="Model name (selects the tokenizer); default: the body's 'model'."
)
@click.option(
    "--context-window",
    type=click.IntRange(min=1),
    default=None,
    help="Model context window in tokens. Without it nothing is snipped.",
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
    "--json", "as_json", is_flag=True, help="Print the governed body (or bodies) as JSON."
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the full report(s) as JSON to this file.",
)
@click.option("-v", "--verbose", is_flag=True, help="List every action, not a summary.")
def govern_command(
    file: str,
    profile: str,
    model: str | None,
    context_window: int | None,
    max_output: int | None,
    max_tool_result_chars: int | None,
    as_json: bool,
    report_path: str | None,
    verbose: bool,
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
    }
    stream = _open_input(file)
    try:
        bodies = read_bodies(stream)
    except ContextGovernorError as exc:
        _fail(str(exc))
        return
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()

    results = [_govern_body(body, options) for body in bodies]

    if report_path is not None:
        reports = [r.report.to_dict() for r in results]
        payload = reports[0] if len(reports) == 1 and bodies[0].line is None else reports
        try:
            Path(report_path).write_text(dumps(payload, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            _fail(f"{report_path}: {exc.strerror or exc}")

    if as_json:
        jsonl = bodies[0].line is not None
        for body, result in zip(bodies, results, strict=True):
            click.echo(dumps(_output_body(body, result), indent=None if jsonl else 1))
        return
    for body, result in zip(bodies, results, strict=True):
        if len(bodies) > 1:
            click.echo(f"── {body.where.rstrip(': ') or 'body'}")
        click.echo(render_report(result.report, verbose=verbose))


if __name__ == "__main__":  # pragma: no cover
    main()
