"""A scripted, validating upstream for the real agent CLIs (tests/test_agent_clis.py).

One localhost server speaks the four APIs the CLIs use, each the way the real
provider streams it: Anthropic Messages (Claude Code), OpenAI Responses (Codex),
Gemini ``generateContent`` / ``streamGenerateContent`` (Gemini CLI) and Chat
Completions (opencode's openai-compatible provider).

**The script.** The CLI is asked to read the workspace's 16 files (``make_workspace``;
each starts with ``FILE fNN BEGIN``). Each request's newest tool result says which
file was read last; the answer asks, with the CLI's own read tool (found in the
request's tool list), for the next one, and after the 16th answers with
``FINAL_TEXT``. The script is stateless (it reads the request, not a counter), so a
request the proxy compacted or a CLI retried gets the same answer. A request that
offers no read tool (a CLI's title or routing side call) gets a short text.

**The checks.** Every request is checked as the provider would check it, and every
failure is recorded in ``invalid`` and answered with the provider's 400:

* ``validate_request(body, api=...)``: the API's structural rules (tool call / result
  pairing, roles and alternation, required fields);
* what only the server can know: every thinking block (its text and signature) and
  every Responses reasoning item's ``encrypted_content``, and every Gemini thought
  signature, comes back byte for byte as this server issued it;
* the window, with an **independent** count: every string leaf of the request's
  prompt (system, messages / input / contents, tools; not ids, signatures or
  settings) counted with the cl100k_base encoding directly, times 1.2 for Claude
  (Anthropic's own statement: Claude counts up to ~20% more than cl100k) and for
  Gemini (no public tokenizer), and with o200k_base for OpenAI models. It shares no
  code with the library's message decoding or its counters, only the encoding
  files. The prompt plus the request's output reserve (``max_tokens``,
  ``max_output_tokens``, ``generationConfig.maxOutputTokens``) must fit
  ``window``; a request that does not is refused with the provider's own words
  (``prompt is too long: N tokens > M maximum`` for Anthropic, OpenAI's
  ``context_length_exceeded``, Gemini's ``The input token count (N) exceeds the
  maximum number of tokens allowed (M).``) and recorded in ``over_window``.

Every request is recorded (``log``: method, path, api, the verdict), whatever its
path: the tests read which side endpoints each CLI calls from it.

**The screenshot session** (``ScreenshotUpstream``, Anthropic only; for
tests/test_agent_cli_screenshots.py) scripts the same loop over real PNG screenshots
(``make_screenshots``) and counts each image block by Anthropic's documented rule
(``claude_image_tokens``, over the size in the image's own header) instead of as text.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import random
import re
import struct
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import imagesize  # type: ignore[import-untyped]
from fake_native import _anthropic_events, _responses_events
from fake_server import ThreadedServer, pieces, sse_data
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from context_governor.counting import load_encoding
from context_governor.errors import ContextGovernorError
from context_governor.formats import validate_request

FILES = 16
FILE_BYTES = 14_000
FINAL_TEXT = "ALL SIXTEEN FILES READ: the workspace is consistent."
PROMPT = (
    "Read each of the 16 files f01.txt to f16.txt in the current directory, one at a "
    "time, with your file reading tool, then tell me whether they are consistent."
)
_MARK = re.compile(r"FILE f(\d\d) BEGIN")
#: What this server's summaries say (a CLI that compacts its session keeps them).
_SUMMARY = re.compile(r"files read so far: up to f(\d\d)")
#: Gemini CLI's next-speaker check asks this (its CHECK_PROMPT).
_NEXT_SPEAKER = "determine who should logically speak next"
#: Keys whose string values are not prompt text (ids, signatures, settings).
_NOT_TEXT = frozenset(
    {"id", "call_id", "tool_use_id", "signature", "encrypted_content", "thoughtSignature",
     "thought_signature", "model", "type", "role", "cache_control", "status", "metadata",
     "$schema"}
)  # fmt: skip
#: Where the prompt is, per API (everything else in the body is settings).
_PROMPT_KEYS = {
    "anthropic": ("system", "messages", "tools"),
    "responses": ("instructions", "input", "tools"),
    "gemini": ("systemInstruction", "system_instruction", "contents", "tools"),
    "openai": ("messages", "tools"),
}


def make_workspace(root: Path) -> list[Path]:
    """16 files of about 14 KB of code-like text, each different, marked at both ends."""
    paths = []
    for n in range(1, FILES + 1):
        lines = [f"FILE f{n:02d} BEGIN"]
        i = 0
        while sum(len(line) + 1 for line in lines) < FILE_BYTES - 40:
            lines.append(f"def step_{n}_{i}(value): return value * {n * 31 + i} + {i % 13}  # f{n:02d}")
            i += 1
        lines.append(f"FILE f{n:02d} END")
        path = root / f"f{n:02d}.txt"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def _strings(value: Any, images: list[dict[str, Any]] | None = None) -> Iterable[str]:
    """Every string leaf of ``value`` that is prompt text (not under _NOT_TEXT keys).
    Given ``images``, an Anthropic ``image`` block is appended there instead of having
    its base64 read as text (the screenshot session counts images by their own rule)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, images)
    elif isinstance(value, dict):
        if images is not None and value.get("type") == "image":
            images.append(value)
            return
        for key, item in value.items():
            if key not in _NOT_TEXT:
                yield from _strings(item, images)


def independent_tokens(
    api: str, body: dict[str, Any], images: list[dict[str, Any]] | None = None
) -> int:
    """The prompt's size by the independent count described in the module docstring.
    Given ``images``, image blocks are collected there and left out of the count."""
    openai_model = api in ("responses", "openai")
    encoding = load_encoding("o200k_base" if openai_model else "cl100k_base")
    assert encoding is not None, "the offline encodings are part of the core install"
    total = 0
    for key in _PROMPT_KEYS[api]:
        for text in _strings(body.get(key), images):
            total += len(encoding.encode(text, disallowed_special=()))
    return total if openai_model else math.ceil(total * 1.2)


def output_reserve(api: str, body: dict[str, Any]) -> int:
    """What the request reserves for the answer (the provider refuses prompt + this > window)."""
    if api == "anthropic":
        value = body.get("max_tokens")
    elif api == "responses":
        value = body.get("max_output_tokens")
    elif api == "gemini":
        config = body.get("generationConfig") or body.get("generation_config") or {}
        value = config.get("maxOutputTokens") or config.get("max_output_tokens")
    else:
        value = body.get("max_completion_tokens") or body.get("max_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def too_long_message(api: str, prompt: int, reserve: int, window: int) -> str:
    """The provider's own words for a request over its window."""
    if api == "anthropic":
        if prompt > window:
            return f"prompt is too long: {prompt} tokens > {window} maximum"
        return (
            f"input length and `max_tokens` exceed context limit: {prompt} + {reserve} > "
            f"{window}, decrease input length or `max_tokens` and try again"
        )
    if api == "gemini":
        return (
            f"The input token count ({prompt + reserve}) exceeds the maximum number of "
            f"tokens allowed ({window})."
        )
    return (
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {prompt + reserve} tokens. Please reduce the length of the messages."
    )


def _signature(text: str) -> str:
    return "sig_" + hashlib.sha256(text.encode()).hexdigest()[:40]


@dataclass
class Seen:
    """One request as the server judged it."""

    method: str
    path: str
    api: str | None
    model: str | None = None
    prompt_tokens: int = 0
    reserve: int = 0
    problems: list[str] = field(default_factory=list)
    over: bool = False
    answer: str = ""


class CliUpstream(ThreadedServer):
    """The scripted provider; ``window`` is its true context window (None: unlimited)."""

    def __init__(self, window: int | None, workspace: Path) -> None:
        self.window = window
        self.workspace = workspace
        self.log: list[Seen] = []
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        #: thinking signature -> the thinking text it was issued for
        self.thinking: dict[str, str] = {}
        #: reasoning item id -> its encrypted_content
        self.encrypted: dict[str, str] = {}
        #: Gemini thought signature -> the part (as JSON) it was issued on
        self.thought_parts: dict[str, str] = {}
        self._count = 0
        #: Report the context full (input usage at least ``window``) for a request that
        #: shows this many files read and none of this server's summaries (None: never).
        #: A CLI compacts when the usage it is told reaches its threshold; through the
        #: proxy it is told the usage of the governed request, which stays under the
        #: window, so without this it would never compact its own session.
        self.full_from: int | None = None
        #: Answer the request that shows this many files read, when its newest turn is the
        #: tool result, with text only ("... Next, I will read fNN.") instead of the next
        #: call, as a model sometimes stops mid-task (None: never). Gemini CLI, with its
        #: next-speaker check on, asks whether the model should go on (this server says
        #: yes when the model said what it does next) and sends "Please continue.": the
        #: only turn of a one-prompt session at which its chat compression can split the
        #: history (docs/compaction.md, "The clients' own compaction").
        self.pause_after: int | None = None
        #: Anthropic: answer every message with this one id (None: a new id each time).
        #: Some Anthropic-compatible servers do; Claude Code then joins the whole tool
        #: session into one assistant message (every thinking + text + tool_use group)
        #: followed by one user message with every tool_result.
        self.message_id: str | None = None
        routes = [
            Route("/v1/messages", self._anthropic, methods=["POST"]),
            Route("/v1/responses", self._responses, methods=["POST"]),
            Route("/v1/chat/completions", self._chat, methods=["POST"]),
            Route("/v1beta/models/{model}:generateContent", self._gemini, methods=["POST"]),
            Route("/v1beta/models/{model}:streamGenerateContent", self._gemini, methods=["POST"]),
            Route("/{path:path}", self._other, methods=["GET", "POST", "PUT", "DELETE", "HEAD"]),
        ]
        super().__init__(routes, "the scripted CLI upstream")

    # ------------------------------------------------------------------ verdicts

    @property
    def invalid(self) -> list[Seen]:
        """Requests the provider would refuse for a broken rule (not for their size)."""
        return [seen for seen in self.log if seen.problems]

    @property
    def over_window(self) -> list[Seen]:
        return [seen for seen in self.log if seen.over]

    @property
    def governed_requests(self) -> list[Seen]:
        return [seen for seen in self.log if seen.api is not None]

    def finished(self) -> bool:
        """Whether the final text was served."""
        return any(seen.answer == "final" for seen in self.log)

    def _next(self, prefix: str) -> str:
        with self._lock:
            self._count += 1
            return f"{prefix}{self._count:05d}"

    def _judge(self, api: str, path: str, body: Any, model: str | None) -> Seen:
        seen = Seen("POST", path, api, model)
        with self._lock:
            self.log.append(seen)
            self.bodies.append((api, body))
        if not isinstance(body, dict):
            seen.problems.append("the body is not a JSON object")
            return seen
        try:
            found = validate_request(body, api=api, model=model)  # type: ignore[arg-type]
        except ContextGovernorError as exc:
            seen.problems.append(f"unreadable: {exc}")
            return seen
        seen.problems += [f"{v.rule} at {v.index}: {v.error}" for v in found]
        seen.problems += self._returned_unchanged(api, body)
        seen.prompt_tokens = self.count(api, body)
        seen.reserve = output_reserve(api, body)
        if self.window is not None and seen.prompt_tokens + seen.reserve > self.window:
            seen.over = True
        return seen

    def reported(self, seen: Seen, body: dict[str, Any]) -> int:
        """The input usage the answer reports: the request's prompt tokens, or the whole
        window from ``full_from`` files on (until this server's summary is in the request)."""
        if self.full_from is None or self.window is None:
            return seen.prompt_tokens
        text = json.dumps(body)
        read = max((int(n) for n in _MARK.findall(text)), default=0)
        if read < self.full_from or _SUMMARY.search(text):
            return seen.prompt_tokens
        return max(seen.prompt_tokens, self.window)

    def count(self, api: str, body: dict[str, Any]) -> int:
        """The request's prompt tokens as the window check counts them."""
        return independent_tokens(api, body)

    def _returned_unchanged(self, api: str, body: dict[str, Any]) -> list[str]:
        """Signed or encrypted parts this server issued must come back byte for byte."""
        problems: list[str] = []
        if api == "anthropic":
            for message in body.get("messages") or []:
                content = message.get("content") if isinstance(message, dict) else None
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "thinking":
                        signature = block.get("signature")
                        if self.thinking.get(signature) != block.get("thinking"):
                            problems.append(f"thinking block with signature {signature!r} altered")
        elif api == "responses":
            for item in body.get("input") or []:
                if isinstance(item, dict) and item.get("type") == "reasoning":
                    sealed = item.get("encrypted_content")
                    if sealed is not None and self.encrypted.get(item.get("id", "")) != sealed:
                        problems.append(f"reasoning item {item.get('id')!r}: encrypted_content altered")
        elif api == "gemini":
            for content in body.get("contents") or []:
                for part in content.get("parts") or [] if isinstance(content, dict) else []:
                    signature = part.get("thoughtSignature") if isinstance(part, dict) else None
                    if signature is None:
                        continue
                    issued = self.thought_parts.get(signature)
                    if issued is not None and issued != _signed_call(part):
                        problems.append(f"thought signature {signature[:12]}... moved or altered")
        return problems

    # ------------------------------------------------------------------ the script

    def step(self, api: str, body: dict[str, Any], tool_texts: list[str]) -> tuple[str, Any]:
        """("call", (tool name, arguments)) for the next file, ("final", text),
        ("summary", text) when the CLI asks for a summary of the session (its own
        compaction), ("pause", text) once after ``pause_after`` files, or ("side", text)
        for a request that offers no read tool.

        The next file follows the highest one the request shows read: in a tool
        result, or in a summary this server wrote (so a session the CLI compacted
        itself goes on where it was, as with a real model)."""
        done = max((int(n) for text in tool_texts for n in _MARK.findall(text)), default=0)
        done = max([done, *(int(n) for n in _SUMMARY.findall(json.dumps(body)))])
        if _asks_for_summary(api, body):
            return "summary", f"Summary: files read so far: up to f{done:02d}. Task: {PROMPT}"
        tool = read_tool(api, body)
        if tool is None:
            return "side", "OK."
        if done >= FILES:
            return "final", FINAL_TEXT
        if done == self.pause_after and not _last_user_text(api, body):
            return "pause", f"Read f{done:02d}. Next, I will read f{done + 1:02d}."
        name, make_args = tool
        return "call", (name, make_args(self.workspace / f"f{done + 1:02d}.txt"))

    def _refusal(self, seen: Seen, api: str) -> str | None:
        if seen.problems:
            return "; ".join(seen.problems)[:2000]
        if seen.over and self.window is not None:
            return too_long_message(api, seen.prompt_tokens, seen.reserve, self.window)
        return None

    # ------------------------------------------------------------------ Anthropic

    async def _anthropic(self, request: Request) -> Response:
        body = await _json(request)
        seen = self._judge("anthropic", request.url.path, body, None)
        refusal = self._refusal(seen, "anthropic")
        if refusal is not None:
            kind = {"type": "invalid_request_error", "message": refusal}
            return JSONResponse({"type": "error", "error": kind}, status_code=400)
        texts = [
            _text_of(block.get("content"))
            for message in body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        what, detail = self.step("anthropic", body, texts)
        seen.answer = what
        content: list[dict[str, Any]] = []
        thinking = (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
        if thinking and what != "side":
            words = f"Step {len(texts) + 1}: the next thing to do is clear."
            signature = _signature(words + self._next("t"))
            self.thinking[signature] = words
            content.append({"type": "thinking", "thinking": words, "signature": signature})
        if what == "call":
            name, args = detail
            content.append({"type": "text", "text": f"Reading {Path(_path_arg(args)).name}."})
            content.append({"type": "tool_use", "id": self._next("toolu_"), "name": name, "input": args})
        else:
            content.append({"type": "text", "text": detail})
        message = {
            "id": self.message_id or self._next("msg_"), "type": "message", "role": "assistant",
            "model": body.get("model"), "content": content,
            "stop_reason": "tool_use" if what == "call" else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": self.reported(seen, body), "output_tokens": 20,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(message)
        frames = [sse_data(data, name) for name, data in _anthropic_events(message)]
        return _stream(frames)

    # ------------------------------------------------------------------ Responses

    async def _responses(self, request: Request) -> Response:
        body = await _json(request)
        seen = self._judge("responses", request.url.path, body, None)
        refusal = self._refusal(seen, "responses")
        if refusal is not None:
            code = "context_length_exceeded" if not seen.problems else None
            error = {"message": refusal, "type": "invalid_request_error", "param": "input", "code": code}
            return JSONResponse({"error": error}, status_code=400)
        texts = [
            _text_of(item.get("output"))
            for item in body.get("input") or []
            if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")
        ]
        what, detail = self.step("responses", body, texts)
        seen.answer = what
        output: list[dict[str, Any]] = []
        if body.get("reasoning") is not None and what != "side":
            rid = self._next("rs_")
            item: dict[str, Any] = {"type": "reasoning", "id": rid, "summary": []}
            if "reasoning.encrypted_content" in (body.get("include") or []):
                item["encrypted_content"] = "gAAAA" + base64.b64encode(_signature(rid).encode()).decode()
                self.encrypted[rid] = item["encrypted_content"]
            output.append(item)
        if what == "call":
            name, args = detail
            output.append({"type": "function_call", "id": self._next("fc_"), "call_id": self._next("call_"),
                           "name": name, "arguments": json.dumps(args), "status": "completed"})  # fmt: skip
        else:
            output.append({"type": "message", "id": self._next("msg_"), "status": "completed",
                           "role": "assistant",
                           "content": [{"type": "output_text", "text": detail, "annotations": []}]})  # fmt: skip
        response = {
            "id": self._next("resp_"), "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": body.get("model"), "output": output,
            "parallel_tool_calls": False, "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": None, "instructions": None, "metadata": {},
            "text": {"format": {"type": "text"}}, "truncation": "disabled",
            "store": body.get("store", False), "previous_response_id": None,
            "usage": {"input_tokens": self.reported(seen, body), "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": self.reported(seen, body) + 20},
        }  # fmt: skip
        if not body.get("stream"):
            return JSONResponse(response)
        frames = [sse_data(data, name) for name, data in _responses_events(response)]
        return _stream(frames)

    # ------------------------------------------------------------------ Chat Completions

    async def _chat(self, request: Request) -> Response:
        body = await _json(request)
        seen = self._judge("openai", request.url.path, body, None)
        refusal = self._refusal(seen, "openai")
        if refusal is not None:
            code = "context_length_exceeded" if not seen.problems else None
            error = {"message": refusal, "type": "invalid_request_error", "param": "messages", "code": code}
            return JSONResponse({"error": error}, status_code=400)
        texts = [
            _text_of(message.get("content"))
            for message in body.get("messages") or []
            if isinstance(message, dict) and message.get("role") == "tool"
        ]
        what, detail = self.step("openai", body, texts)
        seen.answer = what
        delta: dict[str, Any] = {"role": "assistant"}
        if what == "call":
            name, args = detail
            delta["content"] = None
            delta["tool_calls"] = [{"index": 0, "id": self._next("call_"), "type": "function",
                                    "function": {"name": name, "arguments": json.dumps(args)}}]  # fmt: skip
        else:
            delta["content"] = detail
        finish = "tool_calls" if what == "call" else "stop"
        cid, created, model = self._next("chatcmpl-"), int(time.time()), body.get("model")
        reported = self.reported(seen, body)
        usage = {"prompt_tokens": reported, "completion_tokens": 20,
                 "total_tokens": reported + 20}  # fmt: skip
        if not body.get("stream"):
            message = {k: v for k, v in delta.items() if k != "tool_calls"}
            if "tool_calls" in delta:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in delta["tool_calls"]]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return JSONResponse({"id": cid, "object": "chat.completion", "created": created,
                                 "model": model, "choices": [choice], "usage": usage})  # fmt: skip

        def chunk(d: dict[str, Any], reason: str | None = None, **extra: Any) -> bytes:
            choice = {"index": 0, "delta": d, "finish_reason": reason}
            return sse_data({"id": cid, "object": "chat.completion.chunk", "created": created,
                             "model": model, "choices": [choice], **extra})  # fmt: skip

        frames = [chunk({"role": "assistant", "content": ""})]
        if what == "call":
            call = delta["tool_calls"][0]
            head = {**call, "function": {"name": call["function"]["name"], "arguments": ""}}
            frames.append(chunk({"tool_calls": [head]}))
            for piece in pieces(call["function"]["arguments"], 16):
                frames.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
        else:
            frames += [chunk({"content": piece}) for piece in pieces(detail, 8)]
        frames.append(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            frames.append(sse_data({"id": cid, "object": "chat.completion.chunk", "created": created,
                                    "model": model, "choices": [], "usage": usage}))  # fmt: skip
        frames.append(b"data: [DONE]\n\n")
        return _stream(frames)

    # ------------------------------------------------------------------ Gemini

    async def _gemini(self, request: Request) -> Response:
        body = await _json(request)
        model = request.path_params["model"]
        seen = self._judge("gemini", request.url.path, body, model)
        refusal = self._refusal(seen, "gemini")
        if refusal is not None:
            error = {"code": 400, "message": refusal, "status": "INVALID_ARGUMENT"}
            return JSONResponse({"error": error}, status_code=400)
        texts = [
            _text_of((part.get("functionResponse") or {}).get("response"))
            for content in body.get("contents") or []
            for part in content.get("parts") or []
            if isinstance(part, dict) and "functionResponse" in part
        ]
        what, detail = self.step("gemini", body, texts)
        seen.answer = what
        config = body.get("generationConfig") or {}
        parts: list[dict[str, Any]]
        if what == "side" and _NEXT_SPEAKER in _last_user_text("gemini", body):
            # Gemini CLI's next-speaker check: the model goes on when it said what it does next
            said = json.dumps((body.get("contents") or [])[-2:-1])
            speaker = "model" if "Next, I will" in said else "user"
            parts = [{"text": json.dumps({"reasoning": "as said", "next_speaker": speaker})}]
        elif what == "side" and config.get("responseMimeType") == "application/json":
            parts = [{"text": json.dumps(_json_for_schema(config.get("responseSchema")
                                                          or config.get("responseJsonSchema")))}]  # fmt: skip
        elif what == "call":
            name, args = detail
            part = {"functionCall": {"name": name, "args": args}}
            signature = base64.b64encode(_signature(self._next("g")).encode()).decode()
            part["thoughtSignature"] = signature
            self.thought_parts[signature] = _signed_call(part)
            parts = [part]
        else:
            parts = [{"text": detail}]
        answer = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": self.reported(seen, body), "candidatesTokenCount": 20,
                              "totalTokenCount": self.reported(seen, body) + 20},
            "modelVersion": model,
        }  # fmt: skip
        if not request.url.path.endswith(":streamGenerateContent"):
            return JSONResponse(answer)
        if request.query_params.get("alt") != "sse":
            return JSONResponse([answer])
        return _stream([b"data: " + json.dumps(answer).encode() + b"\r\n\r\n"])

    # ------------------------------------------------------------------ anything else

    async def _other(self, request: Request) -> Response:
        """Side endpoints: recorded; answered only where a provider would answer alike."""
        path = request.url.path
        with self._lock:
            self.log.append(Seen(request.method, path, None))
        if request.method == "GET" and path in ("/v1/models", "/v1beta/models"):
            return JSONResponse({"object": "list", "data": []})
        return JSONResponse({"error": {"message": f"no such endpoint: {path}", "code": 404}},
                            status_code=404)  # fmt: skip


def _last_user_text(api: str, body: dict[str, Any]) -> str:
    """The text the request's last user turn says (its tool results left out): where a
    CLI asks for a summary of the session (Claude Code adds it after the tool results)."""
    turns = body.get("input") if api == "responses" else body.get("contents") if api == "gemini" else body.get("messages")
    if isinstance(turns, str):
        return turns
    for turn in reversed(turns if isinstance(turns, list) else []):
        if not isinstance(turn, dict) or turn.get("role") != "user":
            continue
        content = turn.get("parts") if api == "gemini" else turn.get("content")
        if isinstance(content, str):
            return content
        return " ".join(
            b["text"] for b in content or []
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        )  # fmt: skip
    return ""


def _asks_for_summary(api: str, body: dict[str, Any]) -> bool:
    """Whether the CLI asks for a summary of its session (its own compaction turn)."""
    text = _last_user_text(api, body).lower()
    if "<state_snapshot>" in text or "anchored summary" in text:  # Gemini CLI, opencode
        return True
    return "summar" in text and "f01.txt to f16.txt" not in text


def read_tool(api: str, body: dict[str, Any]) -> tuple[str, Any] | None:
    """The CLI's file reading tool among the request's tools: its name and a function
    from a path to its arguments. A shell tool (Codex reads files with one) runs ``cat``."""
    for name, schema in _tools(api, body):
        props = set((schema or {}).get("properties") or {})
        lowered = name.lower()
        if lowered in ("read", "read_file", "readfile"):
            for key in ("file_path", "filePath", "absolute_path", "path"):
                if key in props:
                    return name, lambda p, key=key: {key: str(p)}
    for name, schema in _tools(api, body):
        props = (schema or {}).get("properties") or {}
        if name in ("shell", "exec_command", "local_shell", "shell_command"):
            if props.get("command", {}).get("type") == "array":
                return name, lambda p: {"command": ["cat", str(p)]}
            if "cmd" in props:
                return name, lambda p: {"cmd": f"cat {p}"}
            if "command" in props:
                return name, lambda p: {"command": f"cat {p}"}
    return None


def _tools(api: str, body: dict[str, Any]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if api == "anthropic":
            found.append((tool.get("name", ""), tool.get("input_schema")))
        elif api == "responses":
            found.append((tool.get("name", ""), tool.get("parameters")))
        elif api == "openai":
            function = tool.get("function") or {}
            found.append((function.get("name", ""), function.get("parameters")))
        else:
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                found.append((decl.get("name", ""), decl.get("parameters") or decl.get("parametersJsonSchema")))
    return found


def _signed_call(part: dict[str, Any]) -> str:
    """What a thought signature is bound to: its part's call (name and arguments).
    Gemini CLI adds the call's ``id`` when it sends the part back, which the API reads."""
    call = part.get("functionCall") or {}
    return json.dumps({"name": call.get("name"), "args": call.get("args")}, sort_keys=True)


def _path_arg(args: dict[str, Any]) -> str:
    for value in args.values():
        if isinstance(value, str):
            return value.split()[-1]
        if isinstance(value, list) and value:
            return str(value[-1])
    return ""


def _text_of(value: Any) -> str:
    return " ".join(_strings(value)) if not isinstance(value, str) else value


def _json_for_schema(schema: Any) -> Any:
    """A minimal value that fits a JSON schema (Gemini CLI's structured side calls)."""
    if not isinstance(schema, dict):
        return {}
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {key: _json_for_schema(sub) for key, sub in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    if schema.get("enum"):
        return schema["enum"][0]
    return "user"


async def _json(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _stream(frames: list[bytes]) -> Response:
    async def body() -> Any:
        for frame in frames:
            yield frame

    return StreamingResponse(body(), media_type="text/event-stream")




# ---------------------------------------------------------------------- screenshots
#
# The screenshot session (tests/test_agent_cli_screenshots.py, Claude Code only): the
# CLI reads ``SCREENSHOTS`` real PNG screenshots with its Read tool, which answers with
# an ``image`` block (base64) inside the tool_result. The window check counts each image
# by Anthropic's documented rule, written again below from the documentation, and the
# rest of the prompt as text by the independent count above.

SCREENSHOTS = 40
SCREENSHOT_SIZE = (1280, 800)
SCREENSHOT_FINAL_TEXT = "ALL FORTY SCREENSHOTS SEEN: the screens are consistent."
SCREENSHOT_PROMPT = (
    f"Look at each of the {SCREENSHOTS} screenshots s01.png to s{SCREENSHOTS:02d}.png in the "
    "current directory, one at a time, with your file reading tool, then tell me whether "
    "the screens are consistent."
)
_SCREENSHOT = re.compile(r"\bs(\d\d)\.png\b")
_SCREENSHOT_SUMMARY = re.compile(r"screenshots seen so far: up to s(\d\d)")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def screenshot_png(n: int, size: tuple[int, int] = SCREENSHOT_SIZE) -> bytes:
    """A valid 8-bit RGB PNG of a made-up application window: a title bar and a sidebar
    in colours of its own and rows of text-like noise drawn from ``n``'s seed, so every
    screenshot differs and compresses to a real screenshot's ~150-250 KB."""
    width, height = size
    rng = random.Random(n)
    title = bytes([(n * 53) % 256, (n * 97) % 256, (n * 31) % 256])
    sidebar = bytes([20 + (n * 5) % 200, 34, 40])
    background = b"\xfa\xfa\xfa"
    ink = bytes(0x20 if b < 72 else 0xFA for b in range(256))  # ~28% dark "glyph" bytes
    side = min(240, width)
    rows = []
    for y in range(height):
        if y < 40:
            row = title * width
        elif y % 20 < 9:  # a line of "text" every 20 px
            row = sidebar * side + rng.randbytes((width - side) * 3).translate(ink)
        else:
            row = sidebar * side + background * (width - side)
        rows.append(b"\x00" + row)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(b"".join(rows), 6))
        + _png_chunk(b"IEND", b"")
    )


def make_screenshots(root: Path, count: int = SCREENSHOTS) -> list[Path]:
    """``count`` screenshots s01.png, s02.png, ... in ``root``."""
    paths = []
    for n in range(1, count + 1):
        path = root / f"s{n:02d}.png"
        path.write_bytes(screenshot_png(n))
        paths.append(path)
    return paths


#: Anthropic's two resolution tiers, (max long edge px, max visual tokens), from
#: https://platform.claude.com/docs/en/build-with-claude/vision, "Resolution and token
#: cost": the high tier for Claude 4.7 and later (and Fable, Mythos), standard for the rest.
CLAUDE_STANDARD_TIER = (1568, 1568)
CLAUDE_HIGH_TIER = (2576, 4784)
_CLAUDE_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d+)(?:[-.](\d{1,2}))?(?!\d)")


def claude_tier(model: str | None) -> tuple[int, int]:
    """The tier of ``model``; the high one (the upper bound) for a name we cannot place."""
    lowered = (model or "").lower()
    if "fable" in lowered or "mythos" in lowered:
        return CLAUDE_HIGH_TIER
    match = _CLAUDE_VERSION.search(lowered)
    if match is None:
        return CLAUDE_HIGH_TIER
    version = (int(match.group(1)), int(match.group(2) or 0))
    return CLAUDE_HIGH_TIER if version >= (4, 7) else CLAUDE_STANDARD_TIER


def claude_image_tokens(width: int, height: int, model: str | None) -> int:
    """What Claude bills for a ``width`` x ``height`` image: "⌈width / 28⌉ × ⌈height /
    28⌉ visual tokens", after the image is downscaled to the largest aspect-preserving
    size within the tier's long edge and token limits (the long edge stepped down one
    pixel at a time: plain, not fast, and not the library's search)."""
    max_edge, max_tokens = claude_tier(model)

    def patches(w: int, h: int) -> int:
        return math.ceil(w / 28) * math.ceil(h / 28)

    if max(width, height) <= max_edge and patches(width, height) <= max_tokens:
        return patches(width, height)
    long, short = max(width, height), min(width, height)
    for edge in range(min(long, max_edge), 0, -1):
        tokens = patches(edge, max(round(edge * short / long), 1))
        if tokens <= max_tokens:
            return tokens
    return 1


def image_data(block: dict[str, Any]) -> str | None:
    """The base64 payload of an Anthropic image block (None: a URL or a file id)."""
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64" and isinstance(source.get("data"), str):
        return str(source["data"])
    return None


def image_size(block: dict[str, Any]) -> tuple[int, int] | None:
    """(width, height) read by ``imagesize`` from the image's own header."""
    data = image_data(block)
    if data is None:
        return None
    try:
        width, height = imagesize.get(io.BytesIO(base64.b64decode(data)))
    except (ValueError, binascii.Error, OSError):
        return None
    return (width, height) if width > 0 and height > 0 else None


@dataclass
class Shot:
    """What one Anthropic request of the screenshot session holds."""

    #: the request's index in ``log``
    request: int
    #: the highest screenshot whose Read call is answered in the request (0: none)
    newest: int
    #: the newest screenshot's tool_result holds its image, byte for byte as the CLI
    #: first sent it
    newest_whole: bool
    images: int
    image_tokens: int
    text_tokens: int
    #: screenshots whose call and tool_result are there, without the image
    masked: list[int] = field(default_factory=list)
    #: screenshots read before the newest whose call is not in the request at all
    cut: list[int] = field(default_factory=list)


class ScreenshotUpstream(CliUpstream):
    """The scripted Anthropic upstream of the screenshot session: it asks for
    ``s01.png`` ... ``sNN.png`` in turn (the next after the highest screenshot whose
    Read call the request shows answered), then answers ``SCREENSHOT_FINAL_TEXT``. Its
    window check counts every image block by Anthropic's rule (``claude_image_tokens``
    over the size in the image's header; a URL image at the tier's maximum) and the
    rest as text; ``shots`` records what each request held."""

    def __init__(self, window: int | None, workspace: Path, screenshots: int = SCREENSHOTS) -> None:
        super().__init__(window, workspace)
        self.screenshots = screenshots
        self.shots: list[Shot] = []
        #: screenshot -> its image payload as the CLI first sent it
        self.first_sent: dict[int, str] = {}
        #: image payload digest -> (width, height) or None, and its tokens
        self._sizes: dict[str, tuple[tuple[int, int] | None, int]] = {}

    def image_tokens(self, block: dict[str, Any], model: str | None) -> int:
        data = image_data(block)
        key = hashlib.sha256(data.encode()).hexdigest() if data is not None else ""
        with self._lock:
            known = self._sizes.get(key) if key else None
        if known is None:
            size = image_size(block)
            tokens = claude_image_tokens(*size, model) if size else claude_tier(model)[1]
            known = (size, tokens)
            if key:
                with self._lock:
                    self._sizes[key] = known
        return known[1]

    def image_sizes(self) -> list[tuple[int, int] | None]:
        """The sizes of every distinct image payload seen."""
        with self._lock:
            return [size for size, _ in self._sizes.values()]

    def count(self, api: str, body: dict[str, Any]) -> int:
        images: list[dict[str, Any]] = []
        text = independent_tokens(api, body, images)
        model = body.get("model") if isinstance(body.get("model"), str) else None
        return text + sum(self.image_tokens(block, model) for block in images)

    def _judge(self, api: str, path: str, body: Any, model: str | None) -> Seen:
        seen = super()._judge(api, path, body, model)
        if api == "anthropic" and isinstance(body, dict) and not seen.problems:
            shot = self._shot(body, seen.prompt_tokens)
            with self._lock:
                shot.request = self.log.index(seen)
                self.shots.append(shot)
        return seen

    def answered(self, body: dict[str, Any]) -> dict[int, list[dict[str, Any]]]:
        """Screenshot number -> the image blocks of its answered Read call's tool_result."""
        calls: dict[str, int] = {}
        results: dict[str, list[dict[str, Any]]] = {}
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                    match = _SCREENSHOT.search(" ".join(_strings(block["input"])))
                    if match is not None:
                        calls[str(block.get("id"))] = int(match.group(1))
                elif block.get("type") == "tool_result":
                    images: list[dict[str, Any]] = []
                    list(_strings(block.get("content"), images))
                    results[str(block.get("tool_use_id"))] = images
        return {n: results[call] for call, n in calls.items() if call in results}

    def _shot(self, body: dict[str, Any], prompt_tokens: int) -> Shot:
        model = body.get("model") if isinstance(body.get("model"), str) else None
        every: list[dict[str, Any]] = []
        for key in _PROMPT_KEYS["anthropic"]:
            list(_strings(body.get(key), every))
        image_tokens = sum(self.image_tokens(block, model) for block in every)
        answered = self.answered(body)
        newest = max(answered, default=0)
        with self._lock:
            for n, images in answered.items():
                data = image_data(images[0]) if images else None
                if data is not None:
                    self.first_sent.setdefault(n, data)
            first = self.first_sent.get(newest)
        whole = newest == 0 or (first is not None and any(image_data(b) == first for b in answered[newest]))
        return Shot(
            request=-1, newest=newest, newest_whole=whole, images=len(every),
            image_tokens=image_tokens, text_tokens=prompt_tokens - image_tokens,
            masked=sorted(n for n, images in answered.items() if not images),
            cut=[n for n in range(1, newest) if n not in answered],
        )  # fmt: skip

    def step(self, api: str, body: dict[str, Any], tool_texts: list[str]) -> tuple[str, Any]:
        done = max(self.answered(body), default=0)
        texts = _strings(body.get("messages"), [])  # images collected aside, not read as text
        done = max([done, *(int(n) for text in texts for n in _SCREENSHOT_SUMMARY.findall(text))])
        if _asks_for_summary(api, body):
            return "summary", f"Summary: screenshots seen so far: up to s{done:02d}. Task: {SCREENSHOT_PROMPT}"
        tool = read_tool(api, body)
        if tool is None:
            return "side", "OK."
        if done >= self.screenshots:
            return "final", SCREENSHOT_FINAL_TEXT
        name, make_args = tool
        return "call", (name, make_args(self.workspace / f"s{done + 1:02d}.png"))
