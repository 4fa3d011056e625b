"""Reading the upstream's "your request is too long" into the window it has.

When our window for a model is wrong (a family default, a model newer than any table,
a server started with a smaller context), the upstream refuses the request and, in
most wordings, says its limit and often its own count of the prompt. The texts this
module reads were collected from real answers (each quoted, with where it was seen,
in tests/data/refusals.json):

- Anthropic (and Bedrock's ValidationException): ``prompt is too long: 219898 tokens
  > 200000 maximum``; ``input length and `max_tokens` exceed context limit: 189136 +
  20000 > 204648, ...``;
- OpenAI Chat Completions, vLLM, LiteLLM, OpenRouter: ``This model's maximum context
  length is 128000 tokens. However, your messages resulted in 130043 tokens`` (or
  ``you requested 4120 tokens (3120 in the messages, 1000 in the completion)``,
  ``you requested about 42832 tokens (42832 of text input)``, ``8238 in your prompt``);
  LiteLLM's own check: ``Input tokens exceed the configured limit of 272000 tokens``;
- SGLang: ``The input (61709 tokens) is longer than the model's context length (40960
  tokens)``; ``Requested token count exceeds the model's maximum context length of
  202752 tokens. You requested a total of 202941 tokens: 170941 tokens from the input
  messages and 32000 tokens for the completion``;
- Gemini: ``The input token count (1200293) exceeds the maximum number of tokens allowed
  (1048576).`` (the count is sometimes left out);
- llama.cpp's server: ``{"error": {"type": "exceed_context_size_error",
  "n_prompt_tokens": 14429, "n_ctx": 8192, ...}}``.

A refusal that names no limit (the Responses API's "Your input exceeds the context
window of this model", an old llama.cpp's "try increasing it") yields None and is
relayed as it came. Ollama does not refuse: it truncates the prompt itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_BODY", "MAX_LIMIT", "MIN_LIMIT", "Refusal", "refusal_in_text", "refusal_of"]

#: Error bodies longer than this are not read for a limit (a refusal is a short JSON).
MAX_BODY = 64 * 1024
#: A limit outside this range is not believed (a misread number, or a body of another kind).
MIN_LIMIT = 256
MAX_LIMIT = 100_000_000


@dataclass(frozen=True, slots=True)
class Refusal:
    """The upstream's word: ``limit`` is its window (prompt plus reserved output),
    ``prompt_tokens`` its count of our prompt when it said it."""

    limit: int
    prompt_tokens: int | None = None


_N = r"([0-9][0-9,]*)"
#: (pattern, group of the limit, group of the prompt count or 0), tried in order.
_PATTERNS: tuple[tuple[re.Pattern[str], int, int], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), limit, prompt)
    for pattern, limit, prompt in (
        (rf"prompt is too long: {_N} tokens > {_N} maximum", 2, 1),
        (rf"input length and `?max_tokens`? exceed context limit: {_N} \+ {_N} > {_N}", 3, 1),
        (rf"input token count(?: \({_N}\))? exceeds the maximum number of tokens allowed"
         rf" \({_N}\)", 2, 1),
        (rf"the input \({_N} tokens\) is longer than the model's context length \({_N}"
         r" tokens\)", 2, 1),
        (rf"maximum context length (?:is|of) {_N} tokens", 1, 0),
        (rf"input tokens exceed the configured limit of {_N} tokens", 1, 0),
    )
)  # fmt: skip
#: Where the OpenAI-style wordings give the prompt's own count (after the limit).
_PROMPT_COUNTS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"your messages resulted in {_N} tokens",  # messages and functions: the prompt
        rf"{_N} in the messages",
        rf"{_N} of text input",
        rf"{_N} in your prompt",
        rf"{_N} tokens from the input messages",
    )
)


def _number(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.replace(",", ""))
    except ValueError:
        return None


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string in a parsed body (error messages can be nested: a gateway wraps
    the provider's error in its own)."""
    if depth > 8:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def _llama_cpp(value: Any) -> Refusal | None:
    error = value.get("error") if isinstance(value, dict) else None
    if not isinstance(error, dict):
        return None
    limit = error.get("n_ctx")
    if isinstance(limit, bool) or not isinstance(limit, int):
        return None
    prompt = error.get("n_prompt_tokens")
    count = prompt if isinstance(prompt, int) and not isinstance(prompt, bool) else None
    return Refusal(limit, count)


def refusal_in_text(text: str) -> Refusal | None:
    """The limit (and the prompt's count) one message states, or None."""
    for pattern, limit_group, prompt_group in _PATTERNS:
        found = pattern.search(text)
        if found is None:
            continue
        limit = _number(found.group(limit_group))
        if limit is None:
            continue
        prompt = _number(found.group(prompt_group)) if prompt_group else None
        if prompt is None:
            rest = text[found.end() :]
            for counted in _PROMPT_COUNTS:
                match = counted.search(rest) or counted.search(text)
                if match is not None:
                    prompt = _number(match.group(1))
                    break
        return Refusal(limit, prompt)
    return None


def refusal_of(body: bytes) -> Refusal | None:
    """The refusal in an upstream's error body (JSON or text), or None when it says no
    limit we can read (then the answer is relayed as it came)."""
    if not body or len(body) > MAX_BODY:
        return None
    text = body.decode("utf-8", "replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    found = _llama_cpp(parsed)
    if found is None:
        texts = list(_strings(parsed)) if parsed is not None else [text]
        found = next((r for r in map(refusal_in_text, texts) if r is not None), None)
    if found is None or not MIN_LIMIT <= found.limit <= MAX_LIMIT:
        return None
    if found.prompt_tokens is not None and found.prompt_tokens <= 0:
        return Refusal(found.limit)
    return found
