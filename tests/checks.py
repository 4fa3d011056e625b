"""Independent checks of governed output, written without the library's helpers,
so that a bug shared by a stage and its check cannot hide."""

from __future__ import annotations

from collections import Counter
from typing import Any


def pairing_problems(messages: list[dict[str, Any]]) -> list[str]:
    """Every tool result answers an open call declared earlier; every call is answered."""
    problems: list[str] = []
    open_calls: Counter[str] = Counter()
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                if isinstance(call, dict) and call.get("id"):
                    open_calls[str(call["id"])] += 1
        elif m.get("role") == "tool":
            tcid = m.get("tool_call_id")
            if not isinstance(tcid, str) or not tcid:
                problems.append(f"{i}: tool result without id")
            elif open_calls[tcid] <= 0:
                problems.append(f"{i}: orphan or duplicate result {tcid}")
            else:
                open_calls[tcid] -= 1
    problems += [f"unanswered call {cid}" for cid, n in open_calls.items() if n > 0]
    return problems


def alternation_problems(messages: list[dict[str, Any]]) -> list[str]:
    problems = []
    for i in range(1, len(messages)):
        a, b = messages[i - 1].get("role"), messages[i].get("role")
        if a == b and a in ("user", "assistant"):
            problems.append(f"{i}: consecutive {a} messages")
    if messages and messages[-1].get("role") == "assistant":
        problems.append("trailing assistant")
    return problems


def texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content] if content else []
    if isinstance(content, list):
        return [
            p["text"]
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"]
        ]
    return []


def newest_user_kept(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> bool:
    """The newest user message's text (every part of it) is in some user message of ``after``."""
    users = [m for m in before if m.get("role") == "user"]
    if not users:
        return True
    wanted = texts(users[-1].get("content"))
    have = [t for m in after if m.get("role") == "user" for t in texts(m.get("content"))]
    joined = "\n\n".join(have)
    return all(any(w in h for h in have) or w in joined for w in wanted)
