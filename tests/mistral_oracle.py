"""What vLLM with the Mistral tokenizer says about a request, using the real mistral_common.

vLLM (``vllm/tokenizers/mistral.py``) does three things before a Mistral-tokenizer model
sees a chat request, and this module does the same, in the same order:

1. with ``add_generation_prompt`` (the chat API's default) it refuses a list that ends
   with an assistant message;
2. it keeps the last 9 characters of longer tool-call ids (``truncate_tool_call_ids``);
3. it builds ``ChatCompletionRequest.from_openai(messages, tools)`` and validates it with
   mistral_common's validator for the model's tokenizer version, in "test" mode.

``error()`` returns the text the request fails with, or None when it is accepted.
"""

from __future__ import annotations

import copy
from typing import Any

from mistral_common.exceptions import MistralCommonException
from mistral_common.protocol.instruct.request import ChatCompletionRequest
from mistral_common.protocol.instruct.validator import ValidationMode, get_validator
from mistral_common.tokens.tokenizers.base import TokenizerVersion
from pydantic import ValidationError

#: The tokenizer versions of the models this family covers (Mistral Small 3.x: v7;
#: Magistral, Devstral: v7 to v13).
VERSIONS = ("v7", "v11", "v13")

ASSISTANT_LAST = (
    "Cannot set `add_generation_prompt` to True when the last message is from the "
    "assistant. Consider using `continue_final_message` instead."
)


def _cut(value: Any) -> Any:
    return value[-9:] if isinstance(value, str) and len(value) > 9 else value


def _truncate_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(messages)
    for message in out:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and "id" in call:
                    call["id"] = _cut(call["id"])
        elif message.get("role") == "tool" and "tool_call_id" in message:
            message["tool_call_id"] = _cut(message["tool_call_id"])
    return out


def error(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, version: str = "v11"
) -> str | None:
    if messages and messages[-1].get("role") == "assistant":
        return ASSISTANT_LAST
    try:
        request = ChatCompletionRequest.from_openai(
            messages=_truncate_ids(messages), tools=tools or None
        )
        validator = get_validator(TokenizerVersion(version), ValidationMode.test)
        validator.validate_request(request)
    except ValidationError as exc:  # pydantic, while parsing a message
        return str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
    except (MistralCommonException, ValueError, KeyError) as exc:  # its checks, its parsing
        return str(exc)
    return None


def errors(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> dict[str, str]:
    """version -> error, for the versions that reject the request."""
    found = {v: error(messages, tools, v) for v in VERSIONS}
    return {v: e for v, e in found.items() if e is not None}
