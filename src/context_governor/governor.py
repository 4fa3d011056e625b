"""Governor: one object per conversation, governing before every model call.

A Governor holds the settings of one conversation (profile, model, window,
output reserve, tools) so that callers pass only the messages on each step. Its
output is always what the stateless ``govern()`` returns for the same input and
settings: whatever it remembers between calls is a cache, never a decision.
"""

from __future__ import annotations

from typing import Any

from .inputs import check_tools
from .messages import Message
from .pipeline import GovernResult, govern
from .policies import CompactionPolicy, get_policy
from .profiles import Profile, get_profile


class Governor:
    """Governs one conversation's context before each model call.

    >>> gov = Governor(profile="openai", context_window=32_000)
    >>> result = gov.govern(history)          # doctest: +SKIP
    >>> send(result.messages)                 # doctest: +SKIP

    Settings are checked once, here, so a misconfigured Governor fails at
    construction rather than on the first model call.
    """

    def __init__(
        self,
        *,
        profile: str | Profile = "openai",
        model: str | None = None,
        context_window: int | None = None,
        max_output: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        max_tool_result_chars: int | None = None,
        prefill: bool = False,
        compaction: str | CompactionPolicy | None = None,
    ) -> None:
        self.profile = get_profile(profile)
        self.model = model
        self.context_window = context_window
        self.max_output = max_output
        checked = check_tools(tools)
        self.tools = None if checked is None else list(checked)
        self.max_tool_result_chars = max_tool_result_chars
        self.prefill = prefill
        self.compaction = get_policy(compaction)
        # Validate the numeric settings now, on an empty history.
        self.govern([])

    def govern(
        self, messages: list[Message], *, tools: list[dict[str, Any]] | None = None
    ) -> GovernResult:
        """Govern ``messages`` with this conversation's settings.

        ``tools`` overrides the tools given at construction for this call only
        (agents sometimes change their tool set mid-conversation).
        """
        return govern(
            messages,
            tools=self.tools if tools is None else tools,
            profile=self.profile,
            model=self.model,
            context_window=self.context_window,
            max_output=self.max_output,
            max_tool_result_chars=self.max_tool_result_chars,
            prefill=self.prefill,
            compaction=self.compaction,
        )
