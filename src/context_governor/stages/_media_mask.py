"""Old media masked like old tool output: a placeholder that says what it was.

A browser or computer-use agent sends a screenshot per step, and a user pastes one now and
then; each costs its provider's rule (~1,600 tokens for a 1280x800 PNG at Anthropic) for
as long as it stays in the history. At a compaction, an image the agent has moved past is
replaced by a text part that says what it was (kind, type, size, and where the request had
it from) and how to get it back: with ``offload_dir`` the media's own bytes are stored
there and the placeholder names the file. The message's text stays as it was; the newest
media stay whole (the replay keeps the newest ``keep_recent`` results, media among them).
A tool result that is mostly media (Claude Code's Read of a screenshot: an image and no
text worth clearing) is masked the same way; one with long text beside it is cleared
whole, as every tool result is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from pathlib import Path
from typing import Any

from ..counting import is_media_part, media_count
from ..messages import Message
from ._offload import publish_bytes

__all__ = ["has_media", "masked_media", "media_in"]

#: File extensions by MIME type for offloaded media (anything else: ``.bin``).
_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "application/pdf": ".pdf",
    "audio/wav": ".wav",
    "audio/mpeg": ".mp3",
}


def media_in(message: Message) -> bool:
    """Whether a message's content holds a media part (the parts a mask replaces)."""
    content = message.get("content")
    return isinstance(content, list) and any(is_media_part(part) for part in content)


def has_media(message: Message) -> bool:
    """Whether a user message carries a media part: the replay counts it among the
    results it may clear (a tool result is one already)."""
    return message.get("role") == "user" and media_in(message)


def _payload(part: dict[str, Any]) -> tuple[str, bytes] | None:
    """The MIME type and bytes of an inline media part (base64 or a data: URL); None for
    a URL, a file id, or base64 that does not decode."""
    source = part.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        mime, data = str(source.get("media_type") or ""), source.get("data")
    else:
        url = part.get("image_url")
        if isinstance(url, dict):
            url = url.get("url")
        inline = part.get("inline_data") or part.get("inlineData")
        if isinstance(inline, dict):
            mime = str(inline.get("mime_type") or inline.get("mimeType") or "")
            data = inline.get("data")
        elif isinstance(url, str) and url.startswith("data:") and "," in url:
            head, data = url[5:].split(",", 1)
            mime = head.split(";", 1)[0]
        else:
            return None
    if not isinstance(data, str):
        return None
    try:
        return mime, base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def _stored(directory: Path, part: dict[str, Any]) -> str | None:
    """Store an inline media part's bytes in ``directory`` (once, by digest); its path,
    or None when it has no inline bytes. Raises OSError when it cannot be stored safely."""
    found = _payload(part)
    if found is None:
        return None
    mime, data = found
    name = hashlib.sha256(data).hexdigest()[:24] + _EXTENSIONS.get(mime.lower(), ".bin")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    publish_bytes(directory, name, data)
    return os.fspath(directory / name)


def _placeholder(part: dict[str, Any], path: str | None) -> dict[str, Any]:
    found = media_count(part, "openai")
    what = found.detail if found is not None else "media"
    kind = found.kind if found is not None else "media"
    where = (
        f"; its bytes are stored at {path}"
        if path is not None
        else "; ask for it again if it is needed"
    )
    text = f"[older {kind} removed to fit the context window: {what}{where}]"
    kind_of = part.get("type")
    if isinstance(kind_of, str) and kind_of in ("input_image", "input_file"):
        return {"type": "input_text", "text": text}  # a Responses message's own part type
    return {"type": "text", "text": text}


def masked_media(message: Message, offload_dir: Path | None) -> tuple[Message, list[str]]:
    """``message`` with each media part of its content replaced by a text placeholder
    (its text parts kept as they were), and the notes of what failed (an offload that
    could not be stored: that part is masked without a path)."""
    content = message.get("content")
    if not isinstance(content, list):
        return message, []
    notes: list[str] = []
    out: list[Any] = []
    for part in content:
        if not is_media_part(part):
            out.append(part)
            continue
        path = None
        if offload_dir is not None:
            try:
                path = _stored(offload_dir, part)
            except OSError as exc:
                notes.append(f"offload of a media part to {offload_dir} failed ({exc})")
        out.append(_placeholder(part, path))
    return {**message, "content": out}, notes
