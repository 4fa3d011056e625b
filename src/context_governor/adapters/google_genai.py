"""Google Gen AI SDK adapter: govern ``contents`` before ``generate_content`` sends them.

The SDK has no hook that runs before every model call, so the lightest honest one
is the call itself: :func:`govern_contents` turns what you would pass to
``client.models.generate_content`` (``contents`` in any form the SDK reads, and the
``config`` with its system instruction, tools, output reserve and cached content)
into the REST body the SDK would send, governs it with
``govern_request(api="gemini")`` and gives back ``contents`` and ``config`` for the
call, with the report. :func:`generate_content` (and :func:`generate_content_async`)
do that and call the SDK.

Your history is never changed: the governed contents are a new list whose unchanged
entries are your own ``Content`` objects. Contents are normalised by the SDK's own
converter (``t_contents``, the one ``generate_content`` uses), so strings, parts and
dicts mean here what they mean to the SDK.

    from google import genai
    from context_governor.adapters.google_genai import generate_content

    client = genai.Client(api_key=...)
    response, report = generate_content(
        client, model="gemini-2.5-flash", contents=history, context_window=200_000
    )
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

try:
    from google.genai import _transformers, types
except ImportError as exc:  # pragma: no cover - exercised only without google-genai
    raise ImportError(
        "context_governor.adapters.google_genai needs google-genai: "
        "pip install 'context-governor[google-genai]'"
    ) from exc

from ..formats import govern_request
from ..policies import Compaction
from ..profiles import Profile
from ..report import Report

__all__ = ["Governed", "generate_content", "generate_content_async", "govern_contents", "to_body"]


@dataclass(frozen=True, slots=True)
class Governed:
    """What to send instead: ``contents`` and ``config`` for ``generate_content``."""

    contents: list[types.Content]
    config: types.GenerateContentConfig | None
    report: Report
    #: the request body that was governed (the REST shape, camelCase)
    body: dict[str, Any]


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


def _tool(tool: Any) -> dict[str, Any]:
    """A tool as the request declares it (a Python function: by its name, for counting)."""
    if hasattr(tool, "model_dump"):
        dumped: dict[str, Any] = _dump(tool)
        return dumped
    name = getattr(tool, "__name__", type(tool).__name__)
    return {"functionDeclarations": [{"name": name, "description": getattr(tool, "__doc__", "")}]}


def _config(config: Any) -> types.GenerateContentConfig | None:
    if config is None or isinstance(config, types.GenerateContentConfig):
        return config
    return types.GenerateContentConfig.model_validate(config)


def to_body(
    contents: list[types.Content], config: types.GenerateContentConfig | None, model: str
) -> dict[str, Any]:
    """The generateContent body for SDK contents and config: what the governance reads."""
    body: dict[str, Any] = {"model": model, "contents": [_dump(c) for c in contents]}
    if config is None:
        return body
    if config.system_instruction is not None:
        contents = _transformers.t_contents(config.system_instruction)
        body["systemInstruction"] = {"parts": [_dump(p) for c in contents for p in c.parts or ()]}
    if config.tools:
        body["tools"] = [_tool(t) for t in config.tools]
    if config.max_output_tokens is not None:
        body["generationConfig"] = {"maxOutputTokens": config.max_output_tokens}
    if config.cached_content is not None:
        body["cachedContent"] = config.cached_content
    return body


def _contents_back(
    governed: list[Any], sent: list[Any], originals: list[types.Content]
) -> list[types.Content]:
    """The governed contents as SDK objects: an unchanged one is the caller's own."""
    by_id = {id(d): c for d, c in zip(sent, originals, strict=True)}
    return [by_id.get(id(d)) or types.Content.model_validate(d) for d in governed]


def _config_back(
    config: types.GenerateContentConfig | None, body: dict[str, Any], out: dict[str, Any]
) -> types.GenerateContentConfig | None:
    if config is None or out.get("systemInstruction") is body.get("systemInstruction"):
        return config
    system = types.Content.model_validate(out["systemInstruction"])
    return config.model_copy(update={"system_instruction": system})


def govern_contents(
    contents: Any,
    config: Any = None,
    *,
    model: str,
    profile: str | Profile | None = None,
    context_window: int | None = None,
    max_tool_result_chars: int | None = None,
    compaction: str | Compaction | None = None,
    count_tokens: Callable[[str], int] | None = None,
) -> Governed:
    """Govern what ``generate_content(model=model, contents=contents, config=config)``
    would send; Gemini's rules (GE-*) hold for the result. ``profile`` defaults to
    "gemini"; the other settings are govern()'s."""
    normalised = _transformers.t_contents(contents)
    checked = _config(config)
    body = to_body(normalised, checked, model)
    result = govern_request(
        body,
        api="gemini",
        profile=profile,
        context_window=context_window,
        max_tool_result_chars=max_tool_result_chars,
        compaction=compaction,
        count_tokens=count_tokens,
    )
    out = result.body
    if out is body:
        return Governed(normalised, checked, result.report, body)
    back = _contents_back(out["contents"], body["contents"], normalised)
    return Governed(back, _config_back(checked, body, out), result.report, out)


def generate_content(
    client: Any, *, model: str, contents: Any, config: Any = None, **governance: Any
) -> tuple[types.GenerateContentResponse, Report]:
    """``client.models.generate_content`` on the governed contents; the response and
    the report. ``governance``: govern_contents()'s settings."""
    governed = govern_contents(contents, config, model=model, **governance)
    response = client.models.generate_content(
        model=model, contents=governed.contents, config=governed.config
    )
    return response, governed.report


async def generate_content_async(
    client: Any, *, model: str, contents: Any, config: Any = None, **governance: Any
) -> tuple[types.GenerateContentResponse, Report]:
    """The same through ``client.aio.models.generate_content``."""
    governed = govern_contents(contents, config, model=model, **governance)
    response = await client.aio.models.generate_content(
        model=model, contents=governed.contents, config=governed.config
    )
    return response, governed.report
