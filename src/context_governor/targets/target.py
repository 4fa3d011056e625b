"""Who the request is for: provider, model and the model facts that change the rules.

Providers differ by model (prefill accepted by Claude <= 4.5 and rejected by 4.6+,
DeepSeek's thinking models needing ``reasoning_content``, a vLLM server's rules
depending on the model's chat template), so every rule sees a Target, not a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ConfigError

__all__ = [
    "PROVIDERS",
    "TEMPLATE_FAMILIES",
    "Target",
    "check_provider",
    "claude_accepts_prefill",
    "claude_keeps_thinking",
    "claude_version",
    "deepseek_thinking",
    "gemini_accepts_prefill",
    "gemini_needs_thought_signatures",
    "gemini_version",
    "mistral_tokenizer_model",
    "moonshot_thinking",
    "qwen_thinking",
    "template_family",
]

PROVIDERS = (
    "openai", "anthropic", "gemini", "bedrock", "mistral", "deepseek", "glm", "qwen",
    "moonshot", "groq", "ollama", "vllm",
)  # fmt: skip

#: Chat-template families of open-weight models served by vLLM/TGI/LM Studio.
TEMPLATE_FAMILIES = (
    "llama2", "llama3", "mistral", "mistral_v02", "gemma", "gemma3", "qwen", "chatml",
    "mistral_tokenizer",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Target:
    provider: str
    model: str = ""
    #: The caller wants a trailing assistant message kept as prefill where the model allows it.
    prefill: bool = False
    #: The request declares tools (True), declares none (False), or nobody said (None):
    #: Bedrock rejects tool blocks in the history of a request without tools.
    has_tools: bool | None = None

    @property
    def lowered(self) -> str:
        return self.model.lower().rsplit("/", 1)[-1]


def _version(model: str, family: str) -> tuple[int, int] | None:
    """'gemini-2.5-flash' -> (2, 5); 'gemini-3-pro' -> (3, 0); None without a number."""
    match = re.search(rf"{family}[-_a-z]*?-(\d+)(?:[-.](\d)(?!\d))?", model)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def claude_version(target: Target) -> tuple[int, int] | None:
    """(major, minor) from both naming schemes: claude-3-7-sonnet and claude-sonnet-4-5."""
    model = target.lowered
    if "claude" not in model:
        return None
    number = r"(\d{1,2})(?!\d)(?:[-.](\d)(?!\d))?"
    found = re.search(rf"claude-{number}-(?:opus|sonnet|haiku)", model) or re.search(
        rf"(?:opus|sonnet|haiku|fable|mythos)-{number}", model
    )
    if not found:
        return None
    return int(found.group(1)), int(found.group(2) or 0)


def claude_accepts_prefill(target: Target) -> bool:
    """Claude 3.x-4.5 continue a trailing assistant message; 4.6+ and 5 reject it (AN-6)."""
    version = claude_version(target)
    return version is not None and version < (4, 6)


def claude_keeps_thinking(target: Target) -> bool:
    """Whether the model keeps earlier assistant turns' thinking in its context (and bills
    it as input): Opus 4.5 and later, Sonnet 4.6 and later, Fable and Mythos. Earlier
    Opus and Sonnet models and every Haiku strip it when it is passed back (Anthropic's
    context-windows page). A model we cannot place keeps it: counting it errs high."""
    model = target.lowered
    version = claude_version(target)
    if version is None or "fable" in model or "mythos" in model:
        return True
    if "haiku" in model:
        return False
    if "opus" in model:
        return version >= (4, 5)
    if "sonnet" in model:
        return version >= (4, 6)
    return True


def gemini_version(target: Target) -> tuple[int, int] | None:
    return _version(target.lowered, "gemini")


def gemini_accepts_prefill(target: Target) -> bool:
    """Gemini 2.x to 3.1 continue a trailing model turn; newer ones and gemini-pro (1.0) don't."""
    version = gemini_version(target)
    return version is not None and (2, 0) <= version <= (3, 1)


def gemini_needs_thought_signatures(target: Target) -> bool:
    version = gemini_version(target)
    return version is not None and version >= (3, 0)


def deepseek_thinking(target: Target) -> bool:
    """deepseek-reasoner and the V4 family run in thinking mode and need reasoning_content back."""
    model = target.lowered
    return "reasoner" in model or "deepseek-v4" in model or "thinking" in model


def moonshot_thinking(target: Target) -> bool:
    return "thinking" in target.lowered or "kimi-k2.5" in target.lowered


def qwen_thinking(target: Target) -> bool:
    model = target.lowered
    return "thinking" in model or model.startswith(("qwq", "qvq"))


#: Mistral's own model names: a major version, or a release date (YYMM) as the newer ones use.
_MISTRAL_RELEASE = re.compile(
    r"(?:mistral-(?:small|medium|large)|ministral)(?:-\d+b)?(?:-instruct)?-(\d+)(?:[.-](\d+))?"
)


def mistral_tokenizer_model(model: str) -> bool:
    """Models vLLM serves with the Mistral tokenizer (``--tokenizer-mode mistral``, the mode
    their model cards ask for): Devstral, Magistral, and Mistral Small 3 (2501) and later
    releases, whose requests mistral_common validates instead of a chat template.

    ``model`` is lowered and without its organisation (Target.lowered)."""
    if "devstral" in model or "magistral" in model:
        return True
    for found in _MISTRAL_RELEASE.finditer(model):
        number = int(found.group(1))
        if 3 <= number < 100 or number >= 2501:  # a major version, or a YYMM date
            return True
    return False


def template_family(target: Target) -> str:
    """The chat-template family a vLLM-served model renders with (chatml when unknown)."""
    model = target.lowered
    if "llama-2" in model or "llama2" in model or "codellama" in model:
        return "llama2"
    if "llama-3" in model or "llama3" in model:
        return "llama3"
    if mistral_tokenizer_model(model):
        return "mistral_tokenizer"
    if "mistral" in model or "mixtral" in model:
        # v0.1/v0.2 templates have no tool support; v0.3 and later ones do, and so does
        # Mixtral-8x22B-Instruct-v0.1, which ships the v0.3 template.
        old = re.search(r"v0\.[12]\b", model) and "8x22b" not in model
        return "mistral_v02" if old else "mistral"
    if "gemma-3" in model or "gemma3" in model:
        return "gemma3"
    if "gemma" in model:
        return "gemma"
    if "qwen" in model or "qwq" in model:
        return "qwen"
    return "chatml"


def check_provider(provider: object) -> str:
    if not isinstance(provider, str) or provider not in PROVIDERS:
        raise ConfigError(f"unknown provider {provider!r}; known providers: {', '.join(PROVIDERS)}")
    return provider
