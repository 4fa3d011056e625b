"""The summarizer: any callable, sync or async, from messages to text.

govern() is synchronous, so a summarizer is called synchronously, once, when a
cut that has no stored summary is first needed, on a worker thread with a
timeout (an async summarizer runs in its own event loop on that thread, so
govern() may be called from inside a running loop, as the runner and the proxy
do). A summarizer that raises, returns something other than non-empty text, or
does not answer within the timeout gives no summary: the cut falls back to the
plain note and the report says why. A late answer is thrown away.

``model_summarizer`` is the built-in one: it asks one of the runner's model
clients (llm/), with a prompt that keeps what an agent needs to go on.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from ..messages import Message, content_text

__all__ = [
    "MAX_MESSAGE_CHARS",
    "SUMMARY_PROMPT",
    "Answer",
    "Summarizer",
    "SummarizerError",
    "SummaryClient",
    "call_summarizer",
    "model_summarizer",
    "transcript",
]

Summarizer = Callable[[list[Message]], "str | Awaitable[str]"]
"""Messages (the block being cut, led by the previous summary if any) -> summary text."""

#: The built-in summarizer's instructions. What an agent needs to continue after the
#: cut: the task, what was decided, what was touched, what is still open, and the
#: tool results later turns may still refer to.
SUMMARY_PROMPT = """\
You write the memory of an AI agent. The transcript below is the older part of \
the agent's conversation; it is about to be removed from the agent's context and \
replaced by your summary. The agent will continue the task with only your summary \
and the newer messages, so keep everything it needs, tersely:
- the task and the user's requests, constraints and preferences, in their own words where exact;
- decisions made and why, and approaches that were tried and failed;
- files, paths, URLs, identifiers, commands and values touched or found;
- tool results still relevant (numbers, names, error messages), quoted exactly;
- open problems, pending steps and promises made to the user.
If the transcript starts with an earlier summary, fold it in: your summary replaces it.
Write plain text, no preamble, in the transcript's language."""

#: Characters of one message kept in the transcript the built-in summarizer sees.
MAX_MESSAGE_CHARS = 20_000


class Answer(Protocol):
    """A model's answer, as model_summarizer reads it (llm's ModelResponse is one)."""

    @property
    def text(self) -> str: ...


class SummaryClient(Protocol):
    """What model_summarizer needs of a model client: every client of llm/ is one
    (OpenAICompatClient, AnthropicClient, ResponsesClient, ScriptedModel)."""

    async def complete(
        self, messages: Sequence[Message], *, max_tokens: int | None = None
    ) -> Answer: ...


class SummarizerError(Exception):
    """The summarizer gave no usable summary (it raised, timed out or returned junk)."""


def _message_text(message: Message) -> str:
    content = message.get("content")
    text = content_text(content) if not isinstance(content, str) else content
    if not text and content not in (None, "", []):
        text = json.dumps(content, ensure_ascii=False, default=str)
    parts = [text] if text else []
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                parts.append(f"[calls {fn.get('name')}({fn.get('arguments')})]")
    joined = "\n".join(parts)
    if len(joined) > MAX_MESSAGE_CHARS:
        joined = joined[:MAX_MESSAGE_CHARS] + " [...]"
    return joined


def transcript(messages: Sequence[Message]) -> str:
    """The messages as a plain-text transcript: one summarizer request, legal for any
    provider (no tool pairing to get wrong, no tools to declare)."""
    lines = []
    for message in messages:
        role = str(message.get("role"))
        if role == "tool":
            role = f"tool result ({message.get('name') or message.get('tool_call_id')})"
        lines.append(f"## {role}\n{_message_text(message)}")
    return "\n\n".join(lines)


def model_summarizer(
    make_client: Callable[[], SummaryClient],
    *,
    max_tokens: int = 1024,
    prompt: str = SUMMARY_PROMPT,
    name: str | None = None,
) -> Callable[[list[Message]], Awaitable[str]]:
    """A summarizer that asks a model client of llm/ (OpenAI-compatible, Anthropic or
    Responses) to summarize a transcript of the messages.

    ``make_client`` makes a fresh client for each summary: a summary is made on its own
    event loop (see the module docstring), and an HTTP client belongs to the loop it was
    first used on. Summaries are rare (one per compaction), so this costs little.
    """

    async def summarize(messages: list[Message]) -> str:
        request: list[Message] = [
            {"role": "system", "content": prompt},
            {"role": "user", "content": transcript(messages)},
        ]
        client = make_client()
        aclose = getattr(client, "aclose", None)
        try:
            response = await client.complete(request, max_tokens=max_tokens)
        finally:
            if callable(aclose):
                await aclose()
        return response.text

    summarize.__qualname__ = name or f"model_summarizer({getattr(make_client, '__qualname__', '')})"
    return summarize


def _call(summarizer: Callable[[list[Message]], Any], messages: list[Message]) -> Any:
    result = summarizer(messages)
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


def call_summarizer(
    summarizer: Callable[[list[Message]], Any],
    messages: list[Message],
    timeout: float,
    budget: float | None = None,
) -> str:
    """The summarizer's text for ``messages`` within ``timeout`` seconds, or SummarizerError
    saying what went wrong. The call runs on a daemon thread: one that never returns is
    abandoned, and does not keep the process from exiting. ``budget`` is the timeout
    the report names (when ``timeout`` is what is left of it)."""
    done = threading.Event()
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append((True, _call(summarizer, messages)))
        except BaseException as exc:  # reported to the caller, whatever it is
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=work, name="summarizer", daemon=True).start()
    if not done.wait(timeout):
        raise SummarizerError(f"no answer within {budget or timeout:g}s")
    ok, value = outcome[0]
    if not ok:
        raise SummarizerError(f"it failed ({value!r})")
    if not isinstance(value, str) or not value.strip():
        raise SummarizerError(f"it returned {type(value).__name__} {str(value)[:40]!r}, not text")
    return value.strip()
