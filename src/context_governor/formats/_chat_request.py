"""govern_request(api="openai") and validate_request(api="openai"): a Chat Completions
body.

The body's messages go through the pipeline as govern() runs it (the developer-role
edge included, pipeline.run_checked), with the request's own settings: its
``max_completion_tokens``/``max_tokens`` as the output reserve (else the caller's
default), its ``model`` unless one is given, its ``tools`` (or deprecated
``functions``), and a trailing assistant message as a prefill (kept where the target
accepts one, dropped and reported where it does not).
"""

from __future__ import annotations

from typing import Any

from ..messages.legacy import rules_view
from ..pipeline import run_checked
from ..profiles import Profile
from ..providers import Violation, find_violations, resolve
from . import _chat as chat
from ._base import Options, RequestResult


def govern_chat(
    body: Any, profile: str | Profile, model: str | None, options: Options
) -> RequestResult:
    decoded = chat.decode(body)
    settings = options.settings(
        profile=profile,
        tools=decoded.tools,
        model=model or decoded.model,
        max_output=decoded.max_output,
        prefill=decoded.prefill,
    )
    result = run_checked(decoded.messages, settings)
    return RequestResult(chat.encode(result.messages, decoded), result.report, result.messages)


def validate_chat(body: Any, provider: str | None, model: str | None) -> list[Violation]:
    """The rules of ``provider`` (default "openai") the body's messages break."""
    decoded = chat.decode(body)
    entry, target = resolve(provider or "openai", model or decoded.model)
    seen = rules_view(decoded.messages, entry.policy(target).legacy_functions, entry.name)
    return list(find_violations(entry.rules, seen, target))
