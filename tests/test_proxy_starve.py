"""Hard to starve (issue 38 item 5), through the real CLI process as users run it.

Slow clients used to hold every slot: 300 connections that sent their headers and then
a byte every 3 s took every in-flight slot (6 of 6 normal requests got 429), and 400
connections that never finished their headers were never closed. Now a body being
read is an upload, not a slot (guard.py), bounded by ``body-timeout`` (408), and a
connection has ``header-timeout`` seconds to send a request head (protocol.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fake_upstream import FakeUpstream, Reply
from test_proxy import DAMAGED, MODEL
from test_proxy_security import _wait_healthy

SLOW_UPLOADS = 300
SLOW_HEADS = 100
HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 6.0


@pytest.fixture
def proxy(upstream: FakeUpstream, tmp_path: Path) -> Iterator[str]:
    config = tmp_path / "proxy.toml"
    config.write_text(
        f"[proxy]\nupstream = '{upstream.base_url}'\nport = 0\n"
        f"[proxy.limits]\nheader-timeout = {HEADER_TIMEOUT}\nbody-timeout = {BODY_TIMEOUT}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_GOVERNOR_")}
    process = subprocess.Popen([sys.executable, "-m", "context_governor", "proxy", "--config", str(config)],
                               stderr=subprocess.PIPE, text=True, env={**env, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1", banner)
        assert match, banner + process.stderr.read()
        threading.Thread(target=process.stderr.read, daemon=True).start()  # keep the pipe drained
        root = f"http://127.0.0.1:{match.group(1)}"
        _wait_healthy(f"{root}/v1")
        yield root
    finally:
        process.terminate()
        process.wait(20)


def _connect(root: str) -> socket.socket:
    host, port = root.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=30)
    return sock


def _slow_upload(root: str) -> socket.socket:
    sock = _connect(root)
    head = ("POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")  # fmt: skip
    sock.sendall(head.encode())
    return sock


def _slow_head(root: str) -> socket.socket:
    sock = _connect(root)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127")
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> bytes | None:
    """What the proxy sent before closing, or None if it kept the connection open."""
    sock.settimeout(seconds)
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return got


def test_slow_clients_hold_no_slot_and_are_let_go(upstream: FakeUpstream, proxy: str) -> None:
    uploads = [_slow_upload(proxy) for _ in range(SLOW_UPLOADS)]
    heads = [_slow_head(proxy) for _ in range(SLOW_HEADS)]
    stop = threading.Event()

    def trickle() -> None:  # a byte every 3 s on every slow upload, until the end
        while not stop.wait(3):
            for sock in uploads:
                with contextlib.suppress(OSError):
                    sock.send(b" ")

    dripping = threading.Thread(target=trickle, daemon=True)
    dripping.start()
    try:
        # normal requests are served while every slow client is connected
        upstream.push(*[Reply.text("served") for _ in range(6)])
        added = []
        for _ in range(6):
            started = time.monotonic()
            answer = httpx.post(f"{proxy}/v1/chat/completions", json={"model": MODEL, "messages": DAMAGED}, timeout=30)
            added.append(time.monotonic() - started)
            assert answer.status_code == 200, answer.text
        assert max(added) < 1.0, added
        # a connection that never finishes its head is closed after header-timeout
        started = time.monotonic()
        assert all(_closed_within(sock, HEADER_TIMEOUT + 5) is not None for sock in heads)
        assert time.monotonic() - started < HEADER_TIMEOUT + 5
        # a body that does not arrive within body-timeout gets a 408 in the API's shape
        deadline = time.monotonic() + BODY_TIMEOUT + 10
        answers = [_closed_within(sock, max(0.1, deadline - time.monotonic())) for sock in uploads[:20]]
        assert all(a is not None and a.startswith(b"HTTP/1.1 408") for a in answers), answers[:3]
        assert b"body-timeout" in answers[0]  # type: ignore[operator]
    finally:
        stop.set()
        for sock in [*uploads, *heads]:
            sock.close()
