"""A Governor appends new tool results in their shrunk form (stages/_shrink.py).

Differential: at every step of growing sessions whose results are noisy (colours, progress
redraws, pretty JSON, repeated lines, trailing blanks) and exact (numbered reads, ``cat``),
with edits between steps, the Governor's messages *and report* equal govern()'s. And
the step that meets a result to shrink is an append, not a whole run (counted, not timed).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from whole_runs import WholeRuns

from context_governor import CompactionPolicy, Governor, govern
from context_governor.stages import MEMO_MIN_CHARS, shrink_text

Message = dict[str, Any]

ON = CompactionPolicy(shrink=True)


def _noisy(rng: random.Random, step: int) -> tuple[str, dict[str, Any], str]:
    """A call (tool name, arguments) and its output, often one the shrink changes."""
    kind = rng.choice(["pytest", "json", "pip", "repeats", "trailing", "read", "cat", "plain"])
    size = rng.choice([2, 10, 60])
    if kind == "pytest":
        lines = [f"\x1b[32mtests/t{step}_{k}.py::test_{k} PASSED\x1b[0m" for k in range(size)]
        return "bash", {"command": "pytest -q"}, "\n".join(lines) + "\n"
    if kind == "json":
        data = {"items": [{"id": k, "name": f"item {step}.{k}", "ok": k % 2 == 0} for k in range(size)]}
        return "http_get", {"url": f"/api/items?page={step}"}, json.dumps(data, indent=2)
    if kind == "pip":
        bar = "".join(f"\r{p}% |{'#' * (p // 10)}" for p in range(0, 101, 10))
        return "bash", {"command": f"pip install pkg{step}"}, f"Collecting pkg{step}\n{bar}\ndone"
    if kind == "repeats":
        return "bash", {"command": "tail log"}, f"retrying step {step}\n" * (size + 4) + "ok"
    if kind == "trailing":
        return "grep", {"pattern": "x"}, "\n".join(f"src/m{k}.py: x = {k}   " for k in range(size))
    if kind == "read":
        text = "\n".join(f"{k + 1:>6}\tline {k}   " for k in range(size))
        return "read_file", {"path": f"src/m{step}.py"}, text
    if kind == "cat":
        return "bash", {"command": f"cat src/m{step}.py"}, "x = 1   \n" * size
    return "bash", {"command": "ls"}, " ".join(f"w{step}_{k}" for k in range(size * 20))


def _session(rng: random.Random, steps: int) -> list[Message]:
    msgs: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the build."},
    ]
    for step in range(steps):
        calls = []
        outputs = []
        for k in range(1 if rng.random() < 0.8 else rng.randint(2, 3)):
            name, arguments, output = _noisy(rng, step)
            call_id = f"call_{step}_{k}"
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            )
            outputs.append({"role": "tool", "tool_call_id": call_id, "content": output})
        msgs.append({"role": "assistant", "content": None, "tool_calls": calls})
        msgs.extend(outputs)
        if rng.random() < 0.1:
            msgs.append({"role": "user", "content": f"And step {step + 1}?"})
    return msgs


def _same(a: Any, b: Any) -> None:
    assert a.messages == b.messages
    assert a.report.to_dict() == b.report.to_dict()


CHOICES: list[dict[str, Any]] = [
    {"profile": "openai", "compaction": ON},
    {"profile": "anthropic", "model": "claude-sonnet-4-5", "compaction": ON},
    {"profile": "gemini", "model": "gemini-2.5-pro", "compaction": ON},
    {"profile": "openai", "compaction": CompactionPolicy(shrink=True, keep_recent=2, min_savings=0)},
    {"profile": "openai", "compaction": CompactionPolicy(shrink=True, digest=True)},
    {"profile": "openai", "compaction": CompactionPolicy(shrink=False)},
]


@settings(
    max_examples=examples(full=40, fast=10),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    seed=st.integers(0, 2**32 - 1),
    choice=st.sampled_from(CHOICES),
    window=st.sampled_from([8_000, 16_000, 40_000, 128_000]),
    immutable=st.booleans(),
)
def test_noisy_sessions_match_stateless(
    seed: int, choice: dict[str, Any], window: int, immutable: bool
) -> None:
    rng = random.Random(seed)
    full = _session(rng, rng.randint(5, 40))
    gov = Governor(context_window=window, max_output=1000, immutable_messages=immutable, **choice)
    history: list[Message] = full[:2]
    position = 2
    while position < len(full):
        step = rng.randint(1, 4)
        history.extend(full[position : position + step])
        position += step
        if not immutable and rng.random() < 0.08 and len(history) > 3:
            i = rng.randrange(2, len(history) - 1)
            history[i] = {**history[i], "content": "\x1b[31medited\x1b[0m   "}
        before = copy.deepcopy(history)
        _same(gov.govern(history), govern(history, context_window=window, max_output=1000, **choice))
        assert history == before  # the history is never touched


def test_a_noisy_session_takes_the_fast_path() -> None:
    """Every step adds results the shrink changes; the Governor still appends (whole runs
    only where the pipeline compacts), and its output holds the shrunk forms."""
    rng = random.Random(7)
    full = _session(rng, 80)
    gov = Governor(context_window=400_000, max_output=1000, compaction=ON)
    whole = WholeRuns(gov)
    history: list[Message] = full[:2]
    steps = shrunk = 0
    for position in range(2, len(full)):
        history.append(full[position])
        if full[position]["role"] == "tool" and (
            position + 1 == len(full) or full[position + 1]["role"] != "tool"
        ):
            steps += 1
            result = gov.govern(history)
            _same(result, govern(history, context_window=400_000, max_output=1000, compaction=ON))
            shrunk = sum(a.stage == "shrink" for a in result.report.actions)
    assert steps >= 80
    assert shrunk > 30  # most results were shrunk: the test is about them
    assert whole.count <= 2  # the first call, and no other


def test_long_texts_are_shrunk_once_per_process() -> None:
    """The shrunk form of a long text is remembered: asked again, the same objects come
    back (a request carries every result again; none is rendered twice)."""
    text = "\x1b[33mwarning: slow\x1b[0m  \n" * (MEMO_MIN_CHARS // 10)
    first = shrink_text(text)
    again = shrink_text("".join(text))  # an equal text, another object
    assert again == first and again[0] is first[0]
    short = "\x1b[1mx\x1b[0m"
    assert shrink_text(short) == ("x", ("ansi",))
