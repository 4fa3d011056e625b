"""``context-governor proxy``: the OpenAI-compatible governing proxy on the command line.

Registered by the cli package (cli/__init__.py). starlette and uvicorn are optional
(the ``proxy`` extra), so they are imported only when the command runs, and
their absence is one line of advice rather than a traceback. The port is bound
here, before uvicorn starts, so a taken port is reported the same way.
"""

from __future__ import annotations

import logging
import os
import socket
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from ..errors import ContextGovernorError
from ..formats import APIS
from ..profiles import PROFILES
from ._common import PROXY, count_workers_option, fail, profile_option, summary_options
from ._config import Setting, compaction_for, compaction_settings, sub_tables

if TYPE_CHECKING:  # the proxy package needs the optional starlette: imported when run
    from ..proxy import ProxyConfig, Redactor

__all__ = ["TABLES", "banner", "proxy_command"]

#: The tables of a config file's [proxy] table, after ProxyConfig's groups
#: (proxy/_settings.py), each with its settings (the options' long names); the others
#: (upstream, host, port, profile, windows, max-output, compaction, compacted,
#: cache-breakpoints, workers, api-key)
#: stay in [proxy] itself. docs/cli.md, "Config file".
TABLES = {
    "timeouts": ("connect-timeout", "read-timeout"),
    "limits": (
        "max-body",
        "max-in-flight",
        "max-in-flight-per-client",
        "max-uploads",
        "header-timeout",
        "body-timeout",
    ),
    "governing": ("govern-in", "govern-processes"),
    "counting": ("count-store", "count-retention", "count-tokens-upstream", "count-workers"),
    "summaries": (
        "summary-model",
        "summary-store",
        "summary-base-url",
        "summary-timeout",
        "summary-retention",
    ),
    "access": ("client-key", "client-keys-file", "allow-origin", "allow-host", "allow-open-relay"),
    "page": (
        "no-ui",
        "ui-conversations",
        "ui-requests",
        "ui-reports-mb",
        "ui-content",
        "ui-content-mb",
        "ui-token",
        "page-store",
    ),
    "telemetry": ("no-metrics", "otlp-endpoint"),
}


def _upstreams(entries: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """The --upstream values: a bare URL (every API's, at most one) and API=URL ones."""
    if not entries:
        fail("give --upstream URL (or one per API: --upstream anthropic=URL ...)")
    bare: list[str] = []
    per_api: dict[str, str] = {}
    for entry in entries:
        name, equals, url = entry.partition("=")
        if not equals or "://" in name:
            bare.append(entry)
        elif name not in APIS:
            fail(f"--upstream {entry}: no API is named {name!r}; choose from {', '.join(APIS)}")
        elif name in per_api:
            fail(f"--upstream {name}= is given twice")
        else:
            per_api[name] = url
    if len(bare) > 1:
        fail("--upstream: give one URL for every API, and API=URL for the others")
    return (bare[0] if bare else None), per_api


def _model_windows(pairs: tuple[str, ...]) -> dict[str, int]:
    windows: dict[str, int] = {}
    for pair in pairs:
        model, sep, value = pair.rpartition("=")
        if not sep or not model or not value.isdigit() or int(value) <= 0:
            fail(f"--model-window expects MODEL=TOKENS (e.g. gpt-4o=128000), got {pair!r}")
        windows[model] = int(value)
    return windows


def _key_file_lines(path: str | None) -> list[str]:
    """The lines of ``--client-keys-file`` (access.client_keys skips blanks and comments)."""
    if path is None:
        return []
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read --client-keys-file {path}: {exc}")
        raise  # unreachable


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, or exit 2 naming the address (taken, not ours, ...).

    Made for TCP by name (IPPROTO_TCP, not 0): accepted connections inherit the
    protocol number, and asyncio turns Nagle's algorithm off only on sockets that say
    TCP. Without it every JSON answer, head and body written apart, waited for the
    client's delayed ACK: ~40 ms a request on a keep-alive connection."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    return sock


@sub_tables(TABLES)
@click.command("proxy")
@click.option(
    "--upstream",
    "upstream_entries",
    multiple=True,
    metavar="[API=]URL",
    help="The provider's base URL, as an SDK takes it (https://api.openai.com/v1; with no "
    "path, /v1 is added, /v1beta for Gemini); API=URL gives one API its own (openai, "
    "anthropic, gemini; responses, else openai's), so one proxy serves every agent "
    "(repeatable; at least one).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8787, show_default=True)
@profile_option(
    sorted(PROFILES),
    help="The upstream's rules and policy, on every route. Not given: each route's own "
    "provider (openai for /v1/chat/completions and /v1/responses, anthropic for "
    "/v1/messages, gemini for generateContent); e.g. --profile glm for an Anthropic-style "
    "client in front of GLM.",
    shown_default="each route's own provider",
)
@click.option(
    "--context-window",
    type=click.IntRange(min=1),
    default=None,
    help="Context window of models without a --model-window; default: each request's "
    "model's published window when it is a well-known model, else none (nothing is cut).",
)
@click.option(
    "--model-window",
    "model_windows",
    multiple=True,
    metavar="MODEL=N",
    help="A model's own window (repeatable); also covers names it prefixes.",
)
@click.option(
    "--max-output",
    type=click.IntRange(min=0),
    default=4096,
    show_default=True,
    help="Tokens reserved for the answer when a request sets no max_tokens.",
)
@click.option(
    "--cache-breakpoints/--no-cache-breakpoints",
    cls=Setting,
    default=True,
    show_default=True,
    help="Messages: mark where the stable prefix ends with cache_control, so Anthropic's "
    "prompt cache is read on the next request (in the slots of the API's 4 the client's "
    "own marks leave). --no-cache-breakpoints adds none (the client's stay).",
)
@click.option(
    "--compacted",
    cls=Setting,
    type=click.Choice(["keep", "drop"]),
    default="keep",
    show_default=True,
    help="What precedes the newest compaction block (Anthropic) or item (Responses), "
    "which the provider does not read: keep forwards it as it came, drop leaves it out "
    "(fewer bytes; docs/native-compaction.md).",
)
@click.option(
    "--compaction",
    type=click.Choice(["cache", "seed"]),
    default="cache",
    show_default=True,
    help="'cache' compacts rarely and in big steps (prompt cache keeps hitting); "
    "'seed' is Nanobot's microcompact + snip on every call.",
)
@click.option(
    "--connect-timeout",
    hidden=True,
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Give up on reaching the upstream after this long (then 504).",
)
@click.option(
    "--read-timeout",
    hidden=True,
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    metavar="SECONDS",
    help="Longest silence allowed between two bytes of the upstream's answer (then 504, "
    "or an error event or element mid-stream). Generous: a long answer may start late.",
)
@click.option(
    "--max-body",
    hidden=True,
    type=click.IntRange(min=1),
    default=50 * 1024 * 1024,
    show_default=True,
    metavar="BYTES",
    help="Larger request bodies get a 413, before they are read.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Server processes sharing the port (use the cores; each loads its own encodings).",
)
@click.option(
    "--govern-in",
    hidden=True,
    type=click.Choice(["thread", "process"]),
    default="thread",
    show_default=True,
    help="Where each body is governed, off the event loop: a thread, or a pool of "
    "--govern-processes worker processes per server process.",
)
@click.option(
    "--govern-processes",
    hidden=True,
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Size of the --govern-in process pool.",
)
@click.option(
    "--api-key",
    envvar="CONTEXT_GOVERNOR_UPSTREAM_KEY",
    default=None,
    help="Use this key upstream instead of the client's own, where the client put it "
    "(its key header or Gemini's ?key=) (env CONTEXT_GOVERNOR_UPSTREAM_KEY).",
)
@click.option(
    "--count-tokens-upstream",
    hidden=True,
    is_flag=True,
    help="Messages API: near the budget, ask the upstream's /v1/messages/count_tokens "
    "and scale the offline estimate by it (one extra request there, none elsewhere).",
)
@summary_options(PROXY)
@count_workers_option
@click.option(
    "--count-store",
    default=None,
    metavar="URL",
    help="Where exact token counts are kept between restarts and replicas: "
    "sqlite:///file.db (relative; sqlite:////abs.db) for one machine, redis://host:port/db "
    "for several; a restarted proxy or another replica then counts only new messages. "
    "Default: each process's memory only.",
)
@click.option(
    "--count-retention",
    hidden=True,
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Drop stored counts older than this (default: keep them).",
)
@click.option(
    "--client-key",
    "client_key_entries",
    multiple=True,
    envvar="CONTEXT_GOVERNOR_CLIENT_KEYS",
    metavar="[NAME:]KEY",
    help="A key clients must present (repeatable; env CONTEXT_GOVERNOR_CLIENT_KEYS, "
    "space-separated), where their SDK sends its API key or in "
    "x-context-governor-client-key; NAME shows in the log, never the key.",
)
@click.option(
    "--client-keys-file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="A file of client keys, one [NAME:]KEY a line (# comments); keeps them out of "
    "the process list.",
)
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    help="A web page origin allowed to call the proxy (repeatable), e.g. "
    "http://localhost:3000; any other page's request gets a 403.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="A Host name served besides loopback ones (repeatable; '*' for any), e.g. the "
    "name a load balancer forwards.",
)
@click.option(
    "--max-in-flight",
    hidden=True,
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="Requests in flight per server process; more get a 429 with Retry-After.",
)
@click.option(
    "--max-uploads",
    cls=Setting,
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="Request bodies being read at once, per server process; more get a 429.",
)
@click.option(
    "--header-timeout",
    cls=Setting,
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Seconds a connection has to send a request's headers; then it is closed.",
)
@click.option(
    "--body-timeout",
    cls=Setting,
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    help="Seconds a request's whole body has to arrive in; then a 408.",
)
@click.option(
    "--max-in-flight-per-client",
    hidden=True,
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Requests in flight per client key per server process; more get a 429.",
)
@click.option(
    "--allow-open-relay",
    is_flag=True,
    help="Start on a non-loopback --host with --api-key but no --client-key: anyone who "
    "can reach the port spends the key (refused without this flag).",
)
@click.option(
    "--no-metrics",
    is_flag=True,
    help="Serve no /metrics and keep no counters (e.g. where the port is reachable by "
    "clients who should not see the traffic's figures).",
)
@click.option(
    "--no-ui",
    is_flag=True,
    help="Serve no /ui and keep no per-request records (the metrics stay).",
)
@click.option(
    "--ui-conversations",
    hidden=True,
    type=click.IntRange(min=1),
    default=500,
    show_default=True,
    help="Conversations /ui keeps (the least recently active dropped first); also those "
    "whose cache busts the metrics can tell.",
)
@click.option(
    "--ui-requests",
    hidden=True,
    type=click.IntRange(min=1),
    default=20_000,
    show_default=True,
    help="Requests /ui keeps in all (the oldest dropped first; at most 2,000 of one conversation).",
)
@click.option(
    "--ui-reports-mb",
    hidden=True,
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Memory for the requests' governance reports /ui shows, in MiB (the oldest "
    "forgotten first; the request's figures stay).",
)
@click.option(
    "--ui-content",
    hidden=True,
    is_flag=True,
    help="Show message content on /ui (what the client sent, what the model received); "
    "kept in memory only, at most --ui-content-mb, oldest dropped first.",
)
@click.option(
    "--ui-content-mb",
    hidden=True,
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Memory for --ui-content, in MiB.",
)
@click.option(
    "--ui-token",
    envvar="CONTEXT_GOVERNOR_UI_TOKEN",
    default=None,
    help="Serve /ui to whoever presents this token (Authorization: Bearer, or ?token=) "
    "instead of to loopback clients only; at least 16 characters "
    "(env CONTEXT_GOVERNOR_UI_TOKEN).",
)
@click.option(
    "--page-store",
    cls=Setting,
    metavar="URL",
    default=None,
    help="Where the page's rows and totals last across restarts (sqlite:///page.db, "
    "redis://host:port/db); default: the count store when there is one, else memory only.",
)
@click.option(
    "--otlp-endpoint",
    hidden=True,
    default=None,
    metavar="URL",
    help="Export a span per request over OTLP/HTTP to this collector (needs the otel "
    "extra); default: OTEL_EXPORTER_OTLP_ENDPOINT if set, else no spans.",
)
def proxy_command(
    upstream_entries: tuple[str, ...],
    host: str,
    port: int,
    profile: str,
    context_window: int | None,
    model_windows: tuple[str, ...],
    max_output: int,
    cache_breakpoints: bool,
    compacted: str,
    compaction: str,
    connect_timeout: float,
    read_timeout: float,
    max_body: int,
    workers: int,
    govern_in: str,
    govern_processes: int,
    api_key: str | None,
    count_tokens_upstream: bool,
    summary_model: str | None,
    summary_store: str | None,
    summary_base_url: str | None,
    summary_timeout: float,
    summary_retention: float | None,
    count_store: str | None,
    count_retention: float | None,
    client_key_entries: tuple[str, ...],
    client_keys_file: str | None,
    allow_origins: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    max_in_flight: int,
    max_in_flight_per_client: int,
    max_uploads: int,
    header_timeout: float,
    body_timeout: float,
    allow_open_relay: bool,
    no_metrics: bool,
    no_ui: bool,
    ui_conversations: int,
    ui_requests: int,
    ui_reports_mb: int,
    ui_content: bool,
    ui_content_mb: int,
    ui_token: str | None,
    page_store: str | None,
    otlp_endpoint: str | None,
) -> None:
    """Serve a proxy that governs every chat-completions, messages, responses and
    Gemini generateContent request.

    Point an OpenAI client's base URL at http://HOST:PORT/v1 (an Anthropic or
    Gemini client's at http://HOST:PORT). Each POST /v1/chat/completions,
    /v1/messages (Anthropic), /v1/responses (OpenAI Responses) and
    /v1beta/models/MODEL:generateContent or :streamGenerateContent (Gemini;
    also under /v1/) body is repaired and fitted to its model's window in its
    own format, then forwarded; the answer (streamed or not) comes back unchanged, with
    x-context-governor-* headers giving the token figures. Other /v1 paths
    pass through (logged once per kind). For Gemini, --upstream ends with the API
    version (https://generativelanguage.googleapis.com/v1beta) or has no path.

    Credentials in --upstream (user:password@, key=/token= parameters),
    --api-key and client keys are never printed or logged.

    Web pages are refused (unless --allow-origin), so are Host names other than
    loopback ones (unless --allow-host); on a non-loopback --host with --api-key,
    clients must present a --client-key (docs/proxy.md, "Security").

    \b
    Examples:
      context-governor proxy --upstream https://api.openai.com/v1 \\
          --model-window gpt-4o-mini=128000 --model-window gpt-3.5-turbo=16385
      context-governor proxy --upstream openai=https://api.openai.com \\
          --upstream anthropic=https://api.anthropic.com \\
          --upstream gemini=https://generativelanguage.googleapis.com
    """
    try:
        import uvicorn

        from ..proxy import (
            AccessConfig,
            CountingConfig,
            GoverningConfig,
            LimitsConfig,
            PageConfig,
            ProxyConfig,
            SummariesConfig,
            TelemetryConfig,
            TimeoutsConfig,
            client_keys,
            create_app,
            open_relay_refusal,
        )
    except ImportError as exc:
        fail(
            f"the proxy needs starlette and uvicorn ({exc}): pip install 'context-governor[proxy]'"
        )
        raise  # unreachable: fail exits
    # Not given (nor its alias --provider): each route's own provider (ProxyConfig.profile).
    context = click.get_current_context()
    given = {context.get_parameter_source(name) for name in ("profile", "provider_alias")}
    explicit = given & {
        ParameterSource.COMMANDLINE,
        ParameterSource.ENVIRONMENT,
        ParameterSource.DEFAULT_MAP,  # a config file's
    }
    # the [compaction] settings of a config file, checked here so that an error names it
    settings = compaction_settings(context)[1] if compaction == "cache" else {}
    compaction_for(context, compaction)
    chosen = profile if explicit else None
    upstream, upstreams = _upstreams(upstream_entries)
    try:
        keys = client_keys([*client_key_entries, *_key_file_lines(client_keys_file)])
        config = ProxyConfig(
            upstream=upstream,
            upstreams=upstreams,
            api_key=api_key,
            profile=chosen,
            context_window=context_window,
            model_windows=_model_windows(model_windows),
            max_output=max_output,
            compaction=compaction,
            compaction_settings=settings,
            compacted=compacted,
            cache_breakpoints=cache_breakpoints,
            timeouts=TimeoutsConfig(connect=connect_timeout, read=read_timeout),
            limits=LimitsConfig(
                max_body_bytes=max_body,
                max_in_flight=max_in_flight,
                max_in_flight_per_client=max_in_flight_per_client,
                max_uploads=max_uploads,
                header_timeout=header_timeout,
                body_timeout=body_timeout,
            ),
            governing=GoverningConfig(run_in=govern_in, processes=govern_processes),
            counting=CountingConfig(
                store=count_store,
                retention=count_retention,
                calibrate_upstream=count_tokens_upstream,
            ),
            summaries=SummariesConfig(
                model=summary_model,
                store=summary_store,
                base_url=summary_base_url,
                timeout=summary_timeout,
                retention=summary_retention,
            ),
            access=AccessConfig(
                allow_origins=allow_origins, allow_hosts=allow_hosts, client_keys=keys
            ),
            page=PageConfig(
                enabled=not no_ui,
                conversations=ui_conversations,
                requests=ui_requests,
                report_bytes=ui_reports_mb * 1024 * 1024,
                content=ui_content,
                content_bytes=ui_content_mb * 1024 * 1024,
                token=ui_token,
                store=page_store,
            ),
            telemetry=TelemetryConfig(metrics=not no_metrics, otlp_endpoint=otlp_endpoint),
        )
    except ContextGovernorError as exc:
        fail(str(exc))
        raise  # unreachable
    refusal = open_relay_refusal(host, config.api_key is not None, bool(config.access.client_keys))
    if refusal is not None:
        if not allow_open_relay:
            fail(refusal)
        click.echo(f"warning: open relay on {host}: anyone who reaches it spends the key", err=True)
    sock = _bind(host, port)
    _log_redacted(config.redactor())
    click.echo("\n".join(banner(config, host, sock.getsockname()[1], workers)), err=True)
    try:
        _serve(uvicorn, config, create_app, sock, workers)
    finally:
        sock.close()


def banner(config: ProxyConfig, host: str, port: int, workers: int) -> list[str]:
    """What the proxy says when it starts: where it listens and forwards (first line),
    then, indented, each route with its upstream and rules, where Anthropic and Gemini
    clients point, the window, and the page and metrics when served."""
    from ..formats import DEFAULT_PROFILES
    from ..proxy import ROUTES, redact_url

    root = f"http://{host}:{port}"
    lines = [
        f"governing proxy on {root}/v1 → {config.shown_upstream}"
        + (f" ({workers} workers)" if workers > 1 else "")
    ]
    for api in APIS:
        url = config.upstream_for(api)
        own = [f"/{r.versions[0]}/{r.path}" for r in ROUTES if r.api == api]
        paths = own[0] + (f" (+{len(own) - 1} more)" if len(own) > 1 else "")
        rules = config.profile or DEFAULT_PROFILES[api]
        where = f"{redact_url(url)} ({rules} rules)" if url else "no upstream (404)"
        lines.append(f"  {paths} → {where}")
    lines.append(
        f"  OpenAI clients: base URL {root}/v1; Anthropic and Gemini clients: {root} (no /v1)"
    )
    count = len(config.model_windows)
    listed = f"the --model-window of {count} model{'s' * (count > 1)}, else " if count else ""
    rest = (
        f"{config.context_window:,} tokens"
        if config.context_window
        else "each model's published window (unknown: nothing is cut)"
    )
    lines.append(f"  window: {listed}{rest}")
    if config.counting.store is None:
        lines.append(
            "  learned: this process only (usage ratios, refused windows; "
            + ("its workers do not share them: " if workers > 1 else "")
            + "give --count-store redis://... to share them between processes and replicas)"
        )
    else:
        lines.append("  learned: shared through the count store")
    page_url = config.page.store or config.counting.store
    if config.page.enabled and not page_url:
        lines.append("  page: memory only (set page-store = 'sqlite:///page.db' to keep it)")
    served = [f"page {root}/ui"] * config.page.enabled
    served += [f"metrics {root}/metrics"] * config.telemetry.metrics
    if served:
        lines.append("  " + ", ".join(served))
    return lines


def _metrics_dir() -> str | None:
    """Several workers: prometheus-client's multiprocess mode, in a fresh directory
    (unless $PROMETHEUS_MULTIPROC_DIR names one), set before any worker starts. Returns
    the directory when it made one: it is removed when the server stops, so restarts
    do not leave one behind each (a directory the user named is theirs)."""
    import tempfile

    from ..proxy import MULTIPROC_ENV

    if os.environ.get(MULTIPROC_ENV):
        return None
    made = tempfile.mkdtemp(prefix="context-governor-metrics-")
    os.environ[MULTIPROC_ENV] = made
    return made


def _log_redacted(redact: Redactor) -> None:
    """Our one line per request at INFO; everyone else (httpx logs every request) at
    WARNING; every line, whoever logs it, with the upstream's credentials masked."""
    from ..proxy import RedactingFilter

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter(redact))
    logging.getLogger("context_governor.proxy").setLevel(logging.INFO)


def _serve(
    uvicorn: Any, config: ProxyConfig, create_app: Any, sock: socket.socket, workers: int
) -> None:
    """One server process, or ``workers`` of them sharing ``sock`` (uvicorn's supervisor
    starts each from the import-string factory, the config in the environment)."""
    from ..proxy import PROTOCOL_PATH, HeaderTimeoutH11

    HeaderTimeoutH11.header_timeout = config.limits.header_timeout
    if workers == 1:
        served = uvicorn.Config(create_app(config), log_level="warning", http=HeaderTimeoutH11)
        uvicorn.Server(served).run(sockets=[sock])
        return
    from uvicorn.supervisors import Multiprocess

    from ..proxy import CONFIG_ENV

    os.environ[CONFIG_ENV] = config.to_json()
    made = _metrics_dir() if config.telemetry.metrics else None
    uv_config = uvicorn.Config(
        "context_governor.proxy._app:app_from_env",
        factory=True,
        workers=workers,
        log_level="warning",
        http=PROTOCOL_PATH,
    )
    try:
        Multiprocess(uv_config, sockets=[sock]).run()
    finally:
        if made is not None:
            import shutil

            shutil.rmtree(made, ignore_errors=True)
