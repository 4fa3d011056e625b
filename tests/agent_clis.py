"""Running the real agent CLIs (Claude Code, Codex, Gemini CLI, opencode) offline.

``make agent-clis`` installs the pinned npm packages into ``.cache/agent-clis``
(gitignored; ``make test-full`` and ``CG_TEST_LEVEL=full make test`` depend on it).
Each CLI runs as a subprocess with an environment built from nothing: a HOME of
its own in a temp dir, its configuration written there (the base URL of the
proxy, a test key, the model), and every outside call it would make turned off:
telemetry, update checks, plugin and dependency installs, model catalogs.

Nothing may leave localhost: ``HTTP(S)_PROXY`` / ``ALL_PROXY`` point at
:class:`OutsideCalls`, a recording proxy that refuses (403) and records every
request and ``CONNECT`` it gets, and ``NO_PROXY`` lets only 127.0.0.1 / localhost
through. The machine has no internet, so an attempt that went elsewhere would only
fail quietly; recorded here, it fails the test. (What each setting turns off was
found by running the CLI against the recorder: tests/agent_clis.md.)

:class:`ProxyProcess` is ``context-governor proxy`` as a user runs it: a real
subprocess, its log lines collected, so a failing test can quote the proxy's report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "agent-clis"
#: The pins (the Makefile's AGENT_CLIS_PINS say the same).
VERSIONS = {
    "claude": ("@anthropic-ai/claude-code", "2.1.332"),
    "codex": ("@openai/codex", "0.171.0"),
    "gemini": ("@google/gemini-cli", "0.61.0"),
    "opencode": ("opencode-ai", "1.18.33"),
}
TEST_KEY = "sk-cg-test-0123456789"


def binary(name: str) -> Path:
    """The installed CLI's entry point; a clear error when ``make agent-clis`` has not run."""
    path = CACHE / "node_modules" / ".bin" / name
    if not path.exists():
        raise RuntimeError(
            f"{name} is not installed in {CACHE.relative_to(ROOT)}: run `make agent-clis` "
            "(CG_TEST_LEVEL=full make test and make test-full do it first)"
        )
    package, version = VERSIONS[name]
    manifest = CACHE / "node_modules" / package / "package.json"
    installed = json.loads(manifest.read_text()).get("version")
    if installed != version:
        raise RuntimeError(f"{package} {installed} is installed, the tests pin {version}: run `make agent-clis`")
    return path


class OutsideCalls:
    """A forward proxy on localhost that refuses everything and records what was tried."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _refuse(self) -> None:
                recorder.attempts.append(f"{self.command} {self.path}")
                self.send_response(403)
                self.send_header("content-length", "0")
                self.send_header("connection", "close")
                self.end_headers()

            do_CONNECT = do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _refuse

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class ProxyProcess:
    """``python -m context_governor proxy ...`` on a free port; its stderr lines collected."""

    def __init__(self, upstream: str, *flags: str) -> None:
        args = [sys.executable, "-m", "context_governor", "proxy", "--upstream", upstream,
                "--port", "0", *flags]  # fmt: skip
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.args = args
        self.process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stderr is not None
        banner = self.process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", banner)
        if match is None:
            self.process.kill()
            raise RuntimeError(f"the proxy did not start: {banner}{self.process.stderr.read()}")
        self.root = f"http://127.0.0.1:{match.group(1)}"
        self.lines: list[str] = [banner.rstrip()]
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{self.root}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the proxy did not answer /healthz in 30 s")
            time.sleep(0.1)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self._reader.join(5)

    def request_lines(self) -> list[str]:
        """The proxy's one line per request (governed or passed through)."""
        return [line for line in self.lines if re.search(r" (POST|GET) /v1", line)]


@dataclass
class Cli:
    """How to run one CLI non-interactively behind a base URL."""

    name: str
    #: the API its requests use (the scripted upstream's name for it)
    api: str
    #: the proxy's --upstream below the scripted upstream's root
    upstream_suffix: str
    #: (home, workspace, proxy root, model, prompt) -> argv and extra environment
    prepare: Callable[[Path, Path, str, str, str], tuple[list[str], dict[str, str]]]
    #: the proxy's flags besides the window (the profile of the target)
    #: a model name the window table does not know (its window comes from the flag,
    #: a family default, or what the upstream's refusal says)
    model: str = ""
    proxy_flags: tuple[str, ...] = ()


def _claude(home: Path, ws: Path, root: str, model: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    argv = [str(binary("claude")), "-p", prompt, "--output-format", "json", "--model", model,
            "--allowedTools", "Read", "--max-turns", "40"]  # fmt: skip
    env = {
        "ANTHROPIC_BASE_URL": root,
        "ANTHROPIC_API_KEY": TEST_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # telemetry, error reports, updates, ...
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
        "CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL": "1",
    }
    return argv, env


def _codex(home: Path, ws: Path, root: str, model: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    return _codex_with(home, root, model, prompt, builtin=False)


def _codex_builtin(home: Path, ws: Path, root: str, model: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    """Codex with its built-in ``openai`` provider pointed at the proxy: it then compacts
    remotely (a ``compaction_trigger`` item) once the session passes 30,000 tokens."""
    return _codex_with(home, root, model, prompt, builtin=True)


def _codex_with(home: Path, root: str, model: str, prompt: str, *, builtin: bool) -> tuple[list[str], dict[str, str]]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    provider = (
        f'model_provider = "openai"\nopenai_base_url = "{root}/v1"\n'
        "model_auto_compact_token_limit = 30000\n"
        if builtin
        else 'model_provider = "cg"\n'
    )
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\n'
        + provider +
        'approval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n'
        "check_for_update_on_startup = false\n"
        'web_search = "disabled"\n'
        "\n[model_providers.cg]\n"
        'name = "context-governor proxy"\n'
        f'base_url = "{root}/v1"\n'
        'wire_api = "responses"\n'
        'env_key = "CG_TEST_KEY"\n'
        "\n[analytics]\nenabled = false\n"
        "\n[feedback]\nenabled = false\n"
        '\n[otel]\nexporter = "none"\ntrace_exporter = "none"\nmetrics_exporter = "none"\n'
        # plugins: the curated plugin sync (github.com, chatgpt.com); remote_models: the
        # model catalog (chatgpt.com)
        "\n[features]\nplugins = false\nremote_models = false\n"
    )
    argv = [str(binary("codex")), "exec", "--skip-git-repo-check", "--color", "never", prompt]
    env = {"CODEX_HOME": str(codex_home), "CG_TEST_KEY": TEST_KEY}
    if builtin:
        env["OPENAI_API_KEY"] = TEST_KEY
    return argv, env


def _gemini(home: Path, ws: Path, root: str, model: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    settings = {
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True,
                    "enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "ide": {"enabled": False},
    }  # fmt: skip
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    argv = [str(binary("gemini")), "-p", prompt, "--yolo", "-m", model, "-o", "json"]
    return argv, {"GEMINI_API_KEY": TEST_KEY, "GOOGLE_GEMINI_BASE_URL": root}


def _opencode(home: Path, ws: Path, root: str, model: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {"cg": {"npm": "@ai-sdk/openai-compatible", "name": "context-governor proxy",
                            "options": {"baseURL": f"{root}/v1", "apiKey": TEST_KEY},
                            "models": {model: {"name": model, "tool_call": True}}}},
        "model": f"cg/{model}",
        "permission": {"edit": "allow", "bash": "allow", "read": "allow"},
    }  # fmt: skip
    path = home / "opencode.json"
    path.write_text(json.dumps(config))
    argv = [str(binary("opencode")), "run", prompt]
    env = {
        "OPENCODE_CONFIG": str(path),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",  # models.dev
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        # opencode installs @opencode-ai/plugin into its config dir on every start
        # (registry.npmjs.org); offline, npm answers from its (empty) cache instead
        "npm_config_offline": "true",
    }
    return argv, env


CLIS = {
    "claude": Cli("claude", "anthropic", "/v1", _claude, "claude-opus-5-5", ("--profile", "anthropic")),
    "codex": Cli("codex", "responses", "/v1", _codex, "gpt-7-codex"),
    "codex-openai-provider": Cli("codex", "responses", "/v1", _codex_builtin, "gpt-7-codex"),
    "gemini": Cli("gemini", "gemini", "/v1beta", _gemini, "gemini-3.5-flash"),
    "opencode": Cli("opencode", "openai", "/v1", _opencode, "gpt-7-mini"),
}


def run_cli(
    cli: Cli, *, home: Path, workspace: Path, root: str, model: str, prompt: str,
    outside: OutsideCalls, timeout: float = 120,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run ``cli`` in ``workspace`` against ``root`` with an environment built from nothing."""
    home.mkdir(parents=True, exist_ok=True)
    argv, extra = cli.prepare(home, workspace, root, model, prompt)
    node = shutil.which("node")
    path_dirs = [str(Path(node).parent)] if node else []
    env = {
        "PATH": os.pathsep.join([*path_dirs, "/usr/bin", "/bin"]),
        "HOME": str(home),
        "TMPDIR": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "CI": "1",
        "HTTP_PROXY": outside.url, "HTTPS_PROXY": outside.url, "ALL_PROXY": outside.url,
        "http_proxy": outside.url, "https_proxy": outside.url, "all_proxy": outside.url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "OTEL_SDK_DISABLED": "true",
        "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none",
        **extra,
    }  # fmt: skip
    process = subprocess.Popen(
        argv, cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # a CLI stuck retrying: the test says so with its story
        os.killpg(process.pid, 9)
        out, err = process.communicate()
        err += f"\n[the test stopped {cli.name} after {timeout:.0f} s]"
    return subprocess.CompletedProcess(argv, process.returncode, out, err)
