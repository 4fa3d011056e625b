"""govern_request(api="anthropic") and validate_request(api="anthropic"): an Anthropic
Messages body.

The profile's stages run on the decoded messages (anthropic.py) as on any chat
history, with the thinking-mode repairs (anthropic_rules.py) added to its finishing
stages and the Messages API's own limits in its repair policy, whoever serves the
body. Thinking blocks, signatures, images, documents, server tools and unknown
fields are carried through untouched and counted (with the Claude estimate unless a
counter is given). ``cache_control`` breakpoints are placed where the stable prefix
ends (anthropic_cache.py). The report judges the output body.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, replace
from functools import partial
from typing import Any

from ..counting import claude_counter
from ..errors import ConfigError
from ..messages import Message
from ..messages.inputs import check_messages
from ..pipeline import call_counter, run, store_counts
from ..profiles import Profile, get_profile
from ..providers import Violation, claude_keeps_thinking, find_violations, resolve
from ..report import Action, Note, Report, note_kind
from ..stages import Clearing
from ..targets import Policy, Target
from . import _anthropic as an
from . import _anthropic_cache as cache
from . import _anthropic_rules as rules
from ._base import (
    CarryCounter,
    Options,
    RequestResult,
    ServerEdit,
    record_lost,
    server_note,
    step_aside,
)


def _tools_within_limit(tools: list[dict[str, Any]], ctx_record: Any) -> list[dict[str, Any]]:
    """Drop the oldest tool breakpoints when tools alone carry more than the limit."""
    excess = rules.tool_breakpoints({"tools": tools}) - rules.MAX_BREAKPOINTS
    out = []
    for n, tool in enumerate(tools):
        if excess > 0 and "cache_control" in tool:
            tool = {k: v for k, v in tool.items() if k != "cache_control"}
            excess -= 1
            ctx_record(n)
        out.append(tool)
    return out


def _native_policy(policy: Policy, decoded: an.Decoded) -> Policy:
    """The target's repair policy, for a Messages body: the Messages API's breakpoint
    limit (whoever serves it), less the tools' breakpoints; a kept prefill without
    trailing whitespace (the Messages API refuses it whoever serves it: AN-6b); and no
    chat-level key filter (it is about the Chat Completions wire; the edge writes only
    Messages fields, and the filter would strip what each message carries).

    With a compaction block, what the model reads opens with its summary (decoded as a
    system message that no stage moves: ``system="keep"``, ``opened``), and the marks
    before the block and on it, which governance never touches, take their slots."""
    room = max(0, rules.MAX_BREAKPOINTS - rules.tool_breakpoints(decoded.body))
    out = replace(policy, max_cache_control=room, allowed_keys=None, rstrip_prefill=True)
    if decoded.boundary is None:
        return out
    at, block = decoded.boundary
    native = decoded.body["messages"]
    fixed = sum(rules.breakpoints({"messages": [m]}) for m in native[:at])
    fixed += rules.breakpoints({"messages": [{"content": native[at]["content"][: block + 1]}]})
    return replace(out, max_cache_control=max(0, room - fixed), system="keep", opened=True)


def server_edits(body: dict[str, Any]) -> tuple[ServerEdit, ...]:
    """The context edits a Messages body asks the server for (``context_management``),
    and an on-demand compaction request (``compaction``), each with what governance does
    beside it (docs/native-compaction.md)."""
    found: list[ServerEdit] = []
    managed = body.get("context_management")
    edits = managed.get("edits") if isinstance(managed, dict) else None
    for edit in edits if isinstance(edits, list) else ():
        kind = edit.get("type") if isinstance(edit, dict) else None
        found.append(_edit(kind if isinstance(kind, str) else repr(kind), edit))
    if isinstance(body.get("compaction"), dict):
        found.append(
            ServerEdit(
                f"compaction {body['compaction'].get('type', 'summarize')}",
                True,
                "an on-demand compaction request: the server summarizes every message it is "
                "sent, so only what cannot fit the window is changed",
            )
        )
    return tuple(found)


def _edit(kind: str, edit: Any) -> ServerEdit:
    trigger = edit.get("trigger") if isinstance(edit, dict) else None
    at = trigger.get("value") if isinstance(trigger, dict) else None
    when = f"at {at:,} input tokens" if isinstance(at, int) else "at its default trigger"
    if kind.startswith("compact_"):
        why = (
            f"the server summarizes the history {when}: clearing or cutting it first would "
            "keep the server from ever reaching its trigger"
        )
        return ServerEdit(kind, True, why)
    if kind.startswith("clear_tool_uses_"):
        why = (
            f"the server clears old tool results {when}: clearing them here as well would "
            "change the prompt's prefix at our points besides the server's (two cache "
            "invalidations for one clearing)"
        )
        return ServerEdit(kind, True, why)
    if kind.startswith("clear_thinking_"):
        why = "governance never clears thinking blocks, so it does not compete with the server"
        return ServerEdit(kind, False, why)
    return ServerEdit(kind, True, "an edit this version does not know manages the context")


def govern_anthropic(
    body: Any, profile: str | Profile, model: str | None, options: Options
) -> RequestResult:
    decoded = an.decode(body)
    check_messages(decoded.messages)
    mode = rules.thinking_mode(decoded.body)
    prof = get_profile(profile)
    prof = replace(prof, finish=(*prof.finish, partial(rules.repair_thinking, mode=mode)))
    native = decoded.body["messages"]
    settings = options.settings(
        profile=prof,
        tools=decoded.tools,
        model=model or decoded.model,
        max_output=decoded.max_output,
        prefill=_prefill(decoded),
    )
    settings = replace(settings, policy=_native_policy(settings.policy, decoded))
    edits = server_edits(decoded.body)
    settings = step_aside(settings, edits)
    if options.count_tokens is None:  # no offline Claude tokenizer: an estimate erring high
        settings = replace(settings, counter=claude_counter(settings.model))
    inner, loaded = call_counter(settings, decoded.messages)
    counter = CarryCounter(
        inner, decoded.extra, key=an.CARRY, unread=_unread_thinking(decoded, settings.target)
    )
    result, ctx = run(decoded.messages, settings, counter)
    store_counts(settings, inner, loaded, result.report)
    updates: dict[str, Any] = {}
    if ctx.disable_thinking:
        updates["thinking"] = {"type": "disabled"}
    if rules.tool_breakpoints(decoded.body) > rules.MAX_BREAKPOINTS and decoded.tools:
        updates["tools"] = _tools_within_limit(
            decoded.tools,
            lambda n: ctx.record(
                "cache", "repair", -1, f"cache_control breakpoint of tools[{n}] dropped (at most 4)"
            ),
        )
    lost: list[str] = []
    drop = _drops(decoded, options)
    out = an.encode(result.messages, decoded, updates, lost=lost, drop=drop)
    report = result.report
    record_lost(report, lost, "user message")
    _report_compaction(report, decoded, drop, options)
    if edits:
        report.notes.append(server_note(edits))
    if options.cache_breakpoints:
        out = _place_breakpoints(out, report, None if ctx.replay is None else ctx.replay.clearing())
    # The report judges what is sent: the output body, decoded again (positions are
    # the output body's messages).
    found = _violations(out, settings.model)
    report.violations = [asdict(v) for v in found]
    report.notes = [n for n in report.notes if note_kind(n) != "rule"]
    report.notes += [
        Note(
            f"rule not met: {v.rule} at {'request' if v.index < 0 else f'message {v.index}'} "
            f"of the output body: {v.error}",
            "rule",
        )
        for v in found
    ]
    report.messages_before = len(native)
    report.messages_after = len(out["messages"])
    return RequestResult(out, report, result.messages)


def _prefill(decoded: an.Decoded) -> bool:
    """Whether the body asks for a prefill: it ends with an assistant message, other than
    one that holds a compaction block and nothing after it (the documented way to let
    the API continue after ``pause_after_compaction``)."""
    native = decoded.body["messages"]
    last = next(
        (
            i
            for i in range(len(native) - 1, -1, -1)
            if isinstance(native[i], dict) and native[i].get("role") in ("user", "assistant")
        ),
        None,
    )
    if last is None or native[last].get("role") != "assistant":
        return False
    bound = decoded.boundary
    return not (
        bound is not None and bound[0] == last and bound[1] == len(native[last]["content"]) - 1
    )


def _drops(decoded: an.Decoded, options: Options) -> bool:
    """Whether what precedes the newest compaction block is left out: when asked to
    (``compacted="drop"``: the API ignores it), and always before a block made on
    demand (signed), which the API refuses anywhere but first (AN-12c)."""
    bound = decoded.boundary
    if bound is None or bound == (0, 0):
        return False
    block = decoded.body["messages"][bound[0]]["content"][bound[1]]
    return options.compacted == "drop" or "signature" in block


def _report_compaction(report: Report, decoded: an.Decoded, drop: bool, options: Options) -> None:
    """Say what precedes the newest compaction block, and what became of it."""
    bound = decoded.boundary
    if bound is None:
        return
    at, block = bound
    native = decoded.body["messages"]
    before = [*native[:at], *native[at]["content"][:block]]
    size = len(json.dumps(before, ensure_ascii=False).encode()) if before else 0
    what = (
        f"{at} message(s) and {block} block(s) of messages[{at}] ({size:,} bytes)"
        if before
        else "nothing"
    )
    if drop and before:
        why = (
            "a block made on demand must come first (AN-12c: compaction_block_misplaced)"
            if options.compacted != "drop"
            else "compacted='drop'"
        )
        report.actions.insert(
            0,
            Action(
                "compacted",
                "drop",
                -1,
                f"{what} before the newest compaction block (messages[{at}].content[{block}]) "
                f"left out: the API ignores them ({why})",
            ),
        )
    kept = "left out" if drop and before else "sent as it came"
    report.notes.append(
        Note(
            f"compaction block at messages[{at}].content[{block}]: what precedes it ({what}) "
            f"is not read by the model, so it was neither counted nor governed, and is "
            f"{kept}; the block is sent as it came",
            "server",
        )
    )


def _unread_thinking(decoded: an.Decoded, target: Target) -> Callable[[Message], Message | None]:
    """The view of a message the model reads: on a model that strips earlier turns'
    thinking, an assistant message before the user's newest prompt without its thinking
    blocks (they do not count toward the window: Anthropic's context-windows page);
    every message whole on a model that keeps it."""
    if claude_keeps_thinking(target):
        return lambda message: None
    start = an.current_turn(decoded.body.get("messages"))

    def view(message: Message) -> Message | None:
        if message.get("role") != "assistant" or decoded.native_index(message) >= start:
            return None
        return an.without_thinking(message)

    return view


def _place_breakpoints(
    body: dict[str, Any], report: Report, clearing: Clearing | None
) -> dict[str, Any]:
    """Mark where the stable prefix ends (formats/_anthropic_cache.py); one action each."""
    if rules.breakpoints(body) > rules.MAX_BREAKPOINTS:
        return body  # a body the repairs could not bring to 4: reported as AN-10, no more
    out, placed = cache.place(body, clearing)
    for spot in placed:
        report.actions.append(
            Action(
                "cache",
                "replace",
                -1,
                f"cache_control breakpoint placed on {spot.label()} ({spot.why}): the prefix "
                "up to it stays the same on the next request",
            )
        )
    return out


def validate_anthropic(body: Any, provider: str | None, model: str | None) -> list[Violation]:
    """The Messages API's own rules, whoever serves it (a compatible provider's Chat
    Completions rules, such as key filters or ``partial`` flags, are about another
    wire): ``provider`` must be None or "anthropic"."""
    if provider not in (None, "anthropic"):
        raise ConfigError(
            f"a Messages body is checked against the Messages API's rules; got provider "
            f"{provider!r} (choose the target's repairs with govern_request(profile=...))"
        )
    return _violations(body, model)


def _violations(body: Any, model: str | None) -> list[Violation]:
    decoded = an.decode(body)
    check_messages(decoded.messages)
    entry, target = resolve("anthropic", model or decoded.model)
    # AN-10 is judged on the native body below; AN-13 (nothing but system) cannot hold
    # with a compaction block, whose summary reads as a system message
    found = [
        replace(v, index=decoded.native_index(decoded.messages[v.index]) if v.index >= 0 else -1)
        for v in find_violations(entry.rules, decoded.messages, target)
        if v.rule != "AN-10" and not (v.rule == "AN-13" and decoded.boundary is not None)
    ]
    return found + rules.native_violations(decoded.body, target)
