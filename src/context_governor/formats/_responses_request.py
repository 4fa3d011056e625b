"""govern_request(api="responses") and validate_request(api="responses").

The profile's stages (orphan cleanup, backfill, compaction, snip...) run on the
decoded items as on any chat history; its finishing stages, which are about the
Chat Completions wire of its provider (alternation, prefill, key filters, id
formats), are replaced by the Responses API's own repairs (responses_rules.py):
whoever serves a Responses body, the Responses rules hold.

What the body does not carry (a ``previous_response_id``, a ``conversation``, a
stored ``prompt``, ``item_reference`` items) is not governed: what is sent is, and
the report says what was not (a note, and ``RequestResult.ungoverned``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

from ..errors import ConfigError
from ..messages.inputs import check_messages
from ..pipeline import call_counter, run, store_counts
from ..profiles import Profile, get_profile
from ..providers import Violation, resolve
from ..report import Action, Note, Report, note_kind
from . import _responses as rs
from . import _responses_rules as rules
from ._base import CarryCounter, Options, RequestResult, ServerEdit, server_note, step_aside


def govern_responses(
    body: Any, profile: str | Profile, model: str | None, options: Options
) -> RequestResult:
    decoded = rs.decode(body)
    check_messages(decoded.messages)
    prof = replace(get_profile(profile), finish=rules.FINISH)
    settings = options.settings(
        profile=prof,
        tools=decoded.tools,
        model=model or decoded.model,
        max_output=decoded.max_output,
    )
    settings = replace(settings, policy=replace(settings.policy, allowed_keys=None))
    edits = server_edits(decoded.body)
    settings = step_aside(settings, edits)
    views, unread = rs.model_views(decoded.messages)
    inner, loaded = call_counter(settings, views)
    counter = CarryCounter(inner, decoded.extra, key=rs.CARRY, unread=unread)
    result, _ = run(decoded.messages, settings, counter)
    store_counts(settings, inner, loaded, result.report)
    skipped = [it for it in decoded.dead if not rs.read_before(it)]
    drop = options.compacted == "drop" and bool(skipped) and not decoded.server_state
    out = rs.encode(result.messages, decoded, drop)
    report = result.report
    _report_compaction(report, decoded, drop, options)
    if edits:
        report.notes.append(server_note(edits))
    # The report judges what is sent: the output body's items (positions in its input).
    _, target = resolve("openai", settings.model)
    # (with the output's own server state: a cut may have taken an item_reference with it)
    found = rules.native_violations(out, bool(rs.server_state(out)), target)
    report.violations = [asdict(v) for v in found]
    report.notes = [n for n in report.notes if note_kind(n) != "rule"]
    report.notes += [
        Note(
            f"rule not met: {v.rule} at {'request' if v.index < 0 else f'input[{v.index}]'} of the "
            f"output body: {v.error}",
            "rule",
        )
        for v in found
    ]
    if decoded.server_state:
        report.notes.append(
            "not governed: the conversation continues server-side ("
            + ", ".join(decoded.server_state)
            + "); only the items sent were governed and counted against the window"
        )
    native = body.get("input")
    report.messages_before = len(native) if isinstance(native, list) else int(native is not None)
    sent = out.get("input")
    report.messages_after = len(sent) if isinstance(sent, list) else int(sent is not None)
    return RequestResult(out, report, result.messages, decoded.server_state)


def server_edits(body: dict[str, Any]) -> tuple[ServerEdit, ...]:
    """The context management a Responses body asks the server for (its
    ``context_management`` entries), each with what governance does beside it
    (docs/native-compaction.md)."""
    entries = body.get("context_management")
    found: list[ServerEdit] = []
    for entry in entries if isinstance(entries, list) else ():
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind == "compaction":
            at = entry.get("compact_threshold")
            when = f"at {at:,} tokens" if isinstance(at, int) else "at its threshold"
            why = (
                f"the server compacts the context {when}: clearing or cutting it first "
                "would keep the server from ever reaching its threshold"
            )
            found.append(ServerEdit("compaction", True, why))
        else:
            name = kind if isinstance(kind, str) else repr(kind)
            why = "an entry this version does not know manages the context"
            found.append(ServerEdit(name, True, why))
    return tuple(found)


def _report_compaction(report: Report, decoded: rs.Decoded, drop: bool, options: Options) -> None:
    """Say what precedes the newest compaction item, and what became of it."""
    if decoded.boundary is None:
        return
    at = decoded.boundary
    unread = [it for it in decoded.dead if not rs.read_before(it)]
    size = len(json.dumps(unread, ensure_ascii=False).encode()) if unread else 0
    what = f"{len(unread)} item(s), {size:,} bytes" if unread else "nothing"
    if drop:
        report.actions.insert(0, Action(
            "compacted", "drop", -1,
            f"{what} before the newest compaction item (input[{at}]) left out: its encrypted "
            "state stands for them (compacted='drop'; the client's messages before it stay)",
        ))  # fmt: skip
    kept = "left out" if drop else "sent as it came"
    if options.compacted == "drop" and not drop and unread and decoded.server_state:
        kept += " (not dropped: with previous_response_id chaining OpenAI says not to prune)"
    read = len(decoded.dead) - len(unread)
    report.notes.append(
        Note(
            f"compaction item at input[{at}]: what precedes it ({what}, besides {read} "
            f"message item(s) of the client's, counted as read and sent as they came) is not "
            f"read by the model, so it was neither counted nor governed, and is {kept}; the "
            "item is sent as it came",
            "server",
        )
    )


def validate_responses(body: Any, provider: str | None, model: str | None) -> list[Violation]:
    if provider not in (None, "openai"):
        raise ConfigError(
            f"a Responses body is checked against the Responses API's rules; got provider "
            f"{provider!r} (choose the target's repairs with govern_request(profile=...))"
        )
    return _validate(body, model)


def _validate(body: Any, model: str | None) -> list[Violation]:
    decoded = rs.decode(body)
    _, target = resolve("openai", model or decoded.model)
    return rules.native_violations(decoded.body, bool(decoded.server_state), target)
