"""``context-governor govern``: govern chat-completions request bodies from a file or stdin."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..errors import ContextGovernorError
from ..formats import RequestResult, govern_request
from ..profiles import PROFILES
from ..report import render_report
from ._common import (
    Body,
    count_workers_option,
    dumps,
    fail,
    profile_option,
    read_input,
    window_note,
)
from ._config import compaction_for

__all__ = ["EXIT_NOT_OK", "GOVERN_EXIT_HELP", "govern_command"]

#: The fields of a Chat Completions body that name its output reserve.
_RESERVES = ("max_tokens", "max_completion_tokens")

#: govern: a governed body is over its budget or still breaks a rule of its provider.
EXIT_NOT_OK = 1

GOVERN_EXIT_HELP = """\b
Exit status:
  0  every governed body fits its budget and passes its provider's rules
  1  a body is over budget or still breaks a rule (output printed anyway;
     the report's notes say why)
  2  bad input or usage (a one-line error on stderr)"""


def _govern_body(body: Body, options: dict[str, Any]) -> RequestResult:
    """The body governed as the library and the proxy govern a Chat Completions body
    (govern_request(api="openai")); ``--max-output`` stands in for the body's reserve."""
    data = body.data
    max_output = options["max_output"]
    if max_output is not None:
        data = {k: v for k, v in data.items() if k not in _RESERVES}
    try:
        result = govern_request(
            data,
            api="openai",
            profile=options["profile"],
            model=options["model"],
            context_window=options["context_window"],
            max_output=max_output,
            max_tool_result_chars=options["max_tool_result_chars"],
            compaction=options.get("compaction", "cache"),
        )
    except ContextGovernorError as exc:
        # Settings that came from the body are named by their field.
        text = str(exc).replace("max_output must", "max_tokens must", 1)
        fail(f"{body.where}{text}")
        raise  # unreachable
    return result


def _write_html(path: str, file: str, bodies: list[Body], results: list[RequestResult]) -> None:
    """The offline page of these requests (observe/_page.py), one file."""
    from ..observe import offline_data, offline_page

    requests = [
        ({"messages": b.data["messages"]}, {"messages": r.messages}, r.report)
        for b, r in zip(bodies, results, strict=True)
    ]
    name = "stdin" if file == "-" else Path(file).name
    try:
        Path(path).write_text(offline_page(offline_data(requests, name=name)), encoding="utf-8")
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")


def _output_body(body: Body, result: RequestResult) -> Any:
    """The governed body as the input had it: a bare list stays one; a reserve field
    --max-output stood in for is kept as the body had it, in its place."""
    out = result.body
    if body.bare:
        return out["messages"]
    kept = {k: v for k, v in body.data.items() if k in _RESERVES and k not in out}
    if not kept:
        return out
    return {k: out.get(k, kept.get(k)) for k in (*body.data, *out) if k in out or k in kept}


@click.command("govern", epilog=GOVERN_EXIT_HELP)
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
        "compaction": compaction_for(click.get_current_context(), compaction),
    }
    bodies = read_input(file)
    results = [_govern_body(body, options) for body in bodies]

    if report_path is not None:
        reports = [r.report.to_dict() for r in results]
        payload = reports[0] if len(reports) == 1 and bodies[0].line is None else reports
        try:
            Path(report_path).write_text(dumps(payload, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            fail(f"{report_path}: {exc.strerror or exc}")

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
