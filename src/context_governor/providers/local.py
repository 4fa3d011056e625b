"""Open-weight serving: Ollama and servers that render a Hugging Face chat template
(vLLM, TGI, LM Studio) (RULEBOOK §8). A template's rules are its model family's."""

from __future__ import annotations

from dataclasses import replace

from . import checks
from .policy import Policy
from .rules import Rule
from .target import Target, template_family

ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."


def _family(*families: str):  # type: ignore[no-untyped-def]
    def applies(target: Target) -> bool:
        return template_family(target) in families

    return applies


STRICT = ("llama2", "mistral", "gemma")

VLLM_RULES: tuple[Rule, ...] = (
    Rule(
        "HF-1",
        "alternation templates: user and assistant strictly alternate",
        ALTERNATE,
        "merge consecutive messages of one role",
        checks.consecutive_same_role(roles=("user", "assistant", "tool")),
        applies=_family(*STRICT),
    ),
    Rule(
        "HF-1b",
        "alternation templates: the conversation starts with a user message",
        ALTERNATE,
        "insert a user message",
        checks.first_is_not_user(),
        applies=_family(*STRICT),
    ),
    Rule(
        "HF-1c",
        "alternation templates: at most one system message, first",
        "After the optional system message, conversation roles must alternate "
        "user/assistant/user/assistant/...",
        "merge system messages at the front",
        checks.system_not_first,
        applies=_family("llama2", "mistral", "qwen"),
    ),
    Rule(
        "HF-1d",
        "alternation templates have no tool role",
        "Only user and assistant roles are supported!",
        "write tool calls and results as text",
        checks.tool_messages_present,
        applies=_family("llama2", "gemma"),
    ),
    Rule(
        "HF-1e",
        "Gemma templates have no system role",
        "System role not supported",
        "fold the system prompt into the first user message",
        checks.any_system,
        applies=_family("gemma"),
    ),
    Rule(
        "HF-2",
        "the template needs a user query",
        "No user query found in messages.",
        "add a user message",
        checks.no_user_message,
        applies=_family("qwen"),
    ),
    Rule(
        "HF-3",
        "content: null breaks templates that iterate over content",
        "TypeError: 'NoneType' object is not iterable",
        "use an empty string",
        checks.null_content,
        verbatim=False,
    ),
    Rule(
        "HF-4",
        "a trailing assistant message cannot open a new turn (mistral tokenizer mode)",
        "Cannot set `add_generation_prompt` to True when the last message is from the "
        "assistant. Consider using `continue_final_message` instead.",
        "drop it, or send continue_final_message=true, add_generation_prompt=false",
        checks.ends_with_assistant,
        applies=_family("mistral"),
    ),
)

OLLAMA_RULES: tuple[Rule, ...] = ()

NOT_CHECKED: tuple[tuple[str, str], ...] = (
    (
        "HF-5",
        "Ollama and llama.cpp render Go templates that do not raise on role order and "
        "continue a trailing assistant message: nothing to check",
    ),
)

OLLAMA_POLICY = Policy(empty="template", prefill=lambda target: True)
_VLLM = Policy(empty="template", system="keep")


def vllm_policy(target: Target) -> Policy:
    family = template_family(target)
    if family in ("llama2", "gemma"):
        return replace(
            _VLLM,
            system="into_first_user" if family == "gemma" else "merge_front",
            flatten_tools=lambda t: True,
            needs_user=True,
        )
    if family == "mistral":
        return replace(
            _VLLM,
            system="merge_front",
            id_style="mistral",
            needs_user=True,
            user_before_tool_call_opening=True,
        )
    if family == "qwen":
        return replace(_VLLM, system="merge_front", needs_user=True)
    return _VLLM
