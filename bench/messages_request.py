"""Time govern_request() on a long Anthropic Messages session (thinking on, tool use).

    .venv/bin/python -m bench.messages_request [--turns 150] [--repeats 7] [--out FILE]

Prints (and with ``--out`` writes into that Markdown file, in place), per window,
the median time of govern_request() on the whole body, of govern() on the same
messages in chat form, and of the edge alone (decode + encode). Token cache warm.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from bench.anthropic_cache import write_section
from bench.timing import median_ms
from context_governor import govern, govern_request
from context_governor.formats import anthropic as an

SIGNATURE = "EqQBCkYIBxgCKkA" + "x" * 200


def session(turns: int) -> dict[str, Any]:
    """A coding agent's Messages body: each turn thinks (signed), says a line, reads a file."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the failing test in src/"}]
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
                     "input": {"path": f"src/f{n}.py"}},
                ],
            }
        )  # fmt: skip
        output = f"def f():\n    return {n}\n" * 40
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                          "content": output}]}
        )  # fmt: skip
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "thinking": {"type": "enabled", "budget_tokens": 4096},
        "system": "You are a coding agent.",
        "tools": [{"name": "read", "description": "read a file",
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "messages": messages,
    }  # fmt: skip


def _round_trip(body: dict[str, Any]) -> dict[str, Any]:
    decoded = an.decode(body)
    return an.encode(decoded.messages, decoded)


HEADING = "## Governing a long Messages session"


def measure(turns: int = 150, repeats: int = 7) -> list[str]:
    """One printed line per window, and the table rows of :func:`render`."""
    body = session(turns)
    decoded = an.decode(body)
    chat = [{k: v for k, v in m.items() if k != an.CARRY} for m in decoded.messages]
    rows = []
    for window in (200_000, 64_000):
        result = govern_request(body, context_window=window)
        native = median_ms(lambda w=window: govern_request(body, context_window=w), repeats)
        plain = median_ms(
            lambda w=window: govern(chat, tools=body["tools"], profile="anthropic",
                                    model=body["model"], context_window=w, max_output=8192),
            repeats,
        )  # fmt: skip
        edge = median_ms(lambda: _round_trip(body), repeats)
        report = result.report
        print(
            f"{len(body['messages'])} messages, window {window:,}: govern_request "
            f"{native:.1f} ms, govern() on the chat view {plain:.1f} ms, decode+encode "
            f"{edge:.1f} ms; tokens {report.tokens_before:,} -> {report.tokens_after:,}, "
            f"messages {report.messages_before} -> {report.messages_after}, "
            f"rules broken: {len(report.violations)}"
        )
        rows.append(
            f"| {window:,} | {len(body['messages'])} | {native:.1f} ms | {plain:.1f} ms | "
            f"{edge:.1f} ms | {report.tokens_before:,} → {report.tokens_after:,} | "
            f"{report.messages_before} → {report.messages_after} | {len(report.violations)} |"
        )
    return rows


def render(rows: list[str], turns: int, repeats: int) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return "\n".join(
        [
            HEADING,
            "",
            f"A coding agent's Messages body of {turns} turns (each: a signed thinking "
            "block, a line of text, a tool_use; its tool_result), thinking on, governed "
            f"whole by `govern_request`; median of {repeats} calls, token cache warm "
            f"(load average {load:.1f} while measuring). *govern()* governs the same "
            "messages in chat form (counted with cl100k, not the Claude estimate); "
            "*decode+encode* is the edge alone. `python -m bench.messages_request --out "
            "docs/benchmarks.md` reruns this section.",
            "",
            "| window | messages | govern_request | govern() on the chat view | "
            "decode+encode | tokens | messages | rules broken |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = measure(args.turns, args.repeats)
    if args.out is not None:
        write_section(args.out, render(rows, args.turns, args.repeats))


if __name__ == "__main__":
    main()
