"""One proxy for every agent (issue 38): Claude Code, Codex, Gemini CLI and opencode at
once, through ONE real proxy process, each governed with its own API's rules.

The proxy is started as the README's front page shows it for a machine with several
agents: one ``--upstream`` per API (here every API's upstream is the same scripted
server, given with no path, so the proxy adds ``/v1`` or Gemini's ``/v1beta``) and no
``--profile``. The four CLIs run at the same time, each reading the shared workspace's
16 files; each must finish, with no request refused for a rule or over the window, and
the proxy's line for each request names the rules its route governed with.

CG_TEST_LEVEL=full only (make test-full, CI), as the other real-CLI tests.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest
from agent_clis import CLIS, OutsideCalls, ProxyProcess, run_cli
from cli_upstream import FINAL_TEXT, PROMPT, CliUpstream, make_workspace
from levels import FULL

pytestmark = pytest.mark.skipif(
    not FULL, reason="the real agent CLIs run at CG_TEST_LEVEL=full (make test-full, CI)"
)

WINDOW = 40_000
FOUR = ("claude", "codex", "gemini", "opencode")
#: the rules each route governs with when no --profile is given
RULES = {"/v1/messages": "anthropic", "/v1/responses": "openai",
         "/v1/chat/completions": "openai", "/v1beta/models/": "gemini"}  # fmt: skip


@pytest.fixture
def outside() -> Iterator[OutsideCalls]:
    recorder = OutsideCalls()
    yield recorder
    recorder.stop()


def test_four_agents_at_once_through_one_proxy(tmp_path: Path, outside: OutsideCalls) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    make_workspace(workspace)
    upstream = CliUpstream(WINDOW, workspace)
    upstream.start()
    root = upstream.root_url
    proxy = ProxyProcess(
        f"openai={root}", "--upstream", f"anthropic={root}", "--upstream", f"gemini={root}",
        "--context-window", str(WINDOW),
    )  # fmt: skip
    done: dict[str, CompletedProcess[str]] = {}

    def run(name: str) -> None:
        cli = CLIS[name]
        done[name] = run_cli(cli, home=tmp_path / f"home-{name}", workspace=workspace,
                             root=proxy.root, model=cli.model, prompt=PROMPT, outside=outside,
                             timeout=240)  # fmt: skip

    try:
        threads = [threading.Thread(target=run, args=(name,)) for name in FOUR]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        proxy.stop()
        upstream.stop()
    lines = proxy.request_lines()
    assert outside.attempts == [], outside.attempts
    for name in FOUR:
        result = done[name]
        assert result.returncode == 0, f"{name} exited {result.returncode}\n{result.stderr[-1200:]}"
        assert FINAL_TEXT in result.stdout, f"{name} did not finish: {result.stdout[-800:]}"
    assert not upstream.invalid, [s.problems for s in upstream.invalid][:3]
    assert not upstream.over_window, len(upstream.over_window)
    apis = {seen.api for seen in upstream.governed_requests}
    assert apis == {"anthropic", "responses", "gemini", "openai"}, apis
    governed = [line for line in lines if " rules=" in line]
    assert governed, lines[-20:]
    for line in governed:
        path = next(p for p in RULES if p in line)
        assert re.search(rf" rules={RULES[path]} ", line), line
    for path in RULES:  # every route was used
        assert any(path in line for line in governed), path
