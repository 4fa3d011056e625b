"""The settings every adapter hook takes, declared once (each hook is a dataclass that
extends them with its own; a hook made by a function takes them as keyword
arguments typed by :class:`HookOptions`).

``profile`` is the target's rules (default: from the framework's model, see
_model_profile.py); ``model`` overrides the framework's model name (the window and
model-specific rules come from it); ``context_window`` overrides the model's
published window; ``max_tool_result_chars``, ``compaction`` and ``count_tokens`` are
govern()'s; each call's report goes to ``on_report``.

This module imports no framework.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from ..policies import Compaction
from ..profiles import Profile
from ..report import Report


@dataclass
class HookSettings:
    """How a hook governs: see the module docstring."""

    profile: str | Profile | None = None
    model: str | None = None
    context_window: int | None = None
    max_tool_result_chars: int | None = None
    compaction: str | Compaction | None = None
    count_tokens: Callable[[str], int] | None = None
    on_report: Callable[[Report], None] | None = None


class HookOptions(TypedDict, total=False):
    """:class:`HookSettings` as keyword arguments, for a hook made by a function rather
    than a dataclass (``def processor(**settings: Unpack[HookOptions])``): the same
    names and types, each optional, so such a hook takes exactly the dataclass's
    settings and passes them on whole."""

    profile: str | Profile | None
    model: str | None
    context_window: int | None
    max_tool_result_chars: int | None
    compaction: str | Compaction | None
    count_tokens: Callable[[str], int] | None
    on_report: Callable[[Report], None] | None
