"""Byte bounds: an upper bound on a message's tokens, found without tokenizing.

A Governor's step of a long conversation should not tokenize on its critical path. It
decides from an upper bound when the bound is far from every threshold, and has the
exact counts computed in a worker thread while the model call runs (background.py);
the report reads them (waiting if it must) before it shows a figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..messages import Message
from ._counters import (
    PER_MESSAGE_OVERHEAD,
    ExactCounter,
    TokenCounter,
    json_text,
    seed_message_payload,
)
from ._payload import carried_tokens, lightened

__all__ = ["message_bound", "tools_bound"]


def message_bound(counter: TokenCounter, message: Message) -> int | None:
    """An upper bound on ``counter.message_tokens(message)`` found without tokenizing (nor
    building the encoding: see ExactCounter.byte_bounded), or None when the counter has
    none (an estimate made without an encoding, a custom or a Claude counter).

    Byte-level BPE never yields more tokens than the UTF-8 bytes of the text (each token
    is at least one byte; the parts ExactCounter bounds instead of tokenizing are counted
    as exactly that many; a cleaned surrogate never takes more bytes than its
    ``surrogatepass`` form), so the payload's byte length plus the per-message overhead
    bounds the exact count. Most of a step's payload is ASCII, whose length is its size.
    Media and ciphertext are counted by rule, not by their bytes: their tokens are added."""
    if not isinstance(counter, ExactCounter) or not counter.byte_bounded:
        return None
    light, carried = lightened(message)  # one walk: the text and what counts by rule
    payload = seed_message_payload(light)
    if not payload:
        return PER_MESSAGE_OVERHEAD
    size = len(payload) if payload.isascii() else len(payload.encode("utf-8", "surrogatepass"))
    ruled = carried_tokens(carried, counter.media, counter.model) if carried else 0
    return max(4, size + PER_MESSAGE_OVERHEAD + ruled)


def tools_bound(counter: TokenCounter, tools: Sequence[Any] | None) -> int | None:
    """An upper bound on the tokens ``counter`` gives the tool definitions (the UTF-8
    size of their JSON, as message_bound bounds a message), or None as message_bound."""
    if not isinstance(counter, ExactCounter) or not counter.byte_bounded:
        return None
    if not tools:
        return 0
    text = json_text(tools)
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
