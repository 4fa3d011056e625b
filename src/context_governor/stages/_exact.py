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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ExactRules", "exact_rules"]


@dataclass(frozen=True, slots=True)
class ExactRules:
    """When a tool result is exact text (see the module docstring)."""

    tools: frozenset[str]
    commands: tuple[tuple[str, ...], ...]
    content: tuple[re.Pattern[str], ...]
    #: whether a line starts with a match of a ``content`` pattern (one alternation of
    #: them where they join, so that each line is matched once)
    line_matches: Callable[[str], object] | None = None

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
        """Whether at least half of the first 200 non-blank lines (of the first 400)
        match a ``content`` pattern; stops as soon as the answer is known."""
        matches = self.line_matches
        if matches is None:
            return False
        lines = [line for line in text.split("\n", 400)[:400] if line.strip()][:200]
        need = (len(lines) + 1) // 2  # matched lines for a yes
        matched, left = 0, len(lines)
        for line in lines:
            if matched + left < need:
                return False
            if matches(line):
                matched += 1
                if matched >= need:
                    return True
            left -= 1
        return bool(lines) and matched >= need


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
        _line_matcher(content),
    )


def _line_matcher(patterns: tuple[str, ...]) -> Callable[[str], object] | None:
    """One match of all ``patterns`` at a line's start (None for none): their alternation,
    or each in turn where they do not join (a pattern with a global inline flag)."""
    if not patterns:
        return None
    try:
        return re.compile("|".join(f"(?:{p})" for p in patterns)).match
    except re.error:
        compiled = tuple(re.compile(p) for p in patterns)
        return lambda line: any(p.match(line) for p in compiled)
