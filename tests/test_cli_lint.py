"""`context-governor lint`: provider rules checked from the command line.

Exit codes are the contract scripts rely on (0 clean, 1 violations, 2 bad
input), so most tests pin them; the end-to-end ones run the installed console
script, including govern's output piped into lint for every provider.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

import context_governor
from context_governor import Violation, validate
from context_governor.cli import main
from context_governor.providers import CATALOG, applicable_rules

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "coding-session.json"
EXE = Path(sys.executable).with_name("context-governor")

CLEAN = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "list the files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a.py b.py"},
    {"role": "assistant", "content": "Two files."},
    {"role": "user", "content": "thanks"},
]
# Legal for OpenAI, but Anthropic tool_use ids must match ^[a-zA-Z0-9_-]+$ (AN-8b).
DOTTED_ID = [
    {"role": "user", "content": "list the files"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call.1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call.1", "content": "a.py"},
    {"role": "user", "content": "thanks"},
]
# Claude 4.6 rejects a trailing assistant message (AN-6); Claude 4.5 takes it as prefill.
PREFILL = [{"role": "user", "content": "write a haiku"}, {"role": "assistant", "content": "Sure:"}]


def _lint(args: list[str], stdin: str | bytes | None = None) -> Any:
    return CliRunner().invoke(main, ["lint", *args], input=stdin)


def _run(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed entry point in a real process."""
    return subprocess.run(
        [str(EXE), *args], input=stdin, capture_output=True, text=True, check=False
    )


def _gen_providers() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_providers", ROOT / "docs" / "gen_providers.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- exit codes and the human output -----------------------------------------------------


def test_clean_list_exits_0_real_script() -> None:
    proc = _run(["lint", "-"], json.dumps(CLEAN))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        proc.stdout.strip() == "clean: no violations of the openai rules (1 body, no model given)"
    )
    assert proc.stderr == ""


def test_anthropic_violation_exits_1_and_names_the_rule() -> None:
    assert _lint(["-"], json.dumps(DOTTED_ID)).exit_code == 0  # fine for OpenAI
    result = _lint(["-", "--provider", "anthropic"], json.dumps(DOTTED_ID))
    assert result.exit_code == 1, result.output
    assert "AN-8b" in result.output
    # The provider's error quotes a regex; it must come out literally, not eaten as rich markup.
    assert "'^[a-zA-Z0-9_-]+$'" in result.output
    summary = result.output.strip().splitlines()[-1]
    # The bad id is on the call and on its result: two places to fix.
    assert summary == "2 violations of the anthropic rules (no model given): AN-8b ×2"


def test_real_script_violation_on_a_file(tmp_path: Path) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"model": "claude-opus-4-6", "messages": PREFILL}))
    proc = _run(["lint", str(path), "--provider", "anthropic"])
    assert proc.returncode == 1, proc.stderr
    # Piped: one violation per line, no box drawing, nothing wrapped.
    first = proc.stdout.splitlines()[0]
    assert first.startswith("message 1: AN-6: This model does not support assistant message")
    assert first.endswith("| fix: drop the trailing assistant message")
    assert "│" not in proc.stdout
    assert proc.stdout.strip().endswith("(model claude-opus-4-6): AN-6")


def test_model_flag_overrides_the_body_model() -> None:
    body = json.dumps({"model": "claude-opus-4-6", "messages": PREFILL})
    assert _lint(["-", "--provider", "anthropic"], body).exit_code == 1
    overridden = _lint(["-", "--provider", "anthropic", "--model", "claude-sonnet-4-5"], body)
    assert overridden.exit_code == 0, overridden.output
    assert "model claude-sonnet-4-5" in overridden.output


def test_request_level_violation_is_shown_as_request() -> None:
    result = _lint(["-"], "[]")
    assert result.exit_code == 1
    row = next(line for line in result.output.splitlines() if "OA-6b" in line)
    assert "request" in row


def test_human_rows_follow_message_order() -> None:
    messages = [
        {"role": "tool", "tool_call_id": "x", "content": "orphan"},  # OA-1 at 0
        {"role": "user", "content": "hi", "name": "bad name"},  # OA-7 at 1
        {"role": "user", "content": None},  # OA-5 at 2
    ]
    found = validate(messages, provider="openai")
    assert [v.rule for v in found] != [v.rule for v in sorted(found, key=lambda v: v.index)]
    result = _lint(["-"], json.dumps(messages))
    assert result.exit_code == 1
    positions = [result.output.index(f" {rule}: ") for rule in ("OA-1", "OA-7", "OA-5")]
    assert positions == sorted(positions)


def test_help_explains_exit_codes_and_lists_providers() -> None:
    result = _lint(["--help"])
    assert result.exit_code == 0
    for text in ("0  no violations", "1  at least one violation", "2  bad input or usage"):
        assert text in result.output
    width = max(len(name) for name in CATALOG)
    for provider in CATALOG.values():
        assert f"{provider.name:<{width}}  {provider.title}" in result.output
    assert "--list-rules" in result.output and "JSON Lines" in result.output


# --- JSON ----------------------------------------------------------------------------------


def test_json_shape() -> None:
    body = {"model": "claude-opus-4-6", "messages": [*DOTTED_ID, PREFILL[1]]}
    result = _lint(["-", "--provider", "anthropic", "--json"], json.dumps(body))
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert set(doc) == {"ok", "violations", "bodies"}
    assert doc["ok"] is False and doc["violations"] == 3
    (entry,) = doc["bodies"]
    assert entry["body"] == 1 and entry["line"] is None
    assert entry["provider"] == "anthropic" and entry["model"] == "claude-opus-4-6"
    assert entry["rules_checked"] == len(applicable_rules("anthropic", "claude-opus-4-6"))
    expected = validate(body["messages"], provider="anthropic", model="claude-opus-4-6")
    assert [Violation(**v) for v in entry["violations"]] == expected
    assert [(v["rule"], v["index"]) for v in entry["violations"]] == [
        ("AN-6", 4),
        ("AN-8b", 1),
        ("AN-8b", 2),
    ]
    assert set(entry["violations"][0]) == {"rule", "index", "error", "hint", "provider"}


def test_json_clean_is_ok_and_exits_0() -> None:
    result = _lint(["-", "--json"], json.dumps(CLEAN))
    assert result.exit_code == 0
    doc = json.loads(result.output)
    assert doc["ok"] is True and doc["violations"] == 0
    assert doc["bodies"][0]["violations"] == [] and doc["bodies"][0]["model"] is None


def test_jsonl_several_bodies() -> None:
    lines = [
        json.dumps({"model": "claude-sonnet-4-5", "messages": CLEAN}),
        "",  # blank lines are skipped, so body 2 is on line 3
        json.dumps({"model": "claude-opus-4-6", "messages": PREFILL}),
        json.dumps({"messages": DOTTED_ID}),
    ]
    stdin = "\n".join(lines) + "\n"
    result = _lint(["-", "--provider", "anthropic", "--json"], stdin)
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert [(b["body"], b["line"]) for b in doc["bodies"]] == [(1, 1), (2, 3), (3, 4)]
    assert [b["model"] for b in doc["bodies"]] == ["claude-sonnet-4-5", "claude-opus-4-6", None]
    assert [[v["rule"] for v in b["violations"]] for b in doc["bodies"]] == [
        [],
        ["AN-6"],
        ["AN-8b", "AN-8b"],
    ]
    assert doc["violations"] == 3

    piped = _lint(["-", "--provider", "anthropic"], stdin)
    assert piped.exit_code == 1
    found = [line.split(": ")[:3] for line in piped.output.splitlines()[:-1]]
    assert found == [
        ["line 3", "message 1", "AN-6"],
        ["line 4", "message 1", "AN-8b"],
        ["line 4", "message 2", "AN-8b"],
    ]
    # At a terminal, the same as a table.
    human = CliRunner(env={"TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": "120"}).invoke(
        main, ["lint", "-", "--provider", "anthropic"], input=stdin
    )
    assert human.exit_code == 1
    table = re.sub(r"\x1b\[[0-9;]*m", "", human.output)  # bold rule ids
    assert "line" in table.splitlines()[1]  # the table's header row has a line column
    rows = [line.split() for line in table.splitlines() if line.startswith("│ ")]
    starts = [row[1:6] for row in rows if len(row) > 6 and row[1].isdigit()]
    assert starts == [
        ["3", "│", "1", "│", "AN-6"],
        ["4", "│", "1", "│", "AN-8b"],
        ["4", "│", "2", "│", "AN-8b"],
    ]
    assert human.output.strip().splitlines()[-1] == piped.output.strip().splitlines()[-1] == (
        "3 violations of the anthropic rules in 2 of 3 bodies "
        "(models claude-opus-4-6, claude-sonnet-4-5): AN-6, AN-8b ×2"
    )


# --- bad input and usage -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdin", "expected"),
    [
        ("not json", "error: input: not JSON: Expecting value at line 1 column 1"),
        ('[{"role": "user", "content": "a"}', "error: input: not JSON: Expecting ',' delimiter"),
        ("", "error: input: empty; expected JSON"),
        ('{"model": "x"}', "error: input: a request body needs a 'messages' list"),
        ('[{"role": "robot", "content": "a"}]', "error: messages[0].role: unknown role 'robot'"),
        ('{"messages": "hi"}', "error: messages: expected a list of message objects, got str"),
        (
            '{"messages": []}\n{"messages": [], "model": 4}\n',
            "error: line 2: model: expected a string, got int",
        ),
        ('{"messages": []}\n{oops\n', "error: line 2: not JSON"),
    ],
)
def test_bad_input_exits_2_with_one_line(stdin: str, expected: str) -> None:
    proc = _run(["lint", "-", "--provider", "anthropic"], stdin)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.startswith(expected), proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_missing_file_exits_2() -> None:
    result = _lint(["no/such/file.json"])
    assert result.exit_code == 2
    assert "error: no/such/file.json: No such file" in result.output


def test_unknown_provider_exits_2() -> None:
    proc = _run(["lint", "-", "--provider", "nope"], json.dumps(CLEAN))
    assert proc.returncode == 2
    assert "Invalid value for '--provider': 'nope' is not one of" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


# --- --list-rules --------------------------------------------------------------------------


def test_list_rules_human() -> None:
    result = _lint(["--list-rules", "--provider", "anthropic", "--model", "claude-opus-4-6"])
    assert result.exit_code == 0, result.output
    out = result.output
    checked = applicable_rules("anthropic", "claude-opus-4-6")
    assert out.startswith(f"Anthropic Messages (anthropic), claude-opus-4-6: {len(checked)} rules")
    sections = out.index("Checked"), out.index("Only for other models"), out.index("Not checked")
    assert sections == tuple(sorted(sections))
    checked_part = out[sections[0] : sections[1]]
    assert " AN-6 " in checked_part and "AN-6b" not in checked_part
    assert "AN-6b" in out[sections[1] : sections[2]]  # prefill whitespace: Claude <= 4.5 only
    for rule_id, _why in CATALOG["anthropic"].not_checked:
        assert rule_id in out[sections[2] :]


def test_list_rules_json_matches_the_catalog() -> None:
    for name, provider in CATALOG.items():
        result = _lint(["--list-rules", "--provider", name, "--json"])
        assert result.exit_code == 0
        listing = json.loads(result.output)
        assert listing["provider"] == name and listing["title"] == provider.title
        assert [r["id"] for r in listing["rules"]] == [r.id for r in applicable_rules(name)]
        assert len(listing["rules"]) + len(listing["other_models"]) == len(provider.rules)
        assert [(r["id"], r["reason"]) for r in listing["not_checked"]] == list(
            provider.not_checked
        )


def test_list_rules_reads_no_input() -> None:
    # stdin is garbage, yet --list-rules succeeds: it never reads it.
    assert _lint(["-", "--list-rules"], "not json").exit_code == 0


# --- the bundled example and the govern -> lint round trip ---------------------------------


def test_bundled_example_is_not_clean_for_openai() -> None:
    """The example has a lost tool result and an orphan result: OA-2 and OA-1."""
    proc = _run(["lint", str(EXAMPLE), "--json"])
    assert proc.returncode == 1, proc.stderr
    (entry,) = json.loads(proc.stdout)["bodies"]
    assert entry["model"] == "gpt-4o-mini"
    found = {v["rule"]: v["index"] for v in entry["violations"]}
    assert sorted(found) == ["OA-1", "OA-2"] and len(entry["violations"]) == 2
    messages = json.loads(EXAMPLE.read_text())["messages"]
    assert messages[found["OA-1"]]["role"] == "tool"  # the orphan
    assert messages[found["OA-2"]]["tool_calls"]  # the call whose result was lost


def test_governed_example_lints_clean_through_a_real_pipe() -> None:
    """`govern --json | lint` between two real processes (the other providers run the
    same round trip in-process below: two interpreter start-ups each cost seconds)."""
    governed = _run(["govern", str(EXAMPLE), "--profile", "anthropic", "--json"])
    assert governed.returncode == 0, governed.stderr
    linted = _run(["lint", "-", "--profile", "anthropic", "--json"], governed.stdout)
    doc = json.loads(linted.stdout)
    left = [(v["rule"], v["index"]) for b in doc["bodies"] for v in b["violations"]]
    assert left == [] and linted.returncode == 0, f"left violations: {left}"


@pytest.mark.parametrize("provider", list(CATALOG))
def test_governed_example_lints_clean(provider: str) -> None:
    """`govern --profile P --json | lint --profile P`: governance must satisfy the rules."""
    governed = CliRunner().invoke(main, ["govern", str(EXAMPLE), "--profile", provider, "--json"])
    assert governed.exit_code == 0, governed.output
    linted = _lint(["-", "--profile", provider, "--json"], governed.stdout)
    doc = json.loads(linted.stdout)
    left = [(v["rule"], v["index"]) for b in doc["bodies"] for v in b["violations"]]
    assert left == [] and linted.exit_code == 0, f"{provider} left violations: {left}"


def _model_cases() -> list[tuple[str, str]]:
    samples: dict[str, tuple[str, ...]] = _gen_providers().SAMPLE_MODELS
    return [(p, m) for p in CATALOG for m in samples.get(p, ())]


@pytest.mark.parametrize(("provider", "model"), _model_cases())
def test_governed_example_lints_clean_for_each_sample_model(provider: str, model: str) -> None:
    """The same round trip for the models the model-dependent rules tell apart."""
    text = EXAMPLE.read_text()
    # a window that holds it: some sample models' family windows (Llama 2's 4,096,
    # Gemma 2's 8,192) cannot, and then govern says "over budget" (exit 1)
    args = [str(EXAMPLE), "--profile", provider, "--model", model, "--json",
            "--context-window", "1000000"]  # fmt: skip
    governed = CliRunner().invoke(main, ["govern", *args])
    assert governed.exit_code == 0, governed.output
    assert json.loads(text)["messages"] != json.loads(governed.stdout)["messages"]
    linted = _lint(["-", "--provider", provider, "--model", model, "--json"], governed.stdout)
    left = [
        (v["rule"], v["index"])
        for b in json.loads(linted.output)["bodies"]
        for v in b["violations"]
    ]
    assert left == [] and linted.exit_code == 0, f"{provider}/{model} left violations: {left}"


# --- the public API and the generated docs -------------------------------------------------


def test_validate_and_violation_are_exported_from_the_root() -> None:
    assert {"validate", "Violation"} <= set(context_governor.__all__)
    found = context_governor.validate(DOTTED_ID, provider="anthropic")
    assert found and isinstance(found[0], context_governor.Violation)


def test_providers_doc_is_generated_from_the_catalog() -> None:
    """docs/providers.md must equal the script's output: run `python docs/gen_providers.py`."""
    gen = _gen_providers()
    committed = (ROOT / "docs" / "providers.md").read_text(encoding="utf-8")
    assert committed == gen.render()
    for provider in CATALOG.values():
        assert f"## {provider.title} (`{provider.name}`)" in committed
        for rule in provider.rules:
            assert f"| {rule.id} | " in committed
        for rule_id, _why in provider.not_checked:
            assert f"| {rule_id} | " in committed


def test_doc_models_column_comes_from_the_rules() -> None:
    gen = _gen_providers()
    rules = {r.id: r for r in CATALOG["anthropic"].rules}
    assert gen._models(CATALOG["anthropic"], rules["AN-1"]) == "all"
    assert gen._models(CATALOG["anthropic"], rules["AN-6"]) == "`claude-opus-4-6`, (no model)"
    assert gen._models(CATALOG["anthropic"], rules["AN-4"]) == "`claude-3-opus-20240229`"


# --- the request's tools (Bedrock's toolConfig, BR-4) ------------------------------------


LS_TOOL = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]


def test_a_body_without_tools_declares_none(tmp_path: Path) -> None:
    """A request body is the whole request: no 'tools' means no toolConfig (BR-4)."""
    result = _lint(["-", "--provider", "bedrock"], json.dumps({"messages": CLEAN}))
    assert result.exit_code == 1
    assert "BR-4" in result.output
    with_tools = {"messages": CLEAN, "tools": LS_TOOL}
    assert _lint(["-", "--provider", "bedrock"], json.dumps(with_tools)).exit_code == 0


def test_tools_flag_for_a_bare_list(tmp_path: Path) -> None:
    """A bare list says nothing of the tools (not checked) until --tools FILE does."""
    bare = json.dumps(CLEAN)
    assert _lint(["-", "--provider", "bedrock"], bare).exit_code == 0
    none, some, bad = tmp_path / "none.json", tmp_path / "some.json", tmp_path / "bad.json"
    none.write_text("[]")
    some.write_text(json.dumps(LS_TOOL))
    bad.write_text("{not json")
    result = _lint(["-", "--provider", "bedrock", "--tools", str(none)], bare)
    assert result.exit_code == 1 and "BR-4" in result.output
    assert _lint(["-", "--provider", "bedrock", "--tools", str(some)], bare).exit_code == 0
    result = _lint(["-", "--provider", "bedrock", "--tools", str(bad)], bare)
    assert result.exit_code == 2 and "not valid JSON" in result.output
