"""LiteLLM adapter: a ``CustomLogger`` that governs ``messages`` before each model call.

LiteLLM takes OpenAI chat-completions messages for every provider, which is
what the pipeline reads, so there is no conversion: the hook governs the
request's ``messages`` with the profile of the provider LiteLLM routes the
model to, and the window LiteLLM's model info gives for it.

Which hook can change messages (read from litellm's source, 1.110):

* ``log_pre_api_call`` / ``async_log_pre_api_call`` are for logging: what they
  return is ignored.
* ``async_pre_call_deployment_hook(kwargs, call_type)`` runs in the SDK's async
  wrapper (``litellm.acompletion``, and so the Router and the proxy, which call it)
  after the deployment is chosen and before the request is built; the kwargs it
  returns are the call's. This is the hook: it sees the real model
  (``anthropic/claude-…``, not a proxy alias).
* ``async_pre_call_hook(user_api_key_dict, cache, data, call_type)`` runs in the
  proxy only, before routing; ``data["model"]`` may be a model-group alias there.
  It governs when the name resolves to a provider, and lets the deployment hook do
  it otherwise (governing is idempotent, so a request governed by both is sent as
  governed once).
* The sync ``litellm.completion`` runs neither hook for chat calls (only
  prompt-management hooks, which need a ``prompt_id``), so for sync calls pass the
  kwargs through :meth:`ContextGovernorHook.govern_kwargs` yourself.

A Governor is kept per conversation when the call names one
(``litellm_session_id``, or ``metadata["session_id"]``); other calls are governed
statelessly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

try:
    import litellm
    from litellm.integrations.custom_logger import CustomLogger
except ImportError as exc:  # pragma: no cover - exercised only without litellm
    raise ImportError(
        "context_governor.adapters.litellm needs litellm: pip install 'context-governor[litellm]'"
    ) from exc

from ..errors import InputError
from ..profiles import Profile
from ..report import Report
from ._conversations import DEFAULT_CONVERSATIONS, Conversations
from ._model_profile import named_profile

__all__ = ["ContextGovernorHook", "profile_for"]

#: The call types whose ``messages`` are chat messages.
_CHAT_CALLS = frozenset({"completion", "acompletion"})


def profile_for(provider: str, model: str) -> str:
    """Our profile for a model LiteLLM routes to ``provider``."""
    if provider.startswith("vertex_ai") and "claude" in model.lower():
        return "anthropic"  # Claude on Vertex AI speaks Anthropic's rules
    return named_profile(provider)


def _route(kwargs: Mapping[str, Any]) -> tuple[str, str] | None:
    """(provider, model without its provider prefix), or None when LiteLLM cannot tell."""
    model = kwargs.get("model")
    if not isinstance(model, str) or not model:
        return None
    provider = kwargs.get("custom_llm_provider")
    try:
        name, found, _, _ = litellm.get_llm_provider(
            model=model,
            custom_llm_provider=provider if isinstance(provider, str) else None,
            api_base=kwargs.get("api_base") if isinstance(kwargs.get("api_base"), str) else None,
        )
    except Exception:  # LiteLLM raises BadRequestError for a name it cannot route
        return None
    return (str(found), str(name)) if found else None


def _window(model: str, provider: str) -> int | None:
    """The model's input window from LiteLLM's model info, if it has one."""
    try:
        info = litellm.get_model_info(model=model, custom_llm_provider=provider)
    except Exception:  # an unknown model: LiteLLM raises rather than returning None
        return None
    for key in ("max_input_tokens", "max_tokens"):
        found = info.get(key)
        if isinstance(found, int) and not isinstance(found, bool) and found > 0:
            return found
    return None


def _as_dict(message: Any) -> Any:
    """A message object (LiteLLM's ``Message``, a pydantic model) as a chat dict; a
    dict (or anything else, which the input check reports) as it is."""
    if isinstance(message, dict) or not hasattr(message, "model_dump"):
        return message
    dumped = message.model_dump()
    return {k: v for k, v in dumped.items() if v is not None or k == "content"}


def _session(kwargs: Mapping[str, Any]) -> str | None:
    found = kwargs.get("litellm_session_id")
    if found is None:
        metadata = kwargs.get("metadata")
        found = metadata.get("session_id") if isinstance(metadata, Mapping) else None
    return None if found is None else str(found)


class ContextGovernorHook(CustomLogger):
    """Governs the ``messages`` of every chat call LiteLLM makes.

        litellm.callbacks = [ContextGovernorHook()]

    ``profile``, ``context_window`` and ``max_output`` override what the call's
    model implies; other keyword arguments are Governor settings
    (``max_tool_result_chars``, ``compaction``, ...). ``on_report`` gets each call's
    report.
    """

    def __init__(
        self,
        *,
        profile: str | Profile | None = None,
        context_window: int | None = None,
        max_output: int | None = None,
        on_report: Callable[[Report], None] | None = None,
        max_conversations: int = DEFAULT_CONVERSATIONS,
        **governor_settings: Any,
    ) -> None:
        super().__init__()
        self.profile = profile
        self.context_window = context_window
        self.max_output = max_output
        self.on_report = on_report
        self.governor_settings = governor_settings
        #: the Governors, one per session (``conversations.get(session_id)``)
        self.conversations = Conversations(max_conversations)

    def settings_for(self, kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The Governor settings for a call, or None when its model cannot be routed."""
        route = _route(kwargs)
        if route is None:
            return None
        provider, model = route
        output = kwargs.get("max_completion_tokens", kwargs.get("max_tokens"))
        window = self.context_window
        if window is None:
            window = _window(model, provider)
        return {
            **self.governor_settings,
            "profile": self.profile if self.profile is not None else profile_for(provider, model),
            "model": model,
            "context_window": window,
            "max_output": self.max_output if self.max_output is not None else output,
        }

    def govern_kwargs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The call's kwargs with ``messages`` governed (a new dict; ``kwargs`` and its
        messages are not modified). For sync calls:
        ``litellm.completion(**hook.govern_kwargs({"model": ..., "messages": ...}))``.

        A call whose model LiteLLM cannot route is returned unchanged.
        """
        settings = self.settings_for(kwargs)
        messages = kwargs.get("messages")
        if settings is None or messages is None:
            return dict(kwargs)
        if not isinstance(messages, list):
            raise InputError("messages", f"expected a list, got {type(messages).__name__}")
        tools = kwargs.get("tools")
        result = self.conversations.govern(
            _session(kwargs),
            settings,
            [_as_dict(m) for m in messages],
            tools if isinstance(tools, list) and tools else None,
        )
        if self.on_report is not None:
            self.on_report(result.report)
        return {**kwargs, "messages": result.messages}

    # -- LiteLLM's hooks ------------------------------------------------------------------

    async def async_pre_call_deployment_hook(
        self, kwargs: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """The SDK's (and Router's) hook: govern chat calls, leave others alone."""
        if _call_name(call_type) not in _CHAT_CALLS:
            return None
        return self.govern_kwargs(kwargs)

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any] | None:
        """The proxy's hook: govern when the model name routes to a provider."""
        if _call_name(call_type) not in _CHAT_CALLS or _route(data) is None:
            return None
        return self.govern_kwargs(data)


def _call_name(call_type: Any) -> str:
    """A call type (LiteLLM passes an enum member or its value) as its name."""
    return str(getattr(call_type, "value", call_type))
