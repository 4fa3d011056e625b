"""How each provider's list is repaired: data read by the generic fix stages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ._target import Target

__all__ = ["EmptyPolicy", "IdStyle", "Policy", "ReasoningPolicy", "SystemPolicy", "never"]

IdStyle = Literal["openai", "anthropic", "bedrock", "mistral", "unique"]
SystemPolicy = Literal["keep", "merge_front", "into_first_user"]
EmptyPolicy = Literal["openai", "blocks", "required", "template"]
ReasoningPolicy = Literal["keep", "strip", "require_all", "require_tool_calls"]


def never(target: Target) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Policy:
    id_style: IdStyle = "unique"
    system: SystemPolicy = "keep"
    #: insert a user message before a leading assistant even when it makes tool calls
    user_before_tool_call_opening: bool = False
    #: a list without a user message (e.g. nothing but system messages) gets one
    needs_user: bool = False
    #: Mistral: an assistant message between a tool result and the next user message
    bridge_user_after_tool: bool = False
    empty: EmptyPolicy = "openai"
    reasoning: Callable[[Target], ReasoningPolicy] = lambda target: "keep"
    reasoning_placeholder: str = " "
    #: keys a message may carry (None: anything)
    allowed_keys: frozenset[str] | None = None
    #: names must match ^[a-zA-Z0-9_-]{1,64}$ (OpenAI); "tool_only" drops them elsewhere
    names: Literal["keep", "pattern", "tool_only"] = "keep"
    #: the model continues a trailing assistant message (prefill)
    prefill: Callable[[Target], bool] = never
    #: key set on a kept prefill message ("prefix", "partial"), or None (implicit)
    prefill_flag: str | None = None
    rstrip_prefill: bool = False
    thought_signatures: Callable[[Target], bool] = never
    max_cache_control: int | None = None
    #: tool calls and results are rewritten as plain text (templates without tool support)
    flatten_tools: Callable[[Target], bool] = never
    #: why they are (the report's words)
    flatten_why: str = "the template has no tool role"
    #: content must be a string: text parts are joined (templates that concatenate content)
    text_only_content: bool = False
    #: ...or only in messages of these roles
    text_only_roles: frozenset[str] = frozenset()
    #: the content part types the provider parses (None: any); a list with another type
    #: is joined as text
    part_types: frozenset[str] | None = None
    #: one tool call per assistant message (Llama 3.x templates)
    single_tool_call: bool = False
    #: the API takes messages of role developer (OpenAI); elsewhere they are sent as
    #: system messages (messages/roles.py)
    developer_role: bool = False
    #: the API takes the deprecated function calling (``function_call``, role function;
    #: OpenAI); elsewhere such a history is refused (messages/legacy.py)
    legacy_functions: bool = False
    #: the history the model reads opens with context the server holds (a compaction
    #: block, formats/_anthropic.py): a leading assistant message is legal there and no
    #: user message is needed (set per request by the edge, never by a provider)
    opened: bool = False
