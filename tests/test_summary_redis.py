"""The Redis/Valkey summary store against a real server started by the test.

`make test` installs redis-server (Debian's package) when it is missing; where it
cannot be installed, the test fails and says how to get it rather than skipping:
a store for proxy replicas that was never run against a server is not tested.
Set CG_ALLOW_NO_REDIS=1 to skip it knowingly on such a machine.
"""

from __future__ import annotations

import json
import time

from redis_server import redis_url
from summary_helpers import scripted_summary, summary_count
from test_compact import WINDOW, _session

from context_governor import CompactionPolicy, Governor, govern
from context_governor.summary import Summaries, open_store

__all__ = ["redis_url"]  # the fixture, used by name


def test_first_writer_wins_and_retention_expires(redis_url: str) -> None:
    store = open_store(redis_url)
    store.put("k", "first")
    store.put("k", "second")
    assert store.get("k") == "first"
    assert store.get("absent") is None
    short = open_store(redis_url, retention_seconds=1)
    short.put("brief", "v")
    assert short.get("brief") == "v"
    time.sleep(1.6)
    assert short.get("brief") is None


def test_replicas_sharing_redis_send_identical_requests(redis_url: str) -> None:
    histories = _session(100)[::9]
    writer = CompactionPolicy(
        summary=Summaries(scripted_summary, store=open_store(redis_url), name="redis-replay"),
        mask_first=False,
    )
    gov = Governor(context_window=WINDOW, max_output=1000, compaction=writer)
    first = [gov.govern(h).messages for h in histories]
    assert sum(summary_count(m) for m in first) >= 3

    def refuse(messages: object) -> str:
        raise AssertionError("a replica must read the summary from the store")

    # another replica: its own store client, a summarizer that must not be needed
    replica = CompactionPolicy(
        summary=Summaries(refuse, store=open_store(redis_url), name="redis-replay"),
        mask_first=False,
    )
    for history, expected in zip(histories, first, strict=True):
        out = govern(history, context_window=WINDOW, max_output=1000, compaction=replica)
        assert json.dumps(out.messages) == json.dumps(expected)
