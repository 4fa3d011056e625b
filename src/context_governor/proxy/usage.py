"""The upstream's own count of what we sent, read from its answer.

Every answer of the governed APIs says how many input tokens the upstream counted:
that is the exact figure of the prompt we forwarded, in the target's tokenizer, which
offline we can only estimate (the Claude estimate, an o200k count for a Qwen model...).
:func:`usage_of` reads it from one parsed answer or one streamed event, whichever API:

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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Substrings without which an event cannot carry an input count: most events of a
#: stream are text deltas (some with ``"usage": null``), and are not parsed at all.
_USAGE_MARKS = (b'"input_tokens"', b'"prompt_tokens"', b'"promptTokenCount"')


@dataclass(frozen=True, slots=True)
class Usage:
    """What the upstream counted: ``input_tokens`` is the whole prompt (cached parts
    included), ``output_tokens`` the answer (None when not said yet); of the prompt,
    ``cache_read_tokens`` were read from the provider's prompt cache and
    ``cache_write_tokens`` written to it (the provider's own figures, the ones it bills)."""

    input_tokens: int
    output_tokens: int | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def uncached_tokens(self) -> int:
        """The prompt's tokens billed at the plain input price."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _sum(usage: Any, *names: str) -> int | None:
    """The sum of the named counts of ``usage``; None without the first."""
    if not isinstance(usage, dict):
        return None
    first = _int(usage.get(names[0]))
    if first is None:
        return None
    return first + sum(_int(usage.get(name)) or 0 for name in names[1:])


def _detail(usage: dict[str, Any], details: str, name: str) -> int:
    """``usage[details][name]`` as a count (0 when absent or not a count)."""
    found = usage.get(details)
    return (_int(found.get(name)) or 0) if isinstance(found, dict) else 0


def _anthropic(data: dict[str, Any]) -> Usage | None:
    message = data.get("message") if data.get("type") == "message_start" else data
    usage = message.get("usage") if isinstance(message, dict) else None
    total = _sum(usage, "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    if total is None:
        return None
    assert isinstance(usage, dict)
    return Usage(
        total,
        _int(usage.get("output_tokens")),
        _int(usage.get("cache_read_input_tokens")) or 0,
        _int(usage.get("cache_creation_input_tokens")) or 0,
    )


def _chat(data: dict[str, Any]) -> Usage | None:
    usage = data.get("usage")
    total = _sum(usage, "prompt_tokens")
    if total is None:
        return None
    assert isinstance(usage, dict)
    read = _detail(usage, "prompt_tokens_details", "cached_tokens")
    return Usage(total, _int(usage.get("completion_tokens")), min(read, total))


_RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")


def _responses(data: dict[str, Any]) -> Usage | None:
    response = data.get("response") if data.get("type") in _RESPONSE_ENDS else data
    usage = response.get("usage") if isinstance(response, dict) else None
    total = _sum(usage, "input_tokens")
    if total is None:
        return None
    assert isinstance(usage, dict)
    read = _detail(usage, "input_tokens_details", "cached_tokens")
    return Usage(total, _int(usage.get("output_tokens")), min(read, total))


def _gemini(data: dict[str, Any]) -> Usage | None:
    usage = data.get("usageMetadata")
    total = _sum(usage, "promptTokenCount")
    if total is None:
        return None
    assert isinstance(usage, dict)
    read = _int(usage.get("cachedContentTokenCount")) or 0
    return Usage(total, _int(usage.get("candidatesTokenCount")), min(read, total))


def output_of(data: bytes) -> int | None:
    """The answer's token count in an event that carries only that (Messages'
    ``message_delta``: ``{"usage": {"output_tokens": N}}``), else None."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    usage = parsed.get("usage") if isinstance(parsed, dict) else None
    return _int(usage.get("output_tokens")) if isinstance(usage, dict) else None


_READERS = {"anthropic": _anthropic, "openai": _chat, "responses": _responses, "gemini": _gemini}


def usage_of(api: str, event_or_json: Any) -> Usage | None:
    """The upstream's count in one answer or streamed event of ``api`` (apis.py's
    names: "anthropic", "openai" for Chat Completions, "responses", "gemini"), given
    parsed (a dict) or as bytes/str of JSON; None when it carries none (or is not JSON)."""
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
