"""Deterministic summarizers and a session for the summary tests (also imported by the
child processes of the cross-process tests)."""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any

Message = dict[str, Any]
MARK = "[Summary of "


def scripted_summary(messages: list[Message]) -> str:
    """A summary that depends on its whole input: its digest, the message count, and
    whether it folds in a previous summary."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:12]
    nested = str(messages[0].get("content", "")).startswith("[Summary of the conversation")
    return f"Task: fix the parser. {len(messages)} messages ({digest}); nested={nested}."


def refusing_summary(messages: list[Message]) -> str:
    """Used where every summary must come from the store."""
    raise AssertionError("the summarizer was called although the store has the summary")


def summary_count(messages: list[Message]) -> int:
    return sum(MARK in json.dumps(m.get("content")) for m in messages)


if __name__ == "__main__":  # a child process: govern the histories in argv[1] with the store
    from context_governor import CompactionPolicy, Governor
    from context_governor.summary import Summaries, open_store

    with open(sys.argv[1]) as job:
        histories, store_url, window, use_governor = json.load(job)
    policy = CompactionPolicy(
        summary=Summaries(refusing_summary, store=open_store(store_url), name="scripted_summary"),
        mask_first=False,
    )
    gov = Governor(context_window=window, max_output=1000, compaction=policy)
    out = []
    for history in histories:
        if use_governor:
            result = gov.govern(history)
        else:
            from context_governor import govern

            result = govern(history, context_window=window, max_output=1000, compaction=policy)
        out.append(result.messages)
    sys.stdout.write(json.dumps(out))
