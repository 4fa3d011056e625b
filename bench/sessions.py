"""Deterministic coding-agent sessions for the benchmarks.

A session is what a coding agent's history looks like after each model call: a
system prompt and a task, then per step one assistant message with one or more
tool calls (parallel about one step in five) and their results -- file reads,
greps, test runs, diffs, directory listings, edits -- and, every ~30 steps, a
final answer followed by a user follow-up. Tool outputs are 200 to 8,000
characters. Everything comes from ``random.Random`` with fixed seeds: the same
arguments give the same session, byte for byte, in any process.

``variant`` changes only the tool-call ids (every assistant and tool message then
differs from the other variants' while the sizes stay identical), so that a
repeated replay cannot be served from a token cache filled by the previous one.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Message = dict[str, Any]

SEED = 20250301
MODEL = "gpt-4o"
MIN_RESULT_CHARS = 200
MAX_RESULT_CHARS = 8000
FOLLOW_UP_EVERY = 30
PARALLEL_SHARE = 0.25

PROJECT = "orbit"
PACKAGES = ("api", "core", "db", "auth", "workers", "cli", "utils")
NOUNS = (
    "session", "token", "cache", "config", "request", "handler", "route", "store",
    "parser", "event", "queue", "worker", "client", "index", "record", "schema",
    "message", "report", "budget", "user", "account", "invoice", "payload", "job",
    "retry", "limit", "window", "cursor", "batch", "policy",
)  # fmt: skip
VERBS = (
    "get", "load", "save", "build", "parse", "validate", "refresh", "resolve",
    "render", "flush", "merge", "encode", "decode", "schedule", "expire", "sync",
    "apply", "reset", "compute", "dispatch",
)  # fmt: skip
TYPES = ("str", "int", "bool", "bytes", "float", "dict[str, Any]", "list[str]", "Path")
ERRORS = ("ValueError", "KeyError", "TimeoutError", "PermissionError", "LookupError")

SYSTEM_PROMPT = """You are Orbit Coder, an autonomous software engineering agent working in a \
checked-out repository at /workspace/orbit. You can read files, search the code, run shell \
commands, and edit files through the tools you are given.

# How to work
- Before changing code, read the relevant files and the tests that cover them. Do not guess \
APIs: grep for their definitions and usages first.
- Make the smallest change that fixes the problem. Keep the existing style: type hints, \
docstrings that say why, no dead code, no print debugging left behind.
- After every change, run the narrowest test command that exercises it, then the package's \
whole test suite before you report back.
- When a command fails, read its output carefully; quote the relevant lines in your reasoning \
and fix the cause, not the symptom.
- Never modify files outside the repository, never push, never rewrite git history.
- Prefer `edit_file` with an exact `old_string` over rewriting whole files.

# Repository
Orbit is a Python 3.12 service: an HTTP API (package orbit.api), a domain core (orbit.core), \
persistence on PostgreSQL through SQLAlchemy (orbit.db), authentication and sessions \
(orbit.auth), background workers (orbit.workers), a CLI (orbit.cli) and helpers \
(orbit.utils). Tests live under tests/, mirror the package layout and run with \
`python -m pytest`. Lint with `ruff check .` and type-check with `mypy src`.

# Reporting
When the task is done, answer with a short summary: what was wrong, what you changed \
(files and functions), how you verified it, and anything the user should know or decide. \
Do not paste whole files into your answer.
"""

TASKS = (
    "Users report that they get logged out after about five minutes even though sessions "
    "should last 24 hours. Find out why refresh tokens expire early and fix it. Please add "
    "a regression test.",
    "The nightly invoice export sometimes produces duplicate rows. Can you track it down?",
    "Add a `--dry-run` flag to `orbit sync` that prints what would change without writing.",
    "Rate limiting counts requests per process instead of per user. Make it per user, using "
    "the Redis store we already have, and keep the old behaviour behind a setting.",
    "The API returns 500 instead of 404 when a job id does not exist. Fix it everywhere a "
    "job is looked up and add tests.",
    "Looks good. Now the batch worker retries forever on a poisoned message; cap the "
    "retries at five and move the message to the dead-letter queue.",
    "Thanks. One more: `orbit report --since` ignores the time zone of the timestamp it is "
    "given. Please fix and document it.",
    "CI is red on main after the last merge, test_cursor_pagination fails intermittently. "
    "Find the flake and fix the root cause, not the test.",
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }
    for name, description, properties, required in (
        (
            "read_file",
            "Read a text file from the workspace, with line numbers. Use offset and limit for "
            "large files.",
            {
                "path": {"type": "string", "description": "Path relative to the workspace."},
                "offset": {"type": "integer", "description": "First line, 1-based."},
                "limit": {"type": "integer", "description": "Number of lines to read."},
            },
            ["path"],
        ),
        (
            "grep",
            "Search file contents with a regular expression; prints path:line:text.",
            {
                "pattern": {"type": "string"},
                "path": {"type": "string", "description": "Directory or file to search."},
                "glob": {"type": "string", "description": "Only files matching this glob."},
            },
            ["pattern"],
        ),
        (
            "exec",
            "Run a shell command in the workspace and return its exit code and output.",
            {
                "command": {"type": "string"},
                "timeout": {
                    "type": "integer",
                    "description": "Seconds before the command is killed.",
                },
            },
            ["command"],
        ),
        (
            "find_files",
            "List files whose path matches a glob pattern.",
            {"pattern": {"type": "string"}},
            ["pattern"],
        ),
        (
            "list_dir",
            "List a directory's entries with their sizes.",
            {"path": {"type": "string"}},
            ["path"],
        ),
        (
            "edit_file",
            "Replace an exact string in a file. old_string must occur exactly once.",
            {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
            },
            ["path", "old_string", "new_string"],
        ),
        (
            "write_file",
            "Create or overwrite a file with the given content.",
            {"path": {"type": "string"}, "content": {"type": "string"}},
            ["path", "content"],
        ),
    )
]

# (tool kind, weight): exec is split by what it runs.
_KINDS: tuple[tuple[str, float], ...] = (
    ("read_file", 0.30),
    ("grep", 0.14),
    ("pytest", 0.15),
    ("git_diff", 0.06),
    ("lint", 0.04),
    ("list_dir", 0.05),
    ("find_files", 0.05),
    ("edit_file", 0.18),
    ("write_file", 0.03),
)


@dataclass(frozen=True, slots=True)
class Replay:
    """A session as a sequence of model calls.

    ``steps[0]`` is the opening (system prompt and task); ``steps[i]`` is what the
    i-th model call added to the history (its assistant message, the tool results,
    sometimes a user follow-up). The request of step ``i`` is the concatenation of
    ``steps[0..i]``.
    """

    name: str
    model: str
    tools: list[dict[str, Any]]
    steps: list[list[Message]]

    @property
    def messages(self) -> list[Message]:
        return [m for step in self.steps for m in step]

    def histories(self) -> Iterator[list[Message]]:
        """The growing history, one list object extended in place, as an agent loop does."""
        history: list[Message] = []
        for step in self.steps:
            history.extend(step)
            yield history

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model, "tools": self.tools, "steps": self.steps}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Replay:
        return cls(data["name"], data["model"], data["tools"], data["steps"])


class _Project:
    """A fake repository whose files are generated on first read and then stay the same."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        rng = random.Random(seed)
        self.paths: list[str] = []
        for package in PACKAGES:
            for noun in rng.sample(NOUNS, 5):
                self.paths.append(f"src/{PROJECT}/{package}/{noun}s.py")
                self.paths.append(f"tests/{package}/test_{noun}s.py")
        self._files: dict[str, list[str]] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self._files:
            rng = random.Random(f"{self.seed}:{path}")
            test = "/test_" in path
            self._files[path] = _test_module(rng) if test else _source_module(rng)
        return self._files[path]


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def _source_module(rng: random.Random) -> list[str]:
    noun = rng.choice(NOUNS)
    lines = [
        f'"""{noun.capitalize()} handling for orbit: storage, validation and expiry."""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "from dataclasses import dataclass, field",
        "from datetime import UTC, datetime, timedelta",
        "from typing import Any",
        "",
        f"from orbit.db import {rng.choice(NOUNS)}_table",
        "from orbit.utils.clock import now",
        "",
        "logger = logging.getLogger(__name__)",
        f"DEFAULT_{noun.upper()}_TTL = timedelta(seconds={rng.choice((300, 900, 3600, 86400))})",
        "",
    ]
    for _ in range(rng.randint(5, 10)):
        cls = f"{rng.choice(NOUNS).capitalize()}{rng.choice(('Store', 'Manager', 'Service'))}"
        lines += ["", "@dataclass", f"class {cls}:", f'    """Keeps {noun}s for one tenant."""', ""]
        for attr in rng.sample(NOUNS, 3):
            lines.append(f"    {attr}: {rng.choice(TYPES)} = field(default_factory=dict)")
        for _ in range(rng.randint(3, 8)):
            lines += _method(rng)
    return lines


def _method(rng: random.Random) -> list[str]:
    name, arg, other = _ident(rng), rng.choice(NOUNS), rng.choice(NOUNS)
    ret = rng.choice(TYPES)
    body = [
        "",
        f"    def {name}(self, {arg}: {rng.choice(TYPES)}, *, strict: bool = False) -> {ret}:",
        f'        """{name.replace("_", " ").capitalize()} for the given {arg}."""',
    ]
    for _ in range(rng.randint(3, 12)):
        body.append(
            rng.choice(
                (
                    f"        if {arg} is None:\n            raise {rng.choice(ERRORS)}"
                    f'("{arg} must be set")',
                    f"        {other} = self.{rng.choice(NOUNS)}.get({arg}, None)",
                    f'        logger.debug("{name}: %s -> %s", {arg}, {other})',
                    f"        expires_at = now() + DEFAULT_{rng.choice(NOUNS).upper()}_TTL",
                    f"        for item in self.{other}s:\n            item.{_ident(rng)}()",
                    f"        if strict and not self.{_ident(rng)}({arg}):\n"
                    f"            return {rng.choice(('None', 'False', '{}', '[]'))}",
                    f"        self.{other} = {_ident(rng)}({arg}, strict=strict)",
                )
            )
        )
    body.append(f"        return self.{rng.choice(NOUNS)}")
    return "\n".join(body).split("\n")


def _test_module(rng: random.Random) -> list[str]:
    lines = ["import pytest", "", f"from orbit.{rng.choice(PACKAGES)} import {_ident(rng)}", ""]
    for _ in range(rng.randint(12, 30)):
        name = f"test_{_ident(rng)}_{rng.choice(('expired', 'missing', 'ok', 'twice', 'empty'))}"
        lines += [
            "",
            f"def {name}(client, {rng.choice(NOUNS)}_factory):",
            f"    {rng.choice(NOUNS)} = {rng.choice(NOUNS)}_factory(ttl={rng.randint(1, 999)})",
            f'    resp = client.post("/v1/{rng.choice(NOUNS)}s", '
            f'json={{"id": {rng.randint(1, 99)}}})',
            f"    assert resp.status_code == {rng.choice((200, 201, 204, 404))}",
            f'    assert resp.json()["{rng.choice(NOUNS)}"] == {rng.randint(0, 9)}',
        ]
    return lines


def _result_size(rng: random.Random, low: int, high: int) -> int:
    """Mostly uniform, a quarter log-uniform: many mid-sized outputs, a tail of small ones."""
    if rng.random() < 0.75:
        return rng.randint(low, high)
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def _fit(lines: Iterator[str] | list[str], size: int) -> str:
    """Whole lines up to ``size`` characters, at least MIN_RESULT_CHARS."""
    out: list[str] = []
    total = 0
    for line in lines:
        if total + len(line) + 1 > size and total > MIN_RESULT_CHARS:
            break
        out.append(line)
        total += len(line) + 1
    text = "\n".join(out)
    return text[:MAX_RESULT_CHARS]


class _Session:
    """Generates one session step by step. bench/shapes.py derives other session shapes
    from it by overriding ``kinds``, ``_n_calls``, ``_tool`` or ``step``."""

    #: (tool kind, weight) of each call
    kinds: tuple[tuple[str, float], ...] = _KINDS

    def __init__(self, seed: int, variant: int) -> None:
        self.rng = random.Random(seed)
        self.ids = random.Random(seed * 1009 + variant)
        self.project = _Project(seed)
        self.task = 0
        self.since_user = 0
        self.next_user = FOLLOW_UP_EVERY

    def _call_id(self) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "call_" + "".join(self.ids.choice(alphabet) for _ in range(24))

    def opening(self) -> list[Message]:
        return [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": TASKS[0]},
        ]

    def step(self) -> list[Message]:
        rng = self.rng
        self.since_user += 1
        if self.since_user >= self.next_user:
            self.since_user = 0
            self.next_user = FOLLOW_UP_EVERY + rng.randint(-5, 5)
            self.task += 1
            return [
                {"role": "assistant", "content": self._final_answer()},
                {"role": "user", "content": TASKS[self.task % len(TASKS)]},
            ]
        return self.tool_step(self._n_calls())

    def _n_calls(self) -> int:
        """How many calls the next tool step makes (in parallel when more than one)."""
        return self.rng.choice((2, 2, 3)) if self.rng.random() < PARALLEL_SHARE else 1

    def tool_step(self, n_calls: int) -> list[Message]:
        """One model call that makes ``n_calls`` tool calls, and their results."""
        rng = self.rng
        calls: list[dict[str, Any]] = []
        results: list[Message] = []
        for _ in range(n_calls):
            kind = rng.choices([k for k, _ in self.kinds], [w for _, w in self.kinds])[0]
            name, args, output = self._tool(kind)
            call_id = self._call_id()
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
            results.append(
                {"role": "tool", "tool_call_id": call_id, "name": name, "content": output}
            )
        content = self._thought() if rng.random() < 0.4 else None
        return [{"role": "assistant", "content": content, "tool_calls": calls}, *results]

    def _thought(self) -> str:
        rng = self.rng
        return rng.choice(
            (
                f"Let me look at how `{_ident(rng)}` handles the {rng.choice(NOUNS)} first.",
                f"The failure comes from `{_ident(rng)}`: it compares a naive datetime with an "
                f"aware one. I'll check where the {rng.choice(NOUNS)} is created.",
                f"Tests pass locally for {rng.choice(PACKAGES)}; running the whole suite now.",
                f"I need to see every caller of `{_ident(rng)}` before changing its signature.",
                "That edit broke an import; fixing it.",
            )
        )

    def _final_answer(self) -> str:
        rng = self.rng
        touched = rng.sample(self.project.paths, 3)
        return (
            f"Done. The {rng.choice(NOUNS)} was computed from `{_ident(rng)}` with the wrong "
            f"time base, so it expired after {rng.randint(2, 9)} minutes.\n\n"
            "Changes:\n"
            + "\n".join(f"- `{p}`: {_ident(rng)} now uses UTC" for p in touched)
            + f"\n\nVerified with `python -m pytest -q` ({rng.randint(180, 420)} passed) and "
            "`ruff check .`. No migration needed."
        )

    def _tool(self, kind: str) -> tuple[str, dict[str, Any], str]:
        rng, project = self.rng, self.project
        path = rng.choice(project.paths)
        if kind == "read_file":
            lines = project.lines(path)
            offset = rng.choice((1, 1, 1, rng.randint(1, max(1, len(lines) - 40))))
            size = _result_size(rng, 1500, MAX_RESULT_CHARS)
            numbered = (f"{i:6d}\t{line}" for i, line in enumerate(lines[offset - 1 :], offset))
            return "read_file", {"path": path, "offset": offset}, _fit(numbered, size)
        if kind == "grep":
            pattern = _ident(rng) if rng.random() < 0.5 else rng.choice(NOUNS)
            size = _result_size(rng, MIN_RESULT_CHARS, MAX_RESULT_CHARS)
            return "grep", {"pattern": pattern, "path": "src"}, _fit(self._grep_lines(), size)
        if kind == "pytest":
            target = rng.choice([p for p in project.paths if p.startswith("tests/")])
            command = f"python -m pytest {target} -q -x"
            return "exec", {"command": command}, self._pytest(target)
        if kind == "git_diff":
            size = _result_size(rng, 400, MAX_RESULT_CHARS)
            return "exec", {"command": "git diff"}, _fit(self._diff_lines(), size)
        if kind == "lint":
            command = rng.choice(("ruff check .", "mypy src"))
            size = _result_size(rng, MIN_RESULT_CHARS, 5000)
            return "exec", {"command": command}, _fit(self._lint_lines(), size)
        if kind == "list_dir":
            directory = path.rsplit("/", 1)[0]
            entries = (
                f"{rng.choice(('-rw-r--r--', 'drwxr-xr-x'))} {rng.randint(90, 40000):>7} "
                f"{_ident(rng)}{rng.choice(('.py', '.py', '/', '.toml', '.md'))}"
                for _ in range(400)
            )
            size = _result_size(rng, MIN_RESULT_CHARS, 3000)
            return "list_dir", {"path": directory}, _fit(entries, size)
        if kind == "find_files":
            paths = (rng.choice(project.paths) for _ in range(400))
            size = _result_size(rng, MIN_RESULT_CHARS, 3000)
            return "find_files", {"pattern": f"**/*{rng.choice(NOUNS)}*.py"}, _fit(paths, size)
        lines = project.lines(path)
        start = rng.randint(0, max(0, len(lines) - 12))
        old = "\n".join(lines[start : start + rng.randint(2, 10)])
        new = old.replace("now()", "now(UTC)") + f"\n        # {_ident(rng)}: keep UTC"
        if kind == "write_file":
            content = "\n".join(lines[: rng.randint(20, 80)])
            return (
                "write_file",
                {"path": path, "content": content},
                (f"Wrote {len(content)} characters to {path}.\n" + _fit(iter(lines), 300)),
            )
        snippet = (f"{i:6d}\t{line}" for i, line in enumerate(lines[start:], start + 1))
        output = f"Edited {path}: 1 replacement. The edited region now reads:\n" + _fit(
            snippet, _result_size(rng, MIN_RESULT_CHARS, 2500)
        )
        return "edit_file", {"path": path, "old_string": old, "new_string": new}, output

    def _grep_lines(self) -> Iterator[str]:
        rng, project = self.rng, self.project
        while True:
            path = rng.choice(project.paths)
            lines = project.lines(path)
            number = rng.randrange(len(lines))
            yield f"{path}:{number + 1}:{lines[number].strip()}"

    def _diff_lines(self) -> Iterator[str]:
        rng, project = self.rng, self.project
        while True:
            path = rng.choice(project.paths)
            lines = project.lines(path)
            start = rng.randrange(max(1, len(lines) - 8))
            yield f"diff --git a/{path} b/{path}"
            yield f"--- a/{path}"
            yield f"+++ b/{path}"
            yield f"@@ -{start + 1},7 +{start + 1},8 @@"
            for i, line in enumerate(lines[start : start + 7]):
                if i == 3:
                    yield f"-{line}"
                    yield f"+{line.replace('now()', 'now(UTC)')}  # tz-aware"
                    yield f"+{line[:4]}# {_ident(rng)}"
                else:
                    yield f" {line}"

    def _lint_lines(self) -> Iterator[str]:
        rng, project = self.rng, self.project
        codes = (
            ("F401", "imported but unused"),
            ("E501", "Line too long (104 > 100)"),
            ("B008", "Do not perform function call in argument defaults"),
            ("arg-type", 'Argument 1 has incompatible type "str | None"; expected "str"'),
            ("union-attr", 'Item "None" of "Session | None" has no attribute "expires_at"'),
        )
        while True:
            code, text = rng.choice(codes)
            yield (
                f"{rng.choice(project.paths)}:{rng.randint(1, 400)}:{rng.randint(1, 80)}: "
                f"{code} {text}"
            )

    def _pytest(self, target: str) -> str:
        rng = self.rng
        n = rng.randint(8, 60)
        if rng.random() < 0.3:
            return (
                f"$ python -m pytest {target} -q -x\n"
                "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0\n"
                "rootdir: /workspace/orbit\nconfigfile: pyproject.toml\n"
                f"plugins: anyio-4.4.0, cov-5.0.0\ncollected {n} items\n\n"
                + "." * n
                + f"{' ' * max(1, 70 - n)}[100%]\n{n} passed in {rng.uniform(0.3, 9):.2f}s\n"
                + "exit code: 0"
            )
        size = _result_size(rng, 1200, MAX_RESULT_CHARS)
        test = f"test_{_ident(rng)}_expired"
        lines = self.project.lines(target)
        head = [
            f"$ python -m pytest {target} -q -x",
            "." * (n // 2) + "F",
            "=" * 35 + " FAILURES " + "=" * 35,
            f"{'_' * 20} {test} {'_' * 20}",
            "",
        ]
        frames = []
        for line in lines[: rng.randint(40, 200)]:
            frames.append(f"    {line}")
        tail = [
            f">       assert resp.status_code == {rng.choice((200, 201))}",
            f"E       assert 401 == {rng.choice((200, 201))}",
            "E        +  where 401 = <Response [401 UNAUTHORIZED]>.status_code",
            "",
            f"{target}:{rng.randint(10, 300)}: AssertionError",
            "-" * 30 + " Captured log call " + "-" * 30,
            f"DEBUG    orbit.auth.tokens:tokens.py:{rng.randint(10, 300)} refresh: "
            "expires_at=2025-03-01 10:05:00 now=2025-03-01T10:05:01+00:00",
            "=" * 30 + " short test summary info " + "=" * 30,
            f"FAILED {target}::{test} - assert 401 == 200",
            "!!!!!!!!!! stopping after 1 failures !!!!!!!!!!",
            f"1 failed, {n // 2} passed in {rng.uniform(0.3, 9):.2f}s",
            "exit code: 1",
        ]
        body = _fit(iter(head + frames), max(MIN_RESULT_CHARS, size - 700))
        return (body + "\n" + "\n".join(tail))[-MAX_RESULT_CHARS:]


def coding_session(steps: int = 300, *, seed: int = SEED, variant: int = 0) -> Replay:
    """A ``steps``-call coding-agent session (step 0 is the opening request)."""
    if steps < 1:
        raise ValueError("a session has at least one step")
    gen = _Session(seed, variant)
    out = [gen.opening()]
    while len(out) < steps:
        out.append(gen.step())
    return Replay(f"coding-{steps}-s{seed}-v{variant}", MODEL, TOOLS, out)


def long_history(n_messages: int = 10_000, *, seed: int = SEED, variant: int = 0) -> Replay:
    """A history of exactly ``n_messages`` messages, as one request (a replay of one step).

    Generated by the same steps as :func:`coding_session`; if the last step would
    overshoot, the remainder is filled with user / assistant text messages.
    """
    gen = _Session(seed, variant)
    messages = gen.opening()
    while True:
        step = gen.step()
        if len(messages) + len(step) > n_messages:
            break
        messages.extend(step)
    fill = ("assistant", "user")
    while len(messages) < n_messages:
        role = fill[(n_messages - len(messages)) % 2]
        messages.append({"role": role, "content": f"({role} note {len(messages)})"})
    return Replay(f"history-{n_messages}-s{seed}-v{variant}", MODEL, TOOLS, [messages])


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def describe(replay: Replay) -> dict[str, Any]:
    """Sizes of the final request: messages, JSON bytes, tool results and their lengths."""
    messages = replay.messages
    results = [m["content"] for m in messages if m["role"] == "tool"]
    body = {"model": replay.model, "messages": messages, "tools": replay.tools}
    return {
        "steps": len(replay.steps),
        "messages": len(messages),
        "json_bytes": len(json.dumps(body).encode()),
        "tool_results": len(results),
        "result_chars_min": min(map(len, results), default=0),
        "result_chars_max": max(map(len, results), default=0),
        "user_messages": sum(m["role"] == "user" for m in messages),
        "parallel_steps": sum(
            len(step[0].get("tool_calls") or ()) > 1
            for step in replay.steps
            if step and step[0]["role"] == "assistant"
        ),
    }
