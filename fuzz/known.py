"""Finding classes that are known and open, each owned by an area being fixed.

The CI slice (tests/test_fuzz_slice.py) does not fail on these; `make fuzz` still
counts and prints them, marked "known". Remove an entry as soon as its fix lands:
the slice then guards the fix.

A not-idempotent signature is the sorted list of stage/kind pairs the second pass
acted with, joined by commas; it is known when every pair is.
"""

from __future__ import annotations

#: (kind, signature part, owner and reproducer in words)
KNOWN: list[tuple[str, str, str]] = [
    (
        "not-idempotent",
        "microcompact/replace",
        "stages (seed compaction): openai + compaction='seed', assistant tool-call turns"
        " without results; the second pass stubs old results again (replay 2:358)",
    ),
    (
        "not-idempotent",
        "cap/truncate",
        "stages (cap): vllm, max_tool_result_chars=100, a tool result that is a list of"
        " parts (empty text, image_url, file); the second pass cuts it again (109 -> 99)",
    ),
    (
        "not-idempotent",
        "split/",
        "providers/fixes.py: vllm + llama-3.3-70b, one assistant turn with two calls"
        " both id 'c1' and no results; split_parallel_calls splits again",
    ),
    (
        "not-idempotent",
        "content/repair",
        "providers/fixes.py (empty content): qwen, [assistant 'x' calling a and b,"
        " tool b with content null, user]; the second pass writes '(empty)'",
    ),
    (
        "not-idempotent",
        "compact/drop",
        "stages/compact.py (cache policy): vllm + mistral-large, window 8000, 30"
        " messages; the second pass cuts old turns again (replay 3:21344)",
    ),
]


def is_known(kind: str, signature: str) -> bool:
    parts = [p for p in signature.split(",") if p]
    known = [part for k, part, _ in KNOWN if k == kind]
    return bool(parts) and all(any(p.startswith(k) for k in known) for p in parts)
