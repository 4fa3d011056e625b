"""Exact text: the tool results an agent must be able to reproduce byte for byte.

File reads that an edit quotes (the tools named in ``exact_tools``), shell calls that run
one of ``exact_commands`` (``cat``, ``git diff``) and results whose lines carry line
numbers (``exact_content``). The lossless shrink leaves them as they are
(stages/_shrink.py); the cache policy takes a repeat of such a read as making the older
result stale (``CompactionPolicy.supersede``, stages/_replay.py). A leaf: both import it.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ExactRules", "exact_rules"]


@dataclass(frozen=True, slots=True)
class ExactRules:
    """When a tool result is exact text (see the module docstring)."""

    tools: frozenset[str]
    commands: tuple[tuple[str, ...], ...]
    content: tuple[re.Pattern[str], ...]

    def exact(self, name: Any, arguments: Any, text: str) -> bool:
        if isinstance(name, str) and name.lower() in self.tools:
            return True
        return self._runs_exact(arguments) or self._numbered(text)

    def _runs_exact(self, arguments: Any) -> bool:
        for command in _commands(arguments):
            for part in re.split(r"&&|\|\||[;|\n&()`]|\$\(", command):
                words = _program(part.split())
                if any(tuple(words[: len(c)]) == c for c in self.commands):
                    return True
        return False

    def _numbered(self, text: str) -> bool:
        if not self.content:
            return False
        lines = [line for line in text.split("\n", 400)[:400] if line.strip()][:200]
        matched = sum(1 for line in lines if any(p.match(line) for p in self.content))
        return bool(lines) and 2 * matched >= len(lines)


def _program(words: list[str]) -> list[str]:
    """A command's words from its program on: leading ``VAR=value``, ``sudo``, ``env``,
    ``time``, ``command`` and ``exec`` skipped, the program's directory dropped."""
    i = 0
    while i < len(words) and (
        ("=" in words[i] and not words[i].startswith("="))
        or words[i] in ("sudo", "env", "time", "command", "exec", "nohup")
    ):
        i += 1
    rest = words[i:]
    if rest:
        rest = [rest[0].rsplit("/", 1)[-1], *rest[1:]]
    return rest


def _commands(arguments: Any) -> list[str]:
    """The shell commands in a call's arguments (``command`` or ``cmd``, text or a list
    of words such as ``["bash", "-lc", "cat f"]``, each word also read as a command)."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return []
    if not isinstance(arguments, dict):
        return []
    found: list[str] = []
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            found.append(" ".join(value))
            found.extend(value)
    return found


@functools.cache
def exact_rules(
    tools: frozenset[str], commands: tuple[str, ...], content: tuple[str, ...]
) -> ExactRules:
    """The rules of a policy's ``exact_tools``, ``exact_commands`` and ``exact_content``
    (made once per settings)."""
    return ExactRules(
        frozenset(t.lower() for t in tools),
        tuple(tuple(c.split()) for c in commands if c.split()),
        tuple(re.compile(p) for p in content),
    )
