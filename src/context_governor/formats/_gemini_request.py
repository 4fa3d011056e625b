"""govern_request(api="gemini") and validate_request(api="gemini").

The profile's stages (orphan cleanup, backfill, compaction, snip...) run on the
decoded contents as on any chat history; the finishing stages are Gemini's own
(the gemini provider profile's, under Gemini's policy), whoever the profile is:
whoever serves a ``generateContent`` body, Gemini's rules hold. The report judges
the output body's contents with the GE rules (gemini_rules.py).

A ``cachedContent`` the request refers to is not governed (it lives server-side):
the report says so, and ``RequestResult.ungoverned`` names it.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

from ..errors import ConfigError
from ..messages.inputs import check_messages
from ..pipeline import call_counter, run, store_counts
from ..profiles import PROFILES, Profile, get_profile
from ..providers import GEMINI_POLICY as POLICY
from ..providers import Violation, resolve
from ..report import Note, note_kind
from . import _gemini as ge
from . import _gemini_rules as rules
from ._base import CarryCounter, Options, RequestResult, record_lost

#: Gemini's policy for a native body: a user message after function responses needs no
#: bridge (the edge writes it into the responses' own user content).
NATIVE_POLICY = replace(POLICY, bridge_user_after_tool=False)


def _joined(body: dict[str, Any], out: dict[str, Any]) -> list[str]:
    """Notes for native contents the encoder wrote into one turn with the one before."""
    if out is body:
        return []
    sent = {id(c) for c in out.get("contents", [])}
    contents = body.get("contents", [])
    return [
        f"contents[{i}] ({ge.role_of(c)}) joined the turn before it (GE-4)"
        for i, c in enumerate(contents)
        if i and id(c) not in sent and ge.role_of(c) == ge.role_of(contents[i - 1]) == "user"
        and id(contents[i - 1]) not in sent
    ]  # fmt: skip


def govern_gemini(
    body: Any, profile: str | Profile, model: str | None, options: Options
) -> RequestResult:
    decoded = ge.decode(body)
    check_messages(decoded.messages)
    prof = replace(get_profile(profile), finish=PROFILES["gemini"].finish, provider="gemini")
    contents = decoded.body["contents"]
    last_known = next((c for c in reversed(contents) if ge.role_of(c) in ge.KNOWN_ROLES), None)
    settings = options.settings(
        profile=prof,
        tools=decoded.tools,
        model=model or decoded.model,
        max_output=decoded.max_output,
        prefill=ge.role_of(last_known) == "model",
    )
    settings = replace(settings, policy=NATIVE_POLICY)
    inner, loaded = call_counter(settings, decoded.messages)
    counter = CarryCounter(inner, decoded.extra, key=ge.CARRY)
    result, _ = run(decoded.messages, settings, counter)
    store_counts(settings, inner, loaded, result.report)
    lost: list[str] = []
    out = ge.encode(result.messages, decoded, join=True, lost=lost)
    report = result.report
    record_lost(report, lost, "user content")
    found = rules.native_violations(out, settings.target)
    report.violations = [asdict(v) for v in found]
    report.notes = [n for n in report.notes if note_kind(n) != "rule"]
    report.notes += _joined(decoded.body, out)
    report.notes += [
        Note(
            f"rule not met: {v.rule} at {'request' if v.index < 0 else f'contents[{v.index}]'} of "
            f"the output body: {v.error}",
            "rule",
        )
        for v in found
    ]
    if decoded.server_state:
        report.notes.append(
            "not governed: part of the prompt is cached server-side ("
            + ", ".join(decoded.server_state)
            + "); only the contents sent were governed and counted against the window"
        )
    report.messages_before = len(contents)
    report.messages_after = len(out["contents"])
    return RequestResult(out, report, result.messages, decoded.server_state)


def validate_gemini(body: Any, provider: str | None, model: str | None) -> list[Violation]:
    if provider not in (None, "gemini"):
        raise ConfigError(
            f"a generateContent body is checked against Gemini's rules; got provider "
            f"{provider!r} (choose the target's repairs with govern_request(profile=...))"
        )
    decoded = ge.decode(body)
    contents = decoded.body["contents"]
    last = contents[-1] if contents else None
    _, target = resolve("gemini", model or decoded.model, prefill=ge.role_of(last) == "model")
    return rules.native_violations(decoded.body, target)
