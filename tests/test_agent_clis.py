"""The real agent CLIs behind ``context-governor proxy``, as a new user runs them.

Claude Code, Codex, Gemini CLI and opencode (pinned npm releases, installed by
``make agent-clis`` into ``.cache/agent-clis``) each read a workspace of 16 files of
~14 KB, one tool call per file, through a real proxy subprocess in front of
tests/cli_upstream.py: a scripted upstream in the CLI's own API that checks every
request as the provider would (rules, signatures and encrypted reasoning byte for
byte, and the window with an independent count). The session outgrows a 40,000-token
window about five times over.

Each test asserts that the CLI finishes (exit 0, the final text in its output), that
no request broke a provider rule, that no request was over the window, and that
nothing but localhost was called; once with ``--context-window 40000``, once with no
window flag for a model name the window table does not know (the window is then a
family default until the upstream's refusal, in the provider's own words, says what
it is). A failure quotes the offending requests and the proxy's report lines.

Claude Code is also run against an upstream that answers every message with one id
(as the issue's did): it then sends the whole tool session as one assistant message
(16 thinking + text + tool_use groups) and one user message of tool_results, the
shape the proxy has to cut inside of.

They run at CG_TEST_LEVEL=full only (make test-full, CI): about a minute in all.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from agent_clis import CLIS, OutsideCalls, ProxyProcess, run_cli
from cli_upstream import FINAL_TEXT, PROMPT, CliUpstream, make_workspace
from levels import FULL

pytestmark = pytest.mark.skipif(
    not FULL, reason="the real agent CLIs run at CG_TEST_LEVEL=full (make test-full, CI)"
)

WINDOW = 40_000
#: What each CLI calls on the upstream in this session, through the proxy (docs/proxy.md,
#: "Agent CLIs"); a new release that calls more fails here, so the docs stay true.
ENDPOINTS = {
    # count_tokens: once a request is refused as too long, to plan its own compaction
    "claude": {"POST /v1/messages", "POST /v1/messages/count_tokens"},
    "codex": {"POST /v1/responses"},
    "codex-openai-provider": {"POST /v1/responses"},
    "gemini": {"POST /v1beta/models/{model}:streamGenerateContent"},
    "opencode": {"POST /v1/chat/completions"},
}


@pytest.fixture
def outside() -> Iterator[OutsideCalls]:
    recorder = OutsideCalls()
    yield recorder
    recorder.stop()


def _kind(path: str) -> str:
    """A path with its model named generically (Gemini CLI may swap the model it was
    given for another of the family: asked for gemini-3.5-flash it calls gemini-3.8-flash)."""
    return re.sub(r"/models/[^/:]+:", "/models/{model}:", path)


def _explain(upstream: CliUpstream, proxy: ProxyProcess, limit: int = 60) -> str:
    """The requests the upstream judged, and the proxy's own lines, for a failure message."""
    seen = [
        f"  #{i} {s.method} {s.path} prompt={s.prompt_tokens} reserve={s.reserve}"
        f"{' OVER' if s.over else ''}{' INVALID: ' + '; '.join(s.problems)[:300] if s.problems else ''}"
        for i, s in enumerate(upstream.log)
    ]
    lines = proxy.request_lines() or proxy.lines
    return (
        f"window {upstream.window} (independent count: tests/cli_upstream.py)\n"
        + "upstream saw:\n" + "\n".join(seen[:limit])
        + "\nproxy said:\n" + "\n".join("  " + line[:400] for line in lines[-limit:])
    )


@pytest.mark.parametrize("window_flag", [True, False], ids=["context-window-40000", "no-window-flag"])
@pytest.mark.parametrize("name", list(CLIS))
def test_cli_session_stays_valid_and_inside_the_window(
    name: str, window_flag: bool, tmp_path: Path, outside: OutsideCalls
) -> None:
    _session(name, window_flag, tmp_path, outside)


@pytest.mark.parametrize("window_flag", [True, False], ids=["context-window-40000", "no-window-flag"])
def test_claude_code_whole_session_in_one_assistant_message(
    window_flag: bool, tmp_path: Path, outside: OutsideCalls
) -> None:
    """The shape from the issue: an upstream that answers every message with one id
    (some Anthropic-compatible servers do) makes Claude Code send the whole tool session
    as ONE assistant message of thinking + text + tool_use groups, then one user message
    with every tool_result (and role "system" messages inside ``messages``)."""

    def the_shape(upstream: CliUpstream) -> None:  # checked before the window is
        shapes = [
            [m.get("role") for m in body.get("messages", [])]
            for api, body in upstream.bodies
            if api == "anthropic" and body.get("tools")
        ]
        joined = [roles for roles in shapes if roles.count("assistant") == 1 and "system" in roles]
        assert len(joined) >= 3, shapes

    _session("claude", window_flag, tmp_path, outside, message_id="msg_one_id", check=the_shape)


def _session(
    name: str,
    window_flag: bool,
    tmp_path: Path,
    outside: OutsideCalls,
    message_id: str | None = None,
    check: Callable[[CliUpstream], None] | None = None,
) -> CliUpstream:
    """Run CLI ``name`` through a proxy process in front of the scripted upstream and
    assert everything the module docstring says; the upstream, for more checks."""
    cli = CLIS[name]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    make_workspace(workspace)
    upstream = CliUpstream(WINDOW, workspace)
    upstream.message_id = message_id
    upstream.start()
    flags = [*cli.proxy_flags, *(["--context-window", str(WINDOW)] if window_flag else [])]
    proxy = ProxyProcess(upstream.root_url + cli.upstream_suffix, *flags)
    try:
        done = run_cli(cli, home=tmp_path / "home", workspace=workspace, root=proxy.root,
                       model=cli.model, prompt=PROMPT, outside=outside)  # fmt: skip
    finally:
        proxy.stop()
        upstream.stop()
    story = _explain(upstream, proxy)
    if os.environ.get("CG_CLI_DUMP"):  # every request body as the upstream got it, to debug
        tag = f"{name}-{'flag' if window_flag else 'noflag'}{'-one-id' if message_id else ''}"
        dump = Path(os.environ["CG_CLI_DUMP"]) / f"{tag}.jsonl"
        dump.parent.mkdir(parents=True, exist_ok=True)
        dump.write_text("".join(json.dumps({"api": api, "body": body}) + "\n" for api, body in upstream.bodies))
    assert outside.attempts == [], f"{name} tried to reach beyond localhost: {outside.attempts}"
    if check is not None:
        check(upstream)
    assert not upstream.invalid, f"{len(upstream.invalid)} invalid requests\n{story}"
    over = upstream.over_window
    if window_flag:
        assert not over, f"{len(over)} of {len(upstream.log)} requests over the window\n{story}"
    else:
        # The provider refuses the first request over its window in its own words; the
        # proxy learns the window from it, so at most that one request is ever over.
        assert len(over) <= 1, f"{len(over)} requests over the window after the refusal\n{story}"
    assert done.returncode == 0, f"{name} exited {done.returncode}\n{done.stderr[-1200:]}\n{story}"
    assert FINAL_TEXT in done.stdout, f"{name} did not finish: {done.stdout[-1200:]}\n{story}"
    assert upstream.finished()
    kinds = {f"{s.method} {_kind(s.path)}" for s in upstream.log}
    assert kinds <= ENDPOINTS[name], f"{name} called endpoints the docs do not list: {kinds}"
    assert len(upstream.governed_requests) >= 17, story  # 16 reads and the answer
    return upstream
