"""Who the request is for: provider and model, as every rule sees it.

Providers differ by model (prefill accepted by Claude <= 4.5 and rejected by 4.6+,
DeepSeek's thinking models needing ``reasoning_content``, a vLLM server's rules
depending on the model's chat template), so every rule sees a Target, not a name. The
model facts themselves (``claude_version``, ``template_family``...) are the vendors'
own: each is in its vendor's module in providers/.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["MediaRule", "Target"]

#: The media billing rules counting/_media.py implements (named after the provider whose
#: rule it is); each vendor module says which one its provider's media follow.
MediaRule = Literal["anthropic", "openai", "gemini"]


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
