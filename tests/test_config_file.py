"""``--config FILE``: every command reads one TOML file; flags override it; options
moved off the command line still work there for one release, with a warning."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from context_governor import CompactionPolicy, govern
from context_governor.cli import _proxy as proxy_cli
from context_governor.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "coding-session.json")
DOCS_CONFIG = re.search(r"```toml\n(.*?)```", (ROOT / "docs" / "cli.md").read_text(), re.S)


def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cg.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_config_file_says_what_the_flags_say(tmp_path: Path) -> None:
    config = _write(tmp_path, "context-window = 32000\n[govern]\nmax-output = 2048\n")
    by_file = _invoke("govern", "--config", config, EXAMPLE, "--json")
    by_flags = _invoke(
        "govern", EXAMPLE, "--json", "--context-window", "32000", "--max-output", "2048"
    )
    assert by_file.exit_code == by_flags.exit_code == 0
    assert by_file.stdout == by_flags.stdout
    assert by_file.stdout != _invoke("govern", EXAMPLE, "--json").stdout


def test_flags_override_the_file_and_command_tables_the_top(tmp_path: Path) -> None:
    config = _write(
        tmp_path, "max-output = 1000\ncontext-window = 32000\n[govern]\nmax-output = 2048\n"
    )
    assert "max output 2,048" in _invoke("govern", "--config", config, EXAMPLE).stdout
    out = _invoke("govern", "--config", config, EXAMPLE, "--max-output", "3000").stdout
    assert "max output 3,000" in out and "window 32,000" in out


def test_the_environment_names_the_file(tmp_path: Path) -> None:
    config = _write(tmp_path, "context-window = 32000\n")
    out = _invoke("govern", EXAMPLE, env={"CONTEXT_GOVERNOR_CONFIG": config}).stdout
    assert "window 32,000" in out


def test_compaction_settings_reach_the_policy(tmp_path: Path) -> None:
    config = _write(
        tmp_path,
        "context-window = 32000\n[compaction]\ntrigger = 20000\nkeep_recent = 4\n"
        'exclude_tools = ["read_file"]\n',
    )
    out = _invoke("govern", "--config", config, EXAMPLE, "--json")
    assert out.exit_code == 0
    body = json.loads(Path(EXAMPLE).read_text())
    policy = CompactionPolicy(trigger=20_000, keep_recent=4, exclude_tools=frozenset({"read_file"}))
    expected = govern(
        body["messages"],
        tools=body.get("tools"),
        model=body.get("model"),
        context_window=32_000,
        max_output=body.get("max_tokens"),
        compaction=policy,
    )
    assert json.loads(out.stdout)["messages"] == expected.messages
    assert (
        expected.messages
        != govern(
            body["messages"],
            tools=body.get("tools"),
            model=body.get("model"),
            context_window=32_000,
            max_output=body.get("max_tokens"),
        ).messages
    )


def test_the_seed_policy_from_the_file_or_the_flag(tmp_path: Path) -> None:
    seed = _write(tmp_path, 'context-window = 32000\n[compaction]\npolicy = "seed"\n')
    by_file = _invoke("govern", "--config", seed, EXAMPLE, "--json").stdout
    by_flag = _invoke(
        "govern", EXAMPLE, "--json", "--context-window", "32000", "--compaction", "seed"
    ).stdout
    assert by_file == by_flag
    # the flag wins; settings of the cache policy do not apply to the seed: a note says so
    tuned = _write(tmp_path, "context-window = 32000\n[compaction]\ntrigger = 0.5\n")
    result = _invoke("govern", "--config", tuned, EXAMPLE, "--json", "--compaction", "seed")
    assert result.stdout == by_flag and "the seed policy has none" in result.stderr


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[govern]\nmax-outputs = 3\n",
            r"\[govern\] has no setting 'max-outputs'; settings: .*max-output",
        ),
        (
            '[govern]\nmax-output = "lots"\n',
            r"\[govern\] max-output: 'lots' is not a valid integer",
        ),
        ("[compaction]\ntrigger = 1.5\n", r"\[compaction\] trigger as a share of the budget"),
        ("[compaction]\ntriger = 0.5\n", r"\[compaction\] has no setting 'triger'"),
        ("[compaction]\nkeep_recent = -1\n", r"keep_recent must be a non-negative integer"),
        ("[compaction]\nmask_first = 1\n", r"mask_first must be true or false"),
        ("frobnicate = 1\n", "no command has a setting 'frobnicate'"),
        ("[proxi]\nport = 1\n", r"unknown table \[proxi\]"),
        ("x = [\n", "is not valid TOML"),
        ("[govern]\njson = 3\n", "json must be true or false"),
    ],
)
def test_mistakes_are_one_line_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    config = _write(tmp_path, text)
    result = _invoke("govern", "--config", config, EXAMPLE)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {config}")
    assert re.search(message, lines[0]), lines[0]


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    result = _invoke("govern", "--config", str(tmp_path / "none.toml"), EXAMPLE)
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"error: cannot read {tmp_path / 'none.toml'}: No such file or directory"
    )


def test_a_setting_of_another_command_is_left_alone(tmp_path: Path) -> None:
    config = _write(tmp_path, 'upstream = "http://localhost:1"\ncontext-window = 32000\n')
    result = _invoke("govern", "--config", config, EXAMPLE)
    assert result.exit_code == 0 and "window 32,000" in result.stdout


def _visible(command: str) -> list[str]:
    out = _invoke(command, "--help").stdout
    options = out.partition("Settings only a --config file takes")[0]
    return sorted(set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", options, re.M)) - {"--help"})


def test_fewer_options_on_the_command_line() -> None:
    """run had 22 options and proxy 23 (45 by the end of wave 3); the rest are settings."""
    assert len(_visible("run")) <= 16, _visible("run")
    assert len(_visible("proxy")) <= 22, _visible("proxy")
    for command in ("govern", "lint", "run", "demo", "proxy"):
        assert "--config" in _visible(command)


def test_moved_flags_still_work_with_a_warning(tmp_path: Path) -> None:
    out = _invoke("run", "--help").stdout
    assert "max-iterations" in out.partition("Settings only a --config file takes")[2]
    result = _invoke("govern", EXAMPLE, "--count-workers", "0")
    assert result.exit_code == 0
    assert (
        "warning: --count-workers on the command line is deprecated and will be removed in "
        "the next release: set count-workers in the [govern] table of a --config file"
    ) in result.stderr
    # from a config file: no warning
    config = _write(tmp_path, "[govern]\ncount-workers = 0\n")
    assert "warning" not in _invoke("govern", "--config", config, EXAMPLE).stderr


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The proxy command up to serving: the config it would serve with."""
    seen: list[Any] = []
    monkeypatch.setattr(proxy_cli, "_serve", lambda uvicorn, config, *rest: seen.append(config))
    return seen


def test_the_proxy_reads_its_table(tmp_path: Path, served: list[Any]) -> None:
    config = _write(
        tmp_path,
        'profile = "glm"\n[compaction]\ntrigger = 30000\n[proxy]\nupstream = "http://localhost:9"\n'
        'port = 0\nmodel-window = { "gpt-4o" = 64000 }\n[proxy.timeouts]\nread-timeout = 30\n'
        "[proxy.limits]\nmax-in-flight = 5\n[proxy.page]\nui-requests = 100\n",
    )
    result = _invoke("proxy", "--config", config)
    assert result.exit_code == 0, result.stderr
    (got,) = served
    assert (got.upstream, got.profile, got.read_timeout, got.max_in_flight) == (
        "http://localhost:9",
        "glm",
        30.0,
        5,
    )
    assert got.ui_requests == 100 and dict(got.model_windows) == {"gpt-4o": 64000}
    assert dict(got.compaction_settings) == {"trigger": 30000}
    # a flag wins, and the old flag still works (warned)
    served.clear()
    result = _invoke("proxy", "--config", config, "--read-timeout", "7", "--profile", "openai")
    assert served[0].read_timeout == 7.0 and served[0].profile == "openai"
    assert "--read-timeout on the command line is deprecated" in result.stderr


def test_the_proxy_governs_with_the_files_policy(tmp_path: Path) -> None:
    from context_governor.proxy._config import ProxyConfig
    from context_governor.proxy._summaries import compaction_for

    settings = {"trigger": 30000, "exclude_tools": ["memory"]}
    config = ProxyConfig(upstream="http://localhost:9", compaction_settings=settings)
    assert compaction_for(config) == CompactionPolicy(
        trigger=30000, exclude_tools=frozenset({"memory"})
    )
    assert ProxyConfig.from_json(config.to_json()) == config  # workers rebuild the same
    assert compaction_for(ProxyConfig(upstream="http://localhost:9")) == "cache"


def test_the_documented_example_is_accepted_by_every_command(
    tmp_path: Path, served: list[Any]
) -> None:
    assert DOCS_CONFIG is not None
    config = _write(tmp_path, DOCS_CONFIG.group(1))
    assert _invoke("govern", "--config", config, EXAMPLE).exit_code in (0, 1)
    assert _invoke("lint", "--config", config, EXAMPLE).exit_code in (0, 1)
    result = _invoke("proxy", "--config", config, "--port", "0")
    assert result.exit_code == 0, result.stderr
    assert served[0].max_in_flight == 512 and served[0].summary_store == "sqlite:///summaries.db"
    # run: the file is read and checked before any model is called
    result = _invoke("run", "--config", config, "--help")
    assert result.exit_code == 0


def test_every_command_lists_its_file_settings_in_help() -> None:
    for command in main.commands.values():
        hidden = [p for p in command.params if isinstance(p, click.Option) and p.hidden]
        moved = [p for p in hidden if p.name != "provider_alias"]
        out = _invoke(command.name or "", "--help").stdout
        for param in moved:
            assert param.opts[0][2:] in out.partition("Settings only a --config file takes")[2]


def test_the_policy_by_name_at_the_top_or_in_a_table(tmp_path: Path) -> None:
    by_flag = _invoke(
        "govern", EXAMPLE, "--json", "--context-window", "32000", "--compaction", "seed"
    )
    top = _write(tmp_path, 'compaction = "seed"\ncontext-window = 32000\n')
    assert _invoke("govern", "--config", top, EXAMPLE, "--json").stdout == by_flag.stdout
    own = _write(
        tmp_path,
        'context-window = 32000\n[compaction]\npolicy = "cache"\n[govern]\ncompaction = "seed"\n',
    )
    assert _invoke("govern", "--config", own, EXAMPLE, "--json").stdout == by_flag.stdout
    bad = _write(tmp_path, '[compaction]\npolicy = "lru"\n')
    result = _invoke("lint", "--config", bad, EXAMPLE)
    assert result.exit_code == 2 and "policy must be 'cache' or 'seed'" in result.stderr


def test_new_settings_work_from_the_file_and_the_command_line_without_a_warning(
    tmp_path: Path, served: list[Any]
) -> None:
    """compacted and cache-breakpoints were never flags: config-file settings with no
    deprecation warning when given on the command line."""
    config = _write(tmp_path, "[proxy]\nupstream = 'http://x/v1'\ncompacted = 'drop'\ncache-breakpoints = false\n")
    result = _invoke("proxy", "--config", config)
    assert result.exit_code == 0, result.output
    assert (served[-1].compacted, served[-1].cache_breakpoints) == ("drop", False)
    result = _invoke("proxy", "--upstream", "http://x/v1", "--compacted", "drop", "--no-cache-breakpoints")
    assert result.exit_code == 0 and "warning" not in result.stderr, result.stderr
    assert (served[-1].compacted, served[-1].cache_breakpoints) == ("drop", False)
    assert "[proxy] cache-breakpoints, compacted" in _invoke("proxy", "--help").stdout


def test_the_pages_hint_names_a_setting_the_config_file_takes() -> None:
    """/ui tells a user how to see message content: with a setting in the table that
    holds it, not a flag that would print a deprecation warning."""
    from context_governor.cli._proxy import TABLES
    from context_governor.proxy._ui import NO_CONTENT

    found = re.search(r"set ([a-z-]+) = true in the \[proxy\.([a-z]+)\] table", NO_CONTENT)
    assert found is not None, NO_CONTENT
    assert found.group(1) in TABLES[found.group(2)]
    assert "--ui-content" not in NO_CONTENT
