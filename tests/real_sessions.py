"""Real public agent sessions (tests/data/real_sessions/, provenance in its SOURCES.md),
turned into the request bodies each agent sent at each model call.

``load_corpus()`` lists the sessions; ``steps(session)`` gives ``(api, body)`` per model
call, as faithfully as the stored format allows; ``step_records(session)`` gives the same
with what the transcript knows besides the body (the model a Gemini URL names, the
upstream's usage for that call, whether the body holds all the upstream counted).

Formats and what each step is rebuilt from:

* ``claude-code`` (``~/.claude/projects/*.jsonl``): every ``user``/``assistant`` line
  with a ``message``, in file order. Claude Code writes one line per content block of a
  response, so consecutive assistant lines with one ``message.id`` are one message;
  consecutive user lines are one user message (Claude Code merges them before sending).
  A step is each distinct assistant ``message.id``: the body is every message before it
  (thinking blocks with their signatures, tool_use with the fields stored on them,
  tool_result, images) with Claude Code's settings: the response's ``model``,
  ``max_tokens: 32000``, ``thinking: {"type": "enabled", "budget_tokens": 31999}`` when
  the session shows thinking blocks, ``stream: true``. The system prompt and the tool
  definitions are not stored in a transcript, so they are not in the body
  (``complete=False``: the upstream's usage counts them).
* ``swe-agent`` (``*.traj``): ``history`` as stored, fields and all (``agent``,
  ``message_type``, ``thought``, ``action``, ``is_demo``, and the tool messages'
  ``tool_call_ids`` list); a step per assistant message, the body every message before
  it. The model is the run's (``replay_config`` or the run directory's name). SWE-agent's
  tool schemas are generated from its tool bundles and not stored: no ``tools``.
* ``mini-swe-agent`` (``*.traj.json``): ``messages`` as stored (``extra``,
  ``function_call: null``, ``provider_specific_fields``, ``reasoning_content``, tool
  calls with ``index``); a step per assistant message; the model and sampling settings
  from ``info.config.model``; usage from that assistant message's
  ``extra.response.usage``. The bash tool's schema is not stored: no ``tools``.
* ``codex`` (``~/.codex/sessions/**/rollout-*.jsonl``): the ``response_item`` lines in
  file order (Codex's local ``ghost_snapshot`` records left out). A model call is each run
  of output items (``reasoning``, calls, an assistant message): its body is every item
  before the run, as Codex sends it (``store: false``, reasoning with its
  ``encrypted_content``), with the model of the newest ``turn_context``; its usage is the
  ``token_count`` event's ``last_token_usage`` (Codex 0.58 writes each event twice: one
  per change of ``total_token_usage`` is kept). From CLI 0.58 on, Codex sends a shell
  call's output as text (``Exit code: ...``, ``Wall time: ... seconds``, ``Output:``, the
  format strings of its own binary) while the rollout keeps the structured JSON: the body
  renders it so. Instructions and tool definitions are not stored (``complete=False``).
* ``vcr-cassette`` (recorded HTTP traffic of pydantic-ai's tests against the live APIs):
  each interaction's request body is the step, exactly as sent; the API from its URL;
  the usage from the recorded response.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent / "data" / "real_sessions"

#: Claude Code's request settings (the brief's figures for an Opus-class model with
#: thinking on; Claude Code does not store them in its transcript)
CLAUDE_CODE_MAX_TOKENS = 32_000
CLAUDE_CODE_THINKING = {"type": "enabled", "budget_tokens": 31_999}

#: the model of runs whose file does not name it (from the run directory's name)
SWE_AGENT_MODELS = {"pydicom-1458.gpt4": "gpt-4", "humanevalfix-python-0.human_thought": "gpt-4"}


@dataclass(frozen=True)
class Session:
    name: str
    format: str  # "claude-code" | "swe-agent" | "mini-swe-agent" | "codex" | "vcr-cassette"
    path: Path

    def __str__(self) -> str:
        return f"{self.format}/{self.name}"


@dataclass(frozen=True)
class Step:
    """One model call: the body the agent sent, and what else the transcript knows."""

    index: int
    api: str
    body: dict[str, Any]
    #: the model when the body does not name it (Gemini: it is in the URL)
    model: str | None = None
    #: the upstream's usage for this call, as recorded (None: not recorded)
    usage: dict[str, Any] | None = None
    #: the upstream's count of the whole prompt of this call, from ``usage``
    upstream_prompt_tokens: int | None = None
    #: whether the body holds everything the upstream counted (False: e.g. Claude Code's
    #: system prompt and tools, which its transcript does not store)
    complete: bool = True
    notes: tuple[str, ...] = field(default=())


def load_corpus() -> list[Session]:
    sessions = []
    for path in sorted(ROOT.rglob("*")):
        if not path.is_file() or path.name == "SOURCES.md":
            continue
        fmt = path.parent.name
        name = path.name
        for suffix in (".cassette.json", ".traj.json", ".traj", ".jsonl"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
                break
        kind = {
            "claude-code": "claude-code",
            "codex": "codex",
            "swe-agent": "swe-agent",
            "mini-swe-agent": "mini-swe-agent",
            "pydantic-ai": "vcr-cassette",
        }[fmt]
        sessions.append(Session(name, kind, path))
    return sessions


def steps(session: Session) -> list[tuple[str, dict[str, Any]]]:
    """(api, request body) of every model call of the session, in order."""
    return [(step.api, step.body) for step in step_records(session)]


def step_records(session: Session) -> list[Step]:
    return {
        "claude-code": _claude_code,
        "codex": _codex,
        "swe-agent": _swe_agent,
        "mini-swe-agent": _mini_swe_agent,
        "vcr-cassette": _cassette,
    }[session.format](session)


# ------------------------------------------------------------------ Claude Code


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _claude_code(session: Session) -> list[Step]:
    lines = [json.loads(line) for line in session.path.read_text().splitlines() if line.strip()]
    messages: list[dict[str, Any]] = []
    #: (index in messages of the assistant message, its line) per distinct response
    calls: list[tuple[int, dict[str, Any]]] = []
    last_id: str | None = None
    thinking = False
    for line in lines:
        kind = line.get("type")
        message = line.get("message")
        if kind not in ("user", "assistant") or not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            thinking = thinking or any(
                isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")
                for b in _blocks(message.get("content"))
            )
            mid = message.get("id")
            if (
                messages
                and messages[-1]["role"] == "assistant"
                and mid is not None
                and mid == last_id
            ):
                messages[-1]["content"].extend(_blocks(message.get("content")))
                continue
            last_id = mid
            calls.append((len(messages), line))
            messages.append({"role": "assistant", "content": _blocks(message.get("content"))})
        else:
            last_id = None
            if messages and messages[-1]["role"] == "user":
                messages[-1]["content"] = _blocks(messages[-1]["content"]) + _blocks(
                    message.get("content")
                )
            else:
                messages.append({"role": "user", "content": message.get("content")})
    out = []
    for n, (at, line) in enumerate(calls):
        message = line["message"]
        body: dict[str, Any] = {
            "model": message.get("model"),
            "max_tokens": CLAUDE_CODE_MAX_TOKENS,
            "messages": json.loads(json.dumps(messages[:at])),
            "stream": True,
        }
        if thinking:
            body["thinking"] = dict(CLAUDE_CODE_THINKING)
        usage = message.get("usage")
        prompt = None
        if isinstance(usage, dict):
            prompt = sum(
                int(usage.get(k) or 0)
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            )
        out.append(
            Step(
                n, "anthropic", body, usage=usage, upstream_prompt_tokens=prompt, complete=False,
                notes=("system prompt and tool definitions are not in a Claude Code transcript",),
            )
        )  # fmt: skip
    return out


# ------------------------------------------------------------------ SWE-agent


def _swe_agent(session: Session) -> list[Step]:
    data = json.loads(session.path.read_text())
    history = data["history"]
    model = SWE_AGENT_MODELS.get(session.name)
    config = data.get("replay_config")
    if isinstance(config, str):
        config = json.loads(config)
    if isinstance(config, dict):
        model = config.get("agent", {}).get("model", {}).get("name") or model
    out = []
    for i, message in enumerate(history):
        if message.get("role") != "assistant":
            continue
        body = {"model": model, "messages": json.loads(json.dumps(history[:i]))}
        out.append(
            Step(len(out), "openai", body, notes=("SWE-agent's tool schemas are not stored",))
        )
    return out


# ------------------------------------------------------------------ mini-swe-agent


def _mini_swe_agent(session: Session) -> list[Step]:
    data = json.loads(session.path.read_text())
    messages = data["messages"]
    model_config = data.get("info", {}).get("config", {}).get("model", {})
    model = str(model_config.get("model_name", "")).split("/")[-1] or None
    kwargs = {
        k: v
        for k, v in (model_config.get("model_kwargs") or {}).items()
        if k in ("temperature", "top_p", "parallel_tool_calls")
    }
    out = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        body = {"model": model, "messages": json.loads(json.dumps(messages[:i])), **kwargs}
        usage = (message.get("extra") or {}).get("response", {}).get("usage")
        prompt = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        out.append(
            Step(
                len(out), "openai", body, usage=usage, upstream_prompt_tokens=prompt,
                notes=("the bash tool's schema is not stored (about 100 tokens upstream)",),
            )
        )  # fmt: skip
    return out


# ------------------------------------------------------------------ Codex rollouts

#: Item types of a model's answer; the other response items are what a request sends
CODEX_OUTPUTS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
#: Codex's own records that never reach the model
CODEX_LOCAL = frozenset({"ghost_snapshot"})


def _codex_output(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    return kind in CODEX_OUTPUTS or (kind == "message" and item.get("role") == "assistant")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def _codex_sent(item: dict[str, Any], version: tuple[int, ...]) -> dict[str, Any]:
    """The item as the CLI sends it: from 0.58 on, a shell result's JSON as its text."""
    if item.get("type") != "function_call_output" or version < (0, 58):
        return item
    try:
        result = json.loads(item["output"])
    except (TypeError, ValueError):
        return item
    if not isinstance(result, dict) or "output" not in result:
        return item
    meta = result.get("metadata") or {}
    text = (
        f"Exit code: {meta.get('exit_code')}\nWall time: {meta.get('duration_seconds')} "
        f"seconds\nOutput:\n{result['output']}"
    )
    return {**item, "output": text}


def _codex(session: Session) -> list[Step]:
    items: list[dict[str, Any]] = []
    usages: list[dict[str, Any]] = []
    starts: list[tuple[int, str | None]] = []
    model: str | None = None
    version: tuple[int, ...] = ()
    total: Any = None
    answering = False
    for line in session.path.read_text().splitlines():
        record = json.loads(line)
        kind, payload = record.get("type"), record.get("payload") or {}
        if kind == "session_meta":
            version = _version(str(payload.get("cli_version", "")))
        elif kind == "turn_context":
            model = payload.get("model", model)
        elif kind == "event_msg" and payload.get("type") == "token_count" and payload.get("info"):
            if payload["info"]["total_token_usage"] != total:
                usages.append(payload["info"]["last_token_usage"])
            total = payload["info"]["total_token_usage"]
        elif kind == "response_item" and payload.get("type") not in CODEX_LOCAL:
            output = _codex_output(payload)
            if output and not answering:
                starts.append((len(items), model))
            answering = output
            items.append(_codex_sent(payload, version))
    out = []
    for (start, at), usage in zip(starts, usages, strict=False):
        body = {
            "model": at, "input": json.loads(json.dumps(items[:start])), "stream": True,
            "store": False, "include": ["reasoning.encrypted_content"],
        }  # fmt: skip
        out.append(
            Step(
                len(out), "responses", body, usage=usage,
                upstream_prompt_tokens=usage.get("input_tokens"), complete=False,
                notes=("Codex's instructions and tool definitions are not stored",),
            )
        )  # fmt: skip
    return out


# ------------------------------------------------------------------ recorded HTTP traffic


def _api_of(uri: str) -> tuple[str, str | None]:
    if "/v1/messages" in uri:
        return "anthropic", None
    if "/v1/responses" in uri:
        return "responses", None
    if "/chat/completions" in uri:
        return "openai", None
    if ":generateContent" in uri or ":streamGenerateContent" in uri:
        model = uri.split("/models/", 1)[1].split(":", 1)[0]
        return "gemini", model
    raise ValueError(f"unknown API for {uri}")


def _recorded_usage(api: str, response: dict[str, Any]) -> tuple[dict[str, Any] | None, int | None]:
    body = response.get("parsed_body")
    if body is None and isinstance(response.get("body"), dict):
        # a streamed answer: the last event that carries usage
        text = response["body"].get("string", "")
        for chunk in reversed(str(text).split("\n")):
            chunk = chunk.removeprefix("data:").strip()
            if chunk.startswith("{") and "usageMetadata" in chunk:
                body = json.loads(chunk)
                break
    if not isinstance(body, dict):
        return None, None
    if api == "gemini":
        usage = body.get("usageMetadata")
        return usage, usage.get("promptTokenCount") if usage else None
    usage = body.get("usage")
    if not isinstance(usage, dict):
        return None, None
    if api == "anthropic":
        return usage, sum(
            int(usage.get(k) or 0)
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
    if api == "responses":
        return usage, usage.get("input_tokens")
    return usage, usage.get("prompt_tokens")


def _cassette(session: Session) -> list[Step]:
    data = json.loads(session.path.read_text())
    out = []
    for i, interaction in enumerate(data["interactions"]):
        request = interaction["request"]
        api, model = _api_of(request["uri"])
        usage, prompt = _recorded_usage(api, interaction["response"])
        out.append(Step(i, api, request["parsed_body"], model, usage, prompt))
    return out
