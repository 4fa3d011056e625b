"""Where each rule comes from: public pages that show the provider rejecting the shape.

Most are issue reports that quote the provider's error (evidence of what the API
returned then, not documentation); some are the provider's docs or the code that
does the checking (chat templates, mistral_common's validator, vLLM). The pairing
rules shared by OpenAI-compatible providers (``XX-0-1``, ``-2``, ``-4``) cite the
provider's own report where one exists, else OpenAI's. Shown by
``context-governor lint --list-rules`` and docs/providers.md.
"""

from __future__ import annotations

__all__ = ["SOURCES"]

_GH = "https://github.com/"
_NANOBOT = _GH + "HKUDS/nanobot/"
_MC = _GH + "mistralai/mistral-common/blob/main/src/mistral_common/protocol/instruct/"
_MISTRAL_COMMON = _MC + "validator.py"
_VLLM_MISTRAL = _GH + "vllm-project/vllm/blob/main/vllm/tokenizers/mistral.py"
_HF = "https://huggingface.co/"

_OA_ORPHAN = (_GH + "smarter-sh/smarter/issues/264", _GH + "FoundationAgents/OpenManus/issues/744")
_OA_UNANSWERED = (_GH + "BerriAI/litellm/issues/10083", _GH + "sdcb/chats/pull/132")
_OA_DUPLICATE = (_GH + "agno-agi/agno/issues/5116",)
_GLM_1214 = (
    _GH + "MetaGLM/zhipuai-sdk-python-v4/issues/14",
    _GH + "continuedev/continue/issues/13259",
)
_TEMPLATES = {
    "llama2": _HF + "meta-llama/Llama-2-7b-chat-hf",
    "llama3": _HF + "meta-llama/Llama-3.1-8B-Instruct",
    "mistral": _HF + "mistralai/Mistral-7B-Instruct-v0.3",
    "mistral_v02": _HF + "mistralai/Mistral-7B-Instruct-v0.2",
    "gemma": _HF + "google/gemma-2-9b-it",
    "qwen": _HF + "Qwen/Qwen2.5-7B-Instruct",
}


def _pairing(
    prefix: str, orphan: tuple[str, ...], unanswered: tuple[str, ...]
) -> dict[str, tuple[str, ...]]:
    return {
        f"{prefix}-1": orphan,
        f"{prefix}-2": unanswered,
        f"{prefix}-4": _OA_DUPLICATE,
    }


SOURCES: dict[str, tuple[str, ...]] = {
    # OpenAI Chat Completions
    "OA-1": _OA_ORPHAN,
    "OA-2": _OA_UNANSWERED,
    "OA-4": _OA_DUPLICATE,
    "OA-5": (_GH + "docker/docker-agent/issues/63", _GH + "vercel/ai/pull/14950"),
    "OA-6": (_GH + "openai/openai-python/issues/2061",),
    "OA-6b": (_GH + "CopilotKit/CopilotKit/issues/529",),
    "OA-7": (_GH + "FlowiseAI/Flowise/issues/2948",),
    "OA-7b": (_GH + "mcp-use/mcp-use/issues/90",),
    "OA-8": (_GH + "Portkey-AI/gateway/issues/1062", _GH + "BerriAI/litellm/issues/17343"),
    # Anthropic Messages
    "AN-1": (_GH + "anthropics/claude-code/issues/5989", _GH + "Kilo-Org/kilocode/issues/5163"),
    "AN-2": (_GH + "anthropics/claude-code/issues/18947",),
    "AN-3": (
        _GH + "anthropics/claude-code/issues/37",
        _GH + "anthropics/anthropic-sdk-typescript/issues/653",
    ),
    "AN-4": (_GH + "lobehub/lobehub/issues/1601", _GH + "anthropics/courses/issues/79"),
    "AN-6": (
        _GH + "smallmain/vscode-unify-chat-provider/issues/249",
        _NANOBOT + "pull/3297",
    ),
    "AN-6b": (_GH + "tailcallhq/forgecode/issues/1872",),
    "AN-7": (_GH + "anthropics/claude-code/issues/6774",),
    "AN-7b": (_GH + "continuedev/continue/issues/9605",),
    "AN-7c": (_GH + "anthropics/claude-code/issues/59812",),
    "AN-8": (_GH + "trycua/cua/issues/524",),
    "AN-8b": (_GH + "tailcallhq/forgecode/issues/1142", _GH + "maximhq/bifrost/issues/5097"),
    "AN-10": (_GH + "tghamm/Anthropic.SDK/issues/50", _GH + "Wei-Shaw/sub2api/issues/176"),
    "AN-11": (_NANOBOT + "blob/main/nanobot/providers/anthropic_provider.py",),
    # Google Gemini
    "GE-1": (
        _GH + "google-gemini/gemini-cli/issues/11814",
        _GH + "lbjlaq/Antigravity-Manager/pull/3396",
    ),
    "GE-2": (_GH + "lobehub/lobehub/issues/7298", _GH + "langchain-ai/langchain/issues/27799"),
    "GE-3": (_GH + "microsoft/vscode/issues/299295", _GH + "google-gemini/gemini-cli/issues/16415"),
    "GE-4": (_GH + "NousResearch/hermes-agent/pull/55623", _GH + "Portkey-AI/gateway/pull/246"),
    "GE-5": (_GH + "langchain-ai/langchain-google/pull/1298",),
    "GE-5b": (_GH + "langchain-ai/langchain-google/issues/691",),
    "GE-6": (
        "https://ai.google.dev/gemini-api/docs/thought-signatures",
        _GH + "nanbingxyz/5ire/issues/405",
    ),
    "GE-7": (_GH + "pipecat-ai/pipecat/pull/5821",),
    "GE-7b": (_GH + "songquanpeng/one-api/issues/836",),
    # AWS Bedrock Converse
    "BR-1": (_GH + "elastic/kibana/pull/246393",),
    "BR-1b": (_GH + "pydantic/pydantic-ai/issues/4495",),
    "BR-2": (_GH + "aws-samples/bedrock-access-gateway/issues/25", _GH + "cline/cline/issues/431"),
    "BR-3": (_GH + "agno-agi/agno/issues/6698",),
    "BR-3b": (_GH + "Just-Curieous/Curie/issues/16",),
    "BR-3c": (_GH + "Just-Curieous/Curie/issues/16",),
    "BR-4": (_GH + "langgenius/dify/issues/17545", _GH + "vercel/ai/pull/7537"),
    "BR-5": (_GH + "aws-samples/bedrock-engineer/issues/8", _GH + "earendil-works/pi/pull/3443"),
    "BR-5b": (_GH + "aws-samples/bedrock-engineer/issues/8",),
    "BR-6": (_GH + "run-llama/llama_index/pull/22775",),
    "BR-7": (_GH + "i-am-bee/beeai-framework/issues/753",),
    # Mistral
    **_pairing("MI-0", (_MISTRAL_COMMON,), (_GH + "NousResearch/hermes-agent/pull/11722",)),
    "MI-0-4": (_MISTRAL_COMMON,),
    "MI-1": (_GH + "anomalyco/opencode/issues/1680", _GH + "nearai/ironclaw/issues/1241"),
    "MI-2": (_GH + "datapizza-labs/datapizza-ai/issues/98", _GH + "charmbracelet/crush/issues/279"),
    "MI-3": (_GH + "0xPlaygrounds/rig/issues/708",),
    "MI-4": (_MISTRAL_COMMON,),
    "MI-5": (_GH + "BerriAI/litellm/blob/main/litellm/llms/mistral/chat/transformation.py",),
    "MI-5b": (_NANOBOT + "commit/d5f5eb43e",),
    "MI-6": (_MISTRAL_COMMON,),
    # DeepSeek
    **_pairing(
        "DS-0",
        (_GH + "qwersyk/Newelle/issues/425",),
        (_GH + "langgenius/dify/issues/32222",),
    ),
    "DS-1": (_GH + "deepseek-ai/DeepSeek-R1/issues/21",),
    "DS-2": (
        "https://api-docs.deepseek.com/guides/chat_prefix_completion",
        _GH + "gptme/gptme/issues/467",
    ),
    "DS-6": (_GH + "decolua/9router/pull/1011",),
    "DS-3": (
        "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
        _GH + "langchain-ai/langchain/issues/37713",
    ),
    # Zhipu GLM: error 1214 for every cause; the causes come from reports and fixes
    **_pairing("GLM-0", _GLM_1214, _GLM_1214),
    "GLM-0-4": (_NANOBOT + "commit/d6d0a2b70",),
    "GLM-1": (_NANOBOT + "commit/44b526c4e", *_GLM_1214),
    "GLM-2": (_NANOBOT + "commit/ac714803f",),
    "GLM-3": (_GH + "MetaGLM/zhipuai-sdk-python-v4/issues/14", _GH + "VicBilibily/GCMP/pull/120"),
    "GLM-4": (_NANOBOT + "commit/222770ff3",),
    "GLM-5": (_GH + "songquanpeng/one-api/issues/1153", _GH + "earendil-works/pi/pull/3309"),
    # Qwen (DashScope)
    **_pairing(
        "QW-0",
        (_GH + "QwenLM/qwen-code/issues/2360",),
        (_GH + "QwenLM/qwen-code/issues/606",),
    ),
    "QW-3": (_GH + "agentscope-ai/agentscope-java/issues/613",),
    "QW-4": (_GH + "QwenLM/qwen-code/issues/5265",),
    "QW-4b": (_GH + "smallmain/vscode-unify-chat-provider/pull/65",),
    "QW-5b": (_GH + "DayuanJiang/next-ai-draw-io/issues/304",),
    "QW-6": ("https://help.aliyun.com/en/model-studio/partial-mode",),
    "QW-6b": ("https://help.aliyun.com/en/model-studio/partial-mode",),
    # Moonshot / Kimi
    **_pairing("KM-0", _OA_ORPHAN, _OA_UNANSWERED),
    "KM-1": (_GH + "continuedev/continue/issues/11600", _GH + "mastra-ai/mastra/issues/12592"),
    "KM-2": (_NANOBOT + "commit/90d725097", _GH + "open-webui/open-webui/issues/28570"),
    "KM-4": (_GH + "SillyTavern/SillyTavern/issues/4326",),
    # Groq / Cerebras
    **_pairing("GQ-0", _OA_ORPHAN, _OA_UNANSWERED),
    "GQ-1": (
        _GH + "tashfeenahmed/freellmapi/issues/1070",
        _GH + "Kilo-Org/kilocode/issues/10375",
    ),
    "GQ-2": (_GH + "run-llama/llama_index/issues/14701",),
    # vLLM / TGI: the chat templates of the models (their Hugging Face repositories)
    "HF-1": (_TEMPLATES["llama2"], _TEMPLATES["gemma"]),
    "HF-1b": (_TEMPLATES["mistral"], _GH + "vllm-project/vllm/issues/6862"),
    "HF-1c": (_TEMPLATES["mistral"],),
    "HF-1d": (_TEMPLATES["llama2"], _TEMPLATES["gemma"]),
    "HF-1e": (_TEMPLATES["gemma"],),
    "HF-1f": (_TEMPLATES["mistral_v02"],),
    "HF-1g": (_TEMPLATES["mistral_v02"],),
    "HF-2": (
        _GH + "vllm-project/vllm/issues/36432",
        _GH + "lmstudio-ai/lmstudio-bug-tracker/issues/1572",
    ),
    "HF-3": (_GH + "Blaizzy/mlx-vlm/pull/1864", _TEMPLATES["llama2"]),
    "HF-3b": (_TEMPLATES["llama2"], _TEMPLATES["qwen"]),
    "HF-4": (_GH + "mistralai/mistral-vibe/issues/114", _VLLM_MISTRAL),
    "HF-6": (_TEMPLATES["llama3"],),
    "HF-7": (_TEMPLATES["mistral"],),
    "HF-9": (_TEMPLATES["llama2"],),
    # vLLM with the Mistral tokenizer: vLLM's request checks, then mistral_common's validator
    **{f"MT-{n}": (_MISTRAL_COMMON,) for n in (1, 2, 3, 4, 5, 6, 11)},
    "MT-6": (_VLLM_MISTRAL, _MISTRAL_COMMON),
    "MT-7": (_VLLM_MISTRAL, _MISTRAL_COMMON),
    "MT-8": (_MISTRAL_COMMON,),
    "MT-9": (_MC + "messages.py",),
    "MT-9b": (_MISTRAL_COMMON,),
    "MT-10": (_MC + "chunk.py",),
    "MT-12": (_MISTRAL_COMMON,),
    "MT-13": (_MC + "messages.py",),
}
