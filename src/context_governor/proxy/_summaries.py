"""The proxy's stores: the compaction (the configured name, or the cache policy with
summaries) and the count store.

The summary option is built once per process from the config (a worker process of
``governing.run_in="process"`` builds its own from the same config) and reused for
every request: the store's connection and the record of failed summaries live in it.
The summarizer is ``summaries.model`` over Chat Completions at ``summaries.base_url``
(default: the upstream), with the proxy's ``api_key``, else $OPENAI_API_KEY.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import replace
from typing import Any

from ..counting.store import CountLink, open_count_store
from ..policies import Compaction, CompactionPolicy, policy_from_settings
from ._config import ProxyConfig

__all__ = ["compaction_for", "count_store_for"]

_built: dict[str, Compaction] = {}
#: The policy of each config object already asked about (kept alive here, so its id is
#: not reused): the per-request lookup, without turning the config into JSON each time.
_seen: dict[int, tuple[ProxyConfig, Compaction]] = {}
_lock = threading.Lock()
_links: dict[tuple[str, float | None], CountLink | None] = {}
_log = logging.getLogger("context_governor.proxy")


def count_store_for(config: ProxyConfig) -> CountLink | None:
    """The count store of ``config`` (one per process and URL: its connections are
    reused by every request), or None. A store that cannot even be made (the redis client
    missing) is logged once and left out: it never fails a request."""
    if config.counting.store is None:
        return None
    key = (config.counting.store, config.counting.retention)
    with _lock:
        if key not in _links:
            try:
                _links[key] = CountLink(open_count_store(*key))
            except Exception as exc:
                _log.warning("count store left out: %s", exc)
                _links[key] = None
        return _links[key]


def compaction_for(config: ProxyConfig) -> str | Compaction:
    """What govern()'s ``compaction`` is for a request under ``config``."""
    if config.summaries.model is None and not config.compaction_settings:
        return config.compaction
    seen = _seen.get(id(config))
    if seen is not None and seen[0] is config:
        return seen[1]  # every request after the first: no JSON of the config
    key = config.to_json()  # equal configs (e.g. two apps) share one policy and its store
    with _lock:
        policy = _built.get(key)
        if policy is None:
            policy = _build(config)
            _built[key] = policy
        _seen[id(config)] = (config, policy)
    return policy


def _build(config: ProxyConfig) -> Compaction:
    policy = policy_from_settings(config.compaction, config.compaction_settings)
    if config.summaries.model is None or not isinstance(policy, CompactionPolicy):
        return policy
    from ..llm import OpenAICompatClient
    from ..summary import Summaries, model_summarizer, open_store

    model = config.summaries.model
    assert model is not None
    base_url = config.summaries.base_url or config.upstream
    api_key = config.api_key or os.environ.get("OPENAI_API_KEY")

    def make_client() -> Any:
        return OpenAICompatClient(model, base_url=base_url, api_key=api_key)

    store = (
        None
        if config.summaries.store is None
        else open_store(config.summaries.store, config.summaries.retention)
    )
    summarizer = model_summarizer(make_client, name=f"chat:{model}")
    return replace(
        policy, summary=Summaries(summarizer, store=store, timeout=config.summaries.timeout)
    )
