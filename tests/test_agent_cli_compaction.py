"""The agent CLIs' own compaction, through the proxy, when the context is full.

The issue's most reported failure: a CLI compacts its session exactly when the context
is full, so its summary request (the whole history plus the summary prompt) is itself
over the window, the provider refuses it, and the session is stuck. Here each CLI runs
the 16-file session of tests/test_agent_clis.py against the scripted upstream
(tests/cli_upstream.py), which refuses anything over its window with the provider's own
status and body and answers a summary request with a summary. The CLI is told its
context is full (the upstream reports an input usage at the window from the ``full_from``
th file on, until its summary is in the request; a CLI setting puts the CLI's own
threshold at or under the window), so its own automatic compaction fires.

Through the proxy: the CLI finishes, no request is refused (none over the window, none
breaking a rule), and the proxy's log line names the compaction request it governed
(``client-compaction=...``). Without the proxy, the same scripted session fails: that
is what the test proves the proxy does.

Gemini CLI 0.61 compresses only where its history can be split before a user prompt
(its ``findCompressSplitPoint``), never inside the tool chain of one prompt; headless,
that is the next-speaker check's "Please continue." after the model stopped mid-task,
which the upstream scripts (``pause_after``) and the CLI's settings turn on
(docs/compaction.md, "The clients' own compaction"). Without the proxy, its compression
fails on the second request it sends (verifying the snapshot), which has two model
contents in a row and is refused by the API's rule.

They run at CG_TEST_LEVEL=full only (make test-full, CI).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
from agent_clis import CLIS, Cli, OutsideCalls, ProxyProcess, run_cli
from cli_upstream import FINAL_TEXT, PROMPT, CliUpstream, make_workspace
from levels import FULL

from context_governor.proxy._client_compaction import client_compaction

pytestmark = pytest.mark.skipif(
    not FULL, reason="the real agent CLIs run at CG_TEST_LEVEL=full (make test-full, CI)"
)


@dataclass(frozen=True)
class Scenario:
    """How one CLI is brought to compact at the window."""

    cli: str
    #: the upstream's window (the proxy's --context-window)
    window: int
    #: the file from which the upstream reports the context full
    full_from: int
    #: the CLI's environment besides agent_clis' (its own compaction settings)
    env: dict[str, str] = field(default_factory=dict)
    #: (home, model, window) -> None: writes the CLI's compaction settings
    configure: Callable[[Path, str, int], None] | None = None
    #: without the proxy, the CLI gets past its refused compaction request by dropping
    #: the oldest items of it itself (Codex), so the session ends, with what was dropped
    #: missing from its summary, after one refusal per retry
    recovers: bool = False
    #: the file after which the model answers text only, once (the upstream's pause_after)
    pause_after: int | None = None
    #: without the proxy, the CLI's compaction request is refused for a broken rule of
    #: the API (Gemini CLI's verification request), not for its size
    breaks_rule: bool = False


def _codex_limit(home: Path, model: str, window: int) -> None:
    """Codex compacts once the usage reaches ``model_auto_compact_token_limit``."""
    config = home / ".codex" / "config.toml"
    config.write_text(f"model_auto_compact_token_limit = {window}\n" + config.read_text())


def _opencode_limit(home: Path, model: str, window: int) -> None:
    """opencode compacts once the usage leaves less than the output reserve of the
    model's configured ``limit.context``."""
    path = home / "opencode.json"
    config = json.loads(path.read_text())
    config["provider"]["cg"]["models"][model]["limit"] = {"context": window, "output": 4000}
    path.write_text(json.dumps(config))


def _gemini_threshold(home: Path, model: str, window: int) -> None:
    """Gemini CLI compresses once the last prompt's usage reaches
    ``model.compressionThreshold`` of its model's limit (1,048,576 for any model name its
    table does not know), at a turn after the model's own text: with the next-speaker
    check on (``model.skipNextSpeakerCheck``), its "Please continue." is one."""
    path = home / ".gemini" / "settings.json"
    settings = json.loads(path.read_text())
    threshold = round(0.9 * window / 1_048_576, 4)  # under the window, over the governed usage
    settings["model"] = {"compressionThreshold": threshold, "skipNextSpeakerCheck": False}
    path.write_text(json.dumps(settings))


SCENARIOS = {
    # Claude Code: auto-compact at 40% of a 100k auto-compact window (its minimum)
    "claude": Scenario(
        "claude", 40_000, 3,
        env={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "40"},
    ),
    "codex": Scenario("codex", 36_000, 7, configure=_codex_limit, recovers=True),
    "opencode": Scenario("opencode", 40_000, 3, configure=_opencode_limit),
    "gemini": Scenario("gemini", 40_000, 3, configure=_gemini_threshold, pause_after=4,
                       breaks_rule=True),
}  # fmt: skip


@pytest.fixture
def outside() -> Iterator[OutsideCalls]:
    recorder = OutsideCalls()
    yield recorder
    recorder.stop()


def _with_settings(cli: Cli, scenario: Scenario) -> Cli:
    """``cli`` with the scenario's compaction settings written and its env added."""

    def prepare(
        home: Path, ws: Path, root: str, model: str, prompt: str
    ) -> tuple[list[str], dict[str, str]]:
        argv, env = cli.prepare(home, ws, root, model, prompt)
        if scenario.configure is not None:
            scenario.configure(home, model, scenario.window)
        return argv, {**env, **scenario.env}

    return replace(cli, prepare=prepare)


def _run(
    name: str, tmp_path: Path, outside: OutsideCalls, *, proxied: bool
) -> tuple[CliUpstream, list[str], str, int, str]:
    scenario = SCENARIOS[name]
    cli = _with_settings(CLIS[name], scenario)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    make_workspace(workspace)
    upstream = CliUpstream(scenario.window, workspace)
    upstream.full_from = scenario.full_from
    upstream.pause_after = scenario.pause_after
    upstream.start()
    proxy = None
    root = upstream.root_url
    if proxied:
        flags = [*cli.proxy_flags, "--context-window", str(scenario.window)]
        proxy = ProxyProcess(upstream.root_url + cli.upstream_suffix, *flags)
        root = proxy.root
    try:
        done = run_cli(cli, home=tmp_path / "home", workspace=workspace, root=root,
                       model=cli.model, prompt=PROMPT, outside=outside,
                       timeout=90 if proxied else 45)  # fmt: skip
    finally:
        if proxy is not None:
            proxy.stop()
        upstream.stop()
    lines = proxy.request_lines() if proxy is not None else []
    if os.environ.get("CG_CLI_DUMP"):  # every request body as the upstream got it, to debug
        dump = (
            Path(os.environ["CG_CLI_DUMP"])
            / f"compaction-{name}-{'proxy' if proxied else 'direct'}.jsonl"
        )
        dump.parent.mkdir(parents=True, exist_ok=True)
        dump.write_text(
            "".join(json.dumps({"api": api, "body": body}) + "\n" for api, body in upstream.bodies)
        )
    return upstream, lines, done.stdout, done.returncode, done.stderr


def _story(upstream: CliUpstream, lines: list[str]) -> str:
    seen = [
        f"  #{i} {s.method} {s.path} prompt={s.prompt_tokens} reserve={s.reserve} {s.answer}"
        f"{' OVER' if s.over else ''}{' INVALID: ' + '; '.join(s.problems)[:300] if s.problems else ''}"
        for i, s in enumerate(upstream.log)
    ]
    return (
        f"window {upstream.window}\nupstream saw:\n"
        + "\n".join(seen)
        + "\nproxy said:\n"
        + "\n".join("  " + line[:300] for line in lines)
    )


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_cli_compacts_at_the_window_through_the_proxy(
    name: str, tmp_path: Path, outside: OutsideCalls
) -> None:
    """The CLI's own compaction request is recognised, governed inside the window and
    answered; the CLI finishes its task after compacting, with no request refused."""
    upstream, lines, stdout, code, stderr = _run(name, tmp_path, outside, proxied=True)
    story = _story(upstream, lines)
    assert outside.attempts == [], f"{name} tried to reach beyond localhost: {outside.attempts}"
    assert not upstream.invalid, f"{len(upstream.invalid)} invalid requests\n{story}"
    assert not upstream.over_window, (
        f"{len(upstream.over_window)} requests over the window\n{story}"
    )
    summaries = [s for s in upstream.log if s.answer == "summary"]
    assert summaries, f"{name} did not compact\n{story}"
    governed = [line for line in lines if "client-compaction=" in line]
    assert governed, f"the proxy did not recognise {name}'s compaction request\n{story}"
    assert code == 0, f"{name} exited {code}\n{stderr[-1200:]}\n{story}"
    assert FINAL_TEXT in stdout, f"{name} did not finish: {stdout[-1200:]}\n{story}"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_without_the_proxy_the_same_session_fails(
    name: str, tmp_path: Path, outside: OutsideCalls
) -> None:
    """The counterpart: straight to the upstream, requests are refused as too long and
    the CLI fails; Codex, which retries its refused compaction request with its oldest
    items dropped, has that request refused first; Gemini CLI has its compaction's
    verification request refused for two model contents in a row, and fails."""
    scenario = SCENARIOS[name]
    upstream, _, stdout, code, _ = _run(name, tmp_path, outside, proxied=False)
    story = _story(upstream, [])
    if scenario.breaks_rule:
        judged = [seen for seen in upstream.log if seen.api is not None]
        refused = [
            seen for seen, (api, body) in zip(judged, upstream.bodies, strict=True)
            if seen.problems and client_compaction(body) is not None
        ]  # fmt: skip
        assert refused, f"{name}'s compaction request was not refused without the proxy\n{story}"
        assert code != 0 and FINAL_TEXT not in stdout, f"{name} finished without the proxy\n{story}"
        return
    assert upstream.over_window, f"no request was over the window without the proxy\n{story}"
    if scenario.recovers:
        judged = [seen for seen in upstream.log if seen.api is not None]
        refused = [
            seen for seen, (api, body) in zip(judged, upstream.bodies, strict=True)
            if seen.over and client_compaction(body) is not None
        ]  # fmt: skip
        assert refused, f"{name}'s compaction request was not refused without the proxy\n{story}"
        return
    failed = code != 0 or FINAL_TEXT not in stdout
    assert failed, f"{name} finished without the proxy\n{story}"
