"""Which of our profiles governs for a framework's model: shared by the adapters.

Frameworks name their target in two ways: a provider ("anthropic", "google-gla",
"groq"...) and a model name ("claude-sonnet-4-5", "openai/gpt-4o"...). The
provider wins when we know it; otherwise the model name's family decides;
otherwise "openai" (the Chat Completions rules most compatible servers follow).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..profiles import PROFILES
from ..providers import ALIASES, MODEL_HINTS

__all__ = ["PROVIDER_PROFILES", "bare_model", "named_profile", "profile_for"]

#: Provider names as the frameworks spell them -> our profile names (each vendor module's
#: ``VENDOR.aliases``, gathered by the catalogue): one table for every adapter.
PROVIDER_PROFILES: Mapping[str, str] = ALIASES


def profile_for(provider: str | None, model: str | None) -> str:
    """Our profile for a framework's provider and model name (see the module doc)."""
    if provider and provider.lower() in PROVIDER_PROFILES:
        return PROVIDER_PROFILES[provider.lower()]
    if model:
        name = model.lower()
        # "anthropic/claude-..." (LiteLLM style), "anthropic:claude-..." (pydantic-ai style)
        for sep in ("/", ":"):
            prefix, found, _ = name.partition(sep)
            if found and prefix in PROVIDER_PROFILES:
                return PROVIDER_PROFILES[prefix]
        for family, profile in MODEL_HINTS:  # each vendor's model_hints, in order
            if family in name:
                return profile
    return "openai"


def named_profile(provider: str) -> str:
    """Our profile for a provider named by a framework that gives no model family to go
    by (LiteLLM, LangChain): the table's, else the name itself when it is one of our
    profiles, else ``openai`` (the Chat Completions rules most servers follow)."""
    return PROVIDER_PROFILES.get(provider, provider if provider in PROFILES else "openai")


def bare_model(model: str | None) -> str | None:
    """The model name without a "provider/" or "provider:" prefix (what windows know)."""
    if not model:
        return None
    for sep in ("/", ":"):
        prefix, found, rest = model.partition(sep)
        if found and prefix.lower() in PROVIDER_PROFILES and rest:
            return rest
    return model
