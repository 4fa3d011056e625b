"""The Redis/Valkey summary store against a real server started by the test.

`make test` installs redis-server (Debian's package) when it is missing; where it
cannot be installed, the test fails and says how to get it rather than skipping:
a store for proxy replicas that was never run against a server is not tested.
Set CG_ALLOW_NO_REDIS=1 to skip it knowingly on such a machine.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from summary_helpers import scripted_summary, summary_count
from test_compact import WINDOW, _session

from context_governor import CompactionPolicy, Governor, govern
from context_governor.summary import Summaries, open_store

SERVER = shutil.which("redis-server") or shutil.which("valkey-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if SERVER is None:
        reason = (
            "redis-server is not installed: `apt-get install -y redis-server` "
            "(make test does it when apt is available)"
        )
        if os.environ.get("CG_ALLOW_NO_REDIS") == "1":
            pytest.skip(reason)
        pytest.fail(reason)
    workdir: Path = tmp_path_factory.mktemp("redis")
    port = _free_port()
    proc = subprocess.Popen(
        [
            SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail(f"{SERVER} did not start on port {port}")
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


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
        summary=Summaries(scripted_summary, store=open_store(redis_url), name="redis-replay")
    )
    gov = Governor(context_window=WINDOW, max_output=1000, compaction=writer)
    first = [gov.govern(h).messages for h in histories]
    assert sum(summary_count(m) for m in first) >= 3

    def refuse(messages: object) -> str:
        raise AssertionError("a replica must read the summary from the store")

    # another replica: its own store client, a summarizer that must not be needed
    replica = CompactionPolicy(
        summary=Summaries(refuse, store=open_store(redis_url), name="redis-replay")
    )
    for history, expected in zip(histories, first, strict=True):
        out = govern(history, context_window=WINDOW, max_output=1000, compaction=replica)
        assert json.dumps(out.messages) == json.dumps(expected)
