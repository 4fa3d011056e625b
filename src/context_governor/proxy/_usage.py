"""The upstream's own count of what we sent, read from its answer.

Every answer of the governed APIs says how many input tokens the upstream counted:
that is the exact figure of the prompt we forwarded, in the target's tokenizer, which
offline we can only estimate (the Claude estimate, an o200k count for a Qwen model...).
:func:`usage_of` reads it from one parsed answer or one streamed event, whichever API
(each API's reader is its wire format's ``usage``, in formats/<api>_wire.py):

- Messages: ``usage.input_tokens`` plus ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens`` (cached tokens are in the prompt too, not in
  ``input_tokens``); streamed, in ``message_start``'s message (and ``message_delta``
  when it carries ``input_tokens``); the cache read and written are those two;
- Chat Completions: ``usage.prompt_tokens`` (streamed: the last chunk, when the client
  asked for ``stream_options.include_usage``); read from the cache:
  ``prompt_tokens_details.cached_tokens``;
- Responses: ``usage.input_tokens`` of the response (streamed: ``response.completed``,
  ``response.incomplete``, ``response.failed``); read: ``input_tokens_details.cached_tokens``;
- Gemini: ``usageMetadata.promptTokenCount`` (cached content included; streamed, every
  element carries the running figure); read: ``cachedContentTokenCount``.

Only Anthropic bills a cache write; the others cache automatically, so their
``cache_write_tokens`` is 0.

Pure and small, on purpose: the proxy's calibration (learning.py) uses it, and so can
anything else that wants the upstream's figures (metrics). :func:`events` splits the
whole server-sent events the relay already holds, so reading usage never buffers or
delays a stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from ..formats import WIRE_FORMATS, Usage, count

__all__ = ["Usage", "events", "may_carry_usage", "output_of", "usage_of"]

#: Substrings without which an event cannot carry an input count: most events of a
#: stream are text deltas (some with ``"usage": null``), and are not parsed at all.
#: Each wire format's ``usage_mark``.
_USAGE_MARKS = tuple(dict.fromkeys(wire.usage_mark for wire in WIRE_FORMATS.values()))
_READERS: dict[str, Callable[[dict[str, Any]], Usage | None]] = {
    api: wire.usage for api, wire in WIRE_FORMATS.items()
}


def output_of(data: bytes) -> int | None:
    """The answer's token count in an event that carries only that (Messages'
    ``message_delta``: ``{"usage": {"output_tokens": N}}``), else None."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    usage = parsed.get("usage") if isinstance(parsed, dict) else None
    return count(usage.get("output_tokens")) if isinstance(usage, dict) else None


def usage_of(api: str, event_or_json: Any) -> Usage | None:
    """The upstream's count in one answer or streamed event of ``api`` (apis.py's
    names: "anthropic", "openai" for Chat Completions, "responses", "gemini"), given
    parsed (a dict) or as bytes/str of JSON; None when it carries none (or is not JSON).
    Each wire format reads its own (its ``usage``, formats/<api>_wire.py)."""
    data = event_or_json
    if isinstance(data, bytes | str):
        try:
            data = json.loads(data)
        except ValueError:
            return None
    reader = _READERS.get(api)
    if reader is None or not isinstance(data, dict):
        return None
    return reader(data)


def events(whole: bytes) -> Iterator[tuple[str | None, bytes]]:
    """The (event name, data) of each whole server-sent event in ``whole`` (the
    multi-line ``data:`` fields joined), as the relay passes them on."""
    for block in whole.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n\n"):
        name: str | None = None
        data: list[bytes] = []
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                name = line[6:].strip().decode("utf-8", "replace")
            elif line.startswith(b"data:"):
                data.append(line[5:].removeprefix(b" "))
        if name is not None or data:
            yield name, b"\n".join(data)


def may_carry_usage(data: bytes) -> bool:
    """Whether an event's data can hold usage at all (a cheap test before parsing)."""
    return any(mark in data for mark in _USAGE_MARKS)
