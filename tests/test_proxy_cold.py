"""Cold start and processes: encodings load once, before the first request is
accepted, however many requests arrive at once; ``--workers N`` serves from N
processes. Each scenario runs in a fresh interpreter, so no cache of this test
process hides a duplicate load."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from fake_upstream import FakeUpstream, Reply
from test_proxy import DAMAGED, MODEL, _post
from test_proxy_security import _wait_healthy

TESTS = Path(__file__).parent

COLD = r'''
import collections, json, sys, threading
from context_governor import counting as tokens
builds = collections.Counter()  # every encoding build, tiktoken's or rs-bpe's
tokens.build_hooks.append(lambda name: builds.update([name]))

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from test_proxy import DAMAGED, Served, _post
from context_governor.proxy import ProxyConfig, create_app

async def answer(request):
    message = {"role": "assistant", "content": "ok"}
    return JSONResponse({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})

upstream = Served(Starlette(routes=[Route("/v1/chat/completions", answer, methods=["POST"])]))
config = ProxyConfig(upstream=f"{upstream.url}/v1", model_windows=json.loads(sys.argv[1]))
proxy = Served(create_app(config))  # returns once the server has started (lifespan done)
at_start = dict(builds)
barrier = threading.Barrier(20)
statuses = []
def one():
    barrier.wait()
    statuses.append(_post(f"{proxy.url}/v1", {"model": sys.argv[2], "messages": DAMAGED}).status_code)
threads = [threading.Thread(target=one) for _ in range(20)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"at_start": at_start, "after": dict(builds), "statuses": statuses}))
'''


def _cold(windows: dict[str, int], model: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", COLD, json.dumps(windows), model],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_configured_models_are_loaded_before_the_first_request() -> None:
    result = _cold({MODEL: 100_000}, MODEL)
    assert result["at_start"].get("o200k_base") == 1  # gpt-4o-mini's encoding, at start-up
    assert result["after"].get("o200k_base") == 1  # and never again
    assert result["statuses"] == [200] * 20


def test_twenty_concurrent_first_requests_load_an_encoding_once() -> None:
    # gpt-4o-mini not configured: built in the background once the proxy serves, and
    # the twenty first requests racing that build wait for it under its lock
    result = _cold({}, MODEL)
    assert result["at_start"].get("cl100k_base") == 1  # the default window's counter
    assert result["after"].get("o200k_base") == 1
    assert result["statuses"] == [200] * 20


def test_cli_workers_serve_from_several_processes(upstream: FakeUpstream) -> None:
    args = [sys.executable, "-m", "context_governor", "proxy", "--upstream", upstream.base_url,
            "--port", "0", "--workers", "2", "--model-window", f"{MODEL}=100000"]
    process = subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/v1 .*\(2 workers\)", banner)
        assert match, banner
        url = f"http://127.0.0.1:{match.group(1)}/v1"
        _wait_healthy(url)
        upstream.push(*[Reply.text("hello") for _ in range(4)])
        for _ in range(4):
            response = _post(url, {"model": MODEL, "messages": DAMAGED, "max_tokens": 100})
            assert response.status_code == 200
            assert response.headers["x-context-governor-budget"] == str(100_000 - 100 - 1024)
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        if children.exists():  # Linux: two server processes (and multiprocessing's resource tracker)
            cmdlines = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children.read_text().split()]
            assert sum(b"spawn_main" in c for c in cmdlines) == 2, cmdlines
    finally:
        process.terminate()
        process.wait(20)
