"""What our counters tokenize of a message, and what they count by rule instead.

A message's text is tokenized (the seed's payload: content, name, tool_call_id, tool calls
as JSON, reasoning text). Two kinds of value in it are not text to the model and must
never be tokenized as if they were:

* **media** (an image, document, audio or file with its base64 or URL): its provider
  bills it by a documented rule from its header (counting/_media.py). A 1 MB screenshot
  is ~1,600 tokens, not the 700,000 its base64 text would be;
* **ciphertext** the client sends back for the provider to read (Anthropic's thinking
  ``signature`` and ``redacted_thinking`` data, OpenAI's reasoning
  ``encrypted_content``, Gemini's ``thoughtSignature``): it stands for reasoning the
  model reads, which no provider lets us see. OpenAI's ``encrypted_content`` is counted by
  the rule real Codex sessions show (``encrypted_tokens``: an envelope of ~1,000
  characters that counts nothing, then 5.8 characters a reasoning token); the others at
  ``CIPHER_CHARS_PER_TOKEN`` characters a token (docs/token-counting.md), never as
  base64-like text (~2 characters a token, 2.5x too many).

Each such value is replaced in the counted text by a short descriptor of itself, so the
text memo and the count store key on what is really text, and its tokens are added on
top (``carried_tokens``). A message without either is counted exactly as before: its
payload is the seed's, byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..messages import Message
from ._media import MediaRule, is_media_part, media_count, stripped_text

__all__ = [
    "CIPHER_CHARS_PER_TOKEN",
    "CIPHER_KEYS",
    "ENCRYPTED_CHARS_PER_TOKEN",
    "ENCRYPTED_ENVELOPE",
    "Carried",
    "carried_tokens",
    "ciphertext_tokens",
    "encrypted_tokens",
    "lightened",
    "may_carry",
    "may_hold_media",
    "media_summary",
]

#: Characters of ciphertext per token of the reasoning it carries. No provider documents
#: a ratio; on recorded real traffic (tests/data/real_sessions) the upstream's usage
#: puts OpenAI's ``encrypted_content`` at 5.2 characters a token and Gemini's thought
#: signatures at 5.1-6.5: 5 errs slightly high.
CIPHER_CHARS_PER_TOKEN = 5
#: OpenAI's reasoning ``encrypted_content``: its length against the reasoning tokens of
#: the response that made it, over 356 reasoning items of six real Codex sessions
#: (gpt-5-codex, gpt-5.1-codex), fits 1,029 + 5.8 x tokens; an item of no reasoning
#: tokens is 888-1,272 characters, and the upstream's usage of the next request rises by
#: the reasoning tokens, not by the length (docs/token-counting.md).
ENCRYPTED_ENVELOPE = 1_000
ENCRYPTED_CHARS_PER_TOKEN = 5.8
#: Keys whose string values are ciphertext a provider reads back (see the module doc).
CIPHER_KEYS = frozenset(
    {"signature", "encrypted_content", "thoughtSignature", "thought_signature", "data"}
)
#: Shorter values are counted as text (an id, a test's placeholder): too short to matter.
_MIN_CIPHER = 64
#: Content part types that never hold media or ciphertext (a walk of them is wasted).
_PLAIN_PARTS = frozenset({"text", "input_text", "output_text"})

#: What was lifted out of a message's counted text: media parts, and ciphertext lengths
#: (an int; a ``_Encrypted`` for OpenAI's ``encrypted_content``).
Carried = tuple[Any, ...]


class _Encrypted(int):
    """The length of an OpenAI ``encrypted_content`` (counted by ``encrypted_tokens``)."""


def ciphertext_tokens(length: int) -> int:
    """Tokens of reasoning a ciphertext of ``length`` characters stands for."""
    if isinstance(length, _Encrypted):
        return encrypted_tokens(length)
    return math.ceil(length / CIPHER_CHARS_PER_TOKEN)


def encrypted_tokens(length: int) -> int:
    """Reasoning tokens an OpenAI ``encrypted_content`` of ``length`` characters carries."""
    return math.ceil(max(0, length - ENCRYPTED_ENVELOPE) / ENCRYPTED_CHARS_PER_TOKEN)


def _redacted_data(parent: dict[str, Any], key: str) -> bool:
    """``data`` is ciphertext only in a ``redacted_thinking`` block (elsewhere it is a
    media payload, handled as media, or a user's own field)."""
    return key != "data" or parent.get("type") == "redacted_thinking"


def _walk(value: Any, out: list[Any], depth: int) -> Any:
    """``value`` with every media part replaced by its descriptor and every ciphertext
    string by its length; what was replaced is appended to ``out``. Copies only along the
    paths that change (a value with nothing to replace comes back as itself)."""
    if depth > 64:
        return value
    if isinstance(value, dict):
        if is_media_part(value):
            out.append(value)
            return {"media": stripped_text(value)}
        changed: dict[str, Any] | None = None
        for key, item in value.items():
            if (
                key in CIPHER_KEYS
                and isinstance(item, str)
                and len(item) >= _MIN_CIPHER
                and _redacted_data(value, key)
            ):
                new: Any = f"<ciphertext: {len(item)} characters>"
                out.append(_Encrypted(len(item)) if key == "encrypted_content" else len(item))
            else:
                new = _walk(item, out, depth + 1)
            if new is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = new
        return value if changed is None else changed
    if isinstance(value, list):
        items: list[Any] | None = None
        for i, item in enumerate(value):
            new = _walk(item, out, depth + 1)
            if new is not item:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    return value


def _private(key: Any) -> bool:
    """An edge's private key on a decoded message ("_anthropic"...): what it carries is the
    edge's to count (formats/base.CarryCounter), never sent as it is."""
    return isinstance(key, str) and key.startswith("_")


def _part_may_carry(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    return not (isinstance(kind, str) and kind in _PLAIN_PARTS) or len(part) > 3


#: Values that hold nothing (str first: the common case).
_ATOMS = (str, int, float)


def may_carry(message: Message) -> bool:
    """False when ``message`` surely holds no media and no ciphertext, told from its
    structure alone (no text is scanned): string content, plain text parts, tool calls
    without extra content. The common chat message costs a few dict lookups."""
    for key, value in message.items():
        if value is None or isinstance(value, _ATOMS) or _private(key):
            continue
        if key == "content" and isinstance(value, list):
            if any(_part_may_carry(part) for part in value):
                return True
        elif key == "tool_calls" and isinstance(value, list):
            if any(isinstance(c, dict) and "extra_content" in c for c in value):
                return True
        else:
            return True  # an unknown structured field: walk it
    return False


#: Part types that hold no media, nested or not (a thinking block's signature is
#: ciphertext, not media).
_NO_MEDIA = frozenset(
    {"text", "input_text", "output_text", "thinking", "redacted_thinking", "tool_use"}
)


def may_hold_media(message: Message) -> bool:
    """False when ``message`` surely holds no media part (its content is a string, or a
    list of parts of types that hold none): the report's media line skips it."""
    content = message.get("content")
    if not isinstance(content, list):
        return False
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if not (isinstance(kind, str) and kind in _NO_MEDIA):
            return True
    return False


def lightened(message: Message) -> tuple[Message, Carried]:
    """``message`` as our counters tokenize it (media and ciphertext replaced by short
    descriptors) and what was taken out; the message itself, and (), when it has neither."""
    if not may_carry(message):
        return message, ()
    out: list[Any] = []
    new = {key: value if _private(key) else _walk(value, out, 1) for key, value in message.items()}
    return (message, ()) if not out else (new, tuple(out))


def carried_tokens(carried: Carried, rule: MediaRule, model: str | None) -> int:
    """What the provider bills for what ``lightened`` took out: each media part by its
    rule (counting/_media.py), each ciphertext by its length."""
    total = 0
    for item in carried:
        if isinstance(item, int):
            total += ciphertext_tokens(item)
            continue
        found = media_count(item, rule, model)
        if found is not None:
            total += found.tokens
    return total


def media_summary(carried: Sequence[Carried], rule: MediaRule, model: str | None) -> str | None:
    """One line for the report when media of a request had to be counted at its rule's
    upper bound (a URL, a file id, an unreadable header); None otherwise (see
    counters.media_note)."""
    kinds: dict[str, list[int]] = {}
    bounded: list[str] = []
    for items in carried:
        for item in items:
            if isinstance(item, int):
                continue
            found = media_count(item, rule, model)
            if found is None:
                continue
            kinds.setdefault(found.kind, []).append(found.tokens)
            if not found.exact:
                bounded.append(found.detail)
    if not bounded:
        return None  # counted as the provider documents: nothing to say
    listed = ", ".join(
        f"{len(counts)} {kind}{'s' if len(counts) != 1 else ''} ({sum(counts):,} tokens)"
        for kind, counts in sorted(kinds.items())
    )
    shown = "; ".join(bounded[:3]) + ("; ..." if len(bounded) > 3 else "")
    return (
        f"media counted by {rule}'s documented rule: {listed}; {len(bounded)} at the rule's "
        f"upper bound, their size not being in the request ({shown})"
    )
