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
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from images import png_b64

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

_PROSE = (
    "the config parser fails when the cache directory is missing and the retry loop "
    "never backs off so we should add a guard around the token budget then rerun the "
    "tests check the logs update the schema handle None values keep the public API "
    "stable refactor the session store migrate old records add a regression test for "
    "the orphan tool result case verify the provider accepts the request"
)
_WORDS = tuple(_PROSE.split())
_IDENTS = (
    "session",
    "budget",
    "tokens",
    "messages",
    "provider",
    "runner",
    "cache",
    "config",
    "result",
    "payload",
    "history",
    "window",
    "limit",
    "spec",
    "tool_call",
    "registry",
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


LineMaker = Callable[[random.Random, int], str]


def _fill(rng: random.Random, target: int, line: LineMaker) -> str:
    """Join generated lines until the text reaches ``target`` characters."""
    lines: list[str] = []
    size = 0
    while size < target:
        text = line(rng, len(lines))
        lines.append(text)
        size += len(text) + 1
    return "\n".join(lines)[:target] if rng.random() < 0.3 else "\n".join(lines)


def _source_line(rng: random.Random, i: int) -> str:
    return f"{i + 1:>4}| {_code_line(rng, 4 * rng.randint(0, 3))}"


def _pytest_line(rng: random.Random, i: int) -> str:
    a, b = rng.choices(_IDENTS, k=2)
    kind = rng.randrange(4)
    if kind < 2:
        return f"tests/test_{a}.py::test_{b} {('PASSED', 'FAILED')[kind]}"
    if kind == 2:
        return f"E   AssertionError: assert {rng.randint(0, 99)} == {rng.randint(0, 99)}"
    return f"{rng.randint(1, 40)} passed, {rng.randint(0, 3)} failed in {rng.random():.2f}s"


def _log_line(rng: random.Random, i: int) -> str:
    level = rng.choice(("INFO", "WARN", "ERROR", "DEBUG"))
    stamp = f"2025-01-{rng.randint(1, 28):02d}T12:{i % 60:02d}:{rng.randint(0, 59):02d}Z"
    return f"{stamp} {level} {_sentence(rng, 3, 10)}"


def _traceback_line(rng: random.Random, i: int) -> str:
    if i % 2:
        return _code_line(rng, 4)
    return f'  File "{_path(rng)}", line {rng.randint(1, 900)}, in {rng.choice(_IDENTS)}'


def _listing_line(rng: random.Random, i: int) -> str:
    return f"{rng.choice(('[file]', '[dir] '))} {_path(rng).split('/')[-1]}"


def _path_line(rng: random.Random, i: int) -> str:
    return _path(rng)


def _grep_line(rng: random.Random, i: int) -> str:
    return f"{_path(rng)}:{rng.randint(1, 500)}:{_code_line(rng, 0)}"


def _search_line(rng: random.Random, i: int) -> str:
    url = f"https://example.org/{rng.choice(_IDENTS)}/{rng.randint(1, 9999)}"
    return f"{i + 1}. {_sentence(rng, 3, 7)}\n   {url}\n   {_sentence(rng)}"


def _session_line(rng: random.Random, i: int) -> str:
    state = rng.choice(("running", "exited(0)", "exited(1)"))
    command = rng.choice(("pytest -q", "npm run build", "make lint", "python main.py"))
    return f"session-{rng.randint(100, 999)}  {state}  {command}"


def _prose_line(rng: random.Random, i: int) -> str:
    return _sentence(rng, 6, 24)


def _output_text(rng: random.Random, tool: str, target: int) -> str:
    """Realistic tool output of about ``target`` characters for ``tool``."""
    if tool in ("write_file", "edit_file"):
        return rng.choice(
            (
                f"Successfully wrote {rng.randint(10, 9000)} bytes to {_path(rng)}",
                f"Edited {_path(rng)}: replaced 1 occurrence",
                "Error: old_text not found in file",
            )
        )
    line: LineMaker
    if tool == "exec":
        line = rng.choice((_pytest_line, _pytest_line, _log_line, _traceback_line))
    else:
        line = {
            "read_file": _source_line,
            "list_dir": _listing_line,
            "find_files": _path_line,
            "grep": _grep_line,
            "web_search": _search_line,
            "list_exec_sessions": _session_line,
        }.get(tool, _prose_line)  # web_fetch, spawn, message, cron, MCP tools: prose
    return _fill(rng, target, line)


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
            args["content"] = _fill(rng, rng.randint(20, 400), _source_line)
    elif tool == "exec":
        args = {"command": rng.choice(("pytest -q", "ls -la", "git status", "make test"))}
    elif tool == "grep":
        args = {"pattern": rng.choice(_IDENTS), "path": rng.choice(_DIRS)}
    elif tool == "find_files":
        args = {"pattern": f"**/*{rng.choice(_EXTS)}"}
    elif tool in ("web_search", "web_fetch"):
        args = (
            {"query": _sentence(rng, 2, 6)}
            if tool == "web_search"
            else {"url": f"https://example.org/{rng.choice(_IDENTS)}"}
        )
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
    """State for one generated session: the rng, its style and defect rates, call ids."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.chaos = rng.choice((0.0, 0.0, 0.05, 0.12, 0.25))
        self.reasoning = rng.random() < 0.2
        self.list_content = rng.random() < 0.35
        self.malformed = rng.random() < 0.04
        self.heavy_tools = rng.random() < 0.35
        # "per_message": ids restart in every assistant message (call_0, call_1, ...), as
        # some OpenAI-compatible servers emit them, so ids repeat across the history.
        self.id_style = rng.choice(("call_", "toolu_", "call_", "fc_", "per_message"))
        self.used_ids: set[str] = set()

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def call_id(self, index: int = 0) -> str:
        """A fresh id, or ``call_<index>`` for sessions whose ids restart per message."""
        if self.id_style == "per_message":
            return f"call_{index}"
        return self.fresh_id()

    def fresh_id(self) -> str:
        """An id used nowhere else in the session."""
        prefix = "call_" if self.id_style == "per_message" else self.id_style
        while True:
            suffix = "".join(self.rng.choices(string.ascii_letters + string.digits, k=12))
            cid = prefix + suffix
            if cid not in self.used_ids:
                self.used_ids.add(cid)
                return cid

    def image_part(self) -> dict[str, Any]:
        size = self.rng.randint(1, 48), self.rng.randint(1, 48)
        data = png_b64(*size, self.rng.randbytes(self.rng.randint(0, 180)))
        return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}

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
            log = _output_text(self.rng, "exec", self.rng.randint(100, 1500))
            text += f"\n\n```\n{log}\n```"
        return {"role": "user", "content": self.text_content(text, 0.5)}

    def assistant_text(self) -> Message:
        text = " ".join(_sentence(self.rng) for _ in range(self.rng.randint(1, 5)))
        msg: Message = {"role": "assistant", "content": self.text_content(text, 0.08)}
        if self.reasoning and self.chance(0.6):
            msg["reasoning_content"] = _sentence(self.rng, 8, 40)
        return msg

    def tool_call(self, name: str, index: int) -> dict[str, Any]:
        call: dict[str, Any] = {
            "id": self.call_id(index),
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
        calls = [self.tool_call(name, i) for i, name in enumerate(names)]
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
                "tool_call_id": s.fresh_id(),
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
        elif kind == 7 and rng.random() < 0.3:  # special-token text: tiktoken's encode() raises
            # In a text it hides the whole prompt from the counter; in a non-text part only
            # the per-message estimate sees it (and falls back to characters / 4).
            if rng.random() < 0.5:
                content: Any = "Why does the tokenizer choke on print('<|endoftext|>')?"
            else:
                content = [
                    {"type": "text", "text": _sentence(rng)},
                    {
                        "type": "file",
                        "file": {
                            "filename": "notes.txt",
                            "file_data": "<|endoftext|>" + _sentence(rng),
                        },
                    },
                ]
            msgs.insert(rng.randint(0, len(msgs)), {"role": "user", "content": content})


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
        return rng.choice((200, 1000, 2048, 4096, 6000))
    if roll < 0.26:
        return rng.choice((32_000, 128_000, 200_000))
    pressure = rng.choice((0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0, 1.3))
    # Never below 200: a window <= 0 is a configuration error for context-governor.
    return max(200, max_output + 1024 + int(_approx_tokens(msgs) * pressure))


def _end_history(s: _Session, msgs: list[Message]) -> None:
    """The history's last turn, in place: a new request waiting for the model, a tool
    loop in progress (sometimes its last calls interrupted) or the final answer."""
    ending = s.rng.random()
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


def _start_midway(rng: random.Random, msgs: list[Message]) -> list[Message]:
    """The history, sometimes cut at its front as a persisted history's start gets
    dropped; else ``msgs`` as they are."""
    start = rng.random()
    if start < 0.2:  # history that starts mid-way (first kept message a tool or assistant)
        if start < 0.08:
            cuts = [i for i, m in enumerate(msgs) if m["role"] == "tool"]
        else:  # mostly at a plain assistant reply: the case the synthetic user exists for
            calls = start < 0.12
            cuts = [
                i
                for i, m in enumerate(msgs)
                if m["role"] == "assistant" and bool(m.get("tool_calls")) == calls
            ]
        if cuts:
            system = msgs[:1] if msgs[0]["role"] == "system" and rng.random() < 0.6 else []
            msgs = system + msgs[rng.choice(cuts) :]
    return msgs


def _tools(rng: random.Random) -> list[dict[str, Any]] | None:
    """The request's tool definitions: sometimes none (absent or an empty list)."""
    roll = rng.random()
    if roll < 0.2:
        return None
    if roll < 0.3:
        return []
    return [_tool_schema(n, rng) for n in rng.sample(ALL_TOOLS, rng.randint(2, 10))]


def random_case(rng: random.Random) -> dict[str, Any]:
    """One governance input: messages, tool definitions, context window and max_tokens."""
    s = _Session(rng)
    msgs: list[Message] = []
    if rng.random() < 0.85:
        msgs.append(
            {
                "role": "system",
                "content": "You are a coding agent. "
                + " ".join(_sentence(rng) for _ in range(rng.randint(2, 30))),
            }
        )
    turns = rng.randint(1, 5)
    for _ in range(turns - 1):
        msgs.extend(s.turn(answer=not s.chance(0.05)))
    _end_history(s, msgs)
    msgs = _start_midway(rng, msgs)
    if s.chaos:
        _inject_defects(s, msgs)
    if s.chance(0.05):
        msgs.append(s.assistant_text())  # trailing assistant after anything
    if s.chance(0.03):
        msgs.insert(0, {"role": "system", "content": "Extra system rules: " + _sentence(rng)})

    tools = _tools(rng)

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


#: Blank contents that providers treat differently: none, empty, whitespace, empty parts.
_BLANKS: tuple[Any, ...] = (
    "", " ", "\n\t", None, [], [{"type": "text", "text": ""}], [{"type": "text", "text": "  "}],
)


def _inject_quirks(rng: random.Random, msgs: list[Message]) -> None:
    """Shapes that are legal JSON but odd, in place: blank contents on any role, an empty
    or null ``tool_calls`` on any role, list contents, parallel calls answered in any order.
    These are the inputs on which a repair that creates what an earlier stage repairs shows
    up: governing the output changes it again."""
    for _ in range(rng.randint(1, 4)):
        if not msgs:
            return
        i = rng.randrange(len(msgs))
        m = dict(msgs[i])
        kind = rng.randrange(7)
        if kind == 5 and m["role"] == "assistant":
            # all that is left of a history: its system prompt and an assistant message
            m["tool_calls"] = rng.choice(([], None, m.get("tool_calls")))
            msgs[:] = [*(msgs[:1] if msgs[0]["role"] == "system" else []), m]
            continue
        calls = m.get("tool_calls")
        if kind == 6 and m["role"] == "assistant" and calls and isinstance(calls[0], dict):
            # one call id used twice in one message (servers that count per message do)
            second = {**calls[0], "function": {"name": "pwd", "arguments": "{}"}}
            m["tool_calls"] = [*calls, second]
            result = {"role": "tool", "tool_call_id": second["id"], "content": "done"}
            msgs.insert(i + 1, result)
        elif kind == 0 and not (m["role"] == "tool" and rng.random() < 0.5):
            m["content"] = rng.choice(_BLANKS)
        elif kind == 1:
            m["tool_calls"] = rng.choice(([], [], None))
        elif kind == 2 and isinstance(m.get("content"), str) and m["content"]:
            m["content"] = [{"type": "text", "text": m["content"]}]
        elif kind == 3 and m["role"] == "assistant" and m.get("tool_calls"):
            m["content"] = rng.choice((*_BLANKS, "Let me check."))
        elif kind == 4:
            blank = {"role": rng.choice(("user", "assistant")), "content": rng.choice(_BLANKS)}
            msgs.insert(rng.randint(0, len(msgs)), blank)
            continue
        msgs[i] = m


def quirky_case(rng: random.Random) -> dict[str, Any]:
    """random_case with odd-but-valid shapes injected (_inject_quirks); no snipping."""
    case = random_case(rng)
    messages = [dict(m) for m in case["messages"]]
    _inject_quirks(rng, messages)
    return {**case, "messages": messages}


def cases(*, quirks: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """Hypothesis strategy over generated cases (shrinks toward small seeds).

    ``quirks=True`` adds the odd shapes of ``_inject_quirks`` to every case; the nanobot
    differential test keeps the plain distribution (the seed does not repair these)."""
    make = quirky_case if quirks else random_case
    return st.integers(0, 2**32 - 1).map(lambda seed: make(random.Random(seed)))
