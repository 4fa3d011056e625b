"""The proxy's compaction: the configured name, or the cache policy with summaries.

The summary option is built once per process from the config (a worker process of
``govern_in="process"`` builds its own from the same config) and reused for every
request: the store's connection and the record of failed summaries live in it.
The summarizer is the ``summary_model`` over Chat Completions at ``summary_base_url``
(default: the upstream), with the proxy's ``api_key``, else $OPENAI_API_KEY.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ..policies import CompactionPolicy
from .config import ProxyConfig

_built: dict[str, CompactionPolicy] = {}
_lock = threading.Lock()


def compaction_for(config: ProxyConfig) -> str | CompactionPolicy:
    """What govern()'s ``compaction`` is for a request under ``config``."""
    if config.summary_model is None:
        return config.compaction
    key = config.to_json()
    with _lock:
        policy = _built.get(key)
        if policy is None:
            policy = _build(config)
            _built[key] = policy
    return policy


def _build(config: ProxyConfig) -> CompactionPolicy:
    from ..llm import OpenAICompatClient
    from ..summary import Summaries, model_summarizer, open_store

    model = config.summary_model
    assert model is not None
    base_url = config.summary_base_url or config.upstream
    api_key = config.api_key or os.environ.get("OPENAI_API_KEY")

    def make_client() -> Any:
        return OpenAICompatClient(model, base_url=base_url, api_key=api_key)

    store = (
        None
        if config.summary_store is None
        else open_store(config.summary_store, config.summary_retention)
    )
    summarizer = model_summarizer(make_client, name=f"chat:{model}")
    return CompactionPolicy(
        summary=Summaries(summarizer, store=store, timeout=config.summary_timeout)
    )
