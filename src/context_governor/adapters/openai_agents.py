"""OpenAI Agents SDK adapter: govern the input items before every model call of a run.

The SDK hands ``RunConfig.call_model_input_filter`` the items it is about to send
(``ModelInputData.input``, Responses API items, whatever model class serves the
agent) and the agent's instructions, and sends what the filter returns. This
adapter builds a Responses request body from them, governs it through the
Responses edge (``govern_request(api="responses")``: lossless, unknown items kept
and counted) and returns the governed items::

    from agents import Agent, RunConfig, Runner
    from context_governor.adapters.openai_agents import GovernInput

    config = RunConfig(call_model_input_filter=GovernInput(context_window=32_000))
    result = await Runner.run(agent, "Fix the bug", run_config=config)

Unchanged items are returned as the SDK's own objects (the SDK matches them to
its pending input by identity), the SDK's stored history (``result.to_input_list()``,
sessions) is never changed: the filter only shapes what one model call sees.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

try:
    from agents.models import get_default_model
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool import FunctionTool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the SDK
    raise ImportError(
        "context_governor.adapters.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'context-governor[openai-agents]'"
    ) from exc

from ..formats import RequestResult, govern_request
from ..report import Report
from ._model_profile import bare_model, profile_for
from ._report_log import log_report
from ._settings import HookSettings

__all__ = ["GovernInput", "request_body"]

logger = logging.getLogger(__name__)

#: The SDK's placeholder id on items from models that assign none (Chat Completions,
#: LiteLLM): every such item has it, and the SDK's own Responses client deletes it
#: before sending (agents.models.fake_id.FAKE_RESPONSES_ID).
PLACEHOLDER_ID = "__fake_id__"


def _model_name(agent: Any, override: str | None) -> str | None:
    """The agent's model name: a string model, a model object's ``model`` attribute,
    or the SDK's default model."""
    if override:
        return override
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    if isinstance(name, str):
        return name
    if model is None:
        return str(get_default_model())
    return None


def _function_tools(agent: Any) -> list[dict[str, Any]]:
    """The agent's function tools as Responses tool definitions (counted as prompt).
    Hosted tools and handoffs are small and not counted."""
    tools = []
    for tool in getattr(agent, "tools", None) or ():
        if isinstance(tool, FunctionTool):
            tools.append(
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.params_json_schema,
                    "strict": tool.strict_json_schema,
                }
            )
    return tools


def _plain(items: Sequence[Any]) -> tuple[list[Any], dict[int, Any]]:
    """The items as the Responses API would get them: placeholder ids removed (they
    would read as duplicate ids, RS-6, but are never sent), pydantic items dumped.
    Returns the list and, for each stand-in, the SDK's own item (by the stand-in's id)."""
    plain: list[Any] = []
    originals: dict[int, Any] = {}
    for item in items:
        stand_in = item
        if isinstance(item, dict) and item.get("id") == PLACEHOLDER_ID:
            stand_in = {k: v for k, v in item.items() if k != "id"}
        elif hasattr(item, "model_dump") and not isinstance(item, dict):
            stand_in = item.model_dump(exclude_unset=True)
        if stand_in is not item:
            originals[id(stand_in)] = item
        plain.append(stand_in)
    return plain, originals


#: What the report names as the server-side state of a server-managed run.
SERVER_SIDE = "(managed by the Agents SDK run)"


def request_body(
    data: CallModelData[Any], *, model: str | None = None, server_side: bool = False
) -> tuple[dict[str, Any], dict[int, Any]]:
    """The Responses request body a model call's input stands for, and the map from
    the body's stand-in items back to the SDK's own (see :func:`_plain`).

    ``server_side``: the run continues a conversation kept by the server
    (``previous_response_id``, ``conversation_id``, ``auto_previous_response_id``), so
    the SDK sends only the new items; the body says so, and an output whose call is
    on the server is kept rather than dropped as an orphan."""
    items, originals = _plain(data.model_data.input)
    body: dict[str, Any] = {"input": items}
    if server_side:
        body["previous_response_id"] = SERVER_SIDE
    name = _model_name(data.agent, model)
    if name:
        body["model"] = name
    if data.model_data.instructions is not None:
        body["instructions"] = data.model_data.instructions
    tools = _function_tools(data.agent)
    if tools:
        body["tools"] = tools
    settings = getattr(data.agent, "model_settings", None)
    max_tokens = getattr(settings, "max_tokens", None)
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens >= 0:
        body["max_output_tokens"] = max_tokens
    return body, originals


def _log(report: Report) -> None:
    log_report(logger, report, "items")


@dataclass
class GovernInput(HookSettings):
    """A ``call_model_input_filter`` that governs every model call of a run.

    ``profile`` is the target's rules; by default it follows the agent's model name
    (``claude-...`` -> "anthropic", a LiteLLM "provider/model" -> that provider,
    else "openai"). ``model`` overrides the agent's model name (the window and
    model-specific rules come from it); ``context_window`` overrides the model's
    published window. The other settings are govern()'s. Each call's report goes
    to ``on_report`` and a summary to this module's logger; the last one is kept
    as ``last``. Whatever serves the agent, the items follow the Responses API's
    rules (pairing, reasoning adjacency, call id length, no duplicate ids).

    Set ``server_side=True`` for runs whose conversation the server keeps
    (``previous_response_id``, ``conversation_id``, ``auto_previous_response_id``): the
    SDK then sends only the new items, whose outputs may answer calls the filter
    cannot see. The filter cannot tell such a run from the call data alone.
    """

    server_side: bool = False
    last: RequestResult | None = None

    def govern(self, data: CallModelData[Any]) -> tuple[RequestResult, dict[int, Any]]:
        """The governed request for one model call (the body as built by request_body)."""
        body, originals = request_body(data, model=self.model, server_side=self.server_side)
        name = body.get("model")
        profile = self.profile or profile_for(None, name)
        result = govern_request(
            body,
            api="responses",
            profile=profile,
            model=bare_model(name),
            context_window=self.context_window,
            max_tool_result_chars=self.max_tool_result_chars,
            compaction=self.compaction,
            count_tokens=self.count_tokens,
        )
        return result, originals

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        result, originals = self.govern(data)
        self.last = result
        _log(result.report)
        if self.on_report is not None:
            self.on_report(result.report)
        if not result.report.changed:
            return data.model_data  # nothing to do: the SDK's own list, as it came
        items = result.body.get("input")
        assert isinstance(items, list)  # request_body sends a list; the edge keeps its shape
        governed: list[Any] = [originals.get(id(item), item) for item in items]
        return ModelInputData(
            input=governed,
            instructions=result.body.get("instructions"),
        )
