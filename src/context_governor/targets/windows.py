"""The context windows of well-known models, so that naming a model is enough to govern.

One rule, the same in the library, the CLI, the agent runner, the demo and the
proxy: an explicit window wins; else the model's window from this table
(``window_source`` "model"); else the window of the model's family
(:data:`FAMILY_WINDOWS`, "family": a conservative published figure for names the
table does not know yet, so that ``claude-opus-5-5`` or ``gpt-6`` is governed at
all); else there is no window, nothing is cut, and the report says so
(``Report.window_source == "none"``). The proxy adds what the upstream said
(proxy/learning.py: a window learned from a refusal, "learned").

A name matches an entry when it starts with it (``gpt-4o`` covers
``gpt-4o-2024-08-06``); the longest entry wins, so ``gpt-4o-mini`` is not read as
``gpt-4o``. A provider prefix is ignored (``openai/gpt-4o``, ``models/gemini-2.5-pro``,
Bedrock's ``us.anthropic.claude-sonnet-4-…``). Figures are the input-plus-output
windows the vendors publish; where a vendor gives "128K" without an exact figure,
the smaller reading (128,000) is used, since a window set too small only cuts early.

The table is data the user can override: ``window_table({"glm-4.6": 128_000})``
(or ``load_windows(path)`` of a JSON object of name prefixes and windows) gives a
table to pass as ``windows=`` to ``govern_request``; an entry given there wins over
the built-in one of the same prefix, and the longest matching prefix still wins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError

__all__ = [
    "BETA_1M_PREFIX",
    "BETA_1M_WINDOW",
    "FAMILY_WINDOWS",
    "KNOWN_WINDOWS",
    "WindowSource",
    "asks_1m",
    "default_window",
    "family_window",
    "known_window",
    "load_windows",
    "resolve_window",
    "window_phrase",
    "window_table",
]

#: Where a governed request's context window came from.
#: "given" (context_window=), "model" (the table), "family" (FAMILY_WINDOWS), "learned"
#: (the proxy: the upstream's own refusal said it), "none" (nothing is cut).
WindowSource = Literal["given", "model", "family", "learned", "none"]

KNOWN_WINDOWS: dict[str, int] = {
    # OpenAI, platform.openai.com/docs/models (each model's page, "Context window").
    # gpt-4 (0613) is an 8,192 model and gpt-4-32k a 32,768 one; the 1106/0125 previews
    # and gpt-4.5-preview are 128,000 (listed so the gpt-4 entry does not shrink them).
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-4-1106": 128_000,
    "gpt-4-0125": 128_000,
    "gpt-4.5": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,  # also gpt-4.1-mini and gpt-4.1-nano
    # gpt-5 (and -mini, -nano): 400,000 in all, but the input is capped at 272,000 (the
    # rest is kept for the answer; OpenAI's GPT-5 launch post): the prompt's bound is
    # what the budget needs. gpt-5-chat-latest is a 128,000 model.
    "gpt-5": 272_000,
    "gpt-5-chat": 128_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,  # also o3-mini
    "o4-mini": 200_000,
    # Anthropic, docs.anthropic.com/en/docs/about-claude/models ("Context window": 200K
    # for every Claude 3, 3.5, 3.7 and 4.x model; the 1M beta needs a request header).
    "claude-3": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
    # Anthropic-compatible servers of other models (their Messages endpoints serve these
    # names). Z.ai, docs.z.ai ("Context Length"): GLM-4.5 and -4.5-Air 128K, GLM-4.5V 64K,
    # GLM-4.6 200K.
    "glm-4.5": 128_000,
    "glm-4.5v": 64_000,
    "glm-4.6": 200_000,
    # Moonshot, platform.moonshot.ai ("context length"): kimi-k2-0711 128K; the 0905 and
    # later K2 models (turbo, thinking) 256K; moonshot-v1 by its name.
    "kimi-k2": 131_072,
    "kimi-k2-0905": 262_144,
    "kimi-k2-turbo": 262_144,
    "kimi-k2-thinking": 262_144,
    "kimi-latest": 131_072,
    "moonshot-v1-8k": 8_192,
    "moonshot-v1-32k": 32_768,
    "moonshot-v1-128k": 131_072,
    # Google, ai.google.dev/gemini-api/docs/models ("Input token limit").
    "gemini-1.5-flash": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    # DeepSeek, api-docs.deepseek.com/quick_start/pricing ("Context length: 128K").
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
}

#: Names the table does not know, by family: (pattern matched at the start of the name,
#: window). The first pattern that matches wins, so the specific ones come first. Each
#: figure is the smallest one the vendor publishes for the family's current models (a
#: window set too small only cuts early; one set too large gets the request refused,
#: and the proxy then learns the true one from the refusal, proxy/learning.py).
FAMILY_WINDOWS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(pattern), window)
    for pattern, window in (
        # Anthropic, docs.anthropic.com/en/docs/about-claude/models: 200K for every
        # Claude 3 and 4.x model; larger windows need a request header (see betas) or are
        # newer than any table, and are learned from a refusal otherwise.
        (r"claude-", 200_000),
        # Google, ai.google.dev/gemini-api/docs/models ("Input token limit"): 1,048,576
        # for every Gemini 2.x and 3.x model; Gemini 1.0 Pro took 30,720.
        (r"gemini-[2-9]", 1_048_576),
        (r"gemini-", 30_720),
        # Google, ai.google.dev/gemma/docs: Gemma 3 128K (131,072), Gemma 1 and 2 8,192.
        (r"gemma-?3", 131_072),
        (r"gemma", 8_192),
        # OpenAI, platform.openai.com/docs/models: 128,000 is the smallest window of the
        # current GPT models (gpt-4o, gpt-4-turbo, gpt-5-chat, gpt-oss 131,072); the
        # reasoning models (o1-mini, o1-preview) start at 128,000 too.
        (r"gpt-", 128_000),
        (r"chatgpt-", 128_000),
        (r"o[1-9]", 128_000),
        # Z.ai, docs.z.ai ("Context Length"): GLM-4.5 and GLM-4 128K; -4.5V 64K (in the table).
        (r"glm-", 128_000),
        # Moonshot, platform.moonshot.ai: kimi-k2-0711 and kimi-latest 128K (131,072);
        # moonshot-v1's smallest is 8K.
        (r"kimi-", 131_072),
        (r"moonshot-", 8_192),
        # DeepSeek, api-docs.deepseek.com: 64K was the API's window before V3.1 made it
        # 128K; the smaller for names the table does not know.
        (r"deepseek", 64_000),
        # Alibaba, the Qwen2.5 and Qwen3 model cards (huggingface.co/Qwen): 32,768 native
        # context (131,072 only with YaRN scaling turned on by the server).
        (r"qwen", 32_768),
        (r"qwq", 32_768),
        # Mistral, docs.mistral.ai/getting-started/models: 32K for Mistral 7B, Mixtral
        # 8x7B, Codestral 22.05 and the older Small/Medium; newer ones have 128K-256K.
        (r"(?:open-)?(?:mistral|mixtral|codestral|magistral|devstral|ministral|pixtral)",
         32_768),
        # Meta, the Llama model cards: Llama 3.1-3.3 and 4 128K (131,072); Llama 3 8,192;
        # Llama 2 4,096.
        (r"(?:meta-)?llama-?(?:3\.[1-9]|4)", 131_072),
        (r"(?:meta-)?llama-?2", 4_096),
        (r"(?:meta-)?llama", 8_192),
        # xAI, docs.x.ai/docs/models: Grok 2 and 3 131,072 (Grok 4 256,000).
        (r"grok-", 131_072),
        # Cohere, docs.cohere.com/docs/models: Command R and R+ 128K.
        (r"command-r", 128_000),
    )
)  # fmt: skip

#: Anthropic's 1M-token window, turned on per request by an ``anthropic-beta`` header
#: value starting so (``context-1m-2025-08-07``): docs.anthropic.com/en/docs/build-with-
#: claude/context-windows ("1M token context window": Claude Sonnet 4 and 4.5; Opus 4.6
#: and Sonnet 4.6 too).
BETA_1M_PREFIX = "context-1m-"
BETA_1M_WINDOW = 1_000_000
#: Table entries of the Claude models that take the 1M header. A Claude model the table
#: does not know (newer than it) is taken at the client's word; older ones ignore it.
_BETA_1M_MODELS = ("claude-sonnet-4", "claude-opus-4-6")

#: Bedrock model ids name the vendor before a dot: ``us.anthropic.claude-…``.
_VENDOR_DOTS = ("anthropic.", "openai.", "deepseek.")


def _candidates(model: str) -> list[str]:
    name = model.strip().lower()
    short = name.rsplit("/", 1)[-1]
    names = [name, short]
    for vendor in _VENDOR_DOTS:
        if vendor in short:
            names.append(short.split(vendor, 1)[1])
    return names


def window_table(overrides: Mapping[str, Any] | None = None) -> dict[str, int]:
    """The built-in table with ``overrides`` (name prefix -> window) on top; ConfigError
    naming the entry for a window that is not a positive integer."""
    table = dict(KNOWN_WINDOWS)
    for name, window in (overrides or {}).items():
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(
                f"windows: a model name prefix must be a non-empty string, got {name!r}"
            )
        if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
            raise ConfigError(f"windows[{name!r}]: expected a positive integer, got {window!r}")
        table[name.strip().lower()] = window
    return table


def load_windows(path: str | Path) -> dict[str, int]:
    """``window_table`` of a JSON file holding one object of name prefixes and windows."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"windows file {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"windows file {path}: expected a JSON object of name -> window")
    return window_table(data)


def known_window(model: str | None, table: Mapping[str, int] | None = None) -> int | None:
    """The published context window of ``model`` (from ``table``, default the built-in
    one), or None when the table does not know it."""
    if not model or not isinstance(model, str):
        return None
    entries = KNOWN_WINDOWS if table is None else table
    for name in _candidates(model):
        matches = [entry for entry in entries if name.startswith(entry)]
        if matches:
            return entries[max(matches, key=len)]
    return None


def family_window(model: str | None) -> int | None:
    """The window of ``model``'s family (FAMILY_WINDOWS), or None for a name of no
    family we know. For names the table does not know; see default_window."""
    if not model or not isinstance(model, str):
        return None
    # the bare name first: "meta-llama/llama-3.3-..." is a Llama 3.3, not a "meta-llama"
    for name in reversed(_candidates(model)):
        for pattern, window in FAMILY_WINDOWS:
            if pattern.match(name):
                return window
    return None


def _claude(model: str) -> bool:
    return any(name.startswith("claude-") for name in _candidates(model))


def asks_1m(model: str | None, betas: Iterable[str] = ()) -> bool:
    """Whether a request for ``model`` with these ``anthropic-beta`` values turns on
    the 1M window: the header is there and the model takes it (a Claude model in
    _BETA_1M_MODELS, or one newer than the table)."""
    if not model or not any(b.strip().lower().startswith(BETA_1M_PREFIX) for b in betas):
        return False
    if not _claude(model):
        return False
    if known_window(model) is None:  # newer than the table: the client's word
        return True
    return any(_matches(model, prefix) for prefix in _BETA_1M_MODELS)


def _matches(model: str, prefix: str) -> bool:
    return any(name.startswith(prefix) for name in _candidates(model))


def default_window(
    model: str | None,
    table: Mapping[str, int] | None = None,
    betas: Iterable[str] = (),
) -> tuple[int | None, WindowSource]:
    """The window of ``model`` when none is given, and where it came from: the 1M
    window when the request's ``anthropic-beta`` values ask for it and the model takes
    it, else the table's ("model"), else the family's ("family"), else (None, "none")."""
    window = known_window(model, table)
    if asks_1m(model, betas):
        return BETA_1M_WINDOW, "model" if window is not None else "family"
    if window is not None:
        return window, "model"
    family = family_window(model)
    return (family, "family") if family is not None else (None, "none")


def resolve_window(
    context_window: int | None, model: str | None
) -> tuple[int | None, WindowSource]:
    """The window to govern with and where it came from (see the module docstring).

    ``context_window`` is returned as given (checking it is the caller's job), so
    that a bad explicit value is reported rather than replaced by the table's.
    """
    if context_window is not None:
        return context_window, "given"
    return default_window(model)


def window_phrase(window: int | None, source: str, model: str | None) -> str:
    """How a window reads in a report: '128,000 (gpt-4o's known window)', or why none."""
    if window is None:
        why = f"model {model!r} has no known window" if model else "no model or window given"
        return f"none ({why}: nothing is cut; set a context window)"
    if source == "model":
        return f"{window:,} ({model}'s known window)"
    if source == "family":
        return f"{window:,} (the window of {model}'s family)"
    if source == "learned":
        return f"{window:,} (learned from the upstream for {model})"
    return f"{window:,}"
