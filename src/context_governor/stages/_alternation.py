"""Role alternation: no two user or assistant messages in a row, no trailing assistant,
and never system→assistant.

Snipping and lost messages leave user→user or assistant→assistant runs; many
providers reject them (Anthropic, Gemini, Llama-2-style chat templates), most reject
an assistant message last (no prefill), and GLM rejects system→assistant (1214).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages import Joinable, Message, has_tool_calls, join_fields, merge_contents
from ._base import Context
from ._inserted import SYNTHETIC_USER

__all__ = ["STAGE", "enforce_alternation", "enforce_alternation_seed"]

STAGE = "alternation"
_MERGEABLE = ("user", "assistant")
#: Keys that only an assistant message may carry: tool calls and the prefill flags.
_ASSISTANT_ONLY = ("tool_calls", "prefix", "partial")


def _replaced(lost: Sequence[str]) -> str:
    """The report's words for fields whose earlier value gave way in a merge."""
    if not lost:
        return ""
    return (
        f"; the earlier value of {', '.join(lost)} was replaced by the later message's "
        "(one field holds one value)"
    )


def _merge_seed(prev: Message, curr: Message) -> tuple[Message | None, str, str]:
    """The seed's merge: the new previous message (None: drop ``curr``), what happened,
    and what of the messages did not survive it (for the report)."""
    if curr.get("role") == "assistant":
        if has_tool_calls(curr):
            return dict(curr), "replace", ""
        if has_tool_calls(prev):
            return None, "drop", ""
    prev_content = prev.get("content") or ""
    curr_content = curr.get("content") or ""
    if isinstance(prev_content, str) and isinstance(curr_content, str):
        joined = (prev_content + "\n\n" + curr_content).strip()
        merged: Message = {**prev, "content": joined}
        # Nanobot keeps only the earlier message's other keys (a defect the profile keeps);
        # what an edge carries is not a chat key: joined, as in the lossless merge.
        carried = [k for k, v in prev.items() if isinstance(v, Joinable) and k in curr]
        lost: list[str] = []
        for key in carried:
            fields, more = join_fields({key: prev[key]}, {key: curr[key]})
            merged[key] = fields[key]
            lost.extend(more)
        left = [
            k
            for k in curr
            if k not in ("role", "content", *carried) and (k not in prev or prev[k] != curr[k])
        ]
        note = f"; the later message's {', '.join(left)} left out" if left else ""
        return merged, "merge", note + _replaced(lost)
    return dict(curr), "replace", ""


#: Keys the lossless merge joins itself rather than choosing one value.
_JOINED = ("content", "tool_calls")


def _merge_lossless(prev: Message, curr: Message) -> tuple[Message | None, str, str]:
    """Join both messages: contents concatenated, tool calls kept in order, reasoning
    joined, every other key of either kept (messages.join_fields: where both hold one
    with different values the newer wins, and the earlier value is named for the
    report), the edges' carried origins joined so that what they carry (unknown fields,
    unknown-role messages, native blocks) reaches the merged native message."""
    reasons = [m.get("reasoning_content") for m in (prev, curr)]
    both = all(isinstance(r, str) and r for r in reasons)
    own = (*_JOINED, "reasoning_content") if both else _JOINED
    merged, lost = join_fields(prev, curr, own)
    merged["content"] = merge_contents(prev.get("content"), curr.get("content"))
    calls = list(prev.get("tool_calls") or ()) + list(curr.get("tool_calls") or ())
    if calls:
        merged["tool_calls"] = calls
    elif "tool_calls" in curr:
        merged["tool_calls"] = curr["tool_calls"]
    if both:
        merged["reasoning_content"] = f"{reasons[0]}\n\n{reasons[1]}"
    return merged, "merge", _replaced(lost)


def _enforce(messages: list[Message], ctx: Context, *, lossless: bool) -> list[Message]:
    merge = _merge_lossless if lossless else _merge_seed
    actions_before = len(ctx.actions)
    out: list[Message] = []
    origin: list[int] = []  # input index of each message in ``out``, for the report
    for index, message in enumerate(messages):
        role = message.get("role")
        if out and role in _MERGEABLE and out[-1].get("role") == role:
            prev = out[-1]
            merged, how, note = merge(prev, message)
            if merged is None:
                ctx.record(
                    STAGE,
                    "drop",
                    index,
                    f"{role} without tool calls after one with calls",
                    tokens_saved=ctx.tokens(message),
                )
                continue
            out[-1] = merged
            ctx.record(
                STAGE,
                "merge" if how == "merge" else "replace",
                index,
                (
                    f"consecutive {role} messages joined{note}"
                    if how == "merge"
                    else f"consecutive {role} message replaces the previous one"
                ),
                tokens_saved=ctx.tokens(prev) + ctx.tokens(message) - ctx.tokens(merged),
            )
            continue
        out.append(message)
        origin.append(index)

    popped: Message | None = None
    popped_at = -1
    prefill = ctx.keep_prefill and out and out[-1].get("role") == "assistant"
    prefill = prefill and not has_tool_calls(out[-1]) and len(out) > 1
    while out and out[-1].get("role") == "assistant" and not prefill:
        popped, popped_at = out.pop(), origin.pop()
        ctx.record(
            STAGE,
            "drop",
            popped_at,
            "trailing assistant message (no prefill)",
            tokens_saved=ctx.tokens(popped),
        )
    # The seed recovers only when system messages remain; we also when nothing does,
    # since an empty request is rejected everywhere.
    if (
        popped is not None
        and (out or lossless)
        and not any(m.get("role") in ("user", "tool") for m in out)
    ):
        recovered = {**popped, "role": "user"}
        shed = [k for k in _ASSISTANT_ONLY if k in popped] if lossless else []
        for key in shed:
            # A user message cannot carry them (an empty tool_calls would be stripped by
            # the input check of the next govern() call: not idempotent).
            del recovered[key]
        out.append(recovered)
        # Booked as an insertion: the drop above already accounts for the assistant.
        ctx.record(
            STAGE,
            "insert",
            len(out) - 1,
            "last dropped assistant message resent as user (nothing else is left)"
            + (f"; its {', '.join(shed)} left out" if shed else ""),
            tokens_saved=-ctx.tokens(recovered),
        )
    opened = ctx.policy is not None and ctx.policy.opened  # a compaction block opens it
    for index, message in enumerate(() if opened else out):
        if message.get("role") != "system":
            if message.get("role") == "assistant" and not has_tool_calls(message):
                synthetic = {"role": "user", "content": SYNTHETIC_USER}
                out.insert(index, synthetic)
                ctx.record(
                    STAGE,
                    "insert",
                    index,
                    "user message inserted before a leading assistant message",
                    tokens_saved=-ctx.tokens(synthetic),
                )
            break
    return out if len(ctx.actions) > actions_before else messages


def enforce_alternation_seed(messages: list[Message], ctx: Context) -> list[Message]:
    """The seed's pass (Nanobot's provider layer): runs are merged lossily."""
    return _enforce(messages, ctx, lossless=False)


def enforce_alternation(messages: list[Message], ctx: Context) -> list[Message]:
    """Our pass: runs are merged without losing content or tool calls."""
    return _enforce(messages, ctx, lossless=True)
