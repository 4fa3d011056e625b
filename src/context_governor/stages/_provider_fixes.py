"""Provider repairs: generic stages that read the target's Policy (each provider's is in
its vendor module, providers/<name>.py).

Each stage is pure like the pipeline's own: it returns the input list when it has
nothing to do, never mutates a message, and books every change (with its token
cost) in the report.
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

from ..messages import Message, has_tool_calls, merge_contents, text_parts
from ..report import Kind, moves_messages
from ..targets import IdStyle, Policy
from ._base import Context, MessageCheck, leaves_alone_when
from ._cap import truncate
from ._inserted import BRIDGE_CONTENT, SYNTHETIC_USER
from ._pairing import pair_in
from ._shrink import settled
from ._single_call import parallel_blocks, split_message
from ._snip import FLATTENED_RESULT

__all__ = [
    "EMPTY_PLACEHOLDER",
    "ID_RULES",
    "NAME_OK",
    "SKIP_SIGNATURE",
    "STAGE",
    "allowed_keys",
    "bridge_user_after_tool",
    "cache_control",
    "empty_content",
    "flatten_tools",
    "names",
    "opening",
    "prefill",
    "reasoning",
    "regroup_tool_results",
    "rekey_ids",
    "split_parallel_calls",
    "systems",
    "thought_signatures",
]

STAGE = "provider"
#: the stage that puts tool results back in the order of their calls (it moves them)
REGROUP = moves_messages("regroup")
EMPTY_PLACEHOLDER = "(empty)"
#: The value Gemini accepts in place of a lost thought signature.
SKIP_SIGNATURE = "skip_thought_signature_validator"
NAME_OK = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def _policy(ctx: Context) -> Policy:
    return ctx.policy if ctx.policy is not None else Policy()


class _Editor:
    """Copy-on-write over a message list, booking each replaced message's token change."""

    def __init__(self, messages: list[Message], ctx: Context, stage: str = STAGE) -> None:
        self.messages = messages
        self.out: list[Message] | None = None
        self.ctx = ctx
        self.stage = stage

    def replace(self, index: int, new: Message, detail: str, tool_call_id: Any = None) -> None:
        if self.out is None:
            self.out = list(self.messages)
        old = self.out[index]
        self.out[index] = new
        self.ctx.record(
            self.stage,
            "repair",
            index,
            detail,
            tool_call_id=tool_call_id,
            tokens_saved=self.ctx.tokens(old) - self.ctx.tokens(new),
        )

    def result(self) -> list[Message]:
        return self.messages if self.out is None else self.out


# -- structure -------------------------------------------------------------------------------


def regroup_tool_results(messages: list[Message], ctx: Context) -> list[Message]:
    """Move each tool result right after the call it answers.

    A user or system message that arrived between a call and its results (an
    interjection, an injected skill) is rejected by OpenAI (OA-2), Anthropic
    (AN-3) and Mistral; moving it after the results keeps every message.
    """
    pairing = pair_in(messages, ctx)
    by_assistant: dict[int, list[int]] = {}
    for result_index, call_number in pairing.result_call.items():
        by_assistant.setdefault(pairing.calls[call_number][0], []).append(result_index)
    # A model that takes one call per turn gets each result after its own call
    # (split_parallel_calls), i.e. in call order: put them in that order here already,
    # so that the stages in between (microcompact keeps the newest results) see the
    # order that is sent, and a second pass sees nothing new.
    in_call_order = _policy(ctx).single_tool_call
    for results in by_assistant.values():
        results.sort(key=pairing.result_call.__getitem__ if in_call_order else None)
    moved = {
        r for a, results in by_assistant.items() for n, r in enumerate(results) if r != a + 1 + n
    }
    if not moved:
        return messages
    out: list[Message] = []
    placed: set[int] = set()
    for index, message in enumerate(messages):
        if index in placed:
            continue
        out.append(message)
        for result_index in by_assistant.get(index, ()):
            if result_index in moved:
                ctx.record(
                    REGROUP,
                    "move",
                    result_index,
                    "tool result moved up to its call, after an interjected message"
                    if result_index > index + len(by_assistant[index])
                    else "tool result put in the order of the calls (one call per turn)",
                    tool_call_id=messages[result_index].get("tool_call_id"),
                )
            out.append(messages[result_index])
            placed.add(result_index)
    return out


def _no_tool_traffic(message: Message) -> bool:
    return message.get("role") != "tool" and not (
        message.get("role") == "assistant" and has_tool_calls(message)
    )


def _flattens(ctx: Context) -> MessageCheck | None:
    """flatten_tools rewrites tool calls and results, and only those, when it is on."""
    target = ctx.target
    on = target is not None and _policy(ctx).flatten_tools(target)
    return _no_tool_traffic if on else None


@leaves_alone_when(_flattens)
def flatten_tools(messages: list[Message], ctx: Context) -> list[Message]:
    """Turn tool calls and results into plain text, for chat templates without tool support
    and for Bedrock requests without tools (a toolUse or toolResult block needs a
    toolConfig, BR-4; govern() returns messages, not the request's tool declarations)."""
    policy, target = _policy(ctx), ctx.target
    if target is None or not policy.flatten_tools(target):
        return messages
    edit = _Editor(messages, ctx, "flatten")
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant" and has_tool_calls(message):
            lines = [
                f"[calls {c.get('function', {}).get('name', '?')}"
                f"({c.get('function', {}).get('arguments', '')}) as {c.get('id')}]"
                for c in message["tool_calls"]
                if isinstance(c, dict)
            ]
            content = merge_contents(message.get("content"), "\n".join(lines))
            new = {k: v for k, v in message.items() if k != "tool_calls"} | {"content": content}
            edit.replace(index, new, f"tool calls written as text ({policy.flatten_why})")
        elif role == "tool":
            head = (
                f"{FLATTENED_RESULT}{message.get('name') or 'tool'} {message.get('tool_call_id')}]"
            )
            new = {"role": "user", "content": merge_contents(head, message.get("content"))}
            edit.replace(
                index,
                new,
                f"tool result written as a user message ({policy.flatten_why})",
                tool_call_id=message.get("tool_call_id"),
            )
    return edit.result()


def _not_system(message: Message) -> bool:
    return message.get("role") != "system"


def _moves_systems(ctx: Context) -> MessageCheck | None:
    """systems moves or folds system messages, and nothing when there are none."""
    return None if _policy(ctx).system == "keep" else _not_system


@leaves_alone_when(_moves_systems)
def systems(messages: list[Message], ctx: Context) -> list[Message]:
    """Hoist system messages for providers that take one system prompt at the front,
    or fold them into the first user message where the template has no system role."""
    policy = _policy(ctx)
    indices = [i for i, m in enumerate(messages) if m.get("role") == "system"]
    if (
        policy.system == "keep"
        or not indices
        or (policy.system == "merge_front" and indices == [0])
    ):
        return messages
    merged: Any = None
    for i in indices:
        merged = merge_contents(merged, messages[i].get("content"))
    rest = [m for m in messages if m.get("role") != "system"]
    before = sum(ctx.tokens(messages[i]) for i in indices)
    steps: list[tuple[Kind, int, str]] = []
    if policy.system == "merge_front":
        carrier: Message = {"role": "system", "content": merged}
        out = [carrier, *rest]
        steps.append(("move", indices[0], "system prompt placed first"))
        steps += [
            ("merge", i, "system message merged into the one at the front") for i in indices[1:]
        ]
    else:
        steps += [
            ("merge", i, "system message folded into the first user message") for i in indices
        ]
        first_user = next((n for n, m in enumerate(rest) if m.get("role") == "user"), None)
        if first_user is None:
            carrier = {"role": "user", "content": merged}
            out = [carrier, *rest]
            steps.append(("insert", 0, "user message created to carry the system prompt"))
        else:
            user = rest[first_user]
            before += ctx.tokens(user)
            carrier = {**user, "content": merge_contents(merged, user.get("content"))}
            out = [*rest[:first_user], carrier, *rest[first_user + 1 :]]
    for n, (kind, index, detail) in enumerate(steps):
        saved = before - ctx.tokens(carrier) if n == len(steps) - 1 else 0
        ctx.record("systems", kind, index, detail, tokens_saved=saved)
    return out


def opening(messages: list[Message], ctx: Context) -> list[Message]:
    """Make the conversation start with a user message where the provider requires it."""
    policy = _policy(ctx)
    first = next((i for i, m in enumerate(messages) if m.get("role") != "system"), None)
    if not messages or policy.opened:
        # nothing to send (the report names the rule: an empty request), or a history
        # the server's own context opens (a compaction block): nothing to open
        return messages
    if first is None:
        if not policy.needs_user:
            return messages
        at = len(messages)
        detail = "user message added: a request needs more than system messages"
    elif policy.needs_user and not any(m.get("role") == "user" for m in messages):
        at = first
        detail = "user message added: the provider needs at least one"
    else:
        m = messages[first]
        if m.get("role") == "user":
            return messages
        if (
            m.get("role") == "assistant"
            and has_tool_calls(m)
            and not policy.user_before_tool_call_opening
        ):
            return messages
        at = first
        detail = f"user message inserted before a leading {m.get('role')} message"
    synthetic = {"role": "user", "content": SYNTHETIC_USER}
    ctx.record("opening", "insert", at, detail, tokens_saved=-ctx.tokens(synthetic))
    return [*messages[:at], synthetic, *messages[at:]]


def bridge_user_after_tool(messages: list[Message], ctx: Context) -> list[Message]:
    """Mistral (and strict user/model alternation after conversion: Gemini, Bedrock) rejects
    user right after tool: put a short assistant message between them."""
    if not _policy(ctx).bridge_user_after_tool:
        return messages
    out: list[Message] = []
    for index, message in enumerate(messages):
        after_tool = index and messages[index - 1].get("role") == "tool"
        if after_tool and message.get("role") in ("user", "system"):
            bridge = {"role": "assistant", "content": BRIDGE_CONTENT}
            ctx.record(
                "bridge",
                "insert",
                len(out),
                f"assistant message between tool and {message.get('role')}",
                tokens_saved=-ctx.tokens(bridge),
            )
            out.append(bridge)
        out.append(message)
    return out if len(out) != len(messages) else messages


def _drop_empty_calls_key(messages: list[Message], ctx: Context) -> list[Message]:
    """``tool_calls: []`` or ``null`` means no calls; some templates test the key alone."""
    edit = _Editor(messages, ctx, "split")
    for index, message in enumerate(messages):
        if "tool_calls" in message and not message.get("tool_calls"):
            new = {k: v for k, v in message.items() if k != "tool_calls"}
            edit.replace(index, new, "empty tool_calls removed (the template reads it as a call)")
    return edit.result()


def _one_call_at_most(message: Message) -> bool:
    if "tool_calls" not in message:
        return True
    calls = message["tool_calls"]
    return isinstance(calls, list) and len(calls) == 1


def _splits(ctx: Context) -> MessageCheck | None:
    """split_parallel_calls changes a turn of several calls, or an empty ``tool_calls``."""
    return _one_call_at_most if _policy(ctx).single_tool_call else None


@leaves_alone_when(_splits)
def split_parallel_calls(messages: list[Message], ctx: Context) -> list[Message]:
    """One tool call per assistant message, each followed by its own result.

    Llama 3.x templates raise "This model only supports single tool-calls at once!";
    splitting ``[A(c1, c2), r1, r2]`` into ``[A(c1), r1, A(c2), r2]`` keeps every call
    and result, in order. The text stays on the first of the split messages. Which
    messages split, and how, is stages.single_call's rule: the cache policy decides its
    cuts on the same split turns.
    """
    if not _policy(ctx).single_tool_call:
        return messages
    messages = _drop_empty_calls_key(messages, ctx)
    blocks = parallel_blocks(messages)
    if not blocks:
        return messages
    out: list[Message] = []
    placed: set[int] = set()
    for index, message in enumerate(messages):
        if index in placed:
            continue
        results = blocks.get(index)
        if results is None:
            out.append(message)
            continue
        parts = split_message(message)
        ctx.record(
            "split",
            "repair",
            len(out),
            f"{len(parts)} parallel tool calls sent as {len(parts)} single-call turns",
            tokens_saved=ctx.tokens(message) - ctx.tokens(parts[0]),
        )
        for n, (part, result) in enumerate(zip(parts, results, strict=True)):
            if n:
                ctx.record(
                    "split",
                    "insert",
                    len(out),
                    "assistant turn for one tool call",
                    tool_call_id=part["tool_calls"][0].get("id"),
                    tokens_saved=-ctx.tokens(part),
                )
            out.append(part)
            out.append(messages[result])
            placed.add(result)
    return out


# -- fields ----------------------------------------------------------------------------------


def _name_on_tool_only(message: Message) -> bool:
    return message.get("name") is None or message.get("role") == "tool"


def _name_spelled(message: Message) -> bool:
    name = message.get("name")
    return name is None or NAME_OK.fullmatch(str(name)) is not None


def _renames(ctx: Context) -> MessageCheck | None:
    """names drops or respells a name the provider does not take."""
    rule = _policy(ctx).names
    if rule == "keep":
        return None
    return _name_on_tool_only if rule == "tool_only" else _name_spelled


@leaves_alone_when(_renames)
def names(messages: list[Message], ctx: Context) -> list[Message]:
    policy = _policy(ctx)
    if policy.names == "keep":
        return messages
    edit = _Editor(messages, ctx, "names")
    for index, message in enumerate(messages):
        name = message.get("name")
        if name is None:
            continue
        if policy.names == "tool_only" and message.get("role") != "tool":
            new = {k: v for k, v in message.items() if k != "name"}
            edit.replace(index, new, "name dropped (only tool messages may carry one)")
        elif policy.names == "pattern" and not NAME_OK.fullmatch(str(name)):
            cleaned = _NAME_BAD_CHARS.sub("_", str(name))[:64]
            new = {k: v for k, v in message.items() if k != "name"}
            if cleaned.strip("_"):
                new["name"] = cleaned
            edit.replace(index, new, f"name {name!r} does not match ^[a-zA-Z0-9_-]+$")
    return edit.result()


def _no_reasoning(message: Message) -> bool:
    return "reasoning_content" not in message


@functools.cache  # one check per value: equal settings, equal plans
def _reasoning_given(tool_calls_only: bool) -> MessageCheck:
    def given(message: Message) -> bool:
        return (
            message.get("role") != "assistant"
            or "reasoning_content" in message
            or (tool_calls_only and not has_tool_calls(message))
        )

    return given


def _reasons(ctx: Context) -> MessageCheck | None:
    """reasoning strips ``reasoning_content`` or adds it to the model's turns."""
    target = ctx.target
    mode = _policy(ctx).reasoning(target) if target is not None else "keep"
    if mode == "keep":
        return None
    if mode == "strip":
        return _no_reasoning
    return _reasoning_given(mode == "require_tool_calls")


@leaves_alone_when(_reasons)
def reasoning(messages: list[Message], ctx: Context) -> list[Message]:
    policy, target = _policy(ctx), ctx.target
    mode = policy.reasoning(target) if target is not None else "keep"
    if mode == "keep":
        return messages
    edit = _Editor(messages, ctx, "reasoning")
    for index, message in enumerate(messages):
        if mode == "strip":
            if "reasoning_content" in message:
                new = {k: v for k, v in message.items() if k != "reasoning_content"}
                edit.replace(index, new, "reasoning_content removed (the provider rejects it)")
        elif message.get("role") == "assistant" and "reasoning_content" not in message:
            if mode == "require_tool_calls" and not has_tool_calls(message):
                continue
            new = {**message, "reasoning_content": policy.reasoning_placeholder}
            edit.replace(index, new, "reasoning_content added (thinking mode requires it)")
    return edit.result()


@functools.cache  # one check per value: equal settings, equal plans
def _keys_within(allowed: frozenset[str]) -> MessageCheck:
    def within(message: Message) -> bool:
        return message.keys() <= allowed

    return within


def _strips_keys(ctx: Context) -> MessageCheck | None:
    """allowed_keys removes the keys the provider rejects."""
    allowed = _policy(ctx).allowed_keys
    return None if allowed is None else _keys_within(allowed)


@leaves_alone_when(_strips_keys)
def allowed_keys(messages: list[Message], ctx: Context) -> list[Message]:
    allowed = _policy(ctx).allowed_keys
    if allowed is None:
        return messages
    edit = _Editor(messages, ctx, "keys")
    for index, message in enumerate(messages):
        extra = [k for k in message if k not in allowed]
        if extra:
            new = {k: v for k, v in message.items() if k in allowed}
            edit.replace(index, new, f"keys the provider rejects removed: {', '.join(extra)}")
    return edit.result()


def _blank(content: Any) -> bool:
    return not any(
        p.get("text", "").strip() if p.get("type") == "text" else True
        for p in text_parts(content)
        if isinstance(p, dict)
    )


def _joined_text(content: list[Any]) -> str:
    """A part list as one string, for templates that concatenate ``content`` (and roles or
    part types the Mistral tokenizer refuses): text parts
    joined by newlines, and a marker where a part that cannot be text was."""
    pieces = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            pieces.append(str(part.get("text") or ""))
        else:
            kind = part.get("type", "part") if isinstance(part, dict) else "part"
            pieces.append(f"[{kind} omitted: only text can be sent here]")
    return "\n".join(pieces)


def _text_only(policy: Policy, role: Any, content: list[Any]) -> bool:
    """Whether a part list must be sent as one string (see Policy.text_only_*)."""
    if policy.text_only_content or role in policy.text_only_roles:
        return True
    kinds = policy.part_types
    return kinds is not None and any(
        isinstance(p, dict) and p.get("type") not in kinds for p in content
    )


@functools.cache  # one check per value: equal settings, equal plans
def _content_as_is(empty: str) -> MessageCheck:
    """What empty_content leaves alone under each of its modes; a part list only where no
    mode looks at parts (under the others, for simplicity, it is not promised)."""

    def as_is(message: Message) -> bool:
        content = message.get("content")
        if isinstance(content, str):
            if empty in ("openai", "template"):
                return True
            return bool(content.strip()) or (empty == "required" and has_tool_calls(message))
        if content is None:
            return empty in ("openai", "blocks") and has_tool_calls(message)
        return empty == "openai"

    return as_is


def _fills(ctx: Context) -> MessageCheck | None:
    """empty_content replaces null or blank content the way the provider takes it."""
    return _content_as_is(_policy(ctx).empty)


@leaves_alone_when(_fills)
def empty_content(messages: list[Message], ctx: Context) -> list[Message]:
    """Null or blank content, the way the provider accepts it."""
    policy = _policy(ctx)
    edit = _Editor(messages, ctx, "content")
    last = len(messages) - 1
    for index, message in enumerate(messages):
        content = message.get("content")
        calls = has_tool_calls(message)
        new_content: Any = content
        if policy.empty == "openai":
            if content is None and not calls:
                new_content = ""
        elif policy.empty == "template":
            if content is None:
                new_content = ""
            elif isinstance(content, list) and _text_only(policy, message.get("role"), content):
                new_content = _joined_text(content)
                cap = ctx.max_tool_result_chars
                if cap is not None and message.get("role") == "tool":
                    # The markers of omitted parts are text the cap stage could not see:
                    # cap the joined string here, or the next pass would cut it.
                    new_content = truncate(new_content, cap)
                # the joined text as the next pass's shrink leaves it
                joined = settled(messages, index, {**message, "content": new_content}, ctx)
                new_content = joined["content"]
        elif policy.empty == "required":
            # One step to the fixed point: null becomes "" and a blank "" then takes the
            # placeholder in the same pass (a second govern() would otherwise do it).
            if content is None:
                new_content = ""
            blank = isinstance(new_content, str) and not new_content.strip()
            if blank and not calls and index != last:
                new_content = EMPTY_PLACEHOLDER
        else:  # blocks: no blank text anywhere
            if isinstance(content, list):
                kept = [
                    p
                    for p in content
                    if not (
                        isinstance(p, dict)
                        and p.get("type") == "text"
                        and not str(p.get("text") or "").strip()
                    )
                ]
                new_content = kept if len(kept) != len(content) else content
            if _blank(new_content):
                new_content = None if calls else EMPTY_PLACEHOLDER
        if new_content is not content or ("content" not in message and new_content is not None):
            edit.replace(
                index,
                {**message, "content": new_content},
                f"{'empty' if content in ('', [], None) else 'blank'} content "
                f"replaced by {new_content!r}"[:120],
            )
    return edit.result()


# -- ids ---------------------------------------------------------------------------------------

ID_RULES: dict[IdStyle, re.Pattern[str]] = {
    "openai": re.compile(r"(?s).{1,40}"),
    "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "bedrock": re.compile(r"[a-zA-Z0-9_.:-]{1,64}"),
    "mistral": re.compile(r"[a-zA-Z0-9]{9}"),
    "unique": re.compile(r"(?s).+"),
}


def _derive_id(original: str, style: IdStyle, salt: int) -> str:
    """A short, deterministic replacement id; ``salt`` counts attempts (1, 2, ...)."""
    digest = hashlib.sha1(f"{original}#{salt}".encode(errors="replace")).hexdigest()
    if style == "mistral":
        return digest[:9]
    if style == "openai":
        return original if len(original) <= 40 and salt == 1 else f"{original[:31]}_{digest[:8]}"
    allowed = r"[^a-zA-Z0-9_.:-]" if style == "bedrock" else r"[^a-zA-Z0-9_-]"
    base = re.sub(allowed, "_", original)[:56] or "call"
    return base if salt == 1 else f"{base}_{salt}"


@functools.cache  # one check per value: equal settings, equal plans
def _ids_valid(valid: re.Pattern[str]) -> MessageCheck:
    def ids_valid(message: Message) -> bool:
        result_id = message.get("tool_call_id")
        if result_id is not None and not (
            isinstance(result_id, str) and valid.fullmatch(result_id)
        ):
            return False
        calls = message.get("tool_calls")
        return not calls or all(
            isinstance(call, dict)
            and isinstance(call.get("id"), str)
            and valid.fullmatch(call["id"]) is not None
            for call in calls
        )

    return ids_valid


def _rekeys(ctx: Context) -> MessageCheck:
    """rekey_ids rewrites an id the provider's format refuses (and a repeated one: the
    fast path's walk sees every id once)."""
    return _ids_valid(ID_RULES[_policy(ctx).id_style])


@leaves_alone_when(_rekeys)
def rekey_ids(messages: list[Message], ctx: Context) -> list[Message]:
    """Rewrite tool-call ids to the provider's format, unique across the request; each
    result gets its call's new id. Ids that are valid and unique are kept."""
    style = _policy(ctx).id_style
    pairing = pair_in(messages, ctx)
    valid = ID_RULES[style]
    unique = style != "openai"  # OpenAI pairs results by position; the others need unique ids
    used: set[str] = set()
    new_ids: list[str] = []
    for _, call_id, _ in pairing.calls:
        candidate, salt = call_id, 0
        while not valid.fullmatch(candidate) or (unique and candidate in used):
            salt += 1
            candidate = _derive_id(call_id, style, salt)
        used.add(candidate)
        new_ids.append(candidate)
    changed = {n for n, (_, call_id, _) in enumerate(pairing.calls) if new_ids[n] != call_id}
    if not changed:
        return messages
    edit = _Editor(messages, ctx, "ids")
    numbers_by_assistant: dict[int, list[int]] = {}
    for n, (assistant, _, _) in enumerate(pairing.calls):
        numbers_by_assistant.setdefault(assistant, []).append(n)
    for assistant, numbers in numbers_by_assistant.items():
        if not changed.intersection(numbers):
            continue
        message = messages[assistant]
        queue = iter(numbers)
        calls = []
        for call in message["tool_calls"]:
            if isinstance(call, dict) and call.get("id"):
                call = {**call, "id": new_ids[next(queue)]}
            calls.append(call)
        renamed = [f"{pairing.calls[n][1]!r} -> {new_ids[n]!r}" for n in numbers if n in changed]
        edit.replace(
            assistant,
            {**message, "tool_calls": calls},
            f"tool call ids rewritten for the provider: {', '.join(renamed)}"[:160],
        )
    for result_index, n in pairing.result_call.items():
        if n in changed:
            edit.replace(
                result_index,
                {**messages[result_index], "tool_call_id": new_ids[n]},
                "tool_call_id follows its call's new id",
                tool_call_id=new_ids[n],
            )
    return edit.result()


# -- model features ---------------------------------------------------------------------------


def _signed(message: Message) -> bool:
    if message.get("role") != "assistant" or not has_tool_calls(message):
        return True
    first = message["tool_calls"][0]
    extra = first.get("extra_content") if isinstance(first, dict) else None
    google = extra.get("google") if isinstance(extra, dict) else None
    return isinstance(google, dict) and bool(google.get("thought_signature"))


def _signs(ctx: Context) -> MessageCheck | None:
    """thought_signatures signs a model turn's first call where its signature was lost."""
    target = ctx.target
    on = target is not None and _policy(ctx).thought_signatures(target)
    return _signed if on else None


@leaves_alone_when(_signs)
def thought_signatures(messages: list[Message], ctx: Context) -> list[Message]:
    target = ctx.target
    if target is None or not _policy(ctx).thought_signatures(target):
        return messages
    edit = _Editor(messages, ctx, "signatures")
    for index, message in enumerate(messages):
        if _signed(message):
            continue
        first = message["tool_calls"][0]
        signed = {**first, "extra_content": {"google": {"thought_signature": SKIP_SIGNATURE}}}
        calls = [signed, *message["tool_calls"][1:]]
        edit.replace(
            index,
            {**message, "tool_calls": calls},
            "thought_signature lost: the validator-skip value is sent instead",
        )
    return edit.result()


def _cache_marks(message: Message) -> list[int]:
    """Where a message carries cache_control: -1 for the message itself, else a part index."""
    marks = [-1] if "cache_control" in message else []
    content = message.get("content")
    if isinstance(content, list):
        marks += [j for j, p in enumerate(content) if isinstance(p, dict) and "cache_control" in p]
    return marks


def _unmarked(message: Message) -> bool:
    return not _cache_marks(message)


def _drops_marks(ctx: Context) -> MessageCheck | None:
    """cache_control drops breakpoints beyond the provider's limit (none without marks)."""
    return None if _policy(ctx).max_cache_control is None else _unmarked


@leaves_alone_when(_drops_marks)
def cache_control(messages: list[Message], ctx: Context) -> list[Message]:
    """Keep the newest ``max_cache_control`` breakpoints, drop older ones (AN-10)."""
    limit = _policy(ctx).max_cache_control
    if limit is None:
        return messages
    marks = [(i, j) for i, m in enumerate(messages) for j in _cache_marks(m)]
    if len(marks) <= limit:
        return messages
    drop = marks[: len(marks) - limit]
    edit = _Editor(messages, ctx, "cache")
    for index in sorted({i for i, _ in drop}):
        message = (edit.out or messages)[index]
        parts = {j for i, j in drop if i == index}
        new = {k: v for k, v in message.items() if not (k == "cache_control" and -1 in parts)}
        if isinstance(message.get("content"), list):
            new["content"] = [
                {k: v for k, v in p.items() if k != "cache_control"} if j in parts else p
                for j, p in enumerate(message["content"])
            ]
        edit.replace(index, new, f"cache_control breakpoint dropped (at most {limit})")
    return edit.result()


def prefill(messages: list[Message], ctx: Context) -> list[Message]:
    """Mark a kept trailing assistant message the way the provider expects a prefill."""
    if not ctx.keep_prefill or not messages or messages[-1].get("role") != "assistant":
        return messages
    policy = _policy(ctx)
    message = messages[-1]
    new = dict(message)
    if policy.prefill_flag:
        new[policy.prefill_flag] = True
    content = message.get("content")
    if policy.rstrip_prefill and isinstance(content, str):
        new["content"] = content.rstrip()
    elif policy.rstrip_prefill and isinstance(content, list) and content:
        last = content[-1]  # the text the model continues: the last block, if it is text
        if (
            isinstance(last, dict)
            and last.get("type") == "text"
            and isinstance(last.get("text"), str)
        ):
            new["content"] = [*content[:-1], {**last, "text": last["text"].rstrip()}]
    if new == message:
        return messages
    edit = _Editor(messages, ctx, "prefill")
    edit.replace(len(messages) - 1, new, "trailing assistant message kept as a prefill")
    return edit.result()
