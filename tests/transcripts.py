"""Deterministic random transcripts shaped like a coding agent's persisted history.

Used by the differential test against nanobot and by property tests. Every case is a
pure function of the ``random.Random`` it gets, so a failing seed reproduces exactly.
The distribution deliberately mixes clean sessions with the defects the seed pipeline
exists to repair (lost, duplicated and orphan tool results, same-role runs, trailing
assistants, histories cut mid-way), and picks context windows relative to the
transcript's size so that snipping happens in a good share of cases.
"""

from __future__ import annotations

import json
import random
import string
from typing import Any

from hypothesis import strategies as st

Message = dict[str, Any]

COMPACTABLE_TOOLS = (
    "read_file",
    "exec",
    "grep",
    "find_files",
    "web_search",
    "web_fetch",
    "list_dir",
    "list_exec_sessions",
)
OTHER_TOOLS = ("write_file", "edit_file", "spawn", "message", "cron", "mcp_github_search_issues")
ALL_TOOLS = COMPACTABLE_TOOLS + OTHER_TOOLS

_WORDS = (
    "the config parser fails when the cache directory is missing and the retry loop "
    "never backs off so we should add a guard around the token budget then rerun the "
    "tests check the logs update the schema handle None values keep the public API "
    "stable refactor the session store migrate old records add a regression test for "
    "the orphan tool result case verify the provider accepts the request"
).split()
_IDENTS = (
    "session", "budget", "tokens", "messages", "provider", "runner", "cache", "config",
    "result", "payload", "history", "window", "limit", "spec", "tool_call", "registry",
)
_DIRS = ("src", "tests", "docs", "scripts", "nanobot/agent", "nanobot/providers", "lib/utils")
_EXTS = (".py", ".md", ".json", ".toml", ".txt", ".yaml", ".ts")
_UNICODE = ("修复上下文窗口溢出", "préférences utilisateur", "✅ done", "naïve café", "—", "🚀")


def _sentence(rng: random.Random, lo: int = 4, hi: int = 18) -> str:
    words = rng.choices(_WORDS, k=rng.randint(lo, hi))
    if rng.random() < 0.08:
        words.insert(rng.randrange(len(words) + 1), rng.choice(_UNICODE))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice((".", ".", "?", "!"))


def _path(rng: random.Random) -> str:
    name = "_".join(rng.choices(_IDENTS, k=rng.randint(1, 2)))
    return f"{rng.choice(_DIRS)}/{name}{rng.choice(_EXTS)}"


def _code_line(rng: random.Random, indent: int) -> str:
    a, b, c = rng.choices(_IDENTS, k=3)
    kind = rng.randrange(9)
    if kind == 0:
        body = f"{a} = {b}.get({c!r}, {rng.randint(0, 4096)})"
    elif kind == 1:
        body = f"if not {a}:"
    elif kind == 2:
        body = f"return [{b} for {b} in {a} if {b}.role != 'system']"
    elif kind == 3:
        body = f"def {a}_{b}(self, {c}: dict[str, Any]) -> int:"
    elif kind == 4:
        body = f"for idx, {a} in enumerate({b}):"
    elif kind == 5:
        body = f'logger.debug("{a} %s", {b})'
    elif kind == 6:
        body = f'raise ValueError(f"bad {a}: {{{b}!r}}")'
    elif kind == 7:
        body = f"# {_sentence(rng, 3, 9)}"
    else:
        body = ""
    return " " * indent + body


def _fill(rng: random.Random, target: int, line: Any) -> str:
    """Join generated lines until the text reaches ``target`` characters."""
    lines: list[str] = []
    size = 0
    while size < target:
        text = line(len(lines))
        lines.append(text)
        size += len(text) + 1
    return "\n".join(lines)[:target] if rng.random() < 0.3 else "\n".join(lines)


def _output_text(rng: random.Random, tool: str, target: int) -> str:
    """Realistic tool output of about ``target`` characters for ``tool``."""
    if tool == "read_file":
        return _fill(rng, target, lambda i: f"{i + 1:>4}| {_code_line(rng, 4 * rng.randint(0, 3))}")
    if tool == "exec":
        kind = rng.random()
        if kind < 0.4:
            return _fill(rng, target, lambda i: rng.choice((
                f"tests/test_{rng.choice(_IDENTS)}.py::test_{rng.choice(_IDENTS)} PASSED",
                f"tests/test_{rng.choice(_IDENTS)}.py::test_{rng.choice(_IDENTS)} FAILED",
                f"E   AssertionError: assert {rng.randint(0, 99)} == {rng.randint(0, 99)}",
                f"{rng.randint(1, 40)} passed, {rng.randint(0, 3)} failed in {rng.random():.2f}s",
            )))
        if kind < 0.7:
            return _fill(rng, target, lambda i: (
                f"2025-01-{rng.randint(1, 28):02d}T12:{i % 60:02d}:{rng.randint(0, 59):02d}Z "
                f"{rng.choice(('INFO', 'WARN', 'ERROR', 'DEBUG'))} {_sentence(rng, 3, 10)}"
            ))
        return _fill(rng, target, lambda i: (
            f'  File "{_path(rng)}", line {rng.randint(1, 900)}, in {rng.choice(_IDENTS)}'
            if i % 2 == 0 else _code_line(rng, 4)
        ))
    if tool in ("list_dir", "find_files"):
        return _fill(rng, target, lambda i: (
            f"{_path(rng)}" if tool == "find_files"
            else f"{rng.choice(('[file]', '[dir] '))} {_path(rng).split('/')[-1]}"
        ))
    if tool == "grep":
        return _fill(rng, target, lambda i: (
            f"{_path(rng)}:{rng.randint(1, 500)}:{_code_line(rng, 0)}"
        ))
    if tool == "web_search":
        return _fill(rng, target, lambda i: (
            f"{i + 1}. {_sentence(rng, 3, 7)}\n   https://example.org/{rng.choice(_IDENTS)}/"
            f"{rng.randint(1, 9999)}\n   {_sentence(rng)}"
        ))
    if tool == "list_exec_sessions":
        return _fill(rng, target, lambda i: (
            f"session-{rng.randint(100, 999)}  {rng.choice(('running', 'exited(0)', 'exited(1)'))}"
            f"  {rng.choice(('pytest -q', 'npm run build', 'make lint', 'python main.py'))}"
        ))
    if tool in ("write_file", "edit_file"):
        return rng.choice((f"Successfully wrote {rng.randint(10, 9000)} bytes to {_path(rng)}",
                           f"Edited {_path(rng)}: replaced 1 occurrence",
                           "Error: old_text not found in file"))
    # web_fetch, spawn, message, cron, MCP tools: prose.
    return _fill(rng, target, lambda i: _sentence(rng, 6, 24))


def _output_size(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.4:
        return rng.randint(3, 300)
    if roll < 0.9:
        return rng.randint(300, 1500)
    return rng.randint(1500, 10_000)


def _arguments(rng: random.Random, tool: str) -> str:
    if tool in ("read_file", "list_dir", "write_file", "edit_file"):
        args: dict[str, Any] = {"path": _path(rng)}
        if tool == "write_file":
            args["content"] = _fill(rng, rng.randint(20, 400), lambda i: _code_line(rng, 0))
    elif tool == "exec":
        args = {"command": rng.choice(("pytest -q", "ls -la", "git status", "make test"))}
    elif tool == "grep":
        args = {"pattern": rng.choice(_IDENTS), "path": rng.choice(_DIRS)}
    elif tool == "find_files":
        args = {"pattern": f"**/*{rng.choice(_EXTS)}"}
    elif tool in ("web_search", "web_fetch"):
        args = {"query": _sentence(rng, 2, 6)} if tool == "web_search" else {
            "url": f"https://example.org/{rng.choice(_IDENTS)}"}
    else:
        args = {"content": _sentence(rng, 2, 8)}
    return json.dumps(args, ensure_ascii=False)


def _tool_schema(name: str, rng: random.Random) -> dict[str, Any]:
    props = {
        key: {"type": "string", "description": _sentence(rng, 3, 8)}
        for key in rng.sample(("path", "command", "pattern", "query", "url", "content"), 2)
    }
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": _sentence(rng, 6, 20),
            "parameters": {"type": "object", "properties": props, "required": list(props)[:1]},
        },
    }


class _Session:
    """State for one generated session: the rng, the chaos level and unique call ids."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.chaos = rng.choice((0.0, 0.0, 0.05, 0.12, 0.25))
        self.reasoning = rng.random() < 0.2
        self.list_content = rng.random() < 0.35
        self.malformed = rng.random() < 0.04
        self.heavy_tools = rng.random() < 0.35
        self.id_style = rng.choice(("call_", "toolu_", "call_", "fc_"))
        self.used_ids: set[str] = set()

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def call_id(self) -> str:
        while True:
            suffix = "".join(self.rng.choices(string.ascii_letters + string.digits, k=12))
            cid = self.id_style + suffix
            if cid not in self.used_ids:
                self.used_ids.add(cid)
                return cid

    def image_part(self) -> dict[str, Any]:
        data = "".join(self.rng.choices(string.ascii_letters + string.digits + "+/", k=60))
        return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data * 4}"}}

    def text_content(self, text: str, p_list: float) -> Any:
        """A str, or (sometimes) list content with text and image parts."""
        if not (self.list_content and self.chance(p_list)):
            return text
        parts: list[Any] = [{"type": "text", "text": text}]
        if self.chance(0.5):
            parts.append(self.image_part())
        if self.chance(0.2):
            parts.append({"type": "text", "text": _sentence(self.rng)})
        if self.chance(0.05):
            parts.append({"type": "text", "text": ""})
        self.rng.shuffle(parts)
        return parts

    def user(self) -> Message:
        text = " ".join(_sentence(self.rng) for _ in range(self.rng.randint(1, 4)))
        if self.chance(0.1):
            text += "\n\n```\n" + _output_text(self.rng, "exec", self.rng.randint(100, 1500)) + "\n```"
        return {"role": "user", "content": self.text_content(text, 0.5)}

    def assistant_text(self) -> Message:
        text = " ".join(_sentence(self.rng) for _ in range(self.rng.randint(1, 5)))
        msg: Message = {"role": "assistant", "content": self.text_content(text, 0.08)}
        if self.reasoning and self.chance(0.6):
            msg["reasoning_content"] = _sentence(self.rng, 8, 40)
        return msg

    def tool_call(self, name: str) -> dict[str, Any]:
        call: dict[str, Any] = {
            "id": self.call_id(),
            "type": "function",
            "function": {"name": name, "arguments": _arguments(self.rng, name)},
        }
        if self.malformed and self.chance(0.15):
            self.malform_call(call)
        return call

    def malform_call(self, call: dict[str, Any]) -> None:
        """Defects seen in hand-edited or foreign histories: odd ids and functions."""
        kind = self.rng.randrange(5)
        if kind == 0:
            call["id"] = ""
        elif kind == 1:
            del call["function"]["name"]
        elif kind == 2:
            call["function"] = None
        elif kind == 3:
            call["function"]["name"] = None
        else:
            call["id"] = self.rng.randint(1, 10**6)

    def tool_result(self, call: dict[str, Any], name: str) -> Message:
        content: Any = _output_text(self.rng, name, _output_size(self.rng))
        if self.chance(0.03):
            content = ""
        elif self.list_content and self.chance(0.05):
            content = [{"type": "text", "text": content}, self.image_part()]
        return {"role": "tool", "tool_call_id": call.get("id"), "name": name, "content": content}

    def tool_step(self) -> list[Message]:
        """One assistant message with 1-4 parallel calls and their results."""
        n_calls = self.rng.choice((1, 1, 1, 2, 2, 3, 4))
        weights = (6, 4, 3, 2, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1)
        names = self.rng.choices(ALL_TOOLS, weights=weights, k=n_calls)
        calls = [self.tool_call(name) for name in names]
        content: Any = None
        roll = self.rng.random()
        if roll < 0.25:
            content = _sentence(self.rng)
        elif roll < 0.3:
            content = ""
        elif roll < 0.33:
            content = self.text_content(_sentence(self.rng), 1.0)
        assistant: Message = {"role": "assistant", "content": content, "tool_calls": list(calls)}
        if self.reasoning and self.chance(0.5):
            assistant["reasoning_content"] = _sentence(self.rng, 8, 40)
        if self.malformed and self.chance(0.1):
            assistant["tool_calls"].append("not-a-call")
        results = [self.tool_result(call, name) for call, name in zip(calls, names, strict=True)]
        if len(results) > 1 and self.chance(0.2):
            self.rng.shuffle(results)
        return [assistant, *results]

    def turn(self, answer: bool, min_steps: int = 0) -> list[Message]:
        """A user task, the agent's tool loop and, when ``answer``, its final reply."""
        out: list[Message] = [self.user()]
        if self.chance(self.chaos):
            out.append(self.user())
        steps = self.rng.randint(0, 3) if not self.heavy_tools else self.rng.randint(2, 6)
        for _ in range(max(steps, min_steps)):
            out.extend(self.tool_step())
            if self.chance(0.1):
                out.append(self.assistant_text())  # progress note between steps
        if answer:
            out.append(self.assistant_text())
            if self.chance(self.chaos):
                out.append(self.assistant_text())
        return out


def _inject_defects(s: _Session, msgs: list[Message]) -> None:
    """Break the history the ways real persisted histories get broken, in place."""
    rng = s.rng
    tool_idx = [i for i, m in enumerate(msgs) if m["role"] == "tool"]
    n = max(1, round(s.chaos * 12))
    for _ in range(rng.randint(0, n)):
        tool_idx = [i for i, m in enumerate(msgs) if m["role"] == "tool"]
        kind = rng.randrange(8)
        if kind == 0 and tool_idx:  # lost result
            del msgs[rng.choice(tool_idx)]
        elif kind == 1 and tool_idx:  # duplicated result, right after or later
            i = rng.choice(tool_idx)
            j = i + 1 if rng.random() < 0.5 else rng.randint(i + 1, len(msgs))
            msgs.insert(j, dict(msgs[i]))
        elif kind == 2:  # orphan result whose id is never declared
            orphan = {
                "role": "tool",
                "tool_call_id": s.call_id(),
                "name": rng.choice(ALL_TOOLS),
                "content": _output_text(rng, "exec", _output_size(rng)),
            }
            msgs.insert(rng.randint(0, len(msgs)), orphan)
        elif kind == 3 and tool_idx:  # result recorded before its call was declared
            i = rng.choice(tool_idx)
            early = msgs.pop(i) if rng.random() < 0.5 else dict(msgs[i])  # moved or copied
            msgs.insert(rng.randint(0, max(0, i - 2)), early)
        elif kind == 4 and tool_idx:  # missing or empty tool_call_id
            m = dict(msgs[rng.choice(tool_idx)])
            if rng.random() < 0.5:
                m.pop("tool_call_id", None)
            else:
                m["tool_call_id"] = rng.choice(("", None))
            msgs.insert(rng.randint(0, len(msgs)), m)
        elif kind == 5:  # middle system message
            note = {"role": "system", "content": f"[Runtime context] {_sentence(rng)}"}
            msgs.insert(rng.randint(0, len(msgs)), note)
        elif kind == 6 and tool_idx:  # assistant with calls then assistant without
            i = rng.choice(tool_idx)
            while i > 0 and msgs[i - 1]["role"] == "tool":
                i -= 1
            if i > 0 and msgs[i - 1]["role"] == "assistant":
                msgs.insert(i, s.assistant_text())
        elif kind == 7 and msgs:  # special-token text: nanobot's counter cannot encode it
            if rng.random() < 0.3:
                msgs.insert(rng.randint(0, len(msgs)), {
                    "role": "user", "content": "print('<|endoftext|>')"})


def _approx_tokens(msgs: list[Message]) -> int:
    return len(json.dumps(msgs, ensure_ascii=False)) // 4


def _max_tokens(rng: random.Random) -> tuple[bool, Any]:
    """(present, value): usually absent or an int, sometimes a value of the wrong type."""
    roll = rng.random()
    if roll < 0.5:
        return False, None
    if roll < 0.82:
        return True, rng.choice((256, 512, 1024, 2048, 4096, 8192, 16384))
    return True, rng.choice((True, False, 0, -500, -3000, 512.0, "512", None))


def _context_window(rng: random.Random, msgs: list[Message], max_output: int) -> int | None:
    """Mostly a window that puts the transcript under pressure, so that snip acts."""
    roll = rng.random()
    if roll < 0.08:
        return None
    if roll < 0.16:
        return rng.choice((0, 200, 1000, 2048, 4096, 6000))
    if roll < 0.26:
        return rng.choice((32_000, 128_000, 200_000))
    pressure = rng.choice((0.05, 0.15, 0.3, 0.5, 0.7, 0.9, 1.1, 1.4))
    return max_output + 1024 + int(_approx_tokens(msgs) * pressure)


def random_case(rng: random.Random) -> dict[str, Any]:
    """One governance input: messages, tool definitions, context window and max_tokens."""
    s = _Session(rng)
    msgs: list[Message] = []
    if rng.random() < 0.85:
        msgs.append({"role": "system", "content": "You are a coding agent. " + " ".join(
            _sentence(rng) for _ in range(rng.randint(2, 30)))})
    turns = rng.randint(1, 5)
    for _ in range(turns - 1):
        msgs.extend(s.turn(answer=not s.chance(0.05)))
    ending = rng.random()
    if ending < 0.5:  # a new request waits for the model
        msgs.extend(s.turn(answer=True))
        msgs.append(s.user())
    elif ending < 0.8:  # mid tool loop; sometimes the last calls were interrupted
        msgs.extend(s.turn(answer=False, min_steps=1))
        if s.chance(0.25):
            while msgs[-1]["role"] == "tool" and s.chance(0.7):
                msgs.pop()
    else:  # the final answer is the last message
        msgs.extend(s.turn(answer=True))

    start = rng.random()
    if start < 0.2:  # history that starts mid-way (first kept message a tool or assistant)
        cut_roles = ("tool",) if start < 0.1 else ("assistant",)
        cuts = [i for i, m in enumerate(msgs) if m["role"] in cut_roles and i > 0]
        if cuts:
            system = msgs[:1] if msgs[0]["role"] == "system" and rng.random() < 0.6 else []
            msgs = system + msgs[rng.choice(cuts):]
    if s.chaos:
        _inject_defects(s, msgs)
    if s.chance(0.05):
        msgs.append(s.assistant_text())  # trailing assistant after anything
    if s.chance(0.03):
        msgs.insert(0, {"role": "system", "content": "Extra system rules: " + _sentence(rng)})

    tools: list[dict[str, Any]] | None
    roll = rng.random()
    if roll < 0.2:
        tools = None
    elif roll < 0.3:
        tools = []
    else:
        tools = [_tool_schema(n, rng) for n in rng.sample(ALL_TOOLS, rng.randint(2, 10))]

    present, max_tokens = _max_tokens(rng)
    max_output = max_tokens if isinstance(max_tokens, int) and present else 4096
    case: dict[str, Any] = {
        "messages": msgs,
        "tools": tools,
        "context_window": _context_window(rng, msgs, max_output),
    }
    if present:
        case["max_tokens"] = max_tokens
    return case


def cases() -> st.SearchStrategy[dict[str, Any]]:
    """Hypothesis strategy over generated cases (shrinks toward small seeds)."""
    return st.integers(0, 2**32 - 1).map(lambda seed: random_case(random.Random(seed)))
