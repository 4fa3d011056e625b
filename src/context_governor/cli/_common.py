"""What the commands share: exit codes, the options several take, reading request bodies.

Request bodies (``govern``, ``lint``) are one JSON body, a bare message list, or JSON
Lines; every problem becomes an InputError whose message points at the place (line,
message index, field), because the CLI prints it as its one-line error.

The ``--summary-*`` options of ``run`` and ``proxy`` are defined once here: both
commands take the same summary flags with the same names, defaults and order. What
differs is said side by side in :data:`RUN` and :data:`PROXY`: how the summary model is
reached (``run`` uses its own API and server; the proxy speaks Chat Completions to a
server of its own), where summaries may be kept (one run, or every process behind the
proxy), how strict the timeout is, and the two options only a long-lived proxy needs
(the summary server and a retention time).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

import click
from click.core import ParameterSource

from ..counting import pool as count_pool
from ..errors import ContextGovernorError, InputError
from ..messages.inputs import MAX_DEPTH

__all__ = [
    "COMPACTIONS",
    "EXIT_BAD_INPUT",
    "EXIT_RUN_FAILED",
    "PROXY",
    "RUN",
    "Body",
    "Decorator",
    "SummaryFlags",
    "count_workers_option",
    "dumps",
    "err",
    "fail",
    "open_input",
    "out",
    "profile_option",
    "read_bodies",
    "read_input",
    "read_tools",
    "summary_options",
    "window_note",
]

#: Bad input or usage: one line on stderr that points at the problem, never a traceback.
EXIT_BAD_INPUT = 2
#: Exit status of a run that did not end with an answer (model error, iteration limit),
#: and of a demo whose requests broke a rule.
EXIT_RUN_FAILED = 1
#: The compaction policies a command can name.
COMPACTIONS = ("cache", "seed")


def err(line: str) -> None:
    click.echo(line, err=True)


def out(text: str) -> None:
    click.echo(text, nl=False)
    sys.stdout.flush()


def _apply_count_workers(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
    """Put ``--count-workers`` in the environment: count_pool reads it there, and so do
    the processes this one starts (the proxy's workers)."""
    if value is not None:
        os.environ[count_pool.WORKERS_ENV] = str(value)


#: ``--count-workers`` of the commands that may govern a long history (govern, run, proxy).
count_workers_option = click.option(
    "--count-workers",
    hidden=True,
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
    choices: Sequence[str], help: str, default: str = "openai", shown_default: str | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--profile`` with ``--provider`` as a hidden alias: one name in every command's
    help, while commands written with the other name keep working. ``shown_default``:
    what the help names as the default when it is not the value itself (the proxy's
    is each route's own provider)."""

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
            show_default=True if shown_default is None else shown_default,
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


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print the one-line error on stderr and exit (2: bad input or usage)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def open_input(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return Path(path).open("rb")
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")
        raise  # unreachable: fail exits


def read_input(path: str) -> list[Body]:
    """Every body in FILE (or stdin), or exit 2 with the reader's one-line error."""
    stream = open_input(path)
    try:
        return read_bodies(stream)
    except ContextGovernorError as exc:
        fail(str(exc))
        raise  # unreachable: fail exits
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def read_tools(path: str) -> Any:
    """The JSON in FILE for ``--tools`` (validate() checks that it is a list of objects)."""
    stream = open_input(path)
    try:
        return json.loads(stream.read().decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        fail(f"--tools {path}: not valid JSON ({exc})")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


# --------------------------------------------------------------------------- bodies


@dataclass(slots=True)
class Body:
    """One request to govern: the parsed body and where it came from."""

    data: dict[str, Any]
    bare: bool  # the input was a bare message list, so output is one too
    line: int | None = None  # 1-based line for JSON Lines input

    @property
    def where(self) -> str:
        return f"line {self.line}: " if self.line is not None else ""


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError("input", f"not valid UTF-8 (byte {exc.start})") from None


def _as_body(value: Any, line: int | None) -> Body:
    if isinstance(value, list):
        return Body({"messages": value}, bare=True, line=line)
    if isinstance(value, dict):
        if "messages" not in value:
            where = f"line {line}" if line is not None else "input"
            raise InputError(where, "a request body needs a 'messages' list")
        return Body(value, bare=False, line=line)
    where = f"line {line}" if line is not None else "input"
    raise InputError(
        where,
        f"expected a request body object, a list of messages or JSON Lines of bodies, "
        f"got {type(value).__name__}",
    )


def _loads(text: str, where: str) -> Any:
    """json.loads, except that input nested too deeply for the parser (it recurses once
    per level) is an InputError, not a RecursionError traceback."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(
            where, f"nested too deeply to parse (a message may nest at most {MAX_DEPTH} levels)"
        ) from None


def read_bodies(stream: BinaryIO) -> list[Body]:
    """Parse the whole input; JSON Lines is tried only when it is not one JSON document."""
    text = _decode(stream.read())
    if not text.strip():
        raise InputError("input", "empty; expected JSON")
    try:
        return [_as_body(_loads(text, "input"), None)]
    except json.JSONDecodeError as whole_error:
        lines = [(n, s) for n, s in enumerate(text.splitlines(), 1) if s.strip()]
        if len(lines) < 2:
            raise InputError(
                "input",
                f"not JSON: {whole_error.msg} at line {whole_error.lineno} "
                f"column {whole_error.colno}",
            ) from None
    bodies = []
    for number, line in lines:
        try:
            value = _loads(line, f"line {number}")
        except json.JSONDecodeError as exc:
            raise InputError(
                f"line {number}", f"not JSON: {exc.msg} at column {exc.colno}"
            ) from None
        bodies.append(_as_body(value, number))
    return bodies


def dumps(value: Any, *, indent: int | None = None) -> str:
    """JSON text that can always be written out, even with lone surrogates inside."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, indent=indent)
    return text


# --------------------------------------------------------------------------- summaries

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
    reached=", over Chat Completions at the summary-base-url setting (default: the "
    "upstream) with --api-key, else $OPENAI_API_KEY (docs/summaries.md).",
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
            hidden=True,
            default=None,
            metavar="URL" if flags.metavars else None,
            help=flags.store_help,
        ),
    ]
    if flags.server:
        options.append(
            click.option(
                "--summary-base-url",
                hidden=True,
                default=None,
                help="Server of --summary-model.",
            )
        )
    options.append(
        click.option(
            "--summary-timeout",
            hidden=True,
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
                hidden=True,
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
