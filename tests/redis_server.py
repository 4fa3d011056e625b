"""A real Redis (or Valkey) server for the store tests, started per test module.

`make test` installs redis-server (Debian's package) when it is missing; where it
cannot be installed, the tests fail and say how to get it rather than skipping: a store
for proxy replicas that was never run against a server is not tested. Set
CG_ALLOW_NO_REDIS=1 to skip them knowingly on such a machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

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
