"""``context-governor run``: the agent runner on the command line.

``run`` drives a real model with the built-in tools over a workspace, in the API the
server speaks (``--api``: Chat Completions, Anthropic Messages or OpenAI Responses),
and prints, for every model call, what governance did to the request. The runner, the
HTTP client and the tools are imported inside the command, so ``context-governor
govern`` does not pay for them at start-up.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click
from click.core import ParameterSource

from ..errors import ContextGovernorError
from ..profiles import PROFILES
from ._common import (
    COMPACTIONS,
    EXIT_RUN_FAILED,
    RUN,
    count_workers_option,
    dumps,
    err,
    fail,
    out,
    profile_option,
    summary_options,
)
from ._config import compaction_for

if TYPE_CHECKING:
    from ..messages import Message
    from ..runner import AgentRunner, RunResult

__all__ = [
    "APIS",
    "API_SPECS",
    "DEFAULT_SYSTEM",
    "EXIT_INTERRUPTED",
    "REASONING_EFFORTS",
    "ApiSpec",
    "read_history",
    "run_command",
    "write_history",
]

EXIT_INTERRUPTED = 130
DEFAULT_SYSTEM = (
    "You are a coding agent. The workspace is your current directory; use the tools "
    "(read_file, list_dir, grep, find_files, exec) to look before you answer, keep "
    "tool calls focused, and answer concisely."
)
#: --api's names: govern_request's (formats/_base.py APIS) for the APIs ``run`` has a
#: client for.
APIS = ("openai", "anthropic", "responses")
#: Old names of --api, read as the new one with a warning until the next release.
DEPRECATED_APIS = {"chat": "openai"}
#: The summarizer's name (a part of a stored summary's key) for a model behind each API:
#: Chat Completions was "chat" when the first summaries were stored, and the proxy's
#: (proxy/_summaries.py) has that name too, so run and the proxy share them.
_SUMMARIZER_API = {"openai": "chat"}
REASONING_EFFORTS = ("minimal", "low", "medium", "high")


def _chat_client(model: str, url: str | None, *, stream: bool, on_retry: Any, **_: Any) -> Any:
    from ..llm import OpenAICompatClient

    return OpenAICompatClient(model, base_url=url, stream=stream, on_retry=on_retry)


def _anthropic_client(
    model: str,
    url: str | None,
    *,
    stream: bool,
    thinking: int | str | None,
    on_retry: Any,
    **_: Any,
) -> Any:
    from ..llm import AnthropicClient

    return AnthropicClient(model, base_url=url, stream=stream, thinking=thinking, on_retry=on_retry)


def _responses_client(
    model: str,
    url: str | None,
    *,
    stream: bool,
    effort: str | None,
    include_reasoning: bool,
    on_retry: Any,
    **_: Any,
) -> Any:
    from ..llm import ResponsesClient

    reasoning = {"effort": effort} if effort is not None else None
    return ResponsesClient(
        model,
        base_url=url,
        stream=stream,
        reasoning=reasoning,
        include_reasoning=include_reasoning,
        on_retry=on_retry,
    )


@dataclass(frozen=True)
class ApiSpec:
    """What differs between the APIs on the command line: where the server and key
    come from, the profile used when none is given, what a server is called, the
    model client (imported when made: ``govern`` does not pay for it) and which of
    the reasoning settings it takes."""

    url_env: str
    key_env: str
    default_profile: str
    server: str
    default_host: str
    #: (model, url, stream=, thinking=, effort=, include_reasoning=, on_retry=) -> client
    client: Callable[..., Any] = _chat_client
    #: takes --thinking (Anthropic's thinking budget)
    thinking: bool = False
    #: takes --reasoning-effort and --no-encrypted-reasoning (the Responses API's)
    reasoning: bool = False
    #: the client's base URL holds the API version (OpenAI's SDKs: .../v1); Anthropic's
    #: does not (its SDK adds /v1/messages)
    version_in_url: bool = True


API_SPECS = {
    "openai": ApiSpec(
        "OPENAI_BASE_URL", "OPENAI_API_KEY", "openai", "an OpenAI-compatible", "OpenAI"
    ),
    "anthropic": ApiSpec(
        "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "anthropic", "an Anthropic-compatible",
        "Anthropic", _anthropic_client, thinking=True, version_in_url=False,
    ),
    "responses": ApiSpec(
        "OPENAI_BASE_URL", "OPENAI_API_KEY", "openai", "a Responses API", "OpenAI",
        _responses_client, reasoning=True,
    ),
}  # fmt: skip


class _ApiChoice(click.Choice):  # type: ignore[type-arg]
    """--api's names; an old one (DEPRECATED_APIS) is read as its new one, said on stderr
    and as a DeprecationWarning."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value in DEPRECATED_APIS:
            new = DEPRECATED_APIS[value]
            said = f"--api {value} is deprecated: use --api {new} (accepted until the next release)"
            click.echo(f"warning: {said}", err=True)
            warnings.warn(said, DeprecationWarning, stacklevel=2)
            return new
        return super().convert(value, param, ctx)


# --------------------------------------------------------------------------- history file


def read_history(path: Path) -> list[Message]:
    """A saved conversation: a JSON list of messages or a body with ``messages``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ContextGovernorError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ContextGovernorError(f"{path}: not JSON ({exc})") from None
    messages = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(messages, list):
        raise ContextGovernorError(
            f"{path}: expected a list of messages or an object with 'messages'"
        )
    return messages


def write_history(path: Path, messages: list[Message]) -> None:
    """Save atomically: an interrupted write must not destroy the conversation."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(messages, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------- run


def _summary(result: RunResult) -> str:
    usage = result.usage
    tools = ", ".join(result.tools_used) or "none"
    cached = f" ({usage.cached_tokens:,} cached)" if usage.cached_tokens else ""
    return (
        f"{result.stop_reason} after {result.model_calls} model call(s); tools: {tools}; "
        f"tokens: {usage.prompt_tokens:,} prompt{cached}, {usage.completion_tokens:,} completion"
    )


def _run_failure(result: RunResult, api: str = "openai") -> str:
    from ..llm import ModelConnectionError

    spec = API_SPECS[api]
    if isinstance(result.exception, ModelConnectionError):
        return (
            f"{result.error}; is the server running? Point --base-url (or {spec.url_env}) "
            f"at {spec.server} server"
        )
    if result.stop_reason == "max_iterations":
        return (
            f"stopped after {result.model_calls} model calls (--max-iterations) without an answer"
        )
    return result.error or result.stop_reason


def _check_budget(context_window: int | None, max_output: int | None) -> None:
    """A window that leaves no room for the prompt is a usage error, not a run to start."""
    from ..pipeline import DEFAULT_MAX_OUTPUT
    from ..stages import SAFETY_BUFFER

    if context_window is None:
        return
    reserve = max_output if max_output is not None else DEFAULT_MAX_OUTPUT
    if context_window - reserve - SAFETY_BUFFER <= 0:
        fail(
            f"--context-window {context_window} leaves no room for the prompt: the budget is "
            f"the window - {reserve} (max output) - {SAFETY_BUFFER} (safety buffer)"
        )


def _server_url(spec: ApiSpec, base_url: str | None) -> str | None:
    """--base-url, else the API's URL variable, else None (the API's own host, for which
    its key must be set): a usage error when neither a server nor that key is given."""
    url = base_url or os.environ.get(spec.url_env) or None
    if url is None and not os.environ.get(spec.key_env):
        fail(
            f"no server given: set {spec.key_env} for {spec.default_host}, or --base-url for "
            f"another server"
        )
    return None if url is None else as_client_takes_it(spec, url)


def as_client_takes_it(spec: ApiSpec, url: str) -> str:
    """``url`` with or without the API version, as the API's client takes it, so either
    spelling works (the proxy's --upstream takes both too): a URL with no path gets
    /v1 where the client's base holds the version; a URL ending in /v1 loses it where
    the client adds it (Anthropic's)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if spec.version_in_url:
        return url if path else parts._replace(path="/v1").geturl()
    return parts._replace(path=path.removesuffix("/v1")).geturl()


def _check_reasoning(spec: ApiSpec, effort: str | None, no_encrypted_reasoning: bool) -> None:
    """The Responses API's reasoning options are a usage error with any other --api."""
    if effort is not None and not spec.reasoning:
        fail("--reasoning-effort is a setting of --api responses (use --thinking for anthropic)")
    if no_encrypted_reasoning and not spec.reasoning:
        fail("--no-encrypted-reasoning is a setting of --api responses")


def _thinking(value: str | None, api: str, max_output: int | None) -> int | str | None:
    """--thinking as the Anthropic client's setting; a usage error when it cannot work."""
    from ..llm import MIN_THINKING_BUDGET
    from ..pipeline import DEFAULT_MAX_OUTPUT

    if value is None or value == "off":
        return None
    if not API_SPECS[api].thinking:
        fail("--thinking is a setting of --api anthropic (use --reasoning-effort for responses)")
    if value == "adaptive":
        return value
    try:
        budget = int(value)
    except ValueError:
        fail(f"--thinking {value!r}: expected a token budget, 'adaptive' or 'off'")
    reserve = max_output if max_output is not None else DEFAULT_MAX_OUTPUT
    if budget < MIN_THINKING_BUDGET or budget >= reserve:
        fail(
            f"--thinking {budget}: the budget must be at least {MIN_THINKING_BUDGET} and below "
            f"the output reserve (--max-output, {reserve})"
        )
    return budget


def _make_client(
    api: str,
    model: str,
    url: str | None,
    *,
    stream: bool,
    thinking: int | str | None,
    effort: str | None,
    include_reasoning: bool,
    on_retry: Any,
) -> Any:
    """The model client for ``--api`` (imported here: ``govern`` does not pay for it)."""
    return API_SPECS[api].client(
        model,
        url,
        stream=stream,
        thinking=thinking,
        effort=effort,
        include_reasoning=include_reasoning,
        on_retry=on_retry,
    )


def _compaction(
    compaction: str,
    summary_model: str | None,
    store: str | None,
    timeout: float,
    api: str,
    url: str | None,
) -> Any:
    """``compaction``, or the cache policy with summaries by ``summary_model`` (a client of
    the same ``api`` and server). ContextGovernorError on settings that do not go together."""
    chosen = compaction_for(click.get_current_context(), compaction)
    if summary_model is None:
        if store is not None:
            fail("--summary-store needs --summary-model")
        return chosen
    if compaction != "cache":
        fail("--summary-model needs --compaction cache (summaries replace the cache policy's cuts)")
    from ..policies import CompactionPolicy
    from ..summary import Summaries, model_summarizer, open_store

    def make_client() -> Any:
        return _make_client(
            api,
            summary_model,
            url,
            stream=False,
            thinking=None,
            effort=None,
            include_reasoning=False,
            on_retry=None,
        )

    wire = _SUMMARIZER_API.get(api, api)
    summarizer = model_summarizer(make_client, name=f"{wire}:{summary_model}")
    base = chosen if isinstance(chosen, CompactionPolicy) else CompactionPolicy()
    return replace(
        base,
        summary=Summaries(
            summarizer, store=None if store is None else open_store(store), timeout=timeout
        ),
    )


async def _run_agent(runner: AgentRunner, history: list[Message], save: Path | None) -> RunResult:
    try:
        return await runner.run(history)
    finally:
        # Also on Ctrl-C: what happened is saved, and the next run repairs it.
        if save is not None:
            try:
                write_history(save, history + runner.new_messages)
            except OSError as exc:
                err(f"error: cannot save the history to {save}: {exc.strerror or exc}")


@click.command("run")
@click.argument("task")
@click.option("--model", required=True, help="Model name, as the server knows it.")
@click.option(
    "--api",
    type=_ApiChoice(APIS),
    default="openai",
    show_default=True,
    help="The API the server speaks: 'openai' (OpenAI Chat Completions, /chat/completions; "
    "'chat', its old name, is accepted until the next release), "
    "'anthropic' (Anthropic Messages, /v1/messages: Anthropic and compatible servers) or "
    "'responses' (OpenAI Responses, /responses, stateless: store=false). Each request is "
    "governed in that format, with its own rules.",
)
@click.option(
    "--base-url",
    default=None,
    help="API base URL, with or without its /v1 (as for the proxy's --upstream). openai "
    "and responses: default $OPENAI_BASE_URL, else OpenAI; key from $OPENAI_API_KEY. "
    "anthropic: default $ANTHROPIC_BASE_URL, else Anthropic; key from $ANTHROPIC_API_KEY.",
)
@click.option(
    "--thinking",
    default=None,
    metavar="BUDGET|adaptive|off",
    help="--api anthropic: extended thinking, with a budget of tokens (>= 1024, below "
    "--max-output), or 'adaptive'; default off. Thinking blocks are kept in the history "
    "exactly as returned.",
)
@click.option(
    "--reasoning-effort",
    type=click.Choice(REASONING_EFFORTS),
    default=None,
    help="--api responses: the reasoning effort of a reasoning model (sent as "
    "reasoning.effort); encrypted reasoning items are kept and sent back as returned.",
)
@click.option(
    "--no-encrypted-reasoning",
    hidden=True,
    is_flag=True,
    help="--api responses: leave out include=[reasoning.encrypted_content], for a model "
    "or server that refuses it (a model without reasoning).",
)
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Directory the tools work in.",
)
@profile_option(
    sorted(PROFILES),
    help="Target rules and policy (as for govern); with --api anthropic the default is anthropic.",
)
@click.option(
    "--compaction",
    type=click.Choice(COMPACTIONS),
    default="cache",
    show_default=True,
    help="How the budget is spent: 'cache' compacts rarely, so the prompt cache keeps "
    "hitting; 'seed' is Nanobot's microcompact + snip on every call.",
)
@summary_options(RUN)
@count_workers_option
@click.option(
    "--count-store",
    hidden=True,
    default=None,
    help="Where exact token counts are kept between runs: sqlite:///file.db (relative; "
    "sqlite:////abs/file.db), redis://host:port/db or memory://. A --history resumed "
    "later is then counted for its new messages only. Default: none.",
)
@click.option(
    "--context-window",
    type=click.IntRange(min=1),
    default=None,
    help="The model's context window in tokens; default: the model's published window "
    "when it is a well-known model, else none (nothing is cut; a note says so).",
)
@click.option(
    "--max-output", type=click.IntRange(min=1), default=None, help="max_tokens of each call."
)
@click.option(
    "--max-iterations", hidden=True, type=click.IntRange(min=1), default=40, show_default=True
)
@click.option(
    "--tool-timeout", hidden=True, type=click.FloatRange(min=0.1), default=60.0, show_default=True
)
@click.option("--no-exec", is_flag=True, help="Leave out the exec (shell) tool.")
@click.option(
    "--no-stream", hidden=True, is_flag=True, help="Wait for whole answers instead of streaming."
)
@click.option(
    "--system", "system_prompt", default=None, help="System prompt of a new conversation."
)
@click.option(
    "--history",
    "history_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="JSON file with the conversation so far; the task and the run's messages are "
    "appended and saved back (also when interrupted).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show every governance action and note.")
def run_command(
    task: str,
    model: str,
    api: str,
    base_url: str | None,
    thinking: str | None,
    reasoning_effort: str | None,
    no_encrypted_reasoning: bool,
    workspace: Path,
    profile: str,
    compaction: str,
    summary_model: str | None,
    summary_store: str | None,
    summary_timeout: float,
    count_store: str | None,
    context_window: int | None,
    max_output: int | None,
    max_iterations: int,
    tool_timeout: float,
    no_exec: bool,
    no_stream: bool,
    system_prompt: str | None,
    history_path: Path | None,
    verbose: bool,
) -> None:
    """Run an agent on TASK with a real model and the built-in tools.

    Before every model call the context is governed; each step prints the
    tokens before and after and what was changed. The answer streams to
    stdout, progress goes to stderr.

    With --api anthropic or responses the request is governed in that API's own
    format (thinking blocks and encrypted reasoning kept as returned, the API's
    rules enforced); keep one --api per --history file.

    \b
    Examples:
      context-governor run "Why does test_expiry fail?" --model gpt-4o-mini
      context-governor run "List the TODOs" --model qwen2.5-coder \\
          --base-url http://localhost:11434/v1 --workspace ~/src/app --history chat.json
      context-governor run "Fix the flaky test" --api anthropic \\
          --model claude-sonnet-4-5 --thinking 4096 --max-output 16000
      context-governor run "Summarise the README" --api responses --model o4-mini \\
          --reasoning-effort low
    """
    from ..governor import Governor
    from ..runner import AgentRunner, ProgressPrinter
    from ..tools import builtin_tools

    spec = API_SPECS[api]
    url = _server_url(spec, base_url)
    _check_reasoning(spec, reasoning_effort, no_encrypted_reasoning)
    budget = _thinking(thinking, api, max_output)
    context = click.get_current_context()
    if (
        context.get_parameter_source("profile") is ParameterSource.DEFAULT
        and context.params.get("provider_alias") is None
    ):
        profile = spec.default_profile
    from ..providers.windows import resolve_window

    _check_budget(resolve_window(context_window, model)[0], max_output)
    history: list[Message] = []
    if history_path is not None and not history_path.parent.is_dir():
        fail(f"--history {history_path}: the directory {history_path.parent} does not exist")
    try:
        if history_path is not None and history_path.exists():
            history = read_history(history_path)
        policy = _compaction(compaction, summary_model, summary_store, summary_timeout, api, url)
        governor = Governor(
            profile=profile,
            model=model,
            context_window=context_window,
            max_output=max_output,
            compaction=policy,
            count_store=count_store,
        )
        tools = builtin_tools(workspace, exec_timeout=tool_timeout, allow_exec=not no_exec)
    except ContextGovernorError as exc:
        fail(str(exc))
        return
    if not any(m.get("role") == "system" for m in history if isinstance(m, dict)):
        history = [{"role": "system", "content": system_prompt or DEFAULT_SYSTEM}, *history]
    history.append({"role": "user", "content": task})

    printer = ProgressPrinter(err, out, verbose=verbose)
    if verbose:
        printer.info(f"api {api}, profile {profile}, compaction {compaction}")
    if governor.settings.window is None:
        printer.info(
            f"note: no context window (no known window for model {model!r}): nothing "
            f"will be cut; set --context-window"
        )

    def on_retry(error: Exception, attempt: int, wait: float) -> None:
        printer.info(f"  model call failed ({error}); retry {attempt} in {wait:.1f}s")

    client = _make_client(
        api,
        model,
        url,
        stream=not no_stream,
        thinking=budget,
        effort=reasoning_effort,
        include_reasoning=not no_encrypted_reasoning,
        on_retry=on_retry,
    )
    runner = AgentRunner(
        client,
        tools,
        governor,
        max_iterations=max_iterations,
        tool_timeout=tool_timeout,
        hooks=printer.hooks(),
    )

    async def go() -> RunResult:
        async with client:
            return await _run_agent(runner, history, history_path)

    try:
        result = asyncio.run(go())
    except KeyboardInterrupt:
        printer.end_text()
        saved = f"; history saved to {history_path}" if history_path else ""
        err(f"interrupted{saved}")
        sys.exit(EXIT_INTERRUPTED)
    except ContextGovernorError as exc:
        fail(str(exc))
        return
    printer.end_text()  # the answer itself reached stdout through on_text
    for event in result.events:
        err(f"warning: {event}")
    err(_summary(result))
    if result.stop_reason not in ("completed", "length"):
        fail(_run_failure(result, api), EXIT_RUN_FAILED)
