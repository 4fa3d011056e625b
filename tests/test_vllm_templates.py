"""govern(profile="vllm") output renders through the model's real Hugging Face chat
template without raising, for every template family we know (see chat_templates.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from chat_templates import FAMILIES, render
from hypothesis import HealthCheck, given, settings
from transcripts import cases, random_case

from context_governor import govern
from context_governor.providers import validate
from context_governor.providers._vllm import template_family
from context_governor.targets._target import Target

#: A served model per template file, named as users name them on vLLM.
MODELS = {
    "llama2": "meta-llama/Llama-2-7b-chat-hf",
    "mistral": "mistralai/Mistral-7B-Instruct-v0.3",
    "mistral_v02": "mistralai/Mistral-7B-Instruct-v0.2",
    "gemma": "google/gemma-2-9b-it",
    "gemma3": "google/gemma-3-12b-it",
    "llama3": "meta-llama/Llama-3.1-8B-Instruct",
    "llama3_2": "meta-llama/Llama-3.2-3B-Instruct",
    "qwen": "Qwen/Qwen2.5-7B-Instruct",
    "qwen3": "Qwen/Qwen3-8B",
    "qwen3_2507": "Qwen/Qwen3-4B-Instruct-2507",
}


def test_every_template_has_a_model() -> None:
    assert set(MODELS) == set(FAMILIES)


@pytest.mark.parametrize(("family", "model"), sorted(MODELS.items()))
def test_model_names_resolve_to_the_family_whose_rules_apply(family: str, model: str) -> None:
    expected = {"llama3_2": "llama3", "qwen3": "qwen", "qwen3_2507": "qwen"}.get(family, family)
    assert template_family(Target("vllm", model)) == expected


def _govern(case: dict[str, Any], model: str) -> Any:
    return govern(
        case["messages"], tools=case["tools"], profile="vllm", model=model,
        context_window=case["context_window"],
    )  # fmt: skip


@pytest.mark.parametrize(("family", "model"), sorted(MODELS.items()))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_governed_output_renders(family: str, model: str, case: dict[str, Any]) -> None:
    result = _govern(case, model)
    if not result.messages:  # nothing can be sent (see test_provider_governance)
        assert not any(m.get("role") in ("user", "assistant") for m in case["messages"])
        return
    assert validate(result.messages, provider="vllm", model=model) == []
    text = render(family, result.messages, tools=case["tools"] or None)
    assert text  # something was rendered


@pytest.mark.parametrize(
    "family", ["llama2", "mistral", "mistral_v02", "gemma", "gemma3", "llama3", "qwen"]
)
def test_the_raw_histories_do_not_render(family: str) -> None:
    """The test above has teeth: many of the same histories, ungoverned, make the
    template raise (or fail on a Python type error) and validate() says so first."""
    raised = flagged = 0
    for seed in range(60):
        case = random_case(random.Random(seed))
        try:
            render(family, case["messages"], tools=case["tools"] or None)
        except Exception:
            raised += 1
            flagged += bool(validate(case["messages"], provider="vllm", model=MODELS[family]))
    assert raised >= 5
    assert flagged == raised  # whatever breaks the template, a rule names it


@pytest.mark.parametrize("empty", [[], None])
def test_llama3_empty_tool_calls_are_removed(empty: Any) -> None:
    """SDK dumps carry ``tool_calls: None``; Llama 3.1's template reads the key as a call."""
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "tool_calls": empty},
        {"role": "user", "content": "and now?"},
    ]
    model = MODELS["llama3"]
    assert [v.rule for v in validate(messages, provider="vllm", model=model)] == ["HF-6"]
    with pytest.raises(Exception, match=r"single tool-calls|NoneType"):
        render("llama3", messages)
    result = govern(messages, profile="vllm", model=model)
    assert "tool_calls" not in result.messages[1]
    assert [a.kind for a in result.report.actions] == ["repair"]
    render("llama3", result.messages)


@pytest.mark.parametrize(
    ("messages", "rule", "text"),
    [
        # odd position: the alternation holds, the render loop meets the system message
        ([{"role": "system", "content": "a"}, {"role": "user", "content": "hi"},
          {"role": "system", "content": "b"}], "HF-1c", "Only user and assistant roles"),
        # even position: the alternation check raises first
        ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
          {"role": "system", "content": "b"}], "HF-1b", "conversation roles must alternate"),
    ],
)  # fmt: skip
def test_mistral_v03_late_system_gets_the_text_the_template_raises(
    messages: list[dict[str, Any]], rule: str, text: str
) -> None:
    model = MODELS["mistral"]
    assert [v.rule for v in validate(messages, provider="vllm", model=model)] == [rule]
    with pytest.raises(Exception, match=text):
        render("mistral", messages)
