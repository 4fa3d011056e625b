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

Every other path is passed through as before (model listings, batches, files...).
Each answer carries ``x-context-governor-side``: ``upstream`` or ``local``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..formats.anthropic_count import count_body
from .governing import Governed

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
