"""vLLM with the Mistral tokenizer, against the real validator (mistral_common 1.13.1).

Differential: the MT rules' cases are rejected (and their close edits accepted) by the
real validator with the rules' texts; governed output passes it for every tokenizer
version; and on random histories, a list validate() finds clean is one the real
validator takes (the rules miss nothing it rejects).
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from mistral_oracle import VERSIONS, error, errors
from test_rules import CASES, DEVSTRAL
from transcripts import cases, quirky_case, random_case

from context_governor import govern
from context_governor.providers import validate
from context_governor.providers._vllm import template_family
from context_governor.targets._target import Target

SETTINGS = settings(
    max_examples=int(os.environ.get("MISTRAL_COMMON_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
MODELS = (
    DEVSTRAL,
    "mistralai/Magistral-Small-2506",
    "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
)
RULES = [*sorted(r for r, c in CASES.items() if r.startswith("MT-")), "HF-4"]


def test_models_use_the_mistral_tokenizer_rules() -> None:
    for model in MODELS:
        assert template_family(Target("vllm", model)) == "mistral_tokenizer"
    assert template_family(Target("vllm", "mistralai/Mistral-7B-Instruct-v0.3")) == "mistral"


@pytest.mark.parametrize("rule_id", RULES)
def test_the_validator_rejects_with_the_rules_text(rule_id: str) -> None:
    c = CASES[rule_id]
    found = errors(c.rejected, c.tools)
    assert found, f"{rule_id}: mistral_common accepts the rejected list"
    assert set(found.values()) <= {text for _, text in c.expected}, found


@pytest.mark.parametrize("rule_id", RULES)
def test_the_validator_accepts_the_close_edit(rule_id: str) -> None:
    c = CASES[rule_id]
    if c.model != DEVSTRAL:  # HF-4's case is for a template family: take its messages
        assert template_family(Target("vllm", c.model or "")) != "mistral_tokenizer"
    assert errors(c.accepted, c.tools) == {}


def _max_output(case: dict[str, Any]) -> Any:
    value = case.get("max_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@SETTINGS
@given(case=cases(quirks=True))
@example(case=random_case(random.Random(1632)))  # starts with a tool call: user put first
def test_governed_output_passes_the_real_validator(case: dict[str, Any]) -> None:
    result = govern(
        case["messages"],
        tools=case["tools"],
        profile="vllm",
        model=DEVSTRAL,
        max_output=_max_output(case),
    )
    if not result.messages:
        return  # nothing to send, and the report says so (test_provider_governance)
    assert errors(result.messages, case["tools"]) == {}


@SETTINGS
@given(case=cases(quirks=True))
@example(case=quirky_case(random.Random(2)))  # reasoning_content: v7 rejects a ThinkChunk
def test_what_validate_passes_the_real_validator_passes(case: dict[str, Any]) -> None:
    """The rules are complete for these histories: no rejection goes unflagged. Short
    prefixes too, since a whole random history is rarely clean."""
    if any(
        not isinstance(c, dict) or not isinstance((c.get("function") or {}).get("name"), str)
        for m in case["messages"]
        for c in (m.get("tool_calls") or [])
    ):
        return  # malformed calls: an input error govern repairs, not a provider rule
    for end in (2, 3, 4, None):
        messages = case["messages"][:end]
        if validate(messages, provider="vllm", model=DEVSTRAL, tools=case["tools"] or []) == []:
            for version in VERSIONS:
                assert error(messages, case["tools"], version) is None, (version, end)
