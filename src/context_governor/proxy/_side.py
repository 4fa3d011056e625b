"""The side endpoints agent CLIs call besides the governed ones, and what serves them.

Found by running the real CLIs through the proxy (tests/test_agent_clis.py):

* ``POST /v1/messages/count_tokens`` (Claude Code, once its prompt has grown past
  the window, to decide what to compact; Anthropic-style SDK users call it too).
  The client asks "how big is this request?"; what reaches the model is the
  *governed* body, so that is what is counted: the body is governed as a Messages
  request would be, then sent to the upstream's count_tokens. An upstream that has
  no such endpoint (many Anthropic-compatible servers; it answers 404, 405 or 501)
  gets no second chance to fail the client: the proxy answers
  ``{"input_tokens": N}`` itself, N being its own count of the governed body (the
  Claude estimate, which errs high, docs/windows.md).
* ``POST /v1/responses/compact`` (Codex's remote compaction, the Responses API's
  compaction endpoint). The governed body is passed through; where the upstream has
  no such endpoint, a client that relies on it would lose its session, so the
  proxy answers with a compaction of its own: the input governed to the window,
  returned as the compacted history (``output``), which the client sends back as
  its new input. Nothing opaque is minted: the items are the client's own, cleared
  or cut the way every governed request is.

* a ``POST /v1/responses`` whose input ends with a ``compaction_trigger`` item
  (Codex 0.171's remote compaction with its built-in ``openai`` provider): see the
  second half of this module.

Every other path is passed through as before (model listings, batches, files...).
Each answer carries ``x-context-governor-side``: ``upstream`` or ``local``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..formats import count_body
from ._governing import Governed

__all__ = [
    "COMPACT",
    "COUNT_RESERVE",
    "COUNT_TOKENS",
    "LACKS_ENDPOINT",
    "MINTED",
    "REFUSES_TRIGGER",
    "SIDE_HEADER",
    "SIDE_ROUTES",
    "TRIGGER",
    "Govern",
    "SideRoute",
    "asks_to_compact",
    "expand_minted",
    "govern_side",
    "governable",
    "has_compaction",
    "local_answer",
    "minted_compaction",
    "response_events",
    "sendable",
]

#: Statuses that mean "this server has no such endpoint" (not "your request is bad").
LACKS_ENDPOINT = frozenset({404, 405, 501})
SIDE_HEADER = "x-context-governor-side"
#: The reserve a count_tokens body is governed with (it carries no max_tokens): the
#: library's default answer size, so the count is that of a request sent with it.
COUNT_RESERVE = 4096


@dataclass(frozen=True, slots=True)
class SideRoute:
    """One side endpoint: its path below /v1/, the governed API its body is in, and
    how the body is made governable and the governed body made sendable again."""

    path: str
    api: str


COUNT_TOKENS = SideRoute("messages/count_tokens", "anthropic")
COMPACT = SideRoute("responses/compact", "responses")
SIDE_ROUTES = (COUNT_TOKENS, COMPACT)


def governable(route: SideRoute, body: bytes) -> bytes:
    """The side request's body as a body of its API: a count_tokens body gets the
    ``max_tokens`` a Messages request needs (COUNT_RESERVE; a count has no answer).
    Anything unreadable is passed on as is, for governing to refuse in the API's shape."""
    if route is not COUNT_TOKENS:
        return body
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict) or "max_tokens" in data:
        return body
    return json.dumps({**data, "max_tokens": COUNT_RESERVE}).encode()


def sendable(route: SideRoute, governed: Governed) -> bytes:
    """The governed body as the side endpoint takes it: count_tokens refuses fields of
    a Messages request it has no use for (``max_tokens``, ``stream``...), so only its
    own are sent (formats.anthropic_count.count_body, as for --count-tokens-upstream)."""
    if route is not COUNT_TOKENS:
        return governed.body
    return json.dumps(count_body(json.loads(governed.body)), separators=(",", ":")).encode()


def local_answer(route: SideRoute, governed: Governed) -> dict[str, Any]:
    """What the proxy answers itself when the upstream lacks the endpoint."""
    if route is COUNT_TOKENS:
        return {"input_tokens": governed.report.tokens_after}
    data = json.loads(governed.body)
    output = data.get("input")
    if isinstance(output, str):  # a bare string is one user message
        output = [{"type": "message", "role": "user", "content": output}]
    return {
        "id": f"cmp_cg_{int(time.time() * 1000)}",
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": output if isinstance(output, list) else [],
        "usage": {
            "input_tokens": governed.report.tokens_before,
            "output_tokens": governed.report.tokens_after,
            "total_tokens": governed.report.tokens_before + governed.report.tokens_after,
        },
    }


Govern = Callable[[bytes, str], Awaitable[Governed]]


async def govern_side(route: SideRoute, raw: bytes, govern: Govern) -> Governed:
    """``raw`` governed as its API's request (BadRequest when it cannot be)."""
    return await govern(governable(route, raw), route.api)


# ---------------------------------------------------------------------------- Codex's
# remote compaction: a /v1/responses request whose input ends with a
# ``compaction_trigger`` item asks the server for one ``compaction`` item to stand for
# the history (Codex 0.171 with its built-in ``openai`` provider). An upstream other
# than OpenAI's answers without one (or refuses the item), and Codex ends the session.
# The proxy asks the upstream first; where the answer has no compaction item, it mints
# one: the governed history itself, encoded in ``encrypted_content`` under MINTED.
# When the client sends that item back, the proxy puts the history in its place before
# governing (expand_minted), so the upstream never sees an item it does not know.
# Stateless: any replica reads any minted item.

TRIGGER = "compaction_trigger"
MINTED = "cg-compaction-v1:"
#: Upstream statuses that mean "I do not do that": answered here; others are relayed.
REFUSES_TRIGGER = frozenset({400, 404, 405, 422, 501})


def _items(data: Any) -> list[Any]:
    items = data.get("input") if isinstance(data, dict) else None
    return items if isinstance(items, list) else []


def _loads(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:  # governing refuses it in the API's shape
        return None


def asks_to_compact(body: bytes) -> bool:
    """Whether a Responses body ends with a compaction trigger (cheap check first)."""
    if TRIGGER.encode() not in body:
        return False
    items = _items(_loads(body))
    return bool(items) and isinstance(items[-1], dict) and items[-1].get("type") == TRIGGER


def has_compaction(answer: bytes) -> bool:
    """Whether an upstream's answer (JSON or server-sent events) holds a compaction item."""
    texts = [answer] if answer.lstrip().startswith(b"{") else [
        line[5:] for line in answer.splitlines() if line.startswith(b"data:")
    ]  # fmt: skip
    for text in texts:
        event = _loads(text)
        if not isinstance(event, dict):
            continue
        inner = event.get("response")
        response: dict[str, Any] = inner if isinstance(inner, dict) else event
        outputs = [event.get("item"), *_items({"input": response.get("output")})]
        if any(isinstance(o, dict) and o.get("type") == "compaction" for o in outputs):
            return True
    return False


def minted_compaction(governed: Governed) -> dict[str, Any]:
    """The Responses answer the proxy gives a trigger: one compaction item that
    carries the governed history (the trigger left out)."""
    data = json.loads(governed.body)
    history = [i for i in _items(data) if not (isinstance(i, dict) and i.get("type") == TRIGGER)]
    packed = json.dumps(history, separators=(",", ":")).encode()
    sealed = MINTED + base64.b64encode(packed).decode()
    stamp = int(time.time())
    item = {"type": "compaction", "id": f"cmp_cg_{stamp}", "encrypted_content": sealed}
    return {
        "id": f"resp_cg_{stamp}", "object": "response", "created_at": stamp, "status": "completed",
        "model": data.get("model"), "output": [item], "error": None, "incomplete_details": None,
        "usage": {"input_tokens": governed.report.tokens_after, "output_tokens": 0,
                  "total_tokens": governed.report.tokens_after,
                  "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }  # fmt: skip


def response_events(response: dict[str, Any]) -> bytes:
    """``response`` as the Responses API streams it (created, each item, completed)."""
    pending = {**response, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": pending}]
    for index, item in enumerate(response["output"]):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': n})}\n\n".encode()
        for n, event in enumerate(events)
    )


def expand_minted(body: bytes) -> bytes:
    """``body`` with every compaction item the proxy minted replaced by the history it
    carries (unchanged when there is none: OpenAI's own items are left alone)."""
    data = _loads(body) if MINTED.encode() in body else None
    if not isinstance(data, dict) or not _items(data):
        return body
    # The client keeps some items beside the compaction (Codex: its instructions and the
    # user's messages), which the history holds too: those are not repeated (the API
    # refuses two items with one id).
    kept = [item for item in _items(data) if _unsealed(item) is None]
    ids = {i["id"] for i in kept if isinstance(i, dict) and isinstance(i.get("id"), str)}
    same = {json.dumps(item, sort_keys=True) for item in kept}
    expanded: list[Any] = []
    for item in _items(data):
        history = _unsealed(item)
        if history is None:
            expanded.append(item)
            continue
        expanded.extend(
            old for old in history
            if not (isinstance(old, dict) and old.get("id") in ids)
            and json.dumps(old, sort_keys=True) not in same
        )  # fmt: skip
    return json.dumps({**data, "input": expanded}, separators=(",", ":")).encode()


def _unsealed(item: Any) -> list[Any] | None:
    """The history a compaction item minted by the proxy carries; None for any other item."""
    if not isinstance(item, dict) or item.get("type") != "compaction":
        return None
    sealed = item.get("encrypted_content")
    if not isinstance(sealed, str) or not sealed.startswith(MINTED):
        return None
    try:
        history = json.loads(base64.b64decode(sealed[len(MINTED) :], validate=True))
    except ValueError:  # binascii.Error is a ValueError
        return None
    return history if isinstance(history, list) else None
