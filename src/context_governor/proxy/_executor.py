"""Where governance runs: never on the event loop.

Governing a long history is CPU work (parsing, counting, copying); on the event
loop it would stall every other request, ``/healthz`` included. Two choices:

- ``thread`` (the default): a worker thread. Cheap to hand over (no copy), one
  copy of the encodings per process; the loop still gets the GIL between
  bytecodes, though one long C call (``json.loads`` of a huge body) holds it.
- ``process``: a pool of worker processes, each with its own interpreter and
  encodings. The loop never waits on the GIL, at the price of sending the body
  and the governed body across a pipe and ~100 MB per worker for o200k.

docs/load.md has the figures for both. ``proxy --workers N`` (several uvicorn
processes) is the way to use more cores; the process pool is for isolating the
loop from very large bodies.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from concurrent.futures import Executor, ProcessPoolExecutor

from starlette.concurrency import run_in_threadpool

from ..counting import every_model_family, warm_up_in_background
from ._apis import CHAT
from ._config import ProxyConfig
from ._governing import Governed, govern_body, preload
from ._learning import Hints

__all__ = ["Governance"]

_worker_config: ProxyConfig | None = None


def _init_worker(config_json: str) -> None:
    global _worker_config
    _worker_config = ProxyConfig.from_json(config_json)
    preload(_worker_config)


def _govern_in_worker(
    raw: bytes, api: str, ratio: float | None, model: str | None = None, hints: Hints | None = None
) -> Governed:
    assert _worker_config is not None, "the worker was started without its config"
    return govern_body(raw, _worker_config, api, ratio, model, hints)


def _ready() -> bool:
    return _worker_config is not None


class Governance:
    """Runs govern_body for the app, in a thread or a worker process (config.governing.run_in)."""

    def __init__(self, config: ProxyConfig) -> None:
        self._config = config
        self._pool: Executor | None = None
        #: the background build of every encoding (thread mode), once started
        self.warming: threading.Thread | None = None

    async def start(self) -> None:
        """Load the encodings (here, or in every worker) before the first request: the
        configured models' now; in threads, every other encoding in the background, so
        the first request for a model nobody configured does not wait seconds for its
        tokenizer (a count that comes first waits for the one build under its lock)."""
        if self._config.governing.run_in == "thread":
            await run_in_threadpool(preload, self._config)
            self.warming = warm_up_in_background(every_model_family())
            return
        # spawn, not fork: forking a process that runs an event loop and threads is unsafe.
        pool = ProcessPoolExecutor(
            self._config.governing.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(self._config.to_json(),),
        )
        self._pool = pool
        loop = asyncio.get_running_loop()
        # One task per worker at once: the pool starts (and preloads) every worker now.
        jobs = [loop.run_in_executor(pool, _ready) for _ in range(self._config.governing.processes)]
        await asyncio.gather(*jobs)

    async def govern(
        self,
        raw: bytes,
        api: str = CHAT.api,
        ratio: float | None = None,
        model: str | None = None,
        hints: Hints | None = None,
    ) -> Governed:
        """``raw``, a body of ``api`` (apis.py), governed off the event loop (``ratio``,
        ``model``, ``hints``: see governing.govern_body)."""
        if self._pool is None:
            return await run_in_threadpool(govern_body, raw, self._config, api, ratio, model, hints)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._pool, _govern_in_worker, raw, api, ratio, model, hints
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
