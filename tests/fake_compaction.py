"""A fake native upstream that compacts on the server, the way the providers document it.

``FakeCompaction`` is tests/fake_native.py's ``FakeNative`` (the same routes, scripted
replies, validation and records) with server-side compaction on both APIs:

* **Anthropic Messages** (https://platform.claude.com/docs/en/build-with-claude/compaction):
  a request whose ``context_management.edits`` holds ``compact_20260112`` (and whose
  ``anthropic-beta`` header names ``compact-2026-01-12``: the API refuses the edit and
  the block without it) is compacted when what the model reads reaches the edit's
  ``trigger`` (default 150,000 input tokens; under 50,000 is refused): the answer's
  content starts with a ``compaction`` block holding a summary, then the reply (only
  the block, ``stop_reason`` "compaction", with ``pause_after_compaction``). On every
  request, what precedes the newest compaction block is dropped before the model
  reads it ("all content blocks before it are ignored") and the block reads as its
  summary.
* **OpenAI Responses** (https://developers.openai.com/api/docs/guides/compaction): a
  request with ``context_management: [{"type": "compaction", "compact_threshold": N}]``
  is compacted when what the model reads reaches N: the output starts with a
  ``compaction`` item whose ``encrypted_content`` seals a summary. On every request,
  the model reads the newest compaction item in place of the items before it, except
  the client's messages (a compacted window keeps the user messages: the
  ``/responses/compact`` answer is "all user messages, followed by a single
  compaction item").

**Billing**: a request's input tokens are what the model reads, built here on its own
(the read view: ``anthropic_read`` / ``responses_read``, with no compaction block or
item left in it) and counted with the library's counter for the API's profile; the
window check (``context_window``) is made on it too. A sealed compaction item is
billed as the tokens of the summary it seals; its ``encrypted_content`` is made
``ENCRYPTED_ENVELOPE + ENCRYPTED_CHARS_PER_TOKEN`` characters a token long, the rule
counting/_payload.py applies to OpenAI's ciphertext (no provider publishes one: the
fake can only follow the rule we chose, so the comparison tests the plumbing, not the
estimate). ``read_tokens`` holds each accepted request's bill, ``compactions`` the
blocks and items it issued.
"""

from __future__ import annotations

import base64
import math
from typing import Any

from fake_native import FakeNative, NativeReply
from starlette.requests import Request
from starlette.responses import Response

from context_governor.counting._payload import ENCRYPTED_CHARS_PER_TOKEN, ENCRYPTED_ENVELOPE
from context_governor.errors import ContextGovernorError
from context_governor.formats import govern_request, validate_request

COMPACT_BETA = "compact-2026-01-12"
COMPACT_EDIT = "compact_20260112"
DEFAULT_TRIGGER = 150_000
MIN_TRIGGER = 50_000
CLIENT_ROLES = ("user", "system", "developer")


def _summary_text(summary: Any) -> bool:
    return isinstance(summary, str) and bool(summary)


def anthropic_read(body: dict[str, Any]) -> dict[str, Any]:
    """What the model reads of a Messages body: from the newest compaction block on, the
    block as a text block of its summary (the body itself when it has none)."""
    messages = body.get("messages") or []
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        for j in range(len(content) - 1, -1, -1) if isinstance(content, list) else ():
            block = content[j]
            if block.get("type") == "compaction" and _summary_text(block.get("content")):
                summary = {"type": "text", "text": block["content"]}
                first = {**messages[i], "content": [summary, *content[j + 1 :]]}
                return {**body, "messages": [first, *messages[i + 1 :]]}
    return body


def unseal(item: dict[str, Any]) -> str | None:
    """The summary a compaction item minted by this fake seals (None for another)."""
    sealed = item.get("encrypted_content")
    if not isinstance(sealed, str) or not sealed.startswith("gAAAAB"):
        return None
    packed = sealed[6:].split(".")[0]
    try:
        return base64.urlsafe_b64decode(packed.encode()).decode()
    except ValueError:
        return None


def responses_read(body: dict[str, Any]) -> dict[str, Any]:
    """What the model reads of a Responses body: the client's messages before the newest
    compaction item, the item as a developer message of its summary, and what follows."""
    items = body.get("input")
    if not isinstance(items, list):
        return body
    at = next(
        (i for i in range(len(items) - 1, -1, -1) if items[i].get("type") == "compaction"), None
    )
    if at is None:
        return body
    kept = [
        it for it in items[:at] if it.get("type", "message") == "message"
        and it.get("role") in CLIENT_ROLES
    ]  # fmt: skip
    summary = unseal(items[at]) or ""
    stand_in = {"type": "message", "role": "developer", "content": summary}
    return {**body, "input": [*kept, stand_in, *items[at + 1 :]]}


def _without_settings(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "context_management"}


class FakeCompaction(FakeNative):
    """FakeNative with server-side compaction (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        #: each accepted request's bill: the tokens of what the model read
        self.read_tokens: list[int] = []
        #: the compaction blocks and items issued, in order
        self.compactions: list[dict[str, Any]] = []
        self.compacting_bills: list[int] = []
        #: the indices (in read_tokens) of the requests answered with a compaction
        self.compacted_at: list[int] = []
        self._body: dict[str, Any] = {}
        self._betas = ""
        self._read = 0

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self.read_tokens.clear()
            self.compactions.clear()
            self.compacting_bills.clear()
            self.compacted_at.clear()

    # ------------------------------------------------------------------ checks

    def _check(self, api: str, body: Any) -> tuple[list[str], int]:
        """The provider's checks, on what the model reads; the bill of that."""
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return ["model: Field required"], 0
        problems = self._compaction_problems(api, body)
        try:
            problems += [
                f"{v.rule} at {'request' if v.index < 0 else v.index}: {v.error}"
                for v in validate_request(body, api=api)  # type: ignore[arg-type]
            ]
            read = anthropic_read(body) if api == "anthropic" else responses_read(body)
            counted = govern_request(
                _without_settings(read), api=api,  # type: ignore[arg-type]
                profile=self.profile[api], context_window=1 << 40,
            ).report.tokens_before  # fmt: skip
        except ContextGovernorError as exc:
            return [f"unreadable body: {exc}"], 0
        reserve = body.get("max_tokens" if api == "anthropic" else "max_output_tokens") or 0
        if self.context_window is not None and counted + reserve > self.context_window:
            problems.append(
                f"prompt is too long: {counted} prompt + {reserve} output tokens > "
                f"{self.context_window}"
            )
        return problems, counted

    def _compaction_problems(self, api: str, body: dict[str, Any]) -> list[str]:
        if api != "anthropic":
            return []
        edit = self._anthropic_edit(body)
        blocks = any(
            isinstance(m.get("content"), list)
            and any(b.get("type") == "compaction" for b in m["content"])
            for m in body.get("messages") or ()
        )
        if (edit is not None or blocks) and COMPACT_BETA not in self._betas:
            return [f"compaction needs the anthropic-beta header {COMPACT_BETA}"]
        trigger = (edit or {}).get("trigger") or {}
        if trigger.get("value", DEFAULT_TRIGGER) < MIN_TRIGGER:
            return [f"context_management.edits.0.trigger.value: must be at least {MIN_TRIGGER}"]
        return []

    async def _accept(self, api: str, request: Request) -> tuple[Any, Response | None, int]:
        self._betas = request.headers.get("anthropic-beta", "")
        body, refused, counted = await super()._accept(api, request)
        if refused is None:
            self._body = body
            self._read = counted
            self.read_tokens.append(counted)
        return body, refused, counted

    # ------------------------------------------------------------------ Anthropic

    @staticmethod
    def _anthropic_edit(body: dict[str, Any]) -> dict[str, Any] | None:
        managed = body.get("context_management")
        edits = managed.get("edits") if isinstance(managed, dict) else None
        return next(
            (e for e in edits or () if isinstance(e, dict) and e.get("type") == COMPACT_EDIT),
            None,
        )

    def _summary(self) -> str:
        n = len(self.compactions) + 1
        done = len(self.read_tokens)
        return (
            f"<summary>Compaction {n}, after request {done}: the user asked to review the "
            f"handlers module; files f1.py to f{done}.py were read and found consistent; "
            "next step: keep reading the remaining files and report.</summary>"
        )

    def _anthropic_content(self, reply: NativeReply, thinking: bool) -> list[dict[str, Any]]:
        content = super()._anthropic_content(reply, thinking)
        edit = self._anthropic_edit(self._body)
        if edit is None:
            return content
        trigger = (edit.get("trigger") or {}).get("value", DEFAULT_TRIGGER)
        if self._read < trigger:
            return content
        block = {"type": "compaction", "content": self._summary()}
        self.compactions.append(block)
        self.compacted_at.append(len(self.read_tokens) - 1)
        return [block] if edit.get("pause_after_compaction") else [block, *content]

    def _anthropic_usage(self, counted: int, content: list[dict[str, Any]]) -> dict[str, Any]:
        """A compacting answer's usage as the docs show it ("Understanding usage"): the
        steps in ``iterations``, the compaction's reading the whole prompt, the top-level
        figures the last step's alone (zero when the answer paused after the block)."""
        usage = super()._anthropic_usage(counted, content)
        if not content or content[0].get("type") != "compaction":
            return usage
        steps = [{"type": "compaction", "input_tokens": counted, "output_tokens": 40}]
        if len(content) > 1:
            read = self._summary_tokens(content[0]["content"])
            steps.append({"type": "message", "input_tokens": read, "output_tokens": 9})
        last = steps[-1] if len(steps) > 1 else {"input_tokens": 0, "output_tokens": 0}
        #: what each compacting answer billed in all, for the tests to compare with
        self.compacting_bills.append(sum(step["input_tokens"] for step in steps))
        return {**usage, "input_tokens": last["input_tokens"],
                "output_tokens": last["output_tokens"], "iterations": steps}  # fmt: skip

    @staticmethod
    def _summary_tokens(summary: str) -> int:
        return govern_request(
            {"model": "claude-sonnet-4-5", "max_tokens": 1,
             "messages": [{"role": "user", "content": summary}]},
            api="anthropic", context_window=1 << 40,
        ).report.tokens_before  # fmt: skip

    # ------------------------------------------------------------------ Responses

    def _seal(self, summary: str) -> str:
        """An ``encrypted_content`` of the length counting/_payload.py reads as the tokens
        of ``summary`` (see the module docstring)."""
        counted = govern_request(
            {"model": "gpt-5", "input": [{"role": "developer", "content": summary}]},
            api="responses", context_window=1 << 40,
        ).report.tokens_before  # fmt: skip
        size = ENCRYPTED_ENVELOPE + math.ceil(counted * ENCRYPTED_CHARS_PER_TOKEN)
        packed = "gAAAAB" + base64.urlsafe_b64encode(summary.encode()).decode() + "."
        return packed + "A" * max(0, size - len(packed))

    def _response_object(
        self, body: dict[str, Any], reply: NativeReply, counted: int
    ) -> dict[str, Any]:
        response = super()._response_object(body, reply, counted)
        entries = body.get("context_management")
        entry = next(
            (e for e in entries or () if isinstance(e, dict) and e.get("type") == "compaction"),
            None,
        )
        if entry is None or counted < entry.get("compact_threshold", DEFAULT_TRIGGER):
            return response
        item = {
            "id": self._next_id("cmp_fake"),
            "type": "compaction",
            "encrypted_content": self._seal(self._summary()),
        }
        self.compactions.append(item)
        return {**response, "output": [item, *response["output"]]}
