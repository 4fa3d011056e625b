"""The context windows of well-known models, so that naming a model is enough to govern.

The figures are the vendors' (each vendor module's ``VENDOR.windows`` and
``family_windows``, with their sources); ``KNOWN_WINDOWS`` and ``FAMILY_WINDOWS`` are
the catalogue's tables of them (providers/_catalog.py). This module looks them up.

One rule, the same in the library, the CLI, the agent runner, the demo and the
proxy: an explicit window wins; else the model's window from this table
(``window_source`` "model"); else the window of the model's family
(:data:`FAMILY_WINDOWS`, "family": a conservative published figure for names the
table does not know yet, so that ``claude-opus-5-5`` or ``gpt-6`` is governed at
all); else there is no window, nothing is cut, and the report says so
(``Report.window_source == "none"``). The proxy adds what the upstream said
(proxy/_learning.py: a window learned from a refusal, "learned").

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
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from ..report import window_phrase
from ._anthropic import BETA_1M_PREFIX, BETA_1M_WINDOW, asks_for_1m, takes_1m
from ._catalog import FAMILY_WINDOWS, KNOWN_WINDOWS, MODEL_PREFIXES

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


def _candidates(model: str) -> list[str]:
    """The model's name lowered, without its "vendor/" prefix, and without a provider's
    prefix before another vendor's name (catalog.MODEL_PREFIXES)."""
    name = model.strip().lower()
    short = name.rsplit("/", 1)[-1]
    names = [name, short]
    for vendor in MODEL_PREFIXES:
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


def asks_1m(model: str | None, betas: Iterable[str] = ()) -> bool:
    """Whether a request for ``model`` with these ``anthropic-beta`` values turns on
    the 1M window: the header is there and the model takes it (a Claude model in
    anthropic.BETA_1M_MODELS, or one newer than the table)."""
    if not model or not asks_for_1m(betas):
        return False
    return takes_1m(_candidates(model), known_window(model) is not None)


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
