"""``GovernorMiddleware``: governs every model call of a ``langchain.agents.create_agent`` agent.

Why ``wrap_model_call`` and not ``before_model``: ``before_model`` returns a
*state update*, which the ``messages`` reducer merges into the graph's stored
history, so the only way to shorten what the model sees there is to rewrite the
history itself (``RemoveMessage``). ``wrap_model_call`` receives the
``ModelRequest`` the agent built for this one call and hands the model a copy
(``request.override(messages=..., system_message=...)``); the graph state never
sees it. The agent's stored history therefore stays complete, and each call is
governed afresh from it (incrementally: a Governor per LangGraph thread).

Imported on first use of ``context_governor.adapters.langchain.GovernorMiddleware``,
so that the LCEL runnable needs only langchain-core (_langchain_core.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest
    from langchain_core.messages import SystemMessage
except ImportError as exc:  # pragma: no cover - exercised only without langchain
    raise ImportError(
        "GovernorMiddleware needs langchain (v1): pip install 'context-governor[langchain]'"
    ) from exc

from ..profiles import Profile
from ..report import Report
from ._conversations import DEFAULT_CONVERSATIONS, Conversations, thread_id
from ._langchain_core import govern_messages, target_of, tool_dicts


class GovernorMiddleware(AgentMiddleware[Any, Any, Any]):
    """Governs the messages of every model call; never the agent's stored history.

        agent = create_agent(model, tools, middleware=[GovernorMiddleware()])

    The target is read from the model of each call (its provider mapped to our
    profile, its name, its ``profile["max_input_tokens"]`` or known window, its
    ``max_tokens``); any of ``profile``, ``model``, ``context_window`` and
    ``max_output`` given here wins. ``on_report`` gets each call's report. The
    agent's system prompt is governed with the messages (it counts against the
    budget, and providers have rules about system messages).
    """

    def __init__(
        self,
        *,
        profile: str | Profile | None = None,
        model: str | None = None,
        context_window: int | None = None,
        max_output: int | None = None,
        on_report: Callable[[Report], None] | None = None,
        max_conversations: int = DEFAULT_CONVERSATIONS,
        **governor_settings: Any,
    ) -> None:
        super().__init__()
        self._given = {
            "profile": profile,
            "model": model,
            "context_window": context_window,
            "max_output": max_output,
        }
        self._extra = governor_settings
        self.on_report = on_report
        #: the Governors, one per LangGraph thread (``conversations.get(thread_id)``)
        self.conversations = Conversations(max_conversations)

    def _settings(self, request: ModelRequest[Any]) -> dict[str, Any]:
        target = target_of(request.model)
        found = {
            "profile": target.profile,
            "model": target.model,
            "context_window": target.context_window,
            "max_output": request.model_settings.get("max_tokens", target.max_output),
        }
        given = {k: v for k, v in self._given.items() if v is not None}
        return {**self._extra, **found, **given}

    def governed(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request with its system message and messages governed (for the model only)."""
        system = request.system_message
        history = [system, *request.messages] if system is not None else list(request.messages)
        tools = tool_dicts(request.tools)
        settings = self._settings(request)
        out, result = govern_messages(
            lambda dicts: self.conversations.govern(thread_id(), settings, dicts, tools),
            history,
        )
        if self.on_report is not None:
            self.on_report(result.report)
        if system is not None and out and isinstance(out[0], SystemMessage):
            return request.override(system_message=out[0], messages=cast(Any, out[1:]))
        return request.override(system_message=None, messages=cast(Any, out))

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Any],
    ) -> Any:
        return handler(self.governed(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[Any]],
    ) -> Any:
        return await handler(self.governed(request))
