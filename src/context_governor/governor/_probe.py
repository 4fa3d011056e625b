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
a user message; a plain reply before a user message) in one pass. The stages whose rule
is that shape are WALKED (pairing, alternation, the opening, the bridge after a tool
result, the prefill, the compaction under its trigger); every other stage of the profile
declared what it leaves alone (``stages.base.leaves_alone_if``/``leaves_alone_when``: the
provider's repairs of ids, names, keys, empty content, reasoning, signatures, flattening
and breakpoints, the cap), and the pass runs those checks, made once per Settings, on
each message it walks. A window of that shape, made only of plain values (strings
without lone surrogates, the usual keys), that passes them is one every stage of the
profile leaves alone, so only the provider's rules are run on it, less those a plain
window already rules out (IMPLIED_BY_PLAIN). Anything else goes through the stages; a
profile with a stage that is neither walked nor declared never has a plain window.

A Governor asks every step, so what the answer reads of the settings is worked out once
per Settings (:func:`plan`), and :func:`plain_facts` gives, on the same walk, the new
messages' byte bounds and call ids; it can resume after a part known to be the start of
a plain window (:class:`Resume`), and :func:`leaves_alone` can skip the per-message rule
checks on messages that passed them in an earlier list.

It is never yes where ``run()`` would change something: tests/test_probe.py checks that
over every profile with generated windows, and that every window plain_window accepts
is one the stages leave alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, TypeGuard

from ..counting import PER_MESSAGE_OVERHEAD, ExactCounter, TokenCounter, media_note
from ..messages import Message
from ..messages.inputs import has_surrogate
from ..pipeline import Settings, context
from ..policies import CompactionPolicy
from ..providers import Check, checks
from ..stages import (
    Context,
    MessageCheck,
    Stage,
    backfill_strict,
    check_for,
    compact,
    drop_orphans_strict,
    enforce_alternation,
    message_check,
    provider_fixes,
    repair_messages,
)

__all__ = [
    "IMPLIED_BY_PLAIN",
    "PER_MESSAGE_CODE",
    "WALKED",
    "Plan",
    "Resume",
    "implied_by_plain",
    "leaves_alone",
    "per_message",
    "plain_facts",
    "plain_window",
    "plan",
    "stages_leave_alone",
    "unwrapped",
]

#: The stages whose rule is the walk's own shape (plain_window): pairing and regrouping
#: (calls answered right after their turn, in order, each id once), alternation (no run
#: of one role), the opening (a user message first), the bridge after a tool result (read
#: from the Policy), the prefill (a user or tool message last) and the compaction (at most
#: the trigger: see leaves_alone). Every other stage of a profile declares what it leaves
#: alone (stages.base.leaves_alone_if / leaves_alone_when), or nothing is plain.
WALKED: frozenset[Stage] = frozenset(
    {
        drop_orphans_strict,
        backfill_strict,
        provider_fixes.regroup_tool_results,
        enforce_alternation,
        provider_fixes.opening,
        provider_fixes.bridge_user_after_tool,
        provider_fixes.prefill,
        compact.clear_stage,
        compact.fit_stage,
    }
)

#: The keys a plain message, tool call and function may have (anything else: the stages).
_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})


#: Rule checks whose finding a plain window rules out, whatever the provider: each reads
#: only what plain_window checks for every provider (calls answered right after their
#: turn, in order, each id once; no empty or misplaced ``tool_calls``; content a string,
#: or null beside calls; a user message first, a user or tool message last). A plain
#: window skips them; tests/test_probe_facts.py runs each on the plain windows it makes.
IMPLIED_BY_PLAIN: frozenset[Check] = frozenset(
    {
        checks.result_without_call_before,
        checks.calls_without_results_after,
        checks.duplicate_results,
        checks.result_count_mismatch,
        checks.duplicate_call_ids,
        checks.empty_tool_calls,
        checks.interjection_in_tool_block,
        checks.empty_request,
        checks.null_content_without_calls,
        checks.list_content,
        checks.ends_with_assistant,
        checks.no_user_message,
    }
)


def _code(check: Any) -> Any:
    """A check's code object: shared by every closure its factory makes."""
    return check.__code__


#: Rule checks whose findings on a list are those on each message alone (the finding at
#: message i reads only message i): a message that passed them in one list passes them in
#: any other, so a Governor's window runs them on its new messages only. Closures are
#: known by their factory's code (every instance shares it). tests/test_probe_facts.py
#: checks each, on the providers' own instances, against the messages one by one.
PER_MESSAGE_CODE: frozenset[Any] = frozenset(
    _code(check)
    for check in (
        checks.name_pattern(""),
        checks.role_refused(""),
        checks.call_name_pattern(""),
        checks.call_id_format(""),
        checks.unknown_keys(frozenset()),
        checks.key_present(""),
        checks.reasoning_missing(tool_call_turns_only=False),
        checks.null_content,
        checks.null_content_without_calls,
        checks.several_tool_calls,
        checks.name_outside_tool,
        checks.content_and_calls,
        checks.untyped_parts,
        checks.blank_text_parts,
        checks.empty_text_parts,
        checks.whitespace_text_parts,
        checks.list_content,
        checks.empty_tool_calls,
    )
)


def unwrapped(check: Check) -> Check:
    """The check inside a ``checks.hoisted`` wrapper (Anthropic's and Bedrock's rules), or
    ``check`` itself. The wrapper runs it on the list without system messages: a plain
    window has none, so there it finds what the inner check finds, and a per-message
    check stays one (whether a message is found does not depend on the others)."""
    inner: Check = getattr(check, "hoisted_from", check)
    return inner


def implied_by_plain(check: Check) -> bool:
    """Whether a plain window rules out any finding of ``check`` (see IMPLIED_BY_PLAIN)."""
    return unwrapped(check) in IMPLIED_BY_PLAIN


def per_message(check: Check) -> bool:
    """Whether ``check`` looks at each message alone (see PER_MESSAGE_CODE)."""
    return getattr(unwrapped(check), "__code__", None) in PER_MESSAGE_CODE


@dataclass(frozen=True, slots=True)
class Resume:
    """Where plain_window's walk stands after the first messages of a plain window (no
    call left open there): the last one's role and the call ids seen so far. A Governor
    keeps it for its next window, whose first messages are the end of this one."""

    previous: str
    seen: frozenset[str]


@dataclass(frozen=True, slots=True)
class Plan:
    """What the probe reads of one Settings, worked out once (a Governor asks about the
    same settings every step): the checks its stages declared for them, the provider's rules
    that apply to the target, and the budget's limit."""

    #: False when no window can be plain under these settings (see plain_window)
    plain: bool
    #: a tool result must not be followed by a user message (provider_fixes.bridge_user_after_tool)
    bridge: bool
    #: the checks of the rules that apply to the target, in the provider's order
    checks: tuple[Check, ...]
    #: of those, the ones a plain window does not already rule out
    plain_checks: tuple[Check, ...]
    #: checks and plain_checks split: those that look at each message alone, the others
    local: tuple[Check, ...]
    joint: tuple[Check, ...]
    plain_local: tuple[Check, ...]
    plain_joint: tuple[Check, ...]
    #: the cache policy's trigger: a window whose total is over it is not shown cheaply
    #: (None: no budget)
    limit: int | None
    #: a budget the cheap answer does not cover (none left, or not the cache policy)
    budget_refused: bool
    #: run() notes that the prefill is not accepted
    prefill_refused: bool
    #: the checks of the profile's stages that declared one (stages.base.leaves_alone_if)
    message_checks: tuple[MessageCheck, ...] = ()
    #: the checks the profile's stages declared for these settings
    #: (stages.base.leaves_alone_when: the provider's repairs, the cap)
    settings_checks: tuple[MessageCheck, ...] = ()


def _declared_checks(s: Settings) -> tuple[MessageCheck, ...]:
    stages = (*s.profile.stages, *s.profile.finish)
    return tuple(check for stage in stages if (check := message_check(stage)) is not None)


def _settings_checks(s: Settings) -> tuple[MessageCheck, ...]:
    """The checks the stages declared for these settings (those of ``leaves_alone_if``
    are message_checks), made once from the settings' Context."""
    ctx = context(s, s.counter)
    made: list[MessageCheck] = []
    for stage in (*s.profile.stages, *s.profile.finish):
        make = check_for(stage)
        if make is None or message_check(stage) is not None:
            continue
        check = make(ctx)
        if check is not None:
            made.append(check)
    return tuple(made)


def _plain_possible(s: Settings) -> bool:
    """Whether plain_window can answer for these settings: every stage is walked or
    declared what it leaves alone, the input repair is the usual one, and the cache
    policy decides (the seed's runs in clear_stage)."""
    stages = (*s.profile.stages, *s.profile.finish)
    return (
        s.profile.prepare == (repair_messages,)
        and all(stage in WALKED or check_for(stage) is not None for stage in stages)
        and isinstance(s.compaction, CompactionPolicy)
        and s.target is not None
    )


def _make_plan(s: Settings) -> Plan:
    """What leaves_alone and plain_window read of ``s``, read once (see Plan)."""
    policy, target, budget = s.policy, s.target, s.budget
    applied: tuple[Check, ...] = ()
    if s.profile.provider is not None and target is not None:
        applied = tuple(
            rule.check for rule in s.provider.rules if rule.applies(target) and rule.when(target)
        )
    cache = isinstance(s.compaction, CompactionPolicy)
    limit = budget  # the seed's: budget_refused decides
    if budget is not None and isinstance(s.compaction, CompactionPolicy):
        limit = s.compaction.thresholds(budget)[0]
    plain_checks = tuple(c for c in applied if not implied_by_plain(c))
    plain = _plain_possible(s)
    return Plan(
        plain=plain,
        bridge=bool(policy.bridge_user_after_tool),
        checks=applied,
        plain_checks=plain_checks,
        local=tuple(c for c in applied if per_message(c)),
        joint=tuple(c for c in applied if not per_message(c)),
        plain_local=tuple(c for c in plain_checks if per_message(c)),
        plain_joint=tuple(c for c in plain_checks if not per_message(c)),
        limit=limit,
        budget_refused=budget is not None and (budget <= 0 or not cache),
        prefill_refused=bool(s.prefill and not (s.policy.prefill(target))),
        message_checks=_declared_checks(s),
        settings_checks=_settings_checks(s) if plain else (),
    )


#: Plans by the id of their Settings (which they keep alive, so the id is not reused).
_PLANS: dict[int, tuple[Settings, Plan]] = {}
_PLANS_KEPT = 64


def plan(s: Settings) -> Plan:
    """The Plan of ``s``, made on first use. Settings are frozen: a plan never goes stale."""
    entry = _PLANS.get(id(s))
    if entry is not None and entry[0] is s:
        return entry[1]
    made = _make_plan(s)
    if len(_PLANS) >= _PLANS_KEPT:
        _PLANS.clear()
    _PLANS[id(s)] = (s, made)
    return made


def _finds(found: Iterable[Check], messages: list[Message]) -> bool:
    """Whether any of the checks objects to ``messages``."""
    for check in found:
        for _ in check(messages):
            return True
    return False


def leaves_alone(
    messages: list[Message],
    s: Settings,
    counter: TokenCounter | None,
    clean: int = 0,
    *,
    plain: bool = False,
    total: int | None = None,
    checked: range = range(0),
) -> bool:
    """True only if ``run(messages, s, counter)`` would return ``messages`` itself with no
    action, note or violation. ``messages[:clean]`` are known to pass the input repair
    unchanged; ``plain``: ``plain_window(messages, s)`` is known to be true; ``total``: an
    upper bound on ``counter.prompt_tokens(messages, s.tools)`` the caller already has
    (then ``counter`` may be None when ``plain``); ``messages[checked.start:checked.stop]``
    passed every per-message rule check of these settings in an earlier list (see
    PER_MESSAGE_CODE). False for anything it does not show cheaply (near the trigger, the
    nanobot profile, a stage that raises): then ask ``run()``."""
    if s.profile.provider is None or not messages:
        return False
    try:
        p = plan(s)
        if p.prefill_refused:
            return False  # run() notes that the prefill is not accepted
        if total is None:
            if counter is None:
                return False
            total = counter.prompt_tokens(messages, s.tools)
        if p.limit is not None and (p.budget_refused or total > p.limit):
            return False
        if plain or _plain(messages, p, len(messages), None, None, None):
            local, joint = p.plain_local, p.plain_joint
        elif counter is not None and stages_leave_alone(messages, s, context(s, counter), clean):
            local, joint = p.local, p.joint
        else:
            return False
        if _finds(joint, messages):
            return False
        unchecked = [*messages[: checked.start], *messages[checked.stop :]] if checked else messages
        return not _finds(local, unchecked) and not _media_noted(messages, s)
    except Exception:  # run() falls back (an action) or raises: not a plain yes
        return False


def _media_noted(messages: list[Message], s: Settings) -> bool:
    """Whether run() notes media counted at its rule's upper bound (counting.media_note)."""
    counter = s.counter
    if not isinstance(counter, ExactCounter):
        return False
    return media_note(messages, counter.media, counter.model) is not None


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


def _text(value: Any) -> TypeGuard[str]:
    """A string the input repair leaves alone (no lone surrogate; ASCII is known in O(1))."""
    return isinstance(value, str) and (value.isascii() or not has_surrogate(value))


def _size(text: str) -> int:
    """UTF-8 bytes of a string without lone surrogates."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _json_size(text: str) -> int:
    """UTF-8 bytes of a string as ``json.dumps(..., ensure_ascii=False)`` writes it."""
    return _size(encode_basestring(text))


#: JSON of one plain call less its three strings: {"id": , "type": "function",
#: "function": {"name": , "arguments": }} (json.dumps' default separators; the size does
#: not depend on the keys' order)
_CALL_JSON = 67


def _call_id(call: Any) -> tuple[str, int] | None:
    """The id of a plain tool call (what the input repair and the id rewrite leave alone),
    with the UTF-8 size of the call as ``json.dumps(..., ensure_ascii=False)`` writes it."""
    if type(call) is not dict or not call.keys() <= _CALL_KEYS or call.get("type") != "function":
        return None
    function = call.get("function")
    if type(function) is not dict or not function.keys() <= _FUNCTION_KEYS:
        return None
    name, arguments, call_id = function.get("name"), function.get("arguments"), call.get("id")
    if not (name and _text(name) and _text(arguments) and call_id and _text(call_id)):
        return None
    size = _json_size(call_id) + _json_size(name) + _json_size(arguments)
    return call_id, _CALL_JSON + size


def plain_window(messages: list[Message], s: Settings) -> bool:
    """Whether every stage of a provider profile leaves ``messages`` alone, shown in one
    pass for the shapes an agent loop appends (see the module docstring); False whenever
    that is not plain, including for any setting this does not read."""
    return _plain(messages, plan(s), len(messages), None, None, None)


def plain_facts(
    messages: list[Message], s: Settings, start: int, resume: Resume | None = None
) -> tuple[list[int], list[str]] | None:
    """``plain_window``'s pass, which on a yes also gives, for ``messages[start:]``, an
    upper bound on each message's tokens under an exact byte-level counter (the same as
    ``counting.message_bound``: the UTF-8 bytes of the counted text plus the per-message
    overhead) and the ids of their tool calls; None when the window is not plain. One
    walk over a Governor's new messages instead of one per question. With ``resume``,
    ``messages[:start]`` are taken to be the start of a plain window at which the walk
    stood there, and only the messages after it are walked."""
    bounds: list[int] = []
    ids: list[str] = []
    return (bounds, ids) if _plain(messages, plan(s), start, bounds, ids, resume) else None


def _plain(
    messages: list[Message],
    p: Plan,
    start: int,
    bounds: list[int] | None,
    ids: list[str] | None,
    resume: Resume | None,
) -> bool:
    """The one pass (see plain_window); fills ``bounds`` and ``ids`` for messages[start:]
    (and walks only those when ``resume`` says where it stands before them)."""
    if not p.plain or not messages or messages[0].get("role") != "user":
        return False
    seen: set[str] = set()
    open_calls: list[str] = []  # the calls of the current block not answered yet, in order
    previous: str | None = None
    first = 0
    if resume is not None:
        seen, previous, first = set(resume.seen), resume.previous, start
    for index in range(first, len(messages)):
        message = messages[index]
        if not _fields_plain(message, p):
            return False
        if p.message_checks and not all(check(message) for check in p.message_checks):
            return False
        if not all(check(message) for check in p.settings_checks):
            return False
        role, content, name = message.get("role"), message.get("content"), message.get("name")
        counted = index >= start
        step = _step(message, role, previous, p, seen, open_calls, ids if counted else None)
        if step is None:
            return False
        size, parts, _ = step
        if counted and bounds is not None:
            bounds.append(_bound(size, parts, content, name))
        previous = role
    return not open_calls and previous in ("user", "tool")


def _fields_plain(message: Any, p: Plan) -> bool:
    """Whether a message's own fields are ones no stage touches: a dict of the keys an
    agent loop sends (and the provider allows), its content text, and a name only where
    the provider takes one, spelled as it accepts."""
    if type(message) is not dict or not message.keys() <= _MESSAGE_KEYS:
        return False
    content, name = message.get("content"), message.get("name")
    if content is not None and not _text(content):
        return False
    return name is None or _text(name)


def _step(
    message: Message,
    role: Any,
    previous: str | None,
    p: Plan,
    seen: set[str],
    open_calls: list[str],
    ids: list[str] | None,
) -> tuple[int, int, bool] | None:
    """A message's place in the walk, after ``previous``'s role: a tool result answering
    the oldest open call, a model turn opening its calls (``seen``, ``open_calls`` and
    ``ids`` grow), or a user message; None for anything the stages would decide on.
    The counted text so far (its UTF-8 bytes and parts) and whether it has calls."""
    if role == "tool":
        size = _tool_result(message, open_calls)
        return None if size is None else (size, 1, False)
    if open_calls or "tool_call_id" in message:
        return None  # a call left unanswered before this message
    if role == "assistant" and previous != "assistant":
        if "tool_calls" not in message:
            return 0, 0, False
        size = _calls_size(message["tool_calls"], p, seen, open_calls, ids)
        return None if size is None else (size, 1, True)
    if role == "user" and previous != "user" and "tool_calls" not in message:
        return None if p.bridge and previous == "tool" else (0, 0, False)
    return None  # system messages, runs of one role, unknown roles: the stages


def _tool_result(message: Message, open_calls: list[str]) -> int | None:
    """The UTF-8 size of a tool result's call id when it answers the oldest open call
    (taken off ``open_calls``) and carries no calls; else None."""
    call_id = message.get("tool_call_id")
    if not open_calls or call_id != open_calls[0]:
        return None  # an orphan, a duplicate, or out of order: the stages decide
    open_calls.pop(0)
    if "tool_calls" in message:
        return None
    return _size(call_id)


def _calls_size(
    listed: Any, p: Plan, seen: set[str], open_calls: list[str], ids: list[str] | None
) -> int | None:
    """The UTF-8 size of a model turn's calls as a JSON list, each call plain and its id
    new (each opened, and added to ``ids``); None when any is not."""
    if type(listed) is not list or not listed:
        return None
    size = 2 * len(listed)  # "[", "]" and ", " between the calls
    for call in listed:
        found = _call_id(call)
        if found is None or found[0] in seen:
            return None
        seen.add(found[0])
        open_calls.append(found[0])
        size += found[1]
        if ids is not None:
            ids.append(found[0])
    return size


def _bound(size: int, parts: int, content: str | None, name: str | None) -> int:
    """A plain message's upper bound (counting.message_bound): the UTF-8 bytes of its
    counted text, the parts joined by newlines, plus the per-message overhead."""
    if content is not None:
        size, parts = size + _size(content), parts + 1
    if name:
        size, parts = size + _size(name), parts + 1
    return max(PER_MESSAGE_OVERHEAD, size + parts - 1 + PER_MESSAGE_OVERHEAD)
