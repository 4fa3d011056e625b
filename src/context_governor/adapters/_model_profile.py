"""Which of our profiles governs for a framework's model: shared by the adapters.

Frameworks name their target in two ways: a provider ("anthropic", "google-gla",
"groq"...) and a model name ("claude-sonnet-4-5", "openai/gpt-4o"...). The
provider wins when we know it; otherwise the model name's family decides;
otherwise "openai" (the Chat Completions rules most compatible servers follow).
"""

from __future__ import annotations

from ..profiles import PROFILES

__all__ = ["PROVIDER_PROFILES", "bare_model", "named_profile", "profile_for"]

#: Provider names as the frameworks spell them -> our profile names: one table for every
#: adapter (pydantic-ai's and the OpenAI Agents SDK's providers and model prefixes,
#: LiteLLM's routes, LangChain's ``ls_provider``). A gateway that routes to many
#: providers (OpenRouter) is not here: its model name says more (``profile_for``).
PROVIDER_PROFILES: dict[str, str] = {
    "openai": "openai",
    "azure": "openai",
    "azure_ai": "openai",
    "azure_openai": "openai",
    "text-completion-openai": "openai",
    "anthropic": "anthropic",
    "google_anthropic_vertex": "anthropic",
    "gemini": "gemini",
    "google": "gemini",
    "google-gla": "gemini",
    "google-vertex": "gemini",
    "google_genai": "gemini",
    "google_vertexai": "gemini",
    "vertex_ai": "gemini",
    "vertex_ai_beta": "gemini",
    "bedrock": "bedrock",
    "amazon_bedrock": "bedrock",
    "bedrock_converse": "bedrock",
    "mistral": "mistral",
    "mistralai": "mistral",
    "codestral": "mistral",
    "deepseek": "deepseek",
    "groq": "groq",
    "moonshot": "moonshot",
    "moonshotai": "moonshot",
    "ollama": "ollama",
    "ollama_chat": "ollama",
    "chat-ollama": "ollama",
    "vllm": "vllm",
    "hosted_vllm": "vllm",
    "zai": "glm",
    "zhipu": "glm",
    "zhipuai": "glm",
    "qwen": "qwen",
    "dashscope": "qwen",
    "tongyi": "qwen",
}
#: Model-name families -> our profile names (first match wins).
_FAMILIES = (
    ("claude", "anthropic"),
    ("gemini", "gemini"),
    ("gemma", "gemini"),
    ("mistral", "mistral"),
    ("magistral", "mistral"),
    ("codestral", "mistral"),
    ("devstral", "mistral"),
    ("deepseek", "deepseek"),
    ("glm", "glm"),
    ("qwen", "qwen"),
    ("kimi", "moonshot"),
    ("moonshot", "moonshot"),
)


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
        for family, profile in _FAMILIES:
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
