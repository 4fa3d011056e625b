"""Anthropic Messages API, as reached from OpenAI-format messages.

System messages become the top-level ``system``; tool results become ``tool_result``
blocks of a user turn; tool calls become ``tool_use`` blocks. Hence the pairing checks
run on the list without its system messages, and the errors' ``messages.N`` count turns.

Claude's model facts (its version, prefill, kept thinking), windows (with the 1M beta
header) and cache prices are here too: Bedrock's rules read the same facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..targets import DATED, CachePrice, Policy, Target
from . import _checks as checks
from ._rules import Rule
from ._sources import GH, NANOBOT
from ._vendor import NotChecked, Sources, Vendor

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_1H",
    "BETA_1M_MODELS",
    "BETA_1M_PREFIX",
    "BETA_1M_WINDOW",
    "FAMILY_WINDOWS",
    "NOT_CHECKED",
    "POLICY",
    "RULES",
    "SOURCES",
    "VENDOR",
    "WINDOWS",
    "asks_for_1m",
    "claude_accepts_prefill",
    "claude_keeps_thinking",
    "claude_version",
    "takes_1m",
]


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


def _prefill_rejected(target: Target) -> bool:
    return not claude_accepts_prefill(target)


RULES: tuple[Rule, ...] = (
    Rule(
        "AN-1",
        "each tool_use needs a tool_result in the very next message",
        "messages.{turn}: `tool_use` ids were found without `tool_result` blocks immediately "
        "after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in "
        "the next message.",
        "add the missing results right after the call",
        checks.hoisted(checks.calls_without_results_after),
    ),
    Rule(
        "AN-2",
        "a tool_result must reference a tool_use of the previous message",
        "messages.{turn}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
        "{id}. Each `tool_result` block must have a corresponding `tool_use` block in the "
        "previous message.",
        "drop the orphan result",
        checks.hoisted(checks.result_without_call_before),
    ),
    Rule(
        "AN-3",
        "tool_result blocks come first in the turn after tool_use (no text before them)",
        "messages.{turn}: Did not find {count} `tool_result` block(s) at the beginning of this "
        "message. Messages following `tool_use` blocks must begin with a matching number of "
        "`tool_result` blocks.",
        "move the interjected message after the tool results",
        checks.hoisted(checks.interjection_in_tool_block),
    ),
    Rule(
        "AN-4",
        "the first message must be a user message (Claude 3 era)",
        'messages: first message must use the "user" role',
        "insert a user message before it",
        checks.first_is_not_user(),
        applies=lambda t: (claude_version(t) or (9, 9)) < (3, 5),
    ),
    Rule(
        "AN-6",
        "no trailing assistant message (prefill) on Claude 4.6+ and 5",
        "This model does not support assistant message prefill. The conversation must end "
        "with a user message.",
        "drop the trailing assistant message",
        checks.ends_with_assistant,
        applies=_prefill_rejected,
    ),
    Rule(
        "AN-6b",
        "a prefill must not end in whitespace",
        "messages: final assistant content cannot end with trailing whitespace",
        "strip the trailing whitespace",
        checks.prefill_with_trailing_whitespace,
        applies=claude_accepts_prefill,
    ),
    Rule(
        "AN-7",
        "text content must be non-empty and not only whitespace",
        "messages.{turn}: all messages must have non-empty content except for the optional "
        "final assistant message",
        "use a placeholder such as '(empty)'",
        checks.hoisted(checks.blank_content(except_last_assistant=True)),
    ),
    Rule(
        "AN-7b",
        "text blocks must contain non-whitespace text",
        "messages: text content blocks must contain non-whitespace text",
        "drop the blank text block",
        checks.whitespace_text_parts,
    ),
    Rule(
        "AN-7c",
        "text blocks must be non-empty",
        "messages: text content blocks must be non-empty",
        "drop the empty text block",
        checks.empty_text_parts,
    ),
    Rule(
        "AN-8",
        "tool_use ids are unique within a request",
        "messages.{turn}.content.1: `tool_use` ids must be unique",
        "rename the repeated id (on its result too)",
        checks.hoisted(checks.duplicate_call_ids),
    ),
    Rule(
        "AN-8b",
        "tool_use ids match ^[a-zA-Z0-9_-]+$",
        "messages.{turn}.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        "replace other characters (on the call and its result alike)",
        checks.hoisted(checks.call_id_format(r"[a-zA-Z0-9_-]+")),
    ),
    Rule(
        "AN-10",
        "at most 4 cache_control breakpoints",
        "A maximum of 4 blocks with cache_control may be provided. Found {found}.",
        "keep the 4 newest breakpoints",
        checks.cache_control_count(4),
    ),
    Rule(
        "AN-13",
        "messages must not be empty (the system prompt aside)",
        "messages: at least one message is required",
        "send at least one user message",
        checks.only_system,
        verbatim=False,
    ),
    Rule(
        "AN-11",
        "content blocks need a type",
        "content.0.type: Field required",
        "give the block a type",
        checks.untyped_parts,
        verbatim=False,
    ),
)

NOT_CHECKED: NotChecked = (
    (
        "AN-5",
        "consecutive same-role turns are combined by the API since 2025; we merge them "
        "anyway, so a merged list is what AN-1/AN-3 are checked on",
    ),
    ("AN-9", "thinking blocks and signatures do not exist in OpenAI-format messages"),
)

POLICY = Policy(
    id_style="anthropic",
    system="merge_front",
    needs_user=True,
    empty="blocks",
    reasoning=lambda target: "strip",
    prefill=claude_accepts_prefill,
    rstrip_prefill=True,
    max_cache_control=4,
)

SOURCES: Sources = {
    "AN-1": (GH + "anthropics/claude-code/issues/5989", GH + "Kilo-Org/kilocode/issues/5163"),
    "AN-2": (GH + "anthropics/claude-code/issues/18947",),
    "AN-3": (
        GH + "anthropics/claude-code/issues/37",
        GH + "anthropics/anthropic-sdk-typescript/issues/653",
    ),
    "AN-4": (GH + "lobehub/lobehub/issues/1601", GH + "anthropics/courses/issues/79"),
    "AN-6": (
        GH + "smallmain/vscode-unify-chat-provider/issues/249",
        NANOBOT + "pull/3297",
    ),
    "AN-6b": (GH + "tailcallhq/forgecode/issues/1872",),
    "AN-7": (GH + "anthropics/claude-code/issues/6774",),
    "AN-7b": (GH + "continuedev/continue/issues/9605",),
    "AN-7c": (GH + "anthropics/claude-code/issues/59812",),
    "AN-8": (GH + "trycua/cua/issues/524",),
    "AN-8b": (GH + "tailcallhq/forgecode/issues/1142", GH + "maximhq/bifrost/issues/5097"),
    "AN-10": (GH + "tghamm/Anthropic.SDK/issues/50", GH + "Wei-Shaw/sub2api/issues/176"),
    "AN-13": (GH + "langchain-ai/langchain/pull/31696", GH + "Helicone/helicone/pull/5257"),
    "AN-11": (NANOBOT + "blob/main/nanobot/providers/anthropic_provider.py",),
}

#: docs.anthropic.com/en/docs/about-claude/models ("Context window": 200K for every
#: Claude 3, 3.5, 3.7 and 4.x model; the 1M beta needs a request header).
WINDOWS: dict[str, int] = {
    "claude-3": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
}

FAMILY_WINDOWS: tuple[tuple[str, int], ...] = (
    # docs.anthropic.com/en/docs/about-claude/models: 200K for every Claude 3 and 4.x
    # model; larger windows need a request header (see the 1M beta below) or are newer
    # than any table, and are learned from a refusal otherwise.
    (r"claude-", 200_000),
)

#: Anthropic's 1M-token window, turned on per request by an ``anthropic-beta`` header
#: value starting so (``context-1m-2025-08-07``): docs.anthropic.com/en/docs/build-with-
#: claude/context-windows ("1M token context window": Claude Sonnet 4 and 4.5; Opus 4.6
#: and Sonnet 4.6 too).
BETA_1M_PREFIX = "context-1m-"
BETA_1M_WINDOW = 1_000_000
#: Table entries of the Claude models that take the 1M header. A Claude model the table
#: does not know (newer than it) is taken at the client's word; older ones ignore it.
BETA_1M_MODELS = ("claude-sonnet-4", "claude-opus-4-6")


def asks_for_1m(betas: Iterable[str]) -> bool:
    """Whether a request's ``anthropic-beta`` values ask for the 1M window."""
    return any(b.strip().lower().startswith(BETA_1M_PREFIX) for b in betas)


def takes_1m(names: Sequence[str], known: bool) -> bool:
    """Whether a model asked for the 1M window gets it: a Claude model in BETA_1M_MODELS,
    or one newer than the windows table (``known`` False), taken at the client's word.
    ``names`` are the model's name with and without its provider prefixes."""
    if not any(name.startswith("claude-") for name in names):
        return False
    if not known:
        return True
    return any(name.startswith(prefix) for prefix in BETA_1M_MODELS for name in names)


ANTHROPIC = CachePrice(
    "Anthropic", "Claude Sonnet 4.5 / Haiku 4.5 / Opus 4.5, 5-minute TTL", "breakpoint", 0.1, 1.25
)
ANTHROPIC_1H = CachePrice(
    "Anthropic, 1-hour TTL", "Claude Sonnet 4.5 / Haiku 4.5 / Opus 4.5", "breakpoint", 0.1, 2.0
)

VENDOR = Vendor(
    "anthropic",
    "Anthropic Messages",
    RULES,
    NOT_CHECKED,
    POLICY,
    sources=SOURCES,
    windows=WINDOWS,
    family_windows=FAMILY_WINDOWS,
    prices={"anthropic": ANTHROPIC, "anthropic-1h": ANTHROPIC_1H},
    price_families=((rf"claude-(?:sonnet|haiku|opus)-4-5{DATED}", ANTHROPIC),),
    aliases=("anthropic", "google_anthropic_vertex"),
    model_hints=("claude",),
    media="anthropic",
    media_aliases=("claude", "vertex_anthropic"),
)
