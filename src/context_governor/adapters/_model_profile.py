"""Which of our profiles governs for a framework's model: shared by the adapters.

Frameworks name their target in two ways: a provider ("anthropic", "google-gla",
"groq"...) and a model name ("claude-sonnet-4-5", "openai/gpt-4o"...). The
provider wins when we know it; otherwise the model name's family decides;
otherwise "openai" (the Chat Completions rules most compatible servers follow).
"""

from __future__ import annotations

#: Framework provider names -> our profile names.
_PROVIDERS = {
    "openai": "openai",
    "azure": "openai",
    "anthropic": "anthropic",
    "google": "gemini",
    "google-gla": "gemini",
    "google-vertex": "gemini",
    "gemini": "gemini",
    "vertex_ai": "gemini",
    "bedrock": "bedrock",
    "mistral": "mistral",
    "deepseek": "deepseek",
    "groq": "groq",
    "moonshotai": "moonshot",
    "moonshot": "moonshot",
    "ollama": "ollama",
    "vllm": "vllm",
    "zhipu": "glm",
    "zai": "glm",
    "qwen": "qwen",
    "dashscope": "qwen",
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
    if provider and provider.lower() in _PROVIDERS:
        return _PROVIDERS[provider.lower()]
    if model:
        name = model.lower()
        # "anthropic/claude-..." (LiteLLM style), "anthropic:claude-..." (pydantic-ai style)
        for sep in ("/", ":"):
            prefix, found, _ = name.partition(sep)
            if found and prefix in _PROVIDERS:
                return _PROVIDERS[prefix]
        for family, profile in _FAMILIES:
            if family in name:
                return profile
    return "openai"


def bare_model(model: str | None) -> str | None:
    """The model name without a "provider/" or "provider:" prefix (what windows know)."""
    if not model:
        return None
    for sep in ("/", ":"):
        prefix, found, rest = model.partition(sep)
        if found and prefix.lower() in _PROVIDERS and rest:
            return rest
    return model
