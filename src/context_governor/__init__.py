"""context-governor: keep an agent's context legal, inside the budget and cache-friendly.

The public API is what this module exports; everything else is private.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from . import moved as _moved
from .counting import warm_up
from .errors import ConfigError, ContextGovernorError, InputError
from .formats import RequestResult, govern_request, validate_request
from .governor import Governor
from .pipeline import GovernResult, govern
from .policies import CompactionPolicy
from .profiles import PROFILES, Profile
from .providers import Violation, validate
from .providers.windows import known_window
from .report import Action, Report, render_report

if _TYPE_CHECKING:
    from .llm import OpenAICompatClient, ScriptedModel
    from .runner import AgentRunner, RunResult

__all__ = [
    "PROFILES",
    "Action",
    "AgentRunner",
    "CompactionPolicy",
    "ConfigError",
    "ContextGovernorError",
    "GovernResult",
    "Governor",
    "InputError",
    "OpenAICompatClient",
    "Profile",
    "Report",
    "RequestResult",
    "RunResult",
    "ScriptedModel",
    "Violation",
    "govern",
    "govern_request",
    "known_window",
    "render_report",
    "validate",
    "validate_request",
    "warm_up",
]
__version__ = "0.1.0"

_moved.install()  # the module paths before the layout change, for one release

# The agent runner and its model clients import httpx: they load on first use,
# so that `import context_governor` (and the govern CLI) stays fast.
_LAZY = {
    "AgentRunner": "runner",
    "RunResult": "runner",
    "OpenAICompatClient": "llm",
    "ScriptedModel": "llm",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)


def __dir__() -> list[str]:
    """The public API only: not the submodules and typing names imported to build it."""
    return sorted([*__all__, "__version__"])
