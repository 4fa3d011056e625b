"""Hostile inputs for govern(), one per (seed, index), reproducible.

A case is a plausible agent session (or a saved corpus entry) with a few hostile
mutations applied, plus random settings. Every random choice comes from
``random.Random(f"{seed}:{index}")``, so ``python -m fuzz.run --replay SEED:INDEX``
rebuilds exactly the input a finding was made on.
"""

from __future__ import annotations

import base64
import copy
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_governor.messages.inputs import MAX_DEPTH
from context_governor.profiles import PROFILES

Message = dict[str, Any]
CORPUS = Path(__file__).parent / "corpus"

MODELS = [
    None,
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-4",
    "o3",
    "gpt-5",
    "claude-sonnet-4-5",
    "claude-3-7-sonnet",
    "gemini-2.5-pro",
    "gemini-2.0-flash",
    "deepseek-reasoner",
    "deepseek-chat",
    "mistral-large",
    "glm-4.6",
    "qwen3-coder",
    "kimi-k2",
    "llama-3.3-70b",
    "anthropic.claude-3-5-sonnet",
    "",
]
WINDOWS = [None, None, 1, 600, 1500, 3000, 8000, 32000, 128000]
TOOL_NAMES = ["read_file", "exec", "grep", "write_file", "web.search", "f" * 70, "ü-tool"]


@dataclass
class Case:
    """One input: what govern() is called with, and how it was made."""

    messages: Any
    tools: Any = None
    settings: dict[str, Any] = field(default_factory=dict)
    mutations: list[str] = field(default_factory=list)

    def kwargs(self) -> dict[str, Any]:
        return {"tools": self.tools, **self.settings}

    def describe(self) -> str:
        return f"profile={self.settings.get('profile')} mutations={self.mutations}"


# ----------------------------------------------------------------- plausible sessions


def _text(rnd: random.Random, words: int = 12) -> str:
    vocabulary = [
        "the",
        "file",
        "test",
        "fails",
        "on",
        "line",
        "42",
        "fix",
        "it",
        "中文",
        "naïve",
        "😀",
        "\n",
        "def",
        "f(x):",
        "return",
        "{}",
        "'quoted'",
        "ok",
    ]
    return " ".join(rnd.choice(vocabulary) for _ in range(rnd.randint(0, words)))


def _call(rnd: random.Random, call_id: str) -> dict[str, Any]:
    arguments = json.dumps({"path": f"src/{rnd.randint(0, 9)}.py", "n": rnd.randint(0, 99)})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": rnd.choice(TOOL_NAMES[:5]), "arguments": arguments},
    }


def session(rnd: random.Random) -> list[Message]:
    """A plausible history: system, turns of user / assistant (+ tool calls and results)."""
    messages: list[Message] = []
    if rnd.random() < 0.8:
        messages.append({"role": "system", "content": "You are a coding agent. " + _text(rnd)})
    ids = 0
    for _ in range(rnd.randint(0, 8)):
        messages.append({"role": "user", "content": _text(rnd)})
        for _ in range(rnd.randint(0, 3)):
            calls = []
            for _ in range(rnd.randint(1, 3)):
                ids += 1
                calls.append(_call(rnd, f"call_{ids}"))
            assistant: Message = {"role": "assistant", "content": _text(rnd, 4) or None}
            assistant["tool_calls"] = calls
            if rnd.random() < 0.2:
                assistant["reasoning_content"] = _text(rnd)
            messages.append(assistant)
            for c in calls:
                size = rnd.choice([10, 100, 2000, 20000])
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": c["id"],
                        "name": c["function"]["name"],
                        "content": (_text(rnd, 40) + "\n") * max(1, size // 200),
                    }
                )
        messages.append({"role": "assistant", "content": _text(rnd)})
    if rnd.random() < 0.9:
        messages.append({"role": "user", "content": _text(rnd) or "go"})
    return messages


def tools(rnd: random.Random) -> list[dict[str, Any]] | None:
    if rnd.random() < 0.5:
        return None
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": _text(rnd),
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
        for name in rnd.sample(TOOL_NAMES[:5], rnd.randint(1, 4))
    ]


@dataclass(frozen=True)
class Focus:
    """What a targeted campaign draws its settings from (empty: everything, as usual).

    An unfocused campaign draws exactly the inputs it always did; a focused one draws
    its profile, model and window from the given values only, so a replay of one of its
    inputs needs the same focus (``flags()`` are the command-line options that give it).
    Settings a corpus entry fixes give way to the focus."""

    profiles: tuple[str, ...] = ()
    models: tuple[str | None, ...] = ()
    windows: tuple[int | None, ...] = ()

    def __post_init__(self) -> None:
        unknown = [p for p in self.profiles if p not in PROFILES]
        if unknown:
            raise ValueError(f"unknown profile(s) {unknown}; known: {', '.join(sorted(PROFILES))}")

    def decided(self) -> set[str]:
        """The settings the focus decides."""
        chosen = {"profile": self.profiles, "model": self.models, "context_window": self.windows}
        return {key for key, values in chosen.items() if values}

    def flags(self) -> str:
        """The fuzz.run options that give this focus (for a replay command)."""
        words = [f"--profile {p}" for p in self.profiles]
        words += [f"--model {_word(m)}" for m in self.models]
        words += [f"--window {_word(w)}" for w in self.windows]
        return " ".join(words)


def _word(value: str | int | None) -> str:
    return "none" if value is None else str(value) or "''"


NO_FOCUS = Focus()


def settings(rnd: random.Random, focus: Focus = NO_FOCUS) -> dict[str, Any]:
    chosen: dict[str, Any] = {
        "profile": rnd.choice(focus.profiles or sorted(PROFILES)),
        "model": rnd.choice(focus.models or MODELS),
        "context_window": rnd.choice(focus.windows or WINDOWS),
    }
    if rnd.random() < 0.3:
        chosen["max_output"] = rnd.choice([None, 0, 100, 4096, 100_000])
    if rnd.random() < 0.3:
        chosen["max_tool_result_chars"] = rnd.choice([None, 100, 1000, 16000])
    if rnd.random() < 0.3:
        chosen["compaction"] = rnd.choice(["cache", "seed"])
    if rnd.random() < 0.2:
        chosen["prefill"] = True
    return chosen


# ------------------------------------------------------------------------ mutations


def _nested(levels: int, leaf: Any, as_dicts: bool) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"k": value} if as_dicts else [value]
    return value


def _huge_string(rnd: random.Random) -> str:
    size = rnd.choice([2_000, 50_000, 300_000, 900_000])
    kind = rnd.randrange(6)
    if kind == 0:
        return rnd.choice("a .=\n") * size
    if kind == 1:
        return "😀" * (size // 4)
    if kind == 2:
        return base64.b64encode(rnd.randbytes(size * 3 // 4)).decode()
    if kind == 3:
        return "\n/" * (size // 2)
    if kind == 4:
        return ("x" * 1500 + " ") * (size // 1501)
    # rnd.randint(0x20, 0x2FFF) per character, without its argument checks (the same
    # draws: randint(a, b) is a + _randbelow(b - a + 1)), so replays still match
    below: Callable[[int], int] = rnd._randbelow  # type: ignore[attr-defined]
    return "".join([chr(0x20 + below(0x2FE0)) for _ in range(min(size, 20_000))])


ODD_VALUES: list[Callable[[random.Random], Any]] = [
    lambda r: None,
    lambda r: 0,
    lambda r: -1,
    lambda r: True,
    lambda r: 1.5,
    lambda r: math.nan,
    lambda r: math.inf,
    lambda r: "",
    lambda r: "\ud800",
    lambda r: [],
    lambda r: {},
    lambda r: [None],
    lambda r: {"type": "text"},
    lambda r: b"bytes",
    lambda r: {1, 2},
    lambda r: (1, 2),
    lambda r: object(),
    lambda r: 10**40,
    lambda r: "developer",
    lambda r: "<|endoftext|>",
]
FIELDS = [
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "reasoning_content",
    "function",
    "id",
    "arguments",
    "type",
    "text",
    "cache_control",
    "x-unknown",
]


def _spots(messages: list[Any]) -> list[dict[str, Any]]:
    """Every dict in the messages (messages, content parts, calls, functions)."""
    found: list[dict[str, Any]] = []
    # only dicts and lists are ever followed, so only they are queued (the same walk,
    # in the same order, without queueing every string of a list)
    pending: list[Any] = [m for m in messages if isinstance(m, _WALKED)]
    seen: set[int] = set()
    while pending and len(found) < 500:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            found.append(item)
        pending.extend([v for v in _values(item) if isinstance(v, _WALKED)])
    return found


_WALKED = (dict, list)


def _values(item: Any) -> Any:
    return item.values() if isinstance(item, dict) else item


def _set_somewhere(rnd: random.Random, case: Case, value: Any) -> None:
    spots = _spots(case.messages) if isinstance(case.messages, list) else []
    if spots:
        rnd.choice(spots)[rnd.choice(FIELDS)] = value


def mutate(rnd: random.Random, case: Case) -> None:
    """Apply one hostile mutation to ``case`` in place (it owns its data)."""
    messages = case.messages
    kind = rnd.choice(MUTATIONS)
    case.mutations.append(kind)
    if kind == "odd-type":
        _set_somewhere(rnd, case, rnd.choice(ODD_VALUES)(rnd))
    elif kind == "deep":
        levels = rnd.choice([MAX_DEPTH - 4, MAX_DEPTH, MAX_DEPTH + 1, 1000, 100_000])
        deep = _nested(levels, rnd.choice(["x", "\ud800", 1, None]), rnd.random() < 0.5)
        if rnd.random() < 0.2:
            case.tools = [{"type": "function", "function": {"name": "t", "parameters": deep}}]
        else:
            _set_somewhere(rnd, case, deep)
    elif kind == "cycle":
        loop: Any = {"a": []} if rnd.random() < 0.5 else []
        (loop["a"] if isinstance(loop, dict) else loop).append(loop)
        _set_somewhere(rnd, case, loop)
    elif kind == "huge-string":
        _set_somewhere(rnd, case, _huge_string(rnd))
    elif kind == "huge-content" and isinstance(messages, list) and messages:
        target = rnd.choice(messages)
        if isinstance(target, dict):
            target["content"] = _huge_string(rnd)
    elif kind == "surrogate":
        _set_somewhere(rnd, case, "text \udc80 more \ud83d")
    elif kind == "unknown-role" and isinstance(messages, list):
        role = rnd.choice(["developer", "function", "model", "USER", "", None, 3])
        messages.insert(rnd.randint(0, len(messages)), {"role": role, "content": "x"})
    elif kind == "duplicate-ids" and isinstance(messages, list):
        calls = [c for s in _spots(messages) for c in [s] if "function" in s and "id" in s]
        for c in calls:
            c["id"] = "dup"
        for s in _spots(messages):
            if s.get("role") == "tool":
                s["tool_call_id"] = "dup"
    elif kind == "shuffle" and isinstance(messages, list):
        rnd.shuffle(messages)
    elif kind == "drop" and isinstance(messages, list) and messages:
        del messages[rnd.randrange(len(messages))]
    elif kind == "duplicate" and isinstance(messages, list) and messages:
        i = rnd.randrange(len(messages))
        try:
            twin = copy.deepcopy(messages[i])
        except RecursionError:  # a deep mutation came first: share it instead
            twin = messages[i]
        messages.insert(i, twin)
    elif kind == "share" and isinstance(messages, list) and messages:
        messages.append(rnd.choice(messages))  # the same dict twice
    elif kind == "not-a-list":
        case.messages = rnd.choice(ODD_VALUES)(rnd)
    elif kind == "odd-tools":
        case.tools = rnd.choice([[1], "tools", [{"type": "function"}], [{}], {"a": 1}, []])
    elif kind == "odd-setting":
        key = rnd.choice(["context_window", "max_output", "max_tool_result_chars", "model"])
        odd = rnd.choice(ODD_VALUES)(rnd) if rnd.random() < 0.8 else _nested(10**5, 1, False)
        case.settings[key] = odd
    elif kind == "many-messages" and isinstance(messages, list):
        messages.extend(
            {"role": rnd.choice(["user", "assistant"]), "content": "m"}
            for _ in range(rnd.choice([100, 2000]))
        )
    elif kind == "parts" and isinstance(messages, list) and messages:
        target = rnd.choice(messages)
        if isinstance(target, dict):
            target["content"] = [
                {"type": "text", "text": _text(rnd)},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": rnd.choice(["input_audio", "file", "weird", None])},
            ]


MUTATIONS = [
    "odd-type",
    "odd-type",
    "odd-type",
    "deep",
    "cycle",
    "huge-string",
    "huge-content",
    "surrogate",
    "unknown-role",
    "duplicate-ids",
    "shuffle",
    "drop",
    "duplicate",
    "share",
    "not-a-list",
    "odd-tools",
    "odd-setting",
    "many-messages",
    "parts",
    "parts",
]


# ----------------------------------------------------------------------------- cases


def load_corpus(directory: Path = CORPUS) -> list[Case]:
    """The saved corpus: JSON files of {"messages", "tools"?, "settings"?}."""
    cases = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        cases.append(Case(data["messages"], data.get("tools"), data.get("settings", {})))
    return cases


def make_case(seed: int, index: int, corpus: list[Case], focus: Focus = NO_FOCUS) -> Case:
    rnd = random.Random(f"{seed}:{index}")
    if corpus and rnd.random() < 0.3:
        base = copy.deepcopy(rnd.choice(corpus))
        fixed = {k: v for k, v in base.settings.items() if k not in focus.decided()}
        case = Case(base.messages, base.tools, {**settings(rnd, focus), **fixed}, ["corpus"])
    else:
        case = Case(session(rnd), tools(rnd), settings(rnd, focus))
    for _ in range(rnd.choice([0, 0, 1, 1, 1, 2, 3])):
        mutate(rnd, case)
    return case
