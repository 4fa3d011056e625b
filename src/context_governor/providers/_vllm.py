"""Servers that render a Hugging Face chat template (vLLM, TGI, LM Studio), or serve a
model with the Mistral tokenizer (vllm_mistral.py). A template's rules are its model
family's.

Also the windows of Meta's Llama models, which no provider of their own serves here:
open weights, run by these servers (and Ollama, Groq, Bedrock).
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..targets import Policy, Target
from . import _checks as checks
from . import _vllm_mistral as vllm_mistral
from ._rules import Rule
from ._sources import GH, HF, VLLM_MISTRAL
from ._vendor import NotChecked, Sources, Vendor
from ._vllm_mistral import mistral_tokenizer_model

__all__ = [
    "ALTERNATE",
    "ALTERNATE_AFTER_SYSTEM",
    "ALTERNATE_TEXT",
    "FAMILY_WINDOWS",
    "INDEX_FIRST",
    "NOT_CHECKED",
    "ONLY_USER_AND_ASSISTANT",
    "POLICY",
    "RULES",
    "SOURCES",
    "STRICT",
    "TEMPLATE_FAMILIES",
    "TEMPLATE_FAMILIES_ONLY",
    "TEXT_ONLY",
    "VENDOR",
    "policy",
    "template_family",
]

#: Chat-template families of open-weight models served by vLLM/TGI/LM Studio.
TEMPLATE_FAMILIES = (
    "llama2", "llama3", "mistral", "mistral_v02", "gemma", "gemma3", "qwen", "chatml",
    "mistral_tokenizer",
)  # fmt: skip


def template_family(target: Target) -> str:
    """The chat-template family a vLLM-served model renders with (chatml when unknown)."""
    model = target.lowered
    if "llama-2" in model or "llama2" in model or "codellama" in model:
        return "llama2"
    if "llama-3" in model or "llama3" in model:
        return "llama3"
    if mistral_tokenizer_model(model):
        return "mistral_tokenizer"
    if "mistral" in model or "mixtral" in model:
        # v0.1/v0.2 templates have no tool support; v0.3 and later ones do, and so does
        # Mixtral-8x22B-Instruct-v0.1, which ships the v0.3 template.
        old = re.search(r"v0\.[12]\b", model) and "8x22b" not in model
        return "mistral_v02" if old else "mistral"
    if "gemma-3" in model or "gemma3" in model:
        return "gemma3"
    if "gemma" in model:
        return "gemma"
    if "qwen" in model or "qwq" in model:
        return "qwen"
    return "chatml"


ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."
#: Mistral's templates (v0.1/v0.2 and v0.3) spell the alternation error their own way.
ALTERNATE_AFTER_SYSTEM = (
    "After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/..."
)
ONLY_USER_AND_ASSISTANT = (
    "Only user and assistant roles are supported, with the exception of an initial "
    "optional system message!"
)


def _family(*families: str):  # type: ignore[no-untyped-def]
    def applies(target: Target) -> bool:
        return template_family(target) in families

    return applies


def _qwen_needs_user_query(target: Target) -> bool:
    """Qwen3.5 and 3.6 templates raise without a user query (HF-2); Qwen2.5's and
    Qwen3's (tests/chat_templates.py) render a list without one."""
    if template_family(target) != "qwen":
        return False
    return re.search(r"qwen3[._][56](?!\d)", target.lowered) is not None


#: Templates whose Jinja loop enforces user/assistant alternation over every message.
STRICT = ("llama2", "mistral_v02", "gemma", "gemma3")
#: The strict templates that raise ``ALTERNATE`` (Mistral v0.1/v0.2's raises its own texts).
ALTERNATE_TEXT = ("llama2", "gemma", "gemma3")
#: Templates that test ``messages[0]['role']`` first: Jinja raises on an empty list (no server
#: text was found; the one here is Jinja's, from the pinned templates in tests/chat_templates.py).
INDEX_FIRST = ("llama2", "llama3", "mistral", "mistral_v02", "gemma", "gemma3", "qwen")
#: Families that render a chat template (all but the Mistral tokenizer's).
TEMPLATE_FAMILIES_ONLY = tuple(f for f in TEMPLATE_FAMILIES if f != "mistral_tokenizer")
#: Templates that concatenate ``content`` as a string (all but Gemma 3's, which iterates parts).
TEXT_ONLY = ("llama2", "llama3", "mistral", "mistral_v02", "gemma", "qwen", "chatml")

RULES: tuple[Rule, ...] = (
    Rule(
        "HF-1",
        "alternation templates: user first, then user and assistant strictly alternate",
        ALTERNATE,
        "merge consecutive messages of one role; start with a user message",
        checks.template_alternation(),
        applies=_family(*ALTERNATE_TEXT),
    ),
    Rule(
        "HF-1b",
        "Mistral v0.3: messages other than tool calls and results alternate, user first",
        ALTERNATE_AFTER_SYSTEM,
        "put an assistant message between tool results and the next user message",
        checks.template_alternation(skip_tool_turns=True),
        applies=_family("mistral"),
    ),
    Rule(
        "HF-1c",
        "Mistral v0.3 template: no later system message where the alternation holds",
        ONLY_USER_AND_ASSISTANT,
        "merge system messages at the front",
        checks.template_late_system,
        applies=_family("mistral"),  # v0.1/v0.2: HF-1f and HF-1g
    ),
    Rule(
        "HF-1d",
        "templates without tool support have no tool calls or tool role",
        ALTERNATE,
        "write tool calls and results as text",
        checks.tool_messages_present,
        applies=_family(*ALTERNATE_TEXT),
    ),
    Rule(
        "HF-1f",
        "Mistral v0.1/v0.2: after an optional first system message, user and assistant "
        "strictly alternate, user first",
        ALTERNATE_AFTER_SYSTEM,
        "merge consecutive messages of one role; start with a user message; "
        "write tool calls and results as text",
        checks.template_alternation(),
        applies=_family("mistral_v02"),
    ),
    Rule(
        "HF-1g",
        "Mistral v0.1/v0.2: no tool (or later system) message where the alternation holds",
        ONLY_USER_AND_ASSISTANT,
        "write tool results as text; merge system messages at the front",
        checks.template_other_role,
        applies=_family("mistral_v02"),
    ),
    Rule(
        "HF-1e",
        "Gemma 1/2 templates have no system role",
        "System role not supported",
        "fold the system prompt into the first user message",
        checks.any_system,
        applies=_family("gemma"),
    ),
    Rule(
        "HF-2",
        "Qwen3.5/3.6 templates need a user query",
        "No user query found in messages.",
        "add a user message",
        checks.no_user_message,
        applies=_qwen_needs_user_query,
    ),
    Rule(
        "HF-9",
        "an empty message list: these templates read messages[0]",
        "list object has no element 0",
        "send at least one message",
        checks.empty_request,
        applies=_family(*INDEX_FIRST),
        verbatim=False,
    ),
    Rule(
        "HF-3",
        "content: null breaks templates that concatenate or iterate over content",
        'TypeError: can only concatenate str (not "NoneType") to str',
        "use an empty string",
        checks.null_content,
        applies=_family(*TEMPLATE_FAMILIES_ONLY),
        verbatim=False,
    ),
    Rule(
        "HF-3b",
        "a list of content parts breaks templates that concatenate content",
        'TypeError: can only concatenate str (not "list") to str',
        "join the text parts into one string",
        checks.list_content,
        applies=_family(*TEXT_ONLY),
        verbatim=False,
    ),
    Rule(
        "HF-4",
        "a trailing assistant message cannot open a new turn (mistral tokenizer mode)",
        "Cannot set `add_generation_prompt` to True when the last message is from the "
        "assistant. Consider using `continue_final_message` instead.",
        "drop it, or send continue_final_message=true, add_generation_prompt=false",
        checks.ends_with_assistant,
        applies=_family("mistral", "mistral_v02", "mistral_tokenizer"),
    ),
    Rule(
        "HF-6",
        "Llama 3.x templates take one tool call per assistant message",
        "This model only supports single tool-calls at once!",
        "split parallel calls into one call per assistant turn, each followed by its result",
        checks.several_tool_calls,
        applies=_family("llama3"),
    ),
    Rule(
        "HF-7",
        "Mistral v0.3 template: tool call ids are 9 alphanumerics",
        "Tool call IDs should be alphanumeric strings with length 9!",
        "rewrite ids to 9 alphanumerics, on the call and its result",
        checks.call_id_format(r"[a-zA-Z0-9]{9}"),
        applies=_family("mistral"),
    ),
    *(replace(rule, applies=_family("mistral_tokenizer")) for rule in vllm_mistral.RULES),
)

NOT_CHECKED: NotChecked = (
    *vllm_mistral.NOT_CHECKED,
    (
        "HF-1h",
        "Mistral v0.1/v0.2 templates render an assistant message's content and drop its "
        "tool_calls without raising (HF-1f/HF-1g flag the tool results); govern writes the "
        "calls as text",
    ),
    (
        "HF-8",
        "Llama 3.x with tools raises when nothing follows the system message: it depends "
        "on the request's tools, and no rule checks it yet; govern always leaves a user "
        "message for these templates",
    ),
)

#: The repairs of a template that enforces nothing more (``policy`` refines it per family).
POLICY = Policy(empty="template", system="keep", text_only_content=True, needs_user=True)


def _always(target: Target) -> bool:
    return True


def policy(target: Target) -> Policy:
    """Repairs per template family (see tests/chat_templates.py for the real templates)."""
    family = template_family(target)
    if family in STRICT:
        return replace(
            POLICY,
            system="into_first_user" if family == "gemma" else "merge_front",
            flatten_tools=_always,
            text_only_content=family != "gemma3",
        )
    if family == "mistral":
        return replace(
            POLICY,
            system="merge_front",
            id_style="mistral",
            user_before_tool_call_opening=True,
            bridge_user_after_tool=True,
        )
    if family == "llama3":
        return replace(POLICY, single_tool_call=True)
    if family == "mistral_tokenizer":
        return replace(
            POLICY,
            # a system message after a tool result is rejected (MT-1)
            system="merge_front",
            # the validator's pairing walk skips the first message: calls made there are
            # unknown to it, and their results "unexpected" (MT-4)
            user_before_tool_call_opening=True,
            id_style="mistral",
            names="pattern",
            reasoning=lambda target: "strip",
            # user messages keep their images; other roles take text only (MT-9, MT-10)
            text_only_content=False,
            text_only_roles=frozenset({"system", "assistant", "tool"}),
            part_types=frozenset(vllm_mistral.CHUNKS),
        )
    return POLICY


#: The chat templates of the models (their Hugging Face repositories).
_TEMPLATES = {
    "llama2": HF + "meta-llama/Llama-2-7b-chat-hf",
    "llama3": HF + "meta-llama/Llama-3.1-8B-Instruct",
    "mistral": HF + "mistralai/Mistral-7B-Instruct-v0.3",
    "mistral_v02": HF + "mistralai/Mistral-7B-Instruct-v0.2",
    "gemma": HF + "google/gemma-2-9b-it",
    "qwen": HF + "Qwen/Qwen2.5-7B-Instruct",
}

SOURCES: Sources = {
    "HF-1": (_TEMPLATES["llama2"], _TEMPLATES["gemma"]),
    "HF-1b": (_TEMPLATES["mistral"], GH + "vllm-project/vllm/issues/6862"),
    "HF-1c": (_TEMPLATES["mistral"],),
    "HF-1d": (_TEMPLATES["llama2"], _TEMPLATES["gemma"]),
    "HF-1e": (_TEMPLATES["gemma"],),
    "HF-1f": (_TEMPLATES["mistral_v02"],),
    "HF-1g": (_TEMPLATES["mistral_v02"],),
    "HF-2": (
        GH + "vllm-project/vllm/issues/36432",
        GH + "lmstudio-ai/lmstudio-bug-tracker/issues/1572",
    ),
    "HF-3": (GH + "Blaizzy/mlx-vlm/pull/1864", _TEMPLATES["llama2"]),
    "HF-3b": (_TEMPLATES["llama2"], _TEMPLATES["qwen"]),
    "HF-4": (GH + "mistralai/mistral-vibe/issues/114", VLLM_MISTRAL),
    "HF-6": (_TEMPLATES["llama3"],),
    "HF-7": (_TEMPLATES["mistral"],),
    "HF-9": (_TEMPLATES["llama2"],),
    **vllm_mistral.SOURCES,
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # Meta, the Llama model cards: Llama 3.1-3.3 and 4 128K (131,072); Llama 3 8,192;
    # Llama 2 4,096.
    (r"(?:meta-)?llama-?(?:3\.[1-9]|4)", 131_072),
    (r"(?:meta-)?llama-?2", 4_096),
    (r"(?:meta-)?llama", 8_192),
)

VENDOR = Vendor(
    "vllm",
    "vLLM / TGI (Hugging Face chat templates, or the Mistral tokenizer)",
    RULES,
    NOT_CHECKED,
    policy,
    sources=SOURCES,
    family_windows=FAMILY_WINDOWS,
    aliases=("vllm", "hosted_vllm"),
)
