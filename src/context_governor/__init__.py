"""context-governor: keep an agent's context legal, inside the budget and cache-friendly.

The public API is what this module exports; everything else is private.
"""

from .errors import ConfigError, ContextGovernorError, InputError
from .governor import Governor
from .pipeline import GovernResult, govern
from .profiles import PROFILES, Profile
from .providers import Violation, validate
from .report import Action, Report

__all__ = [
    "PROFILES",
    "Action",
    "ConfigError",
    "ContextGovernorError",
    "GovernResult",
    "Governor",
    "InputError",
    "Profile",
    "Report",
    "Violation",
    "govern",
    "validate",
]
__version__ = "0.1.0"
