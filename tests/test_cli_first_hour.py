"""A new user's first hour (issue 10, items 9-14): exit statuses, one rule for the
window, the policy and the option names in every interface, a readable and typed
public API, documentation that stands alone, and report indices that say which
list they count."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from fake_upstream import FakeUpstream, Reply
from hypothesis import given, settings
from hypothesis import strategies as st

import context_governor
from context_governor import Governor, InputError, govern, known_window, render_report
from context_governor.cli import main
from context_governor.cli._lint_render import index_note
from context_governor.demo._project import PROJECT_FILES
from context_governor.policies import get_policy
from context_governor.providers import Violation
from context_governor.providers.windows import KNOWN_WINDOWS, resolve_window
from context_governor.proxy import ProxyConfig, create_app
from context_governor.report import Action, Report, position

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "coding-session.json"
SMALL = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "hello " * 50},
]


def _cli(args: list[str], stdin: str | None = None, **kw: Any) -> Any:
    return CliRunner(**kw).invoke(main, args, input=stdin)


# --------------------------------------------------------------------------- item 9


def test_govern_exits_1_when_the_budget_cannot_be_met() -> None:
    """--max-output larger than the window: printed as OVER BUDGET, and the exit says so."""
    result = _cli(
        ["govern", "-", "--context-window", "2000", "--max-output", "4000"], json.dumps(SMALL)
    )
    assert "OVER BUDGET" in result.stdout
    assert result.exit_code == 1
    as_json = _cli(
        ["govern", "-", "--context-window", "2000", "--max-output", "4000", "--json"],
        json.dumps(SMALL),
    )
    assert as_json.exit_code == 1 and json.loads(as_json.stdout) == SMALL  # output still printed
    fits = _cli(["govern", "-", "--context-window", "8000"], json.dumps(SMALL))
    assert fits.exit_code == 0 and "within budget" in fits.stdout


def test_govern_help_documents_the_exit_statuses() -> None:
    text = _cli(["govern", "--help"]).stdout
    assert "Exit status:" in text
    assert "1  a body is over budget or still breaks a rule" in text
    assert "2  bad input or usage" in text


def test_report_says_ok_or_over_budget_in_one_attribute() -> None:
    over = govern(SMALL, context_window=2000, max_output=4000).report
    assert over.over_budget and not over.ok and not over.within_budget
    fine = govern(SMALL, context_window=8000).report
    assert fine.ok and not fine.over_budget
    data = over.to_dict()
    assert data["ok"] is False and data["over_budget"] is True


def test_a_broken_provider_rule_is_not_ok() -> None:
    report = govern(SMALL, context_window=8000).report
    report.violations = [{"rule": "X-1", "index": 0, "error": "e", "hint": "h", "provider": "p"}]
    assert report.within_budget and not report.ok


# --------------------------------------------------------------------------- item 10


def test_known_windows_match_by_longest_prefix_and_ignore_vendor_prefixes() -> None:
    assert known_window("gpt-4o-2024-08-06") == 128_000
    assert known_window("gpt-4.1-mini") == 1_047_576
    assert known_window("o1-mini-2024-09-12") == 128_000  # not o1's 200,000
    assert known_window("openai/gpt-5-nano") == 272_000  # the input cap of its 400k
    assert known_window("gpt-5-chat-latest") == 128_000
    assert known_window("us.anthropic.claude-sonnet-4-20250514-v1:0") == 200_000
    assert known_window("models/gemini-1.5-pro-002") == 2_097_152
    assert known_window("my-local-model") is None and known_window(None) is None


@given(model=st.sampled_from(sorted(KNOWN_WINDOWS)), suffix=st.text("-0123456789abc", max_size=12))
@settings(max_examples=50, deadline=None)
def test_an_explicit_window_always_wins(model: str, suffix: str) -> None:
    assert resolve_window(5000, model + suffix) == (5000, "given")
    window, source = resolve_window(None, model + suffix)
    assert source == "model" and window in KNOWN_WINDOWS.values()
    assert resolve_window(None, "acme/" + model + suffix) == (window, source)


def test_library_uses_the_models_known_window() -> None:
    report = govern(SMALL, model="gpt-4o-mini").report
    assert (report.context_window, report.window_source) == (128_000, "model")
    assert report.budget == 128_000 - 4096 - 1024
    assert Governor(model="gpt-4o-mini").govern(SMALL).report.budget == report.budget
    unknown = govern(SMALL, model="my-local-model").report
    assert (unknown.context_window, unknown.budget, unknown.window_source) == (None, None, "none")
    assert "nothing is cut" in str(unknown)


def test_cli_govern_uses_the_same_window_and_says_when_there_is_none(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    body = json.dumps({"model": "gpt-4o-mini", "messages": SMALL})
    result = _cli(["govern", "-", "--report", str(report)], body)
    assert result.exit_code == 0 and result.stderr == ""
    assert (
        json.loads(report.read_text())["budget"] == govern(SMALL, model="gpt-4o-mini").report.budget
    )
    assert "window 128,000 (gpt-4o-mini's known window)" in result.stdout
    bare = _cli(["govern", "-", "--json"], json.dumps(SMALL))
    assert bare.exit_code == 0 and json.loads(bare.stdout) == SMALL
    assert (
        bare.stderr
        == "note: no context window (no model given): nothing was cut; set --context-window\n"
    )


def test_proxy_uses_the_same_window(upstream: FakeUpstream) -> None:
    from starlette.testclient import TestClient

    upstream.push(Reply.text("ok"))
    assert ProxyConfig(upstream="http://x/v1").context_window is None
    with TestClient(create_app(ProxyConfig(upstream=upstream.base_url))) as client:
        response = client.post(
            "/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": SMALL}
        )
    assert response.status_code == 200, response.text
    expected = govern(SMALL, model="gpt-4o-mini").report.budget
    assert response.headers["x-context-governor-budget"] == str(expected)


def test_run_uses_the_same_window(upstream: FakeUpstream, tmp_path: Path) -> None:
    upstream.push(Reply.text("ok"))
    result = _cli(
        [
            "run",
            "hi",
            "--model",
            "gpt-4o-mini",
            "--base-url",
            upstream.base_url,
            "--workspace",
            str(tmp_path),
            "--no-exec",
        ],
    )
    assert result.exit_code == 0, result.stderr
    budget = govern(SMALL, model="gpt-4o-mini").report.budget
    assert f"/ budget {budget:,}," in result.stderr


def test_run_says_when_there_is_no_window(upstream: FakeUpstream, tmp_path: Path) -> None:
    upstream.push(Reply.text("ok"))
    result = _cli(
        [
            "run",
            "hi",
            "--model",
            "my-local-model",
            "--base-url",
            upstream.base_url,
            "--workspace",
            str(tmp_path),
            "--no-exec",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "note: no context window (no known window for model 'my-local-model')" in result.stderr


def _commands() -> dict[str, click.Command]:
    return dict(main.commands)  # type: ignore[attr-defined]


def test_every_interface_defaults_to_the_cache_policy() -> None:
    assert get_policy(None).kind == "cache"
    assert ProxyConfig(upstream="http://x/v1").compaction == "cache"
    for name, command in _commands().items():
        for param in command.params:
            if param.name == "compaction":
                assert param.default == "cache", name
    assert "profile openai, compaction cache" in _cli(["demo"]).stdout


def test_one_option_name_for_the_target_with_the_old_one_hidden() -> None:
    with_profile = [n for n, c in _commands().items() if any(p.name == "profile" for p in c.params)]
    assert sorted(with_profile) == ["demo", "govern", "lint", "proxy", "run"]
    for name in with_profile:
        text = _cli([name, "--help"]).stdout
        assert "--profile" in text and "--provider" not in text, name
    # Old commands keep working, and mean the same.
    messages = json.dumps([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    old = _cli(["lint", "-", "--provider", "anthropic", "--json"], messages)
    new = _cli(["lint", "-", "--profile", "anthropic", "--json"], messages)
    assert old.exit_code == new.exit_code == 1 and old.stdout == new.stdout
    assert json.loads(old.stdout)["bodies"][0]["provider"] == "anthropic"
    governed = _cli(["govern", str(EXAMPLE), "--provider", "gemini", "--json"])
    assert governed.stdout == _cli(["govern", str(EXAMPLE), "--profile", "gemini", "--json"]).stdout
    both = _cli(["govern", str(EXAMPLE), "--provider", "gemini", "--profile", "openai"])
    assert both.exit_code == 2 and "not both" in both.stderr


# --------------------------------------------------------------------------- item 11


def test_print_report_is_the_readable_summary() -> None:
    report = govern(SMALL, context_window=2000, max_output=4000).report
    assert str(report) == render_report(report)
    assert str(report).startswith("profile openai · counter ")
    assert "OVER BUDGET" in str(report) and "Report(" not in str(report)


def test_dir_lists_the_public_api_only() -> None:
    names = dir(context_governor)
    assert "Any" not in names and "TYPE_CHECKING" not in names
    assert "render_report" in names and "__version__" in names
    assert set(context_governor.__all__) <= set(names)
    for name in context_governor.__all__:
        assert getattr(context_governor, name) is not None


def test_a_whole_request_body_gets_a_pointed_error() -> None:
    body = {"model": "gpt-4o", "messages": SMALL}
    with pytest.raises(InputError, match=r"pass body\['messages'\]"):
        govern(body)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="expected a list of message objects, got"):
        govern({"role": "user"})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The files of the wheel built from this checkout (built once for the module)."""
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("context_governor-*.whl")
    return zipfile.ZipFile(wheel).namelist()


def test_the_wheel_ships_py_typed(wheel_names: list[str]) -> None:
    assert (ROOT / "src" / "context_governor" / "py.typed").is_file()
    assert "context_governor/py.typed" in wheel_names


def test_the_wheel_ships_the_demo_project(wheel_names: list[str]) -> None:
    """The demo's sample project is package data: every file of it is in the wheel."""
    shipped = {n for n in wheel_names if n.startswith("context_governor/demo/project/")}
    expected = {f"context_governor/demo/project/{name}" for name in PROJECT_FILES}
    assert shipped == expected


# --------------------------------------------------------------------------- item 12

FORBIDDEN = re.compile(r"\.\./shared|RULEBOOK|SEED-SPEC|/work/")


def _help_texts() -> dict[str, str]:
    texts = {"main": _cli(["--help"]).stdout}
    for name in _commands():
        texts[name] = _cli([name, "--help"]).stdout
    return texts


def test_docs_and_help_stand_alone() -> None:
    """Nothing a user reads points at files only the project's authors have."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = {str(p.relative_to(ROOT)): FORBIDDEN.findall(p.read_text()) for p in pages}
    found |= {f"{k} --help": FORBIDDEN.findall(v) for k, v in _help_texts().items()}
    assert {k: v for k, v in found.items() if v} == {}


def test_readme_points_at_the_pipeline_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "docs/pipeline.md" in readme
    pipeline = (ROOT / "docs" / "pipeline.md").read_text()
    for constant in ("1024", "4096", "(conversation continued)", "keep_recent", "500"):
        assert constant in pipeline


# --------------------------------------------------------------------------- item 14


def test_positions_say_which_list_they_count() -> None:
    actions = [
        Action("orphans", "drop", 40, "orphan"),
        Action("backfill", "insert", 12, "placeholder"),
        Action("compact", "drop", 3, "old turn cut (compaction at message 37)"),
        Action("compact", "drop", 20, "old turn cut (compaction at message 37)"),
    ]
    report = Report("openai", "o200k_base", 10_000, 100, 8876, actions=actions)
    text = render_report(report, verbose=True)
    assert "    input #40: orphan" in text  # the first stage sees the input history
    assert "    new #12: placeholder" in text  # an insertion: its place in the output
    assert "    input #3: old turn cut" in text  # below every earlier shift: still the input's
    assert "    #20: old turn cut" in text and "input #20" not in text  # after the insertion
    assert "input #N: message N, from 0, of the history you passed" in text
    assert "compaction at message N: the cut or clearing was decided" in text


@given(
    st.lists(
        st.tuples(st.sampled_from(["drop", "insert", "replace"]), st.integers(0, 30)), max_size=8
    ),
    st.integers(0, 30),
)
@settings(max_examples=100, deadline=None)
def test_input_positions_are_never_claimed_after_a_shift_below_them(
    earlier: list[tuple[str, int]], index: int
) -> None:
    actions = [Action(f"s{i}", kind, at, "x") for i, (kind, at) in enumerate(earlier)]
    actions.append(Action("last", "replace", index, "y"))
    text = render_report(Report("openai", "c", None, 0, None, actions=actions), verbose=True)
    line = text.splitlines()[-2]  # the last action's line, above the legend
    shifted_below = any(kind != "replace" and at <= index for kind, at in earlier)
    assert line.strip().startswith("input #") is (not shifted_below)


def test_lint_explains_the_providers_own_index() -> None:
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a.b", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "a.b", "content": "r"},
        {"role": "user", "content": "again"},
    ]
    result = _cli(["lint", "-", "--profile", "anthropic"], json.dumps(messages))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()[:-1]
    assert lines and all("│" not in line for line in lines)
    noted = [line for line in lines if "messages.1" in line]
    assert noted and noted[0].startswith("message 2: ")
    assert "(the provider's messages.1 counts its own turns" in noted[0]
    assert "it is message 2 of your list) | fix: " in noted[0]


def test_index_note_only_when_the_numbers_differ() -> None:
    same = Violation("R", 1, "messages.1: bad", "fix", "anthropic")
    other = Violation("R", 2, "messages.1: bad", "fix", "anthropic")
    plain = Violation("R", 2, "bad", "fix", "openai")
    assert index_note(same) == index_note(plain) == ""
    assert "message 2 of your list" in index_note(other)


def test_position_label_kinds() -> None:
    assert position(Action("s", "insert", 4, "x"), float("inf")) == "new #4"
    assert position(Action("s", "drop", 4, "x"), float("inf")) == "input #4"
    assert position(Action("s", "drop", 4, "x"), 4) == "#4"


def test_run_verbose_says_which_list_each_index_counts() -> None:
    """The one-action-per-line view of `run -v`: a drop and an insertion at "#4" are
    different messages, and the lines now say so."""
    from context_governor.runner._progress import ProgressPrinter
    from context_governor.runner._types import ModelCall

    actions = [
        Action("alternation", "drop", 4, "trailing assistant message dropped"),
        Action("opening", "insert", 4, "user message inserted"),
        Action("names", "repair", 6, "name fixed"),
    ]
    report = Report("openai", "c", None, 0, None, actions=actions)
    lines: list[str] = []
    printer = ProgressPrinter(lines.append, lambda text: None, verbose=True)
    for step in (1, 2):
        printer.before_model(ModelCall(step, [], None, report))
    assert "    alternation drop input #4: trailing assistant message dropped" in lines
    assert "    opening insert new #4: user message inserted" in lines
    assert "    names repair #6: name fixed" in lines  # after a drop below it
    assert sum("input #N: message N" in line for line in lines) == 1  # the legend, once


def test_list_rules_is_plain_when_piped() -> None:
    result = _cli(["lint", "--list-rules", "--profile", "anthropic", "--model", "claude-opus-4-6"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].endswith("rules checked") and lines[1] == "Checked"
    assert all("│" not in line and "─" not in line for line in lines)
    assert any(re.match(r"  AN-\S+  \S", line) for line in lines)  # one rule a line


def test_a_broken_rule_note_says_its_index_counts_the_output() -> None:
    """Violations are found on the governed list, not on the history passed in."""
    bad_name = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get weather", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    report = govern(bad_name, context_window=8000).report
    (violation,) = report.violations
    assert f"rule not met: {violation['rule']} at message 1 of the output: " in "\n".join(
        report.notes
    )
    assert not report.ok


def test_cli_window_zero_is_no_window_for_nanobot_only(tmp_path: Path) -> None:
    """The seed reads a window of 0 as "no window"; the CLI lets the nanobot profile do so
    and gives the other profiles' refusal as a one-line error (exit 2), not a traceback."""
    body = tmp_path / "b.json"
    body.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    ok = CliRunner().invoke(
        main, ["govern", str(body), "--profile", "nanobot", "--context-window", "0", "--json"]
    )
    assert ok.exit_code == 0, ok.output
    refused = CliRunner().invoke(main, ["govern", str(body), "--context-window", "0"])
    assert refused.exit_code == 2
    assert "context_window must be a positive integer" in refused.output
    assert "Traceback" not in refused.output
