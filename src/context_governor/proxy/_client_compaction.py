"""The agent CLIs' own compaction requests, recognised by what each pinned release sends.

When an agent CLI compacts its session it asks the model for a summary of the whole
history, so that request is the largest the session ever makes: it holds everything the
ordinary requests held plus the summary prompt. That is why the CLIs' compaction fails
exactly when it is needed (the provider refuses the summary request as too long, and
the session is stuck). The proxy governs it like any request, but for what a summary
needs (governing.py), and says that it was one; this module only recognises it.

Each marker was read off the CLI's own bundle and checked against its real traffic
(tests/data/client_compaction/ holds the captured request shapes, trimmed;
docs/compaction.md, "The clients' own compaction"):

* Claude Code (2.1.332) appends its summary prompt, a text block that starts "CRITICAL:
  Respond with TEXT ONLY", to the last user message (auto-compact, the reactive compact
  after "prompt is too long", and ``/compact`` send the same prompt);
* Codex (0.171) with a ``model_providers`` entry names the request in
  ``client_metadata["x-codex-turn-metadata"]`` (``"request_kind": "compaction"``) and
  ends the input with a user message "You are performing a CONTEXT CHECKPOINT
  COMPACTION"; with its built-in provider it ends the input with a
  ``compaction_trigger`` item instead (side.py answers that one);
* Gemini CLI (0.61) sends its history with the system instruction of its compressor
  ("... distilling chat history into a structured XML <state_snapshot>");
* opencode (1.18.33) sends one user message, "Here is the conversation so far:" and the
  conversation as text, under the system prompt "You are a context summarization agent".

Pure functions of the body: no state, so any replica recognises the same requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["ClientCompaction", "client_compaction"]

#: Claude Code's summary prompt starts with this (its bundle: ``JYn``).
CLAUDE_PROMPT = "CRITICAL: Respond with TEXT ONLY"
#: Codex's summary prompt (its binary: the compaction template).
CODEX_PROMPT = "You are performing a CONTEXT CHECKPOINT COMPACTION"
#: Gemini CLI's compressor system instruction (its bundle: ``getCompressionPrompt``).
GEMINI_SYSTEM = "distilling chat history into a structured XML <state_snapshot>"
#: opencode's summarization agent and the message it sends (its binary: ``HP``).
OPENCODE_SYSTEM = "You are a context summarization agent"
OPENCODE_PROMPT = "Here is the conversation so far:"


@dataclass(frozen=True, slots=True)
class ClientCompaction:
    """A request recognised as a client's own compaction: whose, and by what."""

    #: "claude-code", "codex", "gemini-cli" or "opencode"
    client: str
    #: what in the body said so, for the report
    marker: str

    def note(self) -> str:
        """The report's note: a reader sees why this request was governed differently."""
        return (
            f"client compaction request ({self.client}: {self.marker}): governed for the "
            "summary, old tool output masked first, the user's and the agent's messages "
            "and the newest work kept, inside the window"
        )


def client_compaction(body: dict[str, Any]) -> ClientCompaction | None:
    """The client compaction ``body`` is, or None. Each CLI's marker lives in fields of
    its own API (Messages' ``messages`` of blocks, Responses' ``input`` and
    ``client_metadata``, Gemini's ``systemInstruction``, Chat's ``messages`` of a system
    prompt), so every detector is asked and none needs the API's name."""
    for detect in (_claude_code, _codex, _gemini_cli, _opencode):
        found = detect(body)
        if found is not None:
            return found
    return None


def _texts(content: Any) -> list[str]:
    """The text of a content field: a string, or the ``text`` of each block/part."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]


def _claude_code(body: dict[str, Any]) -> ClientCompaction | None:
    """The summary prompt as the last text of the last (user) message."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    last = messages[-1]
    texts = _texts(last.get("content")) if last.get("role") == "user" else []
    if texts and texts[-1].lstrip().startswith(CLAUDE_PROMPT) and "summary" in texts[-1]:
        return ClientCompaction("claude-code", f'the last user message ends in "{CLAUDE_PROMPT}"')
    return None


def _codex_kind(body: dict[str, Any]) -> str | None:
    """``request_kind`` of Codex's turn metadata (a JSON string in ``client_metadata``)."""
    metadata = body.get("client_metadata")
    raw = metadata.get("x-codex-turn-metadata") if isinstance(metadata, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    kind = parsed.get("request_kind") if isinstance(parsed, dict) else None
    return kind if isinstance(kind, str) else None


def _codex(body: dict[str, Any]) -> ClientCompaction | None:
    """Codex's turn metadata saying "compaction", or its summary prompt ending the input."""
    if _codex_kind(body) == "compaction":
        return ClientCompaction("codex", 'its turn metadata says "request_kind": "compaction"')
    items = body.get("input")
    last = items[-1] if isinstance(items, list) and items else None
    if not isinstance(last, dict):
        return None
    if last.get("type") == "compaction_trigger":
        return ClientCompaction("codex", "the input ends with a compaction_trigger item")
    texts = _texts(last.get("content")) if last.get("role") == "user" else []
    if any(text.lstrip().startswith(CODEX_PROMPT) for text in texts):
        return ClientCompaction("codex", f'the input ends with "{CODEX_PROMPT}"')
    return None


def _gemini_cli(body: dict[str, Any]) -> ClientCompaction | None:
    """The compressor's system instruction."""
    system = body.get("systemInstruction", body.get("system_instruction"))
    parts = system.get("parts") if isinstance(system, dict) else system
    texts = _texts(parts)
    if isinstance(system, dict) and isinstance(system.get("text"), str):
        texts.append(system["text"])  # Gemini CLI's own shape: {"text": ...}
    if any(GEMINI_SYSTEM in text for text in texts):
        return ClientCompaction("gemini-cli", "its <state_snapshot> compressor instruction")
    return None


def _opencode(body: dict[str, Any]) -> ClientCompaction | None:
    """The summarization agent's system prompt and its one conversation message."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    if _starts(messages, "system", OPENCODE_SYSTEM) and _starts(messages, "user", OPENCODE_PROMPT):
        return ClientCompaction("opencode", f'its summarization agent and "{OPENCODE_PROMPT}"')
    return None


def _starts(messages: list[Any], role: str, prefix: str) -> bool:
    """Whether a message of ``role`` has a text that starts with ``prefix``."""
    return any(
        text.lstrip().startswith(prefix)
        for m in messages
        if isinstance(m, dict) and m.get("role") == role
        for text in _texts(m.get("content"))
    )
