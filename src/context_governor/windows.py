"""The context windows of well-known models, so that naming a model is enough to govern.

One rule, the same in the library, the CLI, the agent runner, the demo and the
proxy: an explicit window wins; else the model's window from this table; else
there is no window, nothing is cut, and the report says so
(``Report.window_source == "none"``).

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError

#: Where a governed request's context window came from.
WindowSource = Literal["given", "model", "none"]

KNOWN_WINDOWS: dict[str, int] = {
    # OpenAI, platform.openai.com/docs/models (each model's page, "Context window").
    "gpt-3.5-turbo": 16_385,
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


def resolve_window(
    context_window: int | None, model: str | None
) -> tuple[int | None, WindowSource]:
    """The window to govern with and where it came from (see the module docstring).

    ``context_window`` is returned as given (checking it is the caller's job), so
    that a bad explicit value is reported rather than replaced by the table's.
    """
    if context_window is not None:
        return context_window, "given"
    window = known_window(model)
    return (window, "model") if window is not None else (None, "none")


def window_phrase(window: int | None, source: str, model: str | None) -> str:
    """How a window reads in a report: '128,000 (gpt-4o's known window)', or why none."""
    if window is None:
        why = f"model {model!r} has no known window" if model else "no model or window given"
        return f"none ({why}: nothing is cut; set a context window)"
    if source == "model":
        return f"{window:,} ({model}'s known window)"
    return f"{window:,}"
