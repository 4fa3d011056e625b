"""The project stands alone: every rule names its public source, and nothing a user can
reach (``lint --list-rules``, docs/) points at the workspace the rules were researched in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from context_governor.cli import main
from context_governor.providers import CATALOG

ROOT = Path(__file__).resolve().parents[1]
#: What only exists in the workspace this project was written in.
FOREIGN = ("RULEBOOK", "../shared", "shared/providers", "shared/seed", "/work/")


def test_every_rule_has_a_public_source() -> None:
    for entry in CATALOG.values():
        for rule in entry.rules:
            assert rule.source, f"{rule.id} has no source"
            assert all(url.startswith("https://") for url in rule.source), rule.id


def _list_rules(provider: str, model: str | None, *extra: str) -> str:
    args = ["lint", "--list-rules", "--provider", provider, *extra]
    result = CliRunner().invoke(main, [*args, "--model", model] if model else args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("provider", list(CATALOG))
def test_list_rules_cites_no_workspace_file(provider: str) -> None:
    models = {None, "mistralai/Devstral-Small-2507", "meta-llama/Llama-3.1-8B-Instruct"}
    for model in models if provider == "vllm" else {None}:
        for output in (_list_rules(provider, model), _list_rules(provider, model, "--json")):
            assert not [word for word in FOREIGN if word in output], output
        listing = json.loads(_list_rules(provider, model, "--json"))
        assert all(rule["sources"] for rule in listing["rules"])


def test_docs_cite_no_workspace_file() -> None:
    pages = sorted((ROOT / "docs").rglob("*"))
    assert pages
    for page in pages:
        if page.is_file() and page.suffix in (".md", ".py", ".json", ".txt", ".html"):
            text = page.read_text(encoding="utf-8")
            assert not [word for word in FOREIGN if word in text], page.name
