"""The addresses the vendor modules' sources share.

Each rule comes with public pages that show the provider rejecting the shape (each
vendor module's ``SOURCES``, in its ``VENDOR``; ``providers.catalog.SOURCES`` is all of
them). Most are issue reports that quote the provider's error (evidence of what the API
returned then, not documentation); some are the provider's docs or the code that does
the checking (chat templates, mistral_common's validator, vLLM). Shown by
``context-governor lint --list-rules`` and docs/providers.md.
"""

from __future__ import annotations

__all__ = ["GH", "HF", "MISTRAL_COMMON", "MISTRAL_COMMON_DIR", "NANOBOT", "VLLM_MISTRAL"]

GH = "https://github.com/"
HF = "https://huggingface.co/"
#: Nanobot's repository: its commits fixed many of these shapes for its providers.
NANOBOT = GH + "HKUDS/nanobot/"
MISTRAL_COMMON_DIR = GH + "mistralai/mistral-common/blob/main/src/mistral_common/protocol/instruct/"
#: mistral_common's request validator, which Mistral's API and vLLM's Mistral mode run.
MISTRAL_COMMON = MISTRAL_COMMON_DIR + "validator.py"
VLLM_MISTRAL = GH + "vllm-project/vllm/blob/main/vllm/tokenizers/mistral.py"
