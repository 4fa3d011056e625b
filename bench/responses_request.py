"""Time govern_request() on a long OpenAI Responses session, next to Chat Completions.

    .venv/bin/python -m bench.responses_request [--turns 150] [--repeats 7] [--out FILE]

The same coding-agent session twice: as a Responses body (each step reasons with
encrypted content, says a line and calls a tool; outputs as items, ``store=false``)
and as a Chat Completions body. Prints, per window, the median time of
govern_request() on each, of the Responses edge alone (decode + encode), and of
``json.dumps`` of the Responses body (what sending it costs anyway). Token cache warm.
With ``--out``, writes its section into that Markdown file, in place (bench.run
includes it in docs/benchmarks.md).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from bench.request_timing import (
    MAX_OUTPUT,
    SYSTEM,
    TASK,
    Table,
    file_path,
    file_text,
    load_average,
    request_main,
    section,
    time_windows,
)
from bench.timing import median_ms
from context_governor import RequestResult, govern_request
from context_governor.formats import responses as rs

ENCRYPTED = "gAAAAABo" + "x" * 600
PATH = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [{"type": "function", "name": "read_file", "parameters": PATH}]


def responses_session(turns: int) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for n in range(turns):
        call = f"call_{n:05d}"
        items += [
            {"type": "reasoning", "id": f"rs_{n:05d}", "encrypted_content": ENCRYPTED,
             "summary": [{"type": "summary_text", "text": f"step {n}: read file {n}"}]},
            {"type": "message", "id": f"msg_{n:05d}", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": f"Reading file {n}.", "annotations": []}]},
            {"type": "function_call", "id": f"fc_{n:05d}", "call_id": call, "name": "read_file",
             "arguments": json.dumps({"path": file_path(n)}), "status": "completed"},
            {"type": "function_call_output", "call_id": call, "output": file_text(n)},
        ]  # fmt: skip
    return {"model": "gpt-5", "instructions": SYSTEM, "input": items,
            "tools": TOOLS, "max_output_tokens": MAX_OUTPUT, "store": False,
            "include": ["reasoning.encrypted_content"]}  # fmt: skip


def chat_session(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
    ]
    for n in range(turns):
        call = f"call_{n:05d}"
        messages += [
            {"role": "assistant", "content": f"Reading file {n}.", "tool_calls": [
                {"id": call, "type": "function", "function": {
                    "name": "read_file", "arguments": json.dumps({"path": file_path(n)})}}]},
            {"role": "tool", "tool_call_id": call, "content": file_text(n)},
        ]  # fmt: skip
    tools = [{"type": "function", "function": {k: v for k, v in TOOLS[0].items() if k != "type"}}]
    return {
        "model": "gpt-5",
        "messages": messages,
        "tools": tools,
        "max_completion_tokens": MAX_OUTPUT,
    }


def _round_trip(body: dict[str, Any]) -> dict[str, Any]:
    decoded = rs.decode(body)
    return rs.encode(decoded.messages, decoded)


HEADING = "## Governing a long Responses session, next to Chat Completions"
TABLE = Table(
    unit="items",
    columns=(
        "Responses",
        "Chat Completions (same session)",
        "Responses decode+encode",
        "json.dumps of the body",
    ),
    count_column=False,
)


def measure(turns: int = 150, repeats: int = 7) -> list[str]:
    """One printed line per window, and the table rows of :func:`render`."""
    body, chat = responses_session(turns), chat_session(turns)
    dumps = median_ms(lambda: json.dumps(body), repeats)
    edge = median_ms(lambda: _round_trip(body), repeats)

    def native(window: int) -> RequestResult:
        return govern_request(body, api="responses", context_window=window)

    def plain(window: int) -> RequestResult:
        return govern_request(chat, api="openai", context_window=window)

    size = len(body["input"])
    return time_windows(TABLE, size, (272_000, 64_000), native, (plain,), (edge, dumps), repeats)


def render(rows: list[str], turns: int, repeats: int) -> str:
    prose = (
        f"A coding agent's session of {turns} steps (each: a reasoning item with encrypted "
        "content, a line of text, a function call and its output), as a Responses body "
        "(`store=false`, so the whole history is sent) and as the same session in Chat "
        f"Completions form, each governed whole by `govern_request`; median of {repeats} "
        f"calls, token cache warm (load average {load_average():.1f} while measuring). "
        "`python -m bench.responses_request --out docs/benchmarks.md` reruns this section."
    )
    return section(TABLE, HEADING, prose, rows)


def main(argv: Sequence[str] | None = None) -> int:
    return request_main(__doc__, argv, measure, render)


if __name__ == "__main__":
    sys.exit(main())
