"""Governance of one step, with the seed's fallback when the Governor itself fails.

``govern()`` already falls back to the minimal repair when a stage raises. This
covers what escapes it anyway (a bug in a custom Governor, a counter that
fails): the step must still get a legal list, and the failure must be visible
in the step's report rather than end the run.

A native client (Anthropic Messages, OpenAI Responses) is governed in its own
format: the client's edge builds the request body for the history, and
``govern_request`` governs that body with the Governor's settings — the same
pipeline, plus the format's own rules (the thinking rules of Messages, the
reasoning-item rules of Responses), which a chat message list cannot show.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..formats import anthropic as anthropic_edge
from ..formats import govern_request
from ..formats import responses as responses_edge
from ..governor import Governor
from ..llm import NativeModelClient
from ..messages import Message
from ..pipeline import GovernResult
from ..report import Action, Report
from ..stages import Context

__all__ = ["FALLBACK_STAGE", "govern_native_step", "govern_step"]

FALLBACK_STAGE = "runner"


def _minimal_repair(
    governor: Governor, messages: list[Message], tools: Sequence[Any] | None
) -> tuple[list[Message], Context, str]:
    """The profile's minimal repair (orphans, then backfill); the input as is if it fails."""
    ctx = Context(counter=governor.profile.counter(governor.model), tools=tools)
    try:
        out = messages
        for stage in governor.profile.fallback:
            out = stage(out, ctx)
        return out, ctx, "minimal repair used"
    except Exception as exc:
        ctx.actions.clear()
        return messages, ctx, f"minimal repair failed too ({exc!r}); sent as is"


def _count(ctx: Context, messages: list[Message], tools: Sequence[Any] | None) -> int:
    try:
        return ctx.counter.prompt_tokens(messages, tools)
    except Exception:
        return 0


def govern_step(
    governor: Governor, messages: list[Message], tools: list[dict[str, Any]] | None
) -> tuple[GovernResult, str | None]:
    """Govern ``messages``; returns the result and, if the Governor raised, what happened."""
    try:
        return governor.govern(messages, tools=tools), None
    except Exception as exc:
        failure = f"governance failed ({exc!r})"
    return _fallback(governor, messages, tools, failure)


def _fallback(
    governor: Governor, messages: list[Message], tools: list[dict[str, Any]] | None, failure: str
) -> tuple[GovernResult, str]:
    repaired, ctx, outcome = _minimal_repair(governor, messages, tools)
    event = f"{failure}; {outcome}"
    report = Report(
        profile=governor.profile.name,
        counter=ctx.counter.name,
        context_window=governor.context_window,
        max_output=governor.max_output if governor.max_output is not None else 0,
        budget=None,
        tokens_before=_count(ctx, messages, tools),
        tokens_after=_count(ctx, repaired, tools),
        messages_before=len(messages),
        messages_after=len(repaired),
        # The fallback comes first: it explains the repair actions after it.
        actions=[Action(FALLBACK_STAGE, "fallback", 0, event), *ctx.actions],
        notes=[event],
        model=governor.model,
    )
    return GovernResult(repaired, report), event


#: The private keys under which the format edges carry native parts in their chat view.
_CARRY_KEYS = (anthropic_edge.CARRY, responses_edge.CARRY)


def _public(message: Message) -> Message:
    """A governed chat message without the edge's private carry key (hooks may dump it)."""
    if not any(key in message for key in _CARRY_KEYS):
        return message
    return {k: v for k, v in message.items() if k not in _CARRY_KEYS}


def govern_native_step(
    governor: Governor,
    client: NativeModelClient,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
) -> tuple[dict[str, Any], GovernResult, str | None]:
    """The governed native body for ``messages``, the governed chat view and its report,
    and (if governing raised) what happened. An InputError of the edge (a history it
    cannot build or read a body from) propagates: there is nothing to send then."""
    body = client.request_body(messages, tools, governor.max_output)
    try:
        result = govern_request(
            body,
            api=client.api,  # type: ignore[arg-type]  # checked by govern_request
            profile=governor.profile,
            model=governor.model,
            context_window=governor.context_window,
            max_tool_result_chars=governor.settings.cap,
            compaction=governor.compaction,
            count_tokens=governor.count_tokens,
        )
    except InputError:
        raise  # the edge cannot read the body it built: no repair can make it sendable
    except Exception as exc:
        failure = f"governance failed ({exc!r})"
    else:
        view = [_public(m) for m in result.messages]
        return result.body, GovernResult(view, result.report), None
    governed, event = _fallback(governor, messages, tools, failure)
    return client.request_body(governed.messages, tools, governor.max_output), governed, event
