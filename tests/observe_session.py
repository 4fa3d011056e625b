"""A scripted agent session through the proxy, in any of the four APIs, for the
observability tests: each step adds a tool call and its (large) result, sends the
whole history and reads the answer. The history grows past the window, so the
proxy compacts; ``edit_system_at`` changes the system prompt at one step (the
client editing its oldest message: the provider's cache is lost).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5", "responses": "gpt-5-mini",
          "gemini": "gemini-2.5-flash"}  # fmt: skip
SESSION = "5b0c53c2-5d8a-4d55-9bb4-6f1c1a2b3c4d"
TASK = "Refactor the handlers module and keep the tests green."


#: a new user message every TURN steps (the cache policy clears old turns' results)
TURN = 6


def turn_text(step: int) -> str:
    return f"Good. Now part {step // TURN + 1}: the next module."


def result_text(step: int, size: int = 1600) -> str:
    lines = [f"def handler_{step}_{i}(v): return v * {step + i}  # line {i}" for i in range(size // 48)]
    return "\n".join(lines)


def body(api: str, steps: int, system: str = "You are a careful coding agent.", stream: bool = False) -> tuple[str, dict[str, Any]]:
    """(path under the proxy's root, body) of the request sent after ``steps`` steps."""
    model = MODELS[api]
    if api == "openai":
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": TASK}]
        for s in range(steps):
            if s and s % TURN == 0:
                messages.append({"role": "user", "content": turn_text(s)})
            messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{s}", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{s}.py"})}}]})
            messages.append({"role": "tool", "tool_call_id": f"call_{s}", "content": result_text(s)})
        data: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": 400}
        if stream:
            data.update(stream=True, stream_options={"include_usage": True})
        return "/v1/chat/completions", data
    if api == "anthropic":
        turns: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
        for s in range(steps):
            turns.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{s:04d}", "name": "read_file", "input": {"path": f"src/m{s}.py"}}]})
            turns.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{s:04d}", "content": result_text(s)}]})
            if (s + 1) % TURN == 0 and s + 1 < steps:
                turns[-1]["content"].append({"type": "text", "text": turn_text(s + 1)})
        data = {"model": model, "max_tokens": 400, "system": system, "messages": turns,
                "metadata": {"user_id": f"user_abc123_account_ffff_session_{SESSION}"}, "stream": stream}
        return "/v1/messages", data
    if api == "responses":
        items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
        for s in range(steps):
            if s and s % TURN == 0:
                items.append({"role": "user", "content": turn_text(s)})
            items.append({"type": "function_call", "call_id": f"call_{s}", "name": "read_file", "arguments": json.dumps({"path": f"src/m{s}.py"})})
            # longer outputs: a Responses call and result count fewer tokens than their chat
            # form (no call ids), and the session must still overflow the window to cut
            items.append({"type": "function_call_output", "call_id": f"call_{s}", "output": result_text(s, 1900)})
        return "/v1/responses", {"model": model, "instructions": system, "input": items, "max_output_tokens": 400, "stream": stream}
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": TASK}]}]
    for s in range(steps):
        contents.append({"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": f"src/m{s}.py"}}}]})
        contents.append({"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"content": result_text(s)}}}]})
        if (s + 1) % TURN == 0 and s + 1 < steps:
            contents[-1]["parts"].append({"text": turn_text(s + 1)})
    action = "streamGenerateContent" if stream else "generateContent"
    return f"/v1beta/models/{model}:{action}", {"systemInstruction": {"parts": [{"text": system}]}, "contents": contents, "generationConfig": {"maxOutputTokens": 400}}


def run(root: str, api: str, steps: int, *, stream: bool = False, edit_system_at: int | None = None,
        headers: dict[str, str] | None = None, first: int = 1) -> list[httpx.Response]:
    """Send the requests after ``first``..``steps`` steps; every answer must be a 200."""
    answers = []
    with httpx.Client(base_url=root, timeout=60, headers={"x-api-key": "k", "authorization": "Bearer k", **(headers or {})}) as client:
        for n in range(first, steps + 1):
            system = "You are a careful coding agent." if edit_system_at is None or n < edit_system_at else "You are a careful coding agent. Be brief."
            path, data = body(api, n, system, stream)
            answer = client.post(path, json=data)
            assert answer.status_code == 200, answer.text
            answers.append(answer)
    return answers


def metric(root: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples whose labels match ``labels`` (as scraped now)."""
    text = httpx.get(f"{root}/metrics", timeout=10).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total
