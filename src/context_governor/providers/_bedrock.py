"""AWS Bedrock Converse.

As for Anthropic, system messages leave the list (the request's ``system`` field): the
pairing checks run without them, and the errors' ``messages.N`` count turns.
"""

from __future__ import annotations

from ..targets import Policy, Target
from . import _checks as checks
from ._anthropic import claude_accepts_prefill
from ._rules import Rule
from ._sources import GH
from ._vendor import NotChecked, Sources, Vendor

__all__ = ["NOT_CHECKED", "POLICY", "RULES", "SOURCES", "VENDOR"]


def _no_tools(target: Target) -> bool:
    """The request declares no tools (unknown: not checked, see validate())."""
    return target.has_tools is False


def _trailing_rejected(target: Target) -> bool:
    return not claude_accepts_prefill(target)


RULES: tuple[Rule, ...] = (
    Rule(
        "BR-1",
        "the conversation starts with a user message",
        "A conversation must start with a user message. Try again with a conversation that "
        "starts with a user message.",
        "insert a user message before it",
        checks.first_is_not_user(),
    ),
    Rule(
        "BR-1b",
        "a request with only system messages has no conversation",
        "A conversation must start with a user message. Try again with a conversation that "
        "starts with a user message.",
        "add a user message",
        checks.only_system,
    ),
    Rule(
        "BR-2",
        "user and assistant turns alternate",
        "A conversation must alternate between user and assistant roles. Make sure the "
        "conversation alternates between user and assistant roles and try again.",
        "merge consecutive messages of one role",
        checks.turn_alternation,
    ),
    Rule(
        "BR-3",
        "toolResult blocks match the previous turn's toolUse blocks",
        "Expected toolResult blocks at messages.{next_turn}.content for the following Ids: {ids}",
        "add the missing results right after the call",
        checks.hoisted(checks.calls_without_results_after),
    ),
    Rule(
        "BR-3b",
        "no toolResult without a toolUse in the previous turn",
        "The number of toolResult blocks at messages.{turn}.content exceeds the number of "
        "toolUse blocks of previous turn.",
        "drop the orphan result",
        checks.hoisted(checks.result_without_call_before),
    ),
    Rule(
        "BR-3c",
        "toolUse ids are unique",
        "The number of toolResult blocks at "
        "messages.{next_turn}.content exceeds the number of toolUse blocks of previous turn.",
        "rename the repeated id (on its result too)",
        checks.hoisted(checks.duplicate_call_ids),
        verbatim=False,
    ),
    Rule(
        "BR-4",
        "a history with tool calls or results needs the request's tools (toolConfig)",
        "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
        "send the tool definitions, or write the old tool turns as text (govern does)",
        checks.first_tool_block,
        when=_no_tools,
    ),
    Rule(
        "BR-5",
        "no empty content and no blank text",
        "The text field in the ContentBlock object at messages.{turn}.content.0 is blank. Add "
        "text to the text field, and try again.",
        "use a placeholder such as '(empty)'",
        checks.hoisted(checks.blank_content()),
    ),
    Rule(
        "BR-5b",
        "no blank text blocks",
        "The text field in the ContentBlock object at messages.{turn}.content.{part} is "
        "blank. Add text to the text field, and try again.",
        "drop the blank text block",
        checks.hoisted(checks.blank_text_parts),
    ),
    Rule(
        "BR-6",
        "toolUseId matches [a-zA-Z0-9_.:-]{1,64}",
        "messages.{turn}: toolUseId must match [a-zA-Z0-9_.:-]+ and be 1-64 characters",
        "rewrite the id (on the call and its result alike)",
        checks.hoisted(checks.call_id_format(r"[a-zA-Z0-9_.:-]{1,64}")),
        verbatim=False,
    ),
    Rule(
        "BR-7",
        "the last turn is a user turn (Llama and other non-Claude models; Claude 4.6+)",
        "The model that you are using requires the last turn in the conversation to be a user "
        "message. Add a user message to the conversation and try again.",
        "drop the trailing assistant message",
        checks.ends_with_assistant,
        applies=_trailing_rejected,
    ),
)

NOT_CHECKED: NotChecked = (
    ("BR-6b", "toolResult JSON must be an object: depends on how the adapter wraps results"),
)

POLICY = Policy(
    # converters that emit tool results and the next user text as two user turns exist
    bridge_user_after_tool=True,
    id_style="bedrock",
    system="merge_front",
    needs_user=True,
    user_before_tool_call_opening=True,
    empty="blocks",
    reasoning=lambda target: "strip",
    prefill=claude_accepts_prefill,
    rstrip_prefill=True,
    max_cache_control=4,
    # BR-4 without tools: the tool turns become text. The other way out, a placeholder
    # tool declaration (Nanobot's no-op tool), is not ours to add: govern() returns the
    # messages, the request's tools are the caller's, and a made-up tool is one the
    # model may call.
    flatten_tools=_no_tools,
    flatten_why="the request declares no tools, and Bedrock wants a toolConfig for tool blocks",
)

SOURCES: Sources = {
    "BR-1": (GH + "elastic/kibana/pull/246393",),
    "BR-1b": (GH + "pydantic/pydantic-ai/issues/4495",),
    "BR-2": (GH + "aws-samples/bedrock-access-gateway/issues/25", GH + "cline/cline/issues/431"),
    "BR-3": (GH + "agno-agi/agno/issues/6698",),
    "BR-3b": (GH + "Just-Curieous/Curie/issues/16",),
    "BR-3c": (GH + "Just-Curieous/Curie/issues/16",),
    "BR-4": (GH + "langgenius/dify/issues/17545", GH + "vercel/ai/pull/7537"),
    "BR-5": (GH + "aws-samples/bedrock-engineer/issues/8", GH + "earendil-works/pi/pull/3443"),
    "BR-5b": (GH + "aws-samples/bedrock-engineer/issues/8",),
    "BR-6": (GH + "run-llama/llama_index/pull/22775",),
    "BR-7": (GH + "i-am-bee/beeai-framework/issues/753",),
}

VENDOR = Vendor(
    "bedrock",
    "AWS Bedrock Converse",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    aliases=("bedrock", "amazon_bedrock", "bedrock_converse"),
    # Bedrock model ids name the vendor before a dot: ``us.anthropic.claude-...``
    model_prefixes=("anthropic.", "openai.", "deepseek."),
    media="anthropic",
)
