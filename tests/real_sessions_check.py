"""An independent check of a governed body: legal for its API, its size by each
provider's documented rules, and no tool result lost without a word in the report.

Written apart from the library's validators (it imports nothing of
``context_governor.providers`` or ``context_governor.formats.*_rules``): its own few
rules per API, its own image rules, and tiktoken's encodings for text (through the
library's loader, which only loads them offline).

Token counts here are estimates in the spirit of each provider's documentation:

* text: ``cl100k_base`` for Claude (no public Claude tokenizer), ``o200k_base`` for the
  others (Gemini's tokenizer is not public either), plus 4 tokens per message;
* images: Anthropic ceil(w*h/750) after fitting the long edge in 1568 px and the area
  in about 1.15 megapixels; OpenAI 85 + 170 per 512-px tile after fitting in 2048 px and
  the short side in 768 px (85 flat for ``detail: low``; 70 + 140 for GPT-5; the mini
  and nano models: 32-px patches, at most 1536, times the model's multiplier); Gemini 258 per image up to
  384 px, else 258 per 768-px tile (Gemini 2.x), 1120 per image (Gemini 3's default
  ``media_resolution``);
* an image given by URL is not fetched: it is taken to be 800 x 600;
* opaque state (thinking signatures, ``redacted_thinking`` data, Gemini thought
  signatures, encrypted reasoning of earlier turns) counts nothing: the model does not
  read it as text. A Responses reasoning item after the user's newest message (the tool
  loop in progress) counts the reasoning it carries: its ``encrypted_content`` is ~1,000
  characters of envelope plus ~5.8 per reasoning token, and the upstream's usage of the
  next request grows by those tokens (six real Codex sessions, docs/token-counting.md).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import imagesize

from context_governor.counting import counting_encoding
from context_governor.counting._encodings import count_ordinary

PER_MESSAGE = 4

# ------------------------------------------------------------------ legality


def legality(api: str, body: dict[str, Any]) -> list[str]:
    """What the provider would reject in ``body``, in words; [] when legal."""
    return {
        "anthropic": _anthropic_problems,
        "openai": _chat_problems,
        "responses": _responses_problems,
        "gemini": _gemini_problems,
    }[api](body)


def _is_empty(content: Any) -> bool:
    if content is None:
        return True
    if isinstance(content, str):
        return content.strip() == ""
    if isinstance(content, list):
        return len(content) == 0
    return False


def _anthropic_problems(body: dict[str, Any]) -> list[str]:
    messages = body.get("messages") or []
    if not messages:
        return ["messages: empty"]
    return _anthropic_turn_problems(messages) + _anthropic_pairing_problems(messages)


def _anthropic_turn_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Roles and contents: a user first, the roles alternating, nothing empty (but a
    last assistant message, the prefill)."""
    out = []
    if messages[0].get("role") != "user":
        out.append(f"messages[0]: first message is {messages[0].get('role')!r}, not 'user'")
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            out.append(f"messages[{i}]: role {role!r}")
        if i and role == messages[i - 1].get("role"):
            out.append(f"messages[{i}]: two {role!r} messages in a row")
        content = message.get("content")
        last = i == len(messages) - 1
        if _is_empty(content) and not (last and role == "assistant"):
            out.append(f"messages[{i}]: empty content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                if (
                    isinstance(block, dict)
                    and block.get("type") == "text"
                    and not block.get("text")
                ):
                    out.append(f"messages[{i}].content[{j}]: empty text block")
    return out


def _blocks_of(message: dict[str, Any] | None, kind: str, key: str) -> list[Any]:
    """The ``key`` of each ``kind`` block of a message's content, in order."""
    content = (message or {}).get("content")
    blocks = content if isinstance(content, list) else []
    return [b.get(key) for b in blocks if isinstance(b, dict) and b.get("type") == kind]


def _anthropic_pairing_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Every tool_use answered in the next message, every tool_result answering a
    tool_use of the message before."""
    out = []
    for i, message in enumerate(messages):
        if message.get("role") == "assistant":
            uses = _blocks_of(message, "tool_use", "id")
            if not uses:
                continue
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            if nxt is None:
                out.append(f"messages[{i}]: tool_use {uses} with no user message after it")
                continue
            answered = set(_blocks_of(nxt, "tool_result", "tool_use_id"))
            missing = [u for u in uses if u not in answered]
            if missing:
                out.append(
                    f"messages[{i}]: tool_use ids {missing} have no tool_result in messages[{i + 1}]"
                )
        elif message.get("role") == "user":
            results = _blocks_of(message, "tool_result", "tool_use_id")
            if not results:
                continue
            prev = messages[i - 1] if i else None
            calls = set(_blocks_of(prev, "tool_use", "id"))
            orphans = [r for r in results if r not in calls]
            if orphans:
                out.append(
                    f"messages[{i}]: tool_result ids {orphans} answer no tool_use in messages[{i - 1}]"
                )
    return out


def _chat_problems(body: dict[str, Any]) -> list[str]:
    out = []
    messages = body.get("messages") or []
    if not messages:
        return ["messages: empty"]
    open_calls: dict[str, int] = {}
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "developer", "user", "assistant", "tool"):
            out.append(f"messages[{i}]: role {role!r}")
        if role == "tool":
            tcid = message.get("tool_call_id")
            if not isinstance(tcid, str):
                out.append(
                    f"messages[{i}]: tool message without a 'tool_call_id' "
                    f"(it has {sorted(k for k in message if k != 'content')})"
                )
            elif tcid not in open_calls:
                out.append(
                    f"messages[{i}]: tool message {tcid!r} follows no assistant call with that id"
                )
            else:
                del open_calls[tcid]
            continue
        if open_calls:
            out.append(
                f"messages[{i}]: calls {sorted(open_calls)} of messages[{min(open_calls.values())}] not answered before a {role!r} message"
            )
            open_calls = {}
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if _is_empty(message.get("content")) and not calls:
                out.append(f"messages[{i}]: assistant message with no content and no tool calls")
            for call in calls:
                open_calls[str(call.get("id"))] = i
    if open_calls:
        out.append(f"end: calls {sorted(open_calls)} never answered")
    return out


def _responses_problems(body: dict[str, Any]) -> list[str]:
    items = body.get("input")
    if isinstance(items, str):
        return []
    if not items:
        return ["input: empty"]
    out = []
    kinds = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
    calls: dict[str, tuple[str, int]] = {}
    answered: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind in kinds:
            calls[item.get("call_id")] = (kind, i)
        elif kind in kinds.values():
            cid = item.get("call_id")
            if cid not in calls or kinds[calls[cid][0]] != kind:
                out.append(
                    f"input[{i}]: {kind} {cid!r} has no {kind.removesuffix('_output')} before it"
                )
            answered.add(cid)
        elif kind == "reasoning":
            nxt = items[i + 1] if i + 1 < len(items) else None
            if nxt is None or (
                nxt.get("type", "message") == "message" and nxt.get("role") != "assistant"
            ):
                out.append(f"input[{i}]: reasoning item with nothing of the model's after it")
    for cid, (kind, i) in calls.items():
        if cid not in answered:
            out.append(f"input[{i}]: {kind} {cid!r} has no output")
    return out


def _part_key(part: dict[str, Any], camel: str, snake: str) -> Any:
    return part.get(camel, part.get(snake))


def _gemini_problems(body: dict[str, Any]) -> list[str]:
    contents = body.get("contents") or []
    if not contents:
        return ["contents: empty"]
    out = []
    if (contents[0].get("role") or "user") != "user":
        out.append(f"contents[0]: first content is {contents[0].get('role')!r}, not 'user'")
    for i, content in enumerate(contents):
        role = content.get("role") or "user"
        parts = content.get("parts") or []
        if role not in ("user", "model"):
            out.append(f"contents[{i}]: role {role!r}")
        if not parts:
            out.append(f"contents[{i}]: no parts")
        if i and role == (contents[i - 1].get("role") or "user"):
            out.append(f"contents[{i}]: two {role!r} contents in a row")
        calls = [_part_key(p, "functionCall", "function_call") for p in parts]
        calls = [c for c in calls if c]
        if role == "model" and calls:
            nxt = contents[i + 1] if i + 1 < len(contents) else None
            responses = [
                _part_key(p, "functionResponse", "function_response")
                for p in ((nxt or {}).get("parts") or [])
            ]
            responses = [r for r in responses if r]
            if nxt is None or (nxt.get("role") or "user") != "user":
                out.append(f"contents[{i}]: function calls with no user content after them")
            elif len(responses) != len(calls):
                out.append(
                    f"contents[{i}]: {len(calls)} function calls, {len(responses)} responses in contents[{i + 1}]"
                )
        if role == "user":
            responses = [_part_key(p, "functionResponse", "function_response") for p in parts]
            if any(responses):
                prev = contents[i - 1] if i else {}
                if not any(
                    _part_key(p, "functionCall", "function_call") for p in prev.get("parts") or []
                ):
                    out.append(f"contents[{i}]: function responses with no call turn before them")
    return out


# ------------------------------------------------------------------ images


@dataclass(frozen=True)
class Image:
    width: int | None
    height: int | None
    detail: str | None = None


def _dims(data: str) -> tuple[int | None, int | None]:
    try:
        raw = base64.b64decode(
            data + "=" * (-len(data) % 4), altchars=b"-_" if "-" in data or "_" in data else None
        )
    except (binascii.Error, ValueError):
        return None, None
    try:
        width, height = imagesize.get(io.BytesIO(raw))
    except Exception:
        return None, None
    return (width, height) if width > 0 and height > 0 else (None, None)


def _data_url(url: str) -> tuple[int | None, int | None]:
    if url.startswith("data:") and "," in url:
        return _dims(url.split(",", 1)[1])
    return None, None


#: an image given by URL is not fetched here: it is taken to be 800 x 600
URL_IMAGE = (800, 600)


def _size(image: Image) -> tuple[float, float]:
    if image.width is None or image.height is None:
        return float(URL_IMAGE[0]), float(URL_IMAGE[1])
    return float(image.width), float(image.height)


def anthropic_image_tokens(image: Image) -> int:
    w, h = _size(image)
    scale = min(1.0, 1568 / max(w, h), math.sqrt(1_150_000 / (w * h)))
    return math.ceil((w * scale) * (h * scale) / 750)


#: OpenAI's patch-priced models (32-px patches, at most 1536, times a multiplier)
PATCH_MULTIPLIERS = {
    "gpt-5-mini": 1.62,
    "gpt-5-nano": 2.46,
    "gpt-4.1-mini": 1.62,
    "gpt-4.1-nano": 2.46,
    "o4-mini": 1.72,
}


def openai_image_tokens(image: Image, model: str | None = None) -> int:
    model = model or ""
    tile_base, tile = (70, 140) if model.startswith("gpt-5") else (85, 170)
    if image.detail == "low":
        return tile_base
    w, h = _size(image)
    multiplier = next((m for name, m in PATCH_MULTIPLIERS.items() if model.startswith(name)), None)
    if multiplier is not None:
        patches = math.ceil(w / 32) * math.ceil(h / 32)
        if patches > 1536:
            scale = math.sqrt(1536 * 32 * 32 / (w * h))
            patches = min(1536, math.ceil(w * scale / 32) * math.ceil(h * scale / 32))
        return math.ceil(patches * multiplier)
    scale = min(1.0, 2048 / max(w, h))
    w, h = w * scale, h * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    return tile_base + tile * math.ceil(w / 512) * math.ceil(h / 512)


def gemini_image_tokens(image: Image, model: str | None) -> int:
    if model and "gemini-3" in model:
        return 1120
    if image.width is None or image.height is None:
        return 258 * 2
    if image.width <= 384 and image.height <= 384:
        return 258
    return 258 * math.ceil(image.width / 768) * math.ceil(image.height / 768)


# ------------------------------------------------------------------ counting


class _Counter:
    def __init__(self, encoding: str) -> None:
        enc = counting_encoding(encoding)
        assert enc is not None, f"the {encoding} encoding is not available offline"
        self._count = count_ordinary(enc)

    def text(self, text: str) -> int:
        return self._count(text) if text else 0

    def json(self, value: Any) -> int:
        return self.text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def count_tokens(api: str, body: dict[str, Any], model: str | None = None) -> int:
    """An independent estimate of the prompt tokens of ``body``."""
    model = model or (body.get("model") if isinstance(body.get("model"), str) else None)
    counter = _Counter("cl100k_base" if api == "anthropic" else "o200k_base")
    return {
        "anthropic": _count_anthropic,
        "openai": _count_chat,
        "responses": _count_responses,
        "gemini": _count_gemini,
    }[api](counter, body, model)


def _anthropic_block(c: _Counter, block: Any) -> int:
    if isinstance(block, str):
        return c.text(block)
    if not isinstance(block, dict):
        return c.json(block)
    kind = block.get("type")
    if kind == "text":
        return c.text(block.get("text", ""))
    if kind == "thinking":
        return c.text(block.get("thinking", ""))
    if kind == "redacted_thinking":
        return 0
    if kind == "image":
        source = block.get("source") or {}
        dims = (
            _dims(source["data"])
            if source.get("type") == "base64" and isinstance(source.get("data"), str)
            else (None, None)
        )
        return anthropic_image_tokens(Image(*dims))
    if kind == "tool_use":
        return c.text(block.get("name", "")) + c.json(block.get("input", {}))
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return sum(_anthropic_block(c, b) for b in content)
        return c.text(content or "") if isinstance(content, str) else c.json(content)
    if kind == "document":
        return c.json(block.get("source", {}))
    return c.json(block)


def _count_anthropic(c: _Counter, body: dict[str, Any], model: str | None) -> int:
    total = 0
    system = body.get("system")
    if isinstance(system, str):
        total += c.text(system)
    elif isinstance(system, list):
        total += sum(_anthropic_block(c, b) for b in system)
    for tool in body.get("tools") or []:
        total += c.json(tool)
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        total += PER_MESSAGE + sum(_anthropic_block(c, b) for b in blocks)
    return total


def _chat_part(c: _Counter, part: Any, model: str | None) -> int:
    if isinstance(part, str):
        return c.text(part)
    if not isinstance(part, dict):
        return c.json(part)
    kind = part.get("type")
    if kind == "text":
        return c.text(part.get("text", ""))
    if kind == "image_url":
        image = part.get("image_url") or {}
        url = image.get("url", "") if isinstance(image, dict) else str(image)
        detail = image.get("detail") if isinstance(image, dict) else None
        return openai_image_tokens(Image(*_data_url(url), detail=detail), model)
    return c.json(part)


def _count_chat(c: _Counter, body: dict[str, Any], model: str | None) -> int:
    total = sum(c.json(tool) for tool in body.get("tools") or [])
    for message in body.get("messages") or []:
        total += PER_MESSAGE
        content = message.get("content")
        if isinstance(content, list):
            total += sum(_chat_part(c, p, model) for p in content)
        elif content is not None:
            total += c.text(content if isinstance(content, str) else json.dumps(content))
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            total += c.text(fn.get("name", "")) + c.text(fn.get("arguments", ""))
    return total


def _responses_part(c: _Counter, part: Any, model: str | None) -> int:
    if isinstance(part, str):
        return c.text(part)
    if not isinstance(part, dict):
        return c.json(part)
    kind = part.get("type")
    if kind in ("input_text", "output_text", "summary_text", "reasoning_text", "text"):
        return c.text(part.get("text", ""))
    if kind == "input_image":
        url = part.get("image_url") or ""
        return openai_image_tokens(Image(*_data_url(str(url)), detail=part.get("detail")), model)
    return c.json(part)


def _count_responses(c: _Counter, body: dict[str, Any], model: str | None) -> int:
    total = c.text(body.get("instructions") or "") + sum(c.json(t) for t in body.get("tools") or [])
    items = body.get("input")
    if isinstance(items, str):
        return total + PER_MESSAGE + c.text(items)
    newest = max(
        (i for i, it in enumerate(items or []) if it.get("role") == "user"), default=-1
    )
    for i, item in enumerate(items or []):
        total += PER_MESSAGE
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            total += (
                c.text(content)
                if isinstance(content, str)
                else sum(_responses_part(c, p, model) for p in content or [])
            )
        elif kind == "reasoning":
            total += sum(_responses_part(c, p, model) for p in item.get("summary") or [])
            sealed = item.get("encrypted_content")
            if i > newest and isinstance(sealed, str):
                total += math.ceil(max(0, len(sealed) - 1000) / 5.8)
        elif kind in ("function_call", "custom_tool_call"):
            total += c.text(item.get("name", "")) + c.text(
                str(item.get("arguments", item.get("input", "")))
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            total += (
                c.text(output)
                if isinstance(output, str)
                else sum(_responses_part(c, p, model) for p in output or [])
            )
        else:
            total += c.json(item)
    return total


def _gemini_part(c: _Counter, part: dict[str, Any], model: str | None) -> int:
    if "text" in part:
        return c.text(part.get("text") or "")
    inline = _part_key(part, "inlineData", "inline_data")
    if isinstance(inline, dict):
        mime = str(_part_key(inline, "mimeType", "mime_type") or "")
        if mime.startswith("image/"):
            return gemini_image_tokens(Image(*_dims(str(inline.get("data", "")))), model)
        return c.json(inline)
    call = _part_key(part, "functionCall", "function_call")
    if isinstance(call, dict):
        return c.text(call.get("name", "")) + c.json(call.get("args", {}))
    response = _part_key(part, "functionResponse", "function_response")
    if isinstance(response, dict):
        total = c.text(response.get("name", "")) + c.json(response.get("response", {}))
        for nested in response.get("parts") or []:
            total += _gemini_part(c, nested, model)
        return total
    rest = {
        k: v
        for k, v in part.items()
        if k not in ("thoughtSignature", "thought_signature", "thought")
    }
    return c.json(rest) if rest else 0


def _count_gemini(c: _Counter, body: dict[str, Any], model: str | None) -> int:
    total = 0
    system = _part_key(body, "systemInstruction", "system_instruction")
    if isinstance(system, dict):
        total += sum(_gemini_part(c, p, model) for p in system.get("parts") or [])
    total += sum(c.json(t) for t in body.get("tools") or [])
    for content in body.get("contents") or []:
        total += PER_MESSAGE + sum(_gemini_part(c, p, model) for p in content.get("parts") or [])
    return total


def reserve_of(api: str, body: dict[str, Any]) -> int:
    """The output tokens the body asks the provider to keep room for."""
    if api == "anthropic":
        return int(body.get("max_tokens") or 0)
    if api == "openai":
        return int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
    if api == "responses":
        return int(body.get("max_output_tokens") or 0)
    config = _part_key(body, "generationConfig", "generation_config") or {}
    return int(_part_key(config, "maxOutputTokens", "max_output_tokens") or 0)


# ------------------------------------------------------------------ tool results


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    text: str
    where: str


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    if content is None:
        return ""
    return json.dumps(content, sort_keys=True)


def tool_results(api: str, body: dict[str, Any]) -> Iterator[ToolResult]:
    """Every tool result in the body: its call id (or, where the body pairs by name
    and order, ``name#n``) and its text."""
    if api == "anthropic":
        for i, message in enumerate(body.get("messages") or []):
            content = message.get("content")
            for j, block in enumerate(content if isinstance(content, list) else []):
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    yield ToolResult(
                        str(block.get("tool_use_id")),
                        _text_of(block.get("content")),
                        f"messages[{i}].content[{j}]",
                    )
    elif api == "openai":
        for i, message in enumerate(body.get("messages") or []):
            if message.get("role") != "tool":
                continue
            cid = message.get("tool_call_id")
            if (
                cid is None
                and isinstance(message.get("tool_call_ids"), list)
                and message["tool_call_ids"]
            ):
                cid = message["tool_call_ids"][0]
            yield ToolResult(str(cid), _text_of(message.get("content")), f"messages[{i}]")
    elif api == "responses":
        items = body.get("input")
        for i, item in enumerate(items if isinstance(items, list) else []):
            if item.get("type") in ("function_call_output", "custom_tool_call_output"):
                yield ToolResult(
                    str(item.get("call_id")), _text_of(item.get("output")), f"input[{i}]"
                )
    else:
        seen: dict[str, int] = {}
        for i, content in enumerate(body.get("contents") or []):
            for j, part in enumerate(content.get("parts") or []):
                response = _part_key(part, "functionResponse", "function_response")
                if not isinstance(response, dict):
                    continue
                name = str(response.get("name"))
                seen[name] = seen.get(name, 0) + 1
                cid = response.get("id") or f"{name}#{seen[name]}"
                yield ToolResult(
                    str(cid), _text_of(response.get("response")), f"contents[{i}].parts[{j}]"
                )


def unreported_losses(
    api: str, before: dict[str, Any], after: dict[str, Any], actions: list[Any]
) -> list[str]:
    """Tool results of ``before`` whose text is not in ``after`` and that no action of
    the report names: changed in place (the action must name the call), or gone with
    their message (some action must say messages were dropped)."""
    kept: dict[str, list[str]] = {}
    for result in tool_results(api, after):
        kept.setdefault(result.call_id, []).append(result.text)
    named = {str(a.tool_call_id) for a in actions if getattr(a, "tool_call_id", None)}
    details = " ".join(str(getattr(a, "detail", "")) for a in actions)
    dropped = any(getattr(a, "kind", "") in ("drop", "fallback") for a in actions)
    lost = []
    for result in tool_results(api, before):
        if not result.text.strip():
            continue
        texts = kept.get(result.call_id)
        if texts is not None and result.text in texts:
            continue
        if result.call_id in named or result.call_id in details:
            continue
        if texts is None and dropped:
            continue
        how = "its result was removed" if texts is None else "its text was replaced"
        preview = (texts or [""])[0][:80].replace("\n", " ")
        lost.append(
            f"{result.where} (call {result.call_id}, {len(result.text)} chars): {how}"
            + (f" by {preview!r}" if texts else "")
            + " and no report action names that call"
        )
    return lost
