"""pydantic-ai adapter: govern an agent's messages before every model request.

Two hooks, one engine:

* :class:`GovernHistory`, a capability (``Agent(..., capabilities=[GovernHistory(...)])``):
  its ``prepare_model_request`` governs the messages of each request attempt, once
  the serving model is known. It changes only what that request sends: the run's
  message history (``result.all_messages()``) stays whole. This is the one to use.
* :func:`history_processor` / :func:`async_history_processor`, history processors for
  pydantic-ai's ``ProcessHistory`` capability. pydantic-ai replaces the run's stored
  history with what a history processor returns: use them when that is what you want.

Each governs through the edge in ``_pydantic_ai_edge`` (``ModelMessage`` list <->
chat messages, lossless, unchanged parts and messages given back as the same
objects), with one :class:`~context_governor.Governor` per conversation
(pydantic-ai's ``conversation_id``), so a step costs what is new.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Unpack

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import InstructionPart, ModelMessage, ModelRequest
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.tools import ToolDefinition
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without pydantic-ai
    raise ImportError(
        "context_governor.adapters.pydantic_ai needs pydantic-ai: "
        "pip install 'context-governor[pydantic-ai]'"
    ) from exc

from ..counting import TokenCounter
from ..governor import Governor
from ..messages import Message
from ..profiles import Profile
from ..providers import validate
from ..providers.windows import default_window
from ..report import Note, Report, note_kind
from . import _pydantic_ai_edge as edge
from ._model_profile import bare_model, profile_for
from ._report_log import log_report
from ._settings import HookOptions, HookSettings

__all__ = [
    "GovernHistory",
    "Governance",
    "Target",
    "async_history_processor",
    "history_processor",
]

logger = logging.getLogger(__name__)

#: Conversations (and their Governors) kept at once; the least recently used goes first.
MAX_CONVERSATIONS = 64


class _CarryCounter:
    """The profile's counter plus the text of what a chat message carries for the edge
    (thinking, built-in tool parts, files, parts we do not know): counted with it."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    def message_tokens(self, message: Message) -> int:
        tokens = self.inner.message_tokens(message)
        extra = getattr(message.get(edge.CARRY), "extra", "")
        if isinstance(extra, str) and extra:
            tokens += self.inner.message_tokens({"role": "user", "content": extra})
        return tokens

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        return sum(self.message_tokens(m) for m in messages) + self.inner.prompt_tokens([], tools)


def _chat_tools(definitions: Sequence[ToolDefinition]) -> list[dict[str, Any]] | None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description or "",
                "parameters": t.parameters_json_schema,
            },
        }
        for t in definitions
    ]
    return tools or None


@dataclass(frozen=True)
class Target:
    """What one request is governed for (read from the framework's request)."""

    conversation: str | None
    provider: str | None
    model: str | None
    tools: list[dict[str, Any]] | None = None
    instructions: str | None = None
    max_output: int | None = None


@dataclass
class _Conversation:
    governor: Governor
    #: the edge's decode cache: each ModelMessage is decoded once (by identity)
    cache: edge.Cache = field(default_factory=dict)
    #: what the last encode rebuilt (the same objects again when nothing new changed)
    memo: edge.Memo = field(default_factory=edge.Memo)


@dataclass
class Governance(HookSettings):
    """What the hooks share: the settings (see GovernHistory), one Governor per
    conversation, and the edge's decode cache of each."""

    #: the last request's report
    last: Report | None = field(default=None, init=False)
    _conversations: OrderedDict[tuple[Any, ...], _Conversation] = field(
        default_factory=OrderedDict, init=False, repr=False
    )
    _counters: dict[tuple[Any, ...], TokenCounter] = field(
        default_factory=dict, init=False, repr=False
    )
    #: one agent (and its hooks) serves many runs; a sync processor runs in worker threads
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def _governor(
        self, profile: str | Profile, model: str | None, window: int | None, target: Target
    ) -> Governor:
        governor = Governor(
            profile=profile,
            model=model,
            context_window=window,
            max_output=target.max_output,
            tools=target.tools,
            max_tool_result_chars=self.max_tool_result_chars,
            compaction=self.compaction,
            count_tokens=self.count_tokens,
        )
        # The edge's output is pydantic-ai parts, not a Chat Completions body: the
        # target's chat-level key filter does not apply (and would strip the carry).
        settings = governor.settings
        governor.settings = replace(
            settings,
            counter=_CarryCounter(settings.counter),
            policy=replace(settings.policy, allowed_keys=None),
        )
        return governor

    def _counter(self, profile: str | Profile, model: str | None) -> TokenCounter:
        key = (profile if isinstance(profile, str) else id(profile), model)
        counter = self._counters.get(key)
        if counter is None:
            governor = Governor(profile=profile, model=model, count_tokens=self.count_tokens)
            counter = self._counters[key] = governor.settings.counter
        return counter

    def _conversation(self, target: Target) -> tuple[_Conversation, int]:
        """The conversation's Governor (built for these settings) and the instructions'
        tokens, which are counted against the window (the Governor gets what is left)."""
        profile = self.profile or profile_for(target.provider, target.model)
        model = self.model or bare_model(target.model)
        window = self.context_window or default_window(model)[0]
        instructions = 0
        if target.instructions:
            counter = self._counter(profile, model)
            instructions = counter.message_tokens(
                {"role": "system", "content": target.instructions}
            )
        if window is not None:
            window = max(0, window - instructions)
        key: tuple[Any, ...] = (
            target.conversation,
            profile if isinstance(profile, str) else id(profile),
            model,
            window,
            target.max_output,
            json.dumps(target.tools, sort_keys=True, default=str),
        )
        found = self._conversations.get(key)
        if found is None:
            found = self._conversations[key] = _Conversation(
                self._governor(profile, model, window, target)
            )
        self._conversations.move_to_end(key)
        while len(self._conversations) > MAX_CONVERSATIONS:
            self._conversations.popitem(last=False)
        return found, instructions

    def govern(self, messages: list[ModelMessage], target: Target) -> list[ModelMessage]:
        """The governed messages for one request (``messages`` itself when nothing changed).
        Thread-safe: runs of one agent may share it (a Governor is not thread-safe)."""
        with self._lock:
            return self._govern(messages, target)

    def _govern(self, messages: list[ModelMessage], target: Target) -> list[ModelMessage]:
        conversation, instructions = self._conversation(target)
        cache = conversation.cache
        chats = edge.decode(messages, cache)
        if not chats:
            return messages  # nothing with a chat form (no messages, or only settings deltas)
        # Keep only what this history still holds: the cache never outgrows the conversation.
        live = {id(m) for m in messages}
        for stale in [k for k in cache if k not in live]:
            del cache[stale]
        result = conversation.governor.govern(chats)
        report = _judged(result.report, result.messages, conversation.governor)
        if instructions and report.context_window is not None:
            # A copy: the Governor keeps its report to extend on the next step.
            note = (
                f"instructions ({instructions} tokens) counted against the window: the "
                f"history was governed in the {report.context_window} tokens left"
            )
            report = replace(report, notes=[*report.notes, note])
        self.last = report
        _log(report)
        if self.on_report is not None:
            self.on_report(report)
        if result.messages is chats:
            return messages
        out = edge.encode(result.messages, chats, conversation.memo)
        conversation.memo.keep_only(result.messages, messages)
        return out


def _judged(report: Report, messages: Sequence[Message], governor: Governor) -> Report:
    """The report with the target's rules judged on what is sent: the chat view without
    the edge's private key (which a provider that rejects unknown keys, such as Groq or
    GLM, would otherwise be reported as getting). A copy when that changes anything:
    the Governor keeps its report to extend on the next step."""
    if not report.violations or report.provider is None:
        return report
    sent = [{k: v for k, v in m.items() if k != edge.CARRY} for m in messages]
    found = [
        asdict(v)
        for v in validate(sent, provider=report.provider, model=report.model, tools=governor.tools)
    ]
    notes = [n for n in report.notes if note_kind(n) != "rule"]
    notes += [
        Note(
            f"rule not met: {v['rule']} at message {v['index']} of the output: {v['error']}", "rule"
        )
        for v in found
    ]
    return replace(report, violations=found, notes=notes)


def _log(report: Report) -> None:
    log_report(logger, report, "messages")


def _last_instructions(messages: Sequence[ModelMessage]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            return message.instructions
    return None


def _processor_target(ctx: RunContext[Any], messages: Sequence[ModelMessage]) -> Target:
    model = ctx.model
    return Target(
        conversation=ctx.conversation_id,
        provider=getattr(model, "system", None),
        model=getattr(model, "model_name", None),
        instructions=_last_instructions(messages),
    )


#: A history processor as pydantic-ai calls it, once per request.
_Processor = Callable[[RunContext[Any], list[ModelMessage]], list[ModelMessage]]


def history_processor(**settings: Unpack[HookOptions]) -> _Processor:
    """A (sync) history processor that governs the history: ``ProcessHistory(history_processor())``.

    Takes the hook settings (``profile``, ``model``, ``context_window``,
    ``max_tool_result_chars``, ``compaction``, ``count_tokens``, ``on_report``; see
    :class:`GovernHistory`), all optional and by keyword. pydantic-ai stores what a
    history processor returns as the run's history: the governed one. Tool definitions
    are not visible to a processor (they are not counted); :class:`GovernHistory`
    counts them and leaves the history alone. The engine is its ``.governance``.
    """
    governance = Governance(**settings)

    def govern_history(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        return governance.govern(messages, _processor_target(ctx, messages))

    govern_history.governance = governance  # type: ignore[attr-defined]
    return govern_history


def async_history_processor(
    **settings: Unpack[HookOptions],
) -> Callable[[RunContext[Any], list[ModelMessage]], Awaitable[list[ModelMessage]]]:
    """:func:`history_processor` as a coroutine function (pydantic-ai awaits it in the
    event loop instead of running it in a worker thread): the same settings, and the
    sync processor's engine as its ``.governance``."""
    process = history_processor(**settings)

    async def govern_history(
        ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        return process(ctx, messages)

    govern_history.governance = process.governance  # type: ignore[attr-defined]
    return govern_history


@dataclass
class GovernHistory(HookSettings, AbstractCapability[Any]):
    """Governs the messages of every model request; the run's history stays whole.

    ``profile`` is the target's rules (default: from the serving model's provider and
    name: an Anthropic model -> "anthropic", Gemini -> "gemini", ..., else
    "openai"); ``model`` overrides its name; ``context_window`` its published window.
    The other settings are govern()'s. The request's tool definitions and
    instructions are counted against the window. Each request's report goes to
    ``on_report`` and a summary to this module's logger; ``last`` is the last one.
    """

    _governance: Governance | None = field(default=None, init=False, repr=False)

    @property
    def governance(self) -> Governance:
        """The engine: its conversations and their Governors."""
        if self._governance is None:
            self._governance = Governance(
                self.profile,
                self.model,
                self.context_window,
                self.max_tool_result_chars,
                self.compaction,
                self.count_tokens,
                self.on_report,
            )
        return self._governance

    @property
    def last(self) -> Report | None:
        return self.governance.last

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds callables and state: not part of a serialized agent spec

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        model = request_context.model
        params = request_context.model_request_parameters
        instructions = InstructionPart.join(params.instruction_parts or [])
        if instructions is None:
            instructions = _last_instructions(request_context.messages)
        max_tokens = (request_context.model_settings or {}).get("max_tokens")
        target = Target(
            conversation=ctx.conversation_id,
            provider=getattr(model, "system", None),
            model=getattr(model, "model_name", None),
            tools=_chat_tools([*params.function_tools, *params.output_tools]),
            instructions=instructions,
            max_output=max_tokens if isinstance(max_tokens, int) else None,
        )
        messages = self.governance.govern(request_context.messages, target)
        if messages is not request_context.messages:
            request_context.messages = messages  # this request only (pydantic-ai's contract)
        return request_context
