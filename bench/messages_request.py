"""Time govern_request() on a long Anthropic Messages session (thinking on, tool use).

    .venv/bin/python -m bench.messages_request [--turns 150] [--repeats 7] [--out FILE]

Prints (and with ``--out`` writes into that Markdown file, in place), per window,
the median time of govern_request() on the whole body, of govern() on the same
messages in chat form, and of the edge alone (decode + encode). Token cache warm.
"""

from __future__ import annotations

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
from context_governor import RequestResult, govern, govern_request
from context_governor.formats import anthropic as an

SIGNATURE = "EqQBCkYIBxgCKkA" + "x" * 200


def session(turns: int) -> dict[str, Any]:
    """A coding agent's Messages body: each turn thinks (signed), says a line, reads a file."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for n in range(turns):
        call = f"toolu_{n:05d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"step {n}: read file {n}",
                     "signature": SIGNATURE},
                    {"type": "text", "text": f"Reading file {n}."},
                    {"type": "tool_use", "id": call, "name": "read",
                     "input": {"path": file_path(n)}},
                ],
            }
        )  # fmt: skip
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                          "content": file_text(n)}]}
        )  # fmt: skip
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": MAX_OUTPUT,
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "system": SYSTEM,
        "tools": [{"name": "read", "description": "read a file",
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "messages": messages,
    }  # fmt: skip


def _round_trip(body: dict[str, Any]) -> dict[str, Any]:
    decoded = an.decode(body)
    return an.encode(decoded.messages, decoded)


HEADING = "## Governing a long Messages session"
TABLE = Table(
    unit="messages",
    columns=("govern_request", "govern() on the chat view", "decode+encode"),
    count_column=True,
)


def measure(turns: int = 150, repeats: int = 7) -> list[str]:
    """One printed line per window, and the table rows of :func:`render`."""
    body = session(turns)
    decoded = an.decode(body)
    chat = [{k: v for k, v in m.items() if k != an.CARRY} for m in decoded.messages]

    def native(window: int) -> RequestResult:
        return govern_request(body, api="anthropic", context_window=window)

    def plain(window: int) -> object:
        return govern(chat, tools=body["tools"], profile="anthropic", model=body["model"],
                      context_window=window, max_output=MAX_OUTPUT)  # fmt: skip

    def edge(_window: int) -> object:
        return _round_trip(body)

    size = len(body["messages"])
    return time_windows(TABLE, size, (200_000, 64_000), native, (plain, edge), (), repeats)


def render(rows: list[str], turns: int, repeats: int) -> str:
    prose = (
        f"A coding agent's Messages body of {turns} turns (each: a signed thinking "
        "block, a line of text, a tool_use; its tool_result), thinking on, governed "
        f"whole by `govern_request`; median of {repeats} calls, token cache warm "
        f"(load average {load_average():.1f} while measuring). *govern()* governs the same "
        "messages in chat form (counted with cl100k, not the Claude estimate); "
        "*decode+encode* is the edge alone. `python -m bench.messages_request --out "
        "docs/benchmarks.md` reruns this section."
    )
    return section(TABLE, HEADING, prose, rows)


def main(argv: Sequence[str] | None = None) -> int:
    return request_main(__doc__, argv, measure, render)


if __name__ == "__main__":
    sys.exit(main())
