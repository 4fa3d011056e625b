"""Test doubles for the agent runner: a tool registry with controllable misbehaviour.

It speaks the runner's ToolRunner protocol only (schemas, async call), like
any third-party registry would — and, unlike ours, it ignores ``timeout``
and may raise, so the runner's own guards are what the tests exercise.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Outcome:
    content: str
    is_error: bool = False
    elapsed: float = 0.0


def _schema(name: str, **props: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"test tool {name}",
            "parameters": {
                "type": "object",
                "properties": {k: {"type": v} for k, v in props.items()},
            },
        },
    }


def _log_lines(chars: int) -> str:
    """Tool output that tokenizes like real output (about 4 characters a token)."""
    lines, size, i = [], 0, 0
    while size < chars:
        line = f"{i:05d} worker-{i % 7} processed batch {i * 31 % 997} in {i % 13}.{i % 10}s\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines)[:chars]


class FakeTools:
    """echo(text, times), sleep(seconds), boom(), huge(chars); records every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.started: list[str] = []
        self.cancelled: list[str] = []

    def schemas(self) -> list[dict[str, Any]]:
        return [
            _schema("echo", text="string", times="integer"),
            _schema("sleep", seconds="number"),
            _schema("boom"),
            _schema("huge", chars="integer"),
            _schema("read_file", path="string"),
        ]

    async def call(
        self,
        name: str,
        arguments: str | dict[str, Any] | None,
        *,
        timeout: float | None = None,
        max_output_chars: int | None = None,
    ) -> Outcome:
        self.calls.append((name, arguments))
        self.started.append(name)
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else (arguments or {})
        except ValueError as exc:
            return Outcome(f"Error: invalid JSON arguments: {exc}", is_error=True)
        if name == "echo":
            return Outcome(str(args.get("text", "")) * int(args.get("times", 1)))
        if name == "sleep":
            try:
                await asyncio.sleep(float(args.get("seconds", 0)))
            except asyncio.CancelledError:
                self.cancelled.append(name)
                raise
            return Outcome(f"slept {args.get('seconds')}")
        if name == "boom":
            raise RuntimeError("the tool exploded")
        if name == "huge":
            return Outcome(_log_lines(int(args.get("chars", 100_000))))
        if name == "read_file":
            return Outcome(f"# {args.get('path')}\n" + "line of code\n" * 80)
        return Outcome(f"Error: unknown tool {name!r}", is_error=True)
