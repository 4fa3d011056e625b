"""Would the pipeline leave this list alone? A cheaper yes than running it.

A Governor's appending step needs to know that its new messages need no repair: that
``run()`` on a small window (a placeholder user message, the newest model turn and the
new messages) returns the window itself with no action, note or violation. Running the
whole pipeline to learn that costs several times what the answer needs, because most of
``run()`` exists to make and report changes. :func:`leaves_alone` answers the same
question for the windows a Governor asks about and skips only work whose outcome is
already known:

* input repair of the messages the caller says are known clean (the input repair looks
  at each message on its own, so a message it left alone once it leaves alone again);
* the cache policy's compaction and snip (``compact.fit_stage``) when the list's total
  is at most the policy's trigger: no request of the list is then over the trigger, so
  nothing compacts, and the total is under the budget, so snip keeps everything. This is
  the rule ``compact.would_compact`` already relies on;
* ``_fit``'s second look (its passes act only when a repair changes the list or the
  output is over the trigger or the budget) and the report itself.

Every other stage runs as ``run()`` runs it, and the answer is no at the first stage
that changes the list or records anything.

Before that, :func:`plain_window` looks for the shapes an agent loop appends (an
assistant turn whose calls are each answered right after it, in order, by tool results;
a user message; a plain reply before a user message) in one pass, reading the
provider's Policy (id format, names, empty content, keys, caps, one call per turn,
bridges, reasoning, signatures, flattening): a window of that shape, made only of plain
values (strings without lone surrogates, the usual keys), is one every stage of a
provider profile leaves alone, so only the provider's rules are run on it. Anything
else goes through the stages.

It is never yes where ``run()`` would change something: tests/test_probe.py checks that
over every profile with generated windows, and that every window plain_window accepts
is one the stages leave alone.
"""

from __future__ import annotations

import re
from dataclasses import fields
from typing import Any

from .inputs import _has_surrogate, repair_messages
from .messages import Message
from .pipeline import Settings, context
from .providers import fixes
from .providers.fixes import _ID_RULES, _NAME_OK
from .providers.policy import Policy
from .providers.rules import find_violations
from .stages import (
    Context,
    backfill_strict,
    cap_tool_results,
    compact,
    drop_orphans_strict,
    enforce_alternation,
)
from .tokens import TokenCounter

#: The stages and Policy fields plain_window was written against. A profile with other
#: stages, or a Policy with other fields, is never plain: a new repair turns the one-pass
#: check off (tests/test_probe.py then fails) until plain_window reads it too.
_KNOWN_STAGES = (
    drop_orphans_strict,
    backfill_strict,
    fixes.regroup_tool_results,
    compact.clear_stage,
    cap_tool_results,
    compact.fit_stage,
    drop_orphans_strict,
    backfill_strict,
)
_KNOWN_FINISH = (
    fixes.flatten_tools,
    fixes.systems,
    enforce_alternation,
    fixes.opening,
    fixes.bridge_user_after_tool,
    fixes.rekey_ids,
    fixes.split_parallel_calls,
    fixes.names,
    fixes.reasoning,
    fixes.allowed_keys,
    fixes.empty_content,
    fixes.thought_signatures,
    fixes.cache_control,
    fixes.prefill,
)
_KNOWN_POLICY = frozenset(
    {
        "id_style",
        "system",
        "user_before_tool_call_opening",
        "needs_user",
        "bridge_user_after_tool",
        "empty",
        "reasoning",
        "reasoning_placeholder",
        "allowed_keys",
        "names",
        "prefill",
        "prefill_flag",
        "rstrip_prefill",
        "thought_signatures",
        "max_cache_control",
        "flatten_tools",
        "flatten_why",
        "text_only_content",
        "text_only_roles",
        "part_types",
        "single_tool_call",
    }
)
#: False when Policy has a field plain_window does not know (then nothing is plain).
_POLICY_KNOWN = frozenset(f.name for f in fields(Policy)) == _KNOWN_POLICY

#: The keys a plain message, tool call and function may have (anything else: the stages).
_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})


def leaves_alone(
    messages: list[Message],
    s: Settings,
    counter: TokenCounter,
    clean: int = 0,
    *,
    plain: bool = False,
) -> bool:
    """True only if ``run(messages, s, counter)`` would return ``messages`` itself with no
    action, note or violation. ``messages[:clean]`` are known to pass the input repair
    unchanged; ``plain``: ``plain_window(messages, s)`` is known to be true. False for
    anything it does not show cheaply (near the trigger, the nanobot profile, a stage that
    raises): then ask ``run()``."""
    profile, budget, policy = s.profile, s.budget, s.compaction
    if profile.provider is None or not messages:
        return False
    ctx = context(s, counter)
    if s.prefill and not ctx.keep_prefill:
        return False  # run() notes that the prefill is not accepted
    try:
        total = counter.prompt_tokens(messages, s.tools)
        if budget is not None and (
            budget <= 0 or policy.kind != "cache" or total > policy.thresholds(budget)[0]
        ):
            return False
        if not (plain or plain_window(messages, s) or stages_leave_alone(messages, s, ctx, clean)):
            return False
        return next(find_violations(s.provider.rules, messages, s.target), None) is None
    except Exception:  # run() falls back (an action) or raises: not a plain yes
        return False


def stages_leave_alone(messages: list[Message], s: Settings, ctx: Context, clean: int) -> bool:
    """Run the profile's stages (all but the fit, see leaves_alone) until one changes the
    list or records anything; True when none does."""
    profile = s.profile
    for stage in profile.prepare:
        part = messages[clean:] if stage is repair_messages else messages
        if stage(part, ctx) is not part or ctx.actions or ctx.notes:
            return False
    for stage in (*profile.stages, *profile.finish):
        if stage is compact.fit_stage:
            continue  # at most the trigger (checked by the caller): nothing compacts or is cut
        if stage(messages, ctx) is not messages or ctx.actions or ctx.notes:
            return False
    return True


def _text(value: Any) -> bool:
    """A string the input repair leaves alone (no lone surrogate; ASCII is known in O(1))."""
    return isinstance(value, str) and (value.isascii() or not _has_surrogate(value))


def _call_id(call: Any, id_ok: re.Pattern[str]) -> str | None:
    """The id of a plain tool call (what the input repair and the id rewrite leave alone)."""
    if type(call) is not dict or not call.keys() <= _CALL_KEYS or call.get("type") != "function":
        return None
    function = call.get("function")
    if type(function) is not dict or not function.keys() <= _FUNCTION_KEYS:
        return None
    name, arguments, call_id = function.get("name"), function.get("arguments"), call.get("id")
    if not (name and _text(name) and _text(arguments) and call_id and _text(call_id)):
        return None
    return str(call_id) if id_ok.fullmatch(call_id) else None


def _content_kept(empty: str, content: str | None, calls: bool) -> bool:
    """Whether the empty-content repair leaves a plain message's content as it is: null
    is kept only beside tool calls, and only where null is how the provider takes it;
    a blank string only where blank is accepted."""
    if content is None:
        return calls and empty in ("openai", "blocks")
    return empty in ("openai", "template") or bool(content.strip())


def plain_window(messages: list[Message], s: Settings) -> bool:
    """Whether every stage of a provider profile leaves ``messages`` alone, shown in one
    pass for the shapes an agent loop appends (see the module docstring); False whenever
    that is not plain, including for any setting this does not read."""
    policy, target = s.policy, s.target
    if (
        not _POLICY_KNOWN
        or s.profile.prepare != (repair_messages,)
        or s.profile.stages != _KNOWN_STAGES
        or s.profile.finish != _KNOWN_FINISH
        or s.compaction.kind != "cache"  # the seed policy's clearing runs in clear_stage
        or target is None
        or policy.flatten_tools(target)
        or policy.thought_signatures(target)
        # "strip" removes a reasoning_content key, which a plain message does not have
        or policy.reasoning(target) not in ("keep", "strip")
        or not messages
        or messages[0].get("role") != "user"
    ):
        return False
    id_ok, allowed, cap = _ID_RULES[policy.id_style], policy.allowed_keys, s.cap
    seen: set[str] = set()
    open_calls: list[str] = []  # the calls of the current block not answered yet, in order
    previous = None
    for message in messages:
        if type(message) is not dict or not message.keys() <= _MESSAGE_KEYS:
            return False
        if allowed is not None and not message.keys() <= allowed:
            return False
        role, content, name = message.get("role"), message.get("content"), message.get("name")
        if content is not None and not _text(content):
            return False
        if name is not None and not (
            _text(name)
            and (policy.names != "tool_only" or role == "tool")
            and (policy.names != "pattern" or _NAME_OK.fullmatch(name))
        ):
            return False
        calls = False
        if role == "tool":
            if not open_calls or message.get("tool_call_id") != open_calls[0]:
                return False  # an orphan, a duplicate, or out of order: the stages decide
            open_calls.pop(0)
            if "tool_calls" in message or (cap is not None and len(content or "") > cap):
                return False
        elif open_calls or "tool_call_id" in message:
            return False  # a call left unanswered before this message
        elif role == "assistant" and previous != "assistant":
            if "tool_calls" in message:
                listed = message["tool_calls"]
                if type(listed) is not list or not listed:
                    return False
                if policy.single_tool_call and len(listed) > 1:
                    return False
                for call in listed:
                    call_id = _call_id(call, id_ok)
                    if call_id is None or call_id in seen:
                        return False
                    seen.add(call_id)
                    open_calls.append(call_id)
                calls = True
        elif role == "user" and previous != "user" and "tool_calls" not in message:
            if policy.bridge_user_after_tool and previous == "tool":
                return False
        else:
            return False  # system messages, runs of one role, unknown roles: the stages
        if not _content_kept(policy.empty, content, calls):
            return False
        previous = role
    return not open_calls and previous in ("user", "tool")
