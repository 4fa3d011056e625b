"""Media parts (images, PDFs, audio, video, files) counted as each provider bills them.

A pasted screenshot used to be counted as the tokens of its base64 text: a 1 MB PNG
came to ~930k tokens where the provider bills ~1,600, so the budget dropped whole
turns to make room for tokens that were never sent. This module holds the providers'
own rules instead (docs/token-counting.md, *Images, documents and audio*, quotes each
rule and its source), as pure functions over a content part:

* ``media_rule_for``: which provider's rule a target uses;
* ``is_media_part`` / ``media_parts``: which parts of a message's content are media,
  nested ones included (images in a tool result, in a function call's output);
* ``media_count``: what the provider bills for one part, read from the header of its
  payload only (a bounded prefix of the base64; a PDF's head and tail; never the whole
  payload), with ``exact=False`` when a bound or an estimate had to stand in;
* ``stripped_text``: the short descriptor the text counter counts in place of the part,
  so the base64 is never tokenized.

Nothing here raises on any input: a part we cannot read is counted at its rule's
upper bound (or an estimate where none exists) and says so.
"""

from __future__ import annotations

import binascii
import contextlib
import hashlib
import json
import math
import re
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes

import imagesize  # type: ignore[import-untyped]

from ..providers import MEDIA_RULES, claude_version, gemini_version
from ..targets import MediaRule, Target

__all__ = [
    "MediaCount",
    "MediaRule",
    "is_media_part",
    "media_count",
    "media_parts",
    "media_rule_for",
    "stripped_text",
]


@dataclass(frozen=True)
class MediaCount:
    """What a provider bills for one media part."""

    tokens: int
    #: "image" | "document" | "audio" | "file" | "video"
    kind: str
    #: short human text for reports: "image/png 1280x800", "pdf 3 pages", ...
    detail: str
    #: False when the size could not be read (a URL, a file id, a broken header) or
    #: the provider documents no rule for this model, so a bound or estimate was used
    exact: bool


# -- which rule ------------------------------------------------------------------------------

_API_RULES: dict[str, MediaRule] = {
    "anthropic": "anthropic",
    "gemini": "gemini",
    "responses": "openai",
    "openai": "openai",
}


def media_rule_for(provider: str | None, api: str | None = None) -> MediaRule:
    """The billing rule of a target: Claude's (Anthropic, Bedrock), Gemini's, or
    OpenAI's for OpenAI and every other provider (Mistral, DeepSeek, Groq, Ollama, vLLM,
    Qwen, GLM, Moonshot...). Those document no image rule an agent can apply before the
    call, and OpenAI's tile rule is the conservative stand-in: a 512-px tile grid capped
    at 2048x768 px, well above a base64 payload's real share of a window yet far below
    its text. Each vendor module says which rule its provider's media follow
    (``VENDOR.media``, gathered in providers.catalog.MEDIA_RULES). When the provider is
    unknown the wire format (``api``) decides."""
    name = provider.strip().lower() if isinstance(provider, str) else ""
    if name:
        return MEDIA_RULES.get(name, "openai")
    if isinstance(api, str):
        return _API_RULES.get(api.strip().lower(), "openai")
    return "openai"


# -- reading a payload without decoding it -----------------------------------------------------

#: At most this many decoded bytes are read from an image or audio payload: headers only
#: (a JPEG's SOF can sit behind a 64 KiB EXIF block; segments are skipped, not decoded).
_HEADER_BUDGET = 1 << 20
#: A PDF's page count is read from at most this much of its head and as much of its tail.
_PDF_WINDOW = 2 << 20
#: Inflated object streams of a PDF are read up to this many bytes in all.
_PDF_INFLATE_BUDGET = 8 << 20
_PDF_MAX_STREAMS = 64
#: imagesize reads a few times per segment; a header that makes it read more is hostile.
_MAX_READS = 4096
_URLSAFE = str.maketrans("-_", "+/")
_SPACE = re.compile(r"\s")


class _Payload:
    """Random access to the bytes of a base64 string (or raw bytes) that decodes only
    the 4-character groups a read needs, within a budget: a 5 MB image costs the same
    few kilobytes of decoding as a 50 KB one with the same header."""

    def __init__(self, data: str | bytes, start: int = 0, budget: int = _HEADER_BUDGET) -> None:
        self.raw: bytes | None = None
        self.text = ""
        self.start = start
        self.budget = budget
        self.decoded = 0
        self.reads = 0
        self.partial = False  # only a cleaned prefix of the text can be read
        if isinstance(data, bytes):
            self.raw = data
            self.size = len(data)
            return
        self.text = data
        stop = len(data)
        if _SPACE.search(data, start, min(stop, start + 8192)):
            # Line-wrapped base64: offsets no longer map to characters; keep a bounded,
            # cleaned prefix (enough for any header) and estimate the full size.
            sample = data[start : start + 4 * budget // 3 + 4096]
            cleaned = "".join(sample.split())
            self.partial = len(sample) < stop - start
            scale = len(cleaned) / len(sample) if sample else 1.0
            self.text, self.start = cleaned, 0
            self.size = int((stop - start) * scale * 3 / 4)
            self.stop = len(cleaned)
            return
        while stop > start and data[stop - 1] == "=":
            stop -= 1
        self.stop = stop
        self.size = (stop - start) * 3 // 4

    def read_at(self, offset: int, n: int) -> bytes:
        """Bytes [offset, offset + n) of the decoded payload; b"" past its end, on broken
        base64, or once the budget is spent."""
        self.reads += 1
        if offset < 0 or n <= 0 or offset >= self.size or self.reads > _MAX_READS:
            return b""
        end = min(self.size, offset + n)
        if self.decoded + (end - offset) > self.budget:
            return b""
        self.decoded += end - offset
        if self.raw is not None:
            return self.raw[offset:end]
        first, last = offset // 3, -(-end // 3)
        chunk = self.text[self.start + 4 * first : min(self.stop, self.start + 4 * last)]
        chunk = chunk.translate(_URLSAFE)
        if len(chunk) % 4 == 1:
            chunk = chunk[:-1]
        chunk += "=" * (-len(chunk) % 4)
        try:
            data = binascii.a2b_base64(chunk)
        except (binascii.Error, ValueError):
            return b""
        return data[offset - 3 * first : end - 3 * first]


class _Stream:
    """A seekable file over a _Payload, for imagesize (which seeks past JPEG segments)."""

    def __init__(self, payload: _Payload) -> None:
        self.payload = payload
        self.pos = 0

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self.payload.size - self.pos
        data = self.payload.read_at(self.pos, size)
        self.pos += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.payload.size}.get(whence, 0)
        self.pos = max(0, base + offset)
        return self.pos

    def tell(self) -> int:
        return self.pos


def _data_url(url: str) -> tuple[str, str | bytes, int] | None:
    """(mime, payload, start) of a ``data:`` URL: base64 text with the offset where it
    starts (no copy of a 5 MB string), or the percent-decoded bytes of a plain one."""
    if url[:5].lower() != "data:":
        return None
    comma = url.find(",", 0, 512)
    if comma < 0:
        return None
    header = url[5:comma].lower()
    mime = header.split(";", 1)[0].strip()
    if header.endswith(";base64"):
        return mime, url, comma + 1
    return mime, unquote_to_bytes(url[comma + 1 : comma + 1 + _HEADER_BUDGET]), 0


# -- the parts ---------------------------------------------------------------------------------


@dataclass
class _Media:
    """One media part, whatever its wire format."""

    hint: str  # "image" | "document" | "audio" | "video" | "file"
    mime: str = ""
    data: str | bytes | None = None
    start: int = 0
    url: str | None = None
    file_id: str | None = None
    detail: str | None = None  # OpenAI's image detail
    resolution: Any = None  # Gemini 3's per-part media_resolution
    audio_format: str | None = None
    filename: str | None = None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _lower(value: Any) -> str:
    return value.strip().lower() if isinstance(value, str) else ""


def _from_url(media: _Media, url: Any) -> _Media:
    """Fill ``media`` from an image URL field: a data: URL's payload, or a remote URL."""
    if isinstance(url, str):
        parsed = _data_url(url)
        if parsed is not None:
            mime, media.data, media.start = parsed
            media.mime = media.mime or mime
        else:
            media.url = url
    return media


def _from_b64(media: _Media, data: Any) -> _Media:
    """Fill ``media`` from a base64 field that may also be a data: URL or raw bytes."""
    if isinstance(data, bytes | bytearray | memoryview):
        media.data = data if isinstance(data, bytes) else bytes(data)
    elif isinstance(data, str):
        if data[:5].lower() == "data:":
            return _from_url(media, data)
        media.data = data
    return media


def _kind_of_mime(mime: str, default: str) -> str:
    if mime.startswith("image/"):
        return "image"
    if mime == "application/pdf":
        return "document"
    if mime.startswith("audio/"):
        return "audio"
    if mime.startswith("video/"):
        return "video"
    return default


def _gemini_part(part: dict[str, Any]) -> _Media | None:
    for key in ("inline_data", "inlineData"):
        blob = part.get(key)
        if isinstance(blob, dict):
            mime = _lower(blob.get("mime_type", blob.get("mimeType")))
            media = _Media(_kind_of_mime(mime, "file"), mime)
            media.resolution = part.get("media_resolution", part.get("mediaResolution"))
            return _from_b64(media, blob.get("data"))
    for key in ("file_data", "fileData"):
        ref = part.get(key)
        if isinstance(ref, dict):
            mime = _lower(ref.get("mime_type", ref.get("mimeType")))
            media = _Media(_kind_of_mime(mime, "file"), mime)
            media.resolution = part.get("media_resolution", part.get("mediaResolution"))
            media.url = _text(ref.get("file_uri", ref.get("fileUri"))) or ""
            return media
    return None


def _anthropic_source(part: dict[str, Any], hint: str) -> _Media | None:
    """An Anthropic image/document block (or a LangChain standard block of that type)."""
    source = part.get("source")
    if isinstance(source, dict):
        kind = source.get("type")
        mime = _lower(source.get("media_type"))
        if hint == "document" and kind in ("text", "content"):
            return None  # text documents are text; a content document's images are nested
        media = _Media(hint, mime)
        if kind == "url":
            media.url = _text(source.get("url")) or ""
        elif kind == "file":
            media.file_id = _text(source.get("file_id")) or ""
        else:
            _from_b64(media, source.get("data"))
        return media
    # LangChain standard content blocks: {"type": "image", "base64"|"data"|"url"|"file_id"}
    media = _Media(hint, _lower(part.get("mime_type", part.get("media_type"))))
    if "base64" in part or "data" in part:
        return _from_b64(media, part.get("base64", part.get("data")))
    if isinstance(part.get("url"), str):
        return _from_url(media, part["url"])
    media.file_id = _text(part.get("file_id", part.get("id")))
    return media


def _openai_file(block: dict[str, Any], hint: str) -> _Media:
    filename = _text(block.get("filename"))
    mime = "application/pdf" if filename and filename.lower().endswith(".pdf") else ""
    media = _Media(hint, mime, filename=filename)
    if block.get("file_data") is not None:
        _from_b64(media, block.get("file_data"))
    elif isinstance(block.get("file_url"), str):
        media.url = block["file_url"]
    else:
        media.file_id = _text(block.get("file_id")) or ""
    return media


def _parse(part: Any) -> _Media | None:
    """The media part ``part`` is, or None (text, tool calls, thinking, unknown types)."""
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if not isinstance(kind, str):
        return _gemini_part(part)
    if kind == "image_url":
        block = part.get("image_url")
        media = _Media("image", detail=_text(part.get("detail")))
        if isinstance(block, dict):
            media.detail = _text(block.get("detail")) or media.detail
            block = block.get("url")
        return _from_url(media, block)
    if kind in ("input_image", "computer_screenshot"):
        media = _Media("image", detail=_text(part.get("detail")))
        if isinstance(part.get("image_url"), str):
            return _from_url(media, part["image_url"])
        media.file_id = _text(part.get("file_id")) or ""
        return media
    if kind == "input_audio":
        block = part.get("input_audio")
        block = block if isinstance(block, dict) else {}
        media = _Media("audio", audio_format=_lower(block.get("format")) or None)
        return _from_b64(media, block.get("data"))
    if kind in ("audio_url", "video_url"):
        block = part.get(kind)
        url = block.get("url") if isinstance(block, dict) else block
        return _from_url(_Media("audio" if kind == "audio_url" else "video"), url)
    if kind == "file":
        block = part.get("file")
        if isinstance(block, dict):
            return _openai_file(block, "file")
        return _anthropic_source(part, "file")
    if kind == "input_file":
        return _openai_file(part, "file")
    if kind in ("image", "document", "audio", "video"):
        return _anthropic_source(part, kind)
    return _gemini_part(part)


def is_media_part(part: Any) -> bool:
    """Whether ``part`` is an image, document, audio, video or file part of any of the
    four wire formats: a structural test that decodes nothing."""
    try:
        return _parse(part) is not None
    except Exception:
        return False


_CONTAINER_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})


def _collect(value: Any, depth: int, seen: set[int], out: list[Any], budget: list[int]) -> None:
    budget[0] -= 1
    if depth > 32 or budget[0] < 0:
        return
    if isinstance(value, list | tuple):
        for item in value:
            _collect(item, depth + 1, seen, out, budget)
        return
    if not isinstance(value, dict) or id(value) in seen:
        return
    seen.add(id(value))
    if is_media_part(value):
        out.append(value)
        return
    kind = value.get("type")
    if kind == "tool_result" or kind == "message":
        _collect(value.get("content"), depth + 1, seen, out, budget)
    elif kind in _CONTAINER_TYPES or kind == "computer_call_output":
        _collect(value.get("output"), depth + 1, seen, out, budget)
    elif kind == "document":
        source = value.get("source")
        if isinstance(source, dict) and source.get("type") == "content":
            _collect(source.get("content"), depth + 1, seen, out, budget)
    for key in ("functionResponse", "function_response"):
        response = value.get(key)
        if isinstance(response, dict):
            _collect(response.get("parts"), depth + 1, seen, out, budget)


def media_parts(content: Any) -> Iterator[Any]:
    """Every media part in a message's content, in order, nested ones included: images
    in an Anthropic ``tool_result``, in a Responses ``function_call_output``'s output,
    in a Gemini multimodal ``functionResponse``, in a content-source document. Bounded
    (depth 32, 100,000 nodes) and cycle-safe."""
    found: list[Any] = []
    with contextlib.suppress(Exception):
        _collect(content, 0, set(), found, [100_000])
    return iter(found)


# -- stripped text -----------------------------------------------------------------------------

_PAYLOAD_KEYS = frozenset({"data", "file_data", "base64"})


def _placeholder(value: str | bytes | bytearray | memoryview) -> str:
    """A payload's stand-in: its size and a digest of a bounded sample (its ends and its
    length), so two payloads that differ read differently without hashing megabytes."""
    n = len(value)
    if isinstance(value, str):
        sample = (value[:4096] + value[-4096:]).encode("utf-8", "surrogatepass")
    else:
        sample = bytes(value[:4096]) + bytes(value[-4096:])
    digest = hashlib.blake2b(sample + str(n).encode(), digest_size=6).hexdigest()
    if isinstance(value, str) and value[:5].lower() == "data:":
        comma = value.find(",", 0, 512)
        mime = value[5:comma].split(";", 1)[0] if comma > 0 else ""
        return f"<data {mime} {n} chars #{digest}>"
    unit = "chars" if isinstance(value, str) else "bytes"
    return f"<payload {n} {unit} #{digest}>"


def _strip(value: Any, depth: int, seen: set[int], key: str = "") -> Any:
    if isinstance(value, str):
        big = len(value) > 64
        if big and (key in _PAYLOAD_KEYS or value[:5].lower() == "data:"):
            return _placeholder(value)
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return _placeholder(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth > 12:
        return "..."
    if isinstance(value, dict):
        if id(value) in seen:
            return "<cycle>"
        seen.add(id(value))
        out = {str(k): _strip(v, depth + 1, seen, str(k)) for k, v in list(value.items())[:200]}
        seen.discard(id(value))
        return out
    if isinstance(value, list | tuple):
        if id(value) in seen:
            return "<cycle>"
        seen.add(id(value))
        items = [_strip(v, depth + 1, seen) for v in list(value)[:200]]
        seen.discard(id(value))
        return items
    return f"<{type(value).__name__}>"


def stripped_text(part: Any) -> str:
    """What the text counter counts in place of a media part: the part as compact JSON
    (sorted keys, so equal parts read equal) with every payload (base64 data, a data:
    URL) replaced by its size and a short digest. Deterministic; parts that differ in
    kind, type, size, URL, detail or payload read differently."""
    try:
        return json.dumps(
            _strip(part, 0, set()), sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
    except Exception:
        return '{"type":"media"}'


# -- sniffing ----------------------------------------------------------------------------------


def _sniff(head: bytes) -> str:
    """The MIME type a payload's first bytes declare ("" when none we know)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
    if head[4:8] == b"ftyp":
        return _iso_media(head[8:12])
    if head[:4] == b"\x1aE\xdf\xa3":
        return "video/webm"
    if head[:4] == b"OggS":
        return "audio/ogg"
    if head[:4] == b"fLaC":
        return "audio/flac"
    if head[:3] == b"ID3" or (
        len(head) > 1 and head[0] == 0xFF and head[1] & 0xE6 in (0xE2, 0xE4, 0xE6)
    ):
        return "audio/mpeg"
    if head[:2] == b"BM":
        return "image/bmp"
    return ""


def _iso_media(brand: bytes) -> str:
    """The MIME type of an ISO base media file (an ``ftyp`` box) by its major brand:
    HEIF and AVIF images, M4A audio, QuickTime, else MP4 video."""
    if brand in (b"heic", b"heix", b"hevc", b"mif1", b"msf1"):
        return "image/heic"
    if brand in (b"avif", b"avis"):
        return "image/avif"
    if brand in (b"M4A ", b"M4B "):
        return "audio/mp4"
    return "video/quicktime" if brand == b"qt  " else "video/mp4"


# -- images ------------------------------------------------------------------------------------

#: No provider takes a side longer than this; a header claiming more is hostile.
_MAX_SIDE = 65_535


def _image_size(payload: _Payload) -> tuple[int, int] | None:
    """(width, height) from the header, or None when it cannot be read."""
    try:
        width, height = imagesize.get(_Stream(payload), exif_rotation=False)
    except Exception:
        return None
    if not isinstance(width, int) or not isinstance(height, int) or width < 1 or height < 1:
        return None
    return min(width, _MAX_SIDE), min(height, _MAX_SIDE)


# Anthropic: https://platform.claude.com/docs/en/build-with-claude/vision (Resolution and
# token cost) and .../vision-coordinates (How Claude resizes and pads images).
_CLAUDE_STANDARD = (1568, 1568)  # (max edge px, max visual tokens)
_CLAUDE_HIGH = (2576, 4784)


def _claude_tokens(width: int, height: int) -> int:
    """One visual token per 28x28 patch."""
    return math.ceil(width / 28) * math.ceil(height / 28)


def _claude_resized(width: int, height: int, max_edge: int, max_tokens: int) -> tuple[int, int]:
    """The size Claude resizes an image to: Anthropic's reference implementation (the
    largest aspect-preserving size inside both limits, found by binary search along
    the long edge, the short edge rounded half to even)."""

    def fits(w: int, h: int) -> bool:
        return (
            math.ceil(w / 28) * 28 <= max_edge
            and math.ceil(h / 28) * 28 <= max_edge
            and _claude_tokens(w, h) <= max_tokens
        )

    if fits(width, height):
        return width, height
    if height > width:
        resized_h, resized_w = _claude_resized(height, width, max_edge, max_tokens)
        return resized_w, resized_h
    aspect = width / height
    lo, hi = 1, width
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if fits(mid, max(round(mid / aspect), 1)):
            lo = mid
        else:
            hi = mid
    return lo, max(round(lo / aspect), 1)


def _claude_tiers(model: str | None) -> tuple[tuple[int, int], bool]:
    """(tier limits, known): the high-resolution tier for Claude 4.7 and later, Fable
    and Mythos; the standard tier for the rest; the high tier (an upper bound) when the
    model is unknown."""
    lowered = (model or "").lower()
    version = claude_version(Target("anthropic", model or "")) if model else None
    if "fable" in lowered or "mythos" in lowered:
        return _CLAUDE_HIGH, True
    if version is None:
        return _CLAUDE_HIGH, False
    return (_CLAUDE_HIGH if version >= (4, 7) else _CLAUDE_STANDARD), True


def _claude_image(size: tuple[int, int] | None, model: str | None) -> tuple[int, str, bool]:
    tier, known = _claude_tiers(model)
    if size is None:
        return tier[1], "size unknown: upper bound", False
    width, height = _claude_resized(*size, *tier)
    tokens = _claude_tokens(width, height)
    if not known:  # exact only if both tiers agree on this image
        std = _claude_tokens(*_claude_resized(*size, *_CLAUDE_STANDARD))
        known = std == tokens
    note = f"{size[0]}x{size[1]}" + ("" if (width, height) == size else f" -> {width}x{height}")
    return tokens, note, known


# OpenAI: https://developers.openai.com/api/docs/guides/images-vision (Calculating costs).


@dataclass(frozen=True)
class _Tiles:
    """Tile-based models: base tokens plus tokens per 512-px tile."""

    base: int
    tile: int


@dataclass(frozen=True)
class _Patches:
    """Patch-based models: 32-px patches inside a pixel limit and a patch budget per
    detail level (None: no budget), times a multiplier."""

    multiplier: float
    levels: tuple[tuple[str, int, int | None], ...]  # (detail, max side px, patch budget)

    def level(self, detail: str) -> tuple[int, int | None]:
        table = {name: (side, budget) for name, side, budget in self.levels}
        return table.get(detail) or table["auto"]


def _uniform(multiplier: float, side: int, budget: int) -> _Patches:
    levels = tuple((name, side, budget) for name in ("low", "high", "original", "auto"))
    return _Patches(multiplier, levels)


_GPT56 = _Patches(
    1.2,
    (("low", 512, None), ("high", 2048, 2500), ("original", 65_535, None), ("auto", 65_535, None)),
)
_GPT55 = _Patches(
    1.2,
    (("low", 512, None), ("high", 2048, 2500), ("original", 6000, 10_000), ("auto", 6000, 10_000)),
)
_GPT54 = _Patches(
    1.2,
    (("low", 2048, 6144), ("high", 2048, 2500), ("original", 6000, 10_000), ("auto", 2048, 2500)),
)
#: The models the sizing table leaves out (deprecated): the 1,536-patch budget the page
#: gave them when they were current.
_LEGACY_BUDGET = 1536
_TILES_85 = _Tiles(85, 170)
_TILES_70 = _Tiles(70, 140)
#: Longest prefix first: "gpt-5.1" and "gpt-5-mini" before "gpt-5".
_OPENAI_MODELS: tuple[tuple[str, _Tiles | _Patches], ...] = (
    ("gpt-6", _GPT56),
    ("gpt-5.6", _GPT56),
    ("gpt-5.5", _GPT55),
    ("gpt-5.4", _GPT54),
    ("gpt-5.3", _uniform(1.2, 2048, 6144)),
    ("gpt-5.2", _uniform(1.2, 2048, 6144)),
    ("gpt-5.1", _TILES_70),
    ("gpt-5-mini", _uniform(1.2, 2048, _LEGACY_BUDGET)),
    ("gpt-5-nano", _uniform(1.5, 2048, _LEGACY_BUDGET)),
    ("gpt-5", _TILES_70),
    ("gpt-4.1-mini", _uniform(1.62, 2048, 6144)),
    ("gpt-4.1-nano", _uniform(2.46, 2048, _LEGACY_BUDGET)),
    ("gpt-4.1", _TILES_85),
    ("gpt-4.5", _TILES_85),
    ("gpt-4o-mini", _Tiles(2833, 5667)),
    ("gpt-4o", _TILES_85),
    ("chatgpt-4o", _TILES_85),
    ("gpt-4-turbo", _TILES_85),
    ("gpt-4-vision", _TILES_85),
    ("o4-mini", _uniform(1.72, 2048, _LEGACY_BUDGET)),
    ("o1", _Tiles(75, 150)),
    ("o3", _Tiles(75, 150)),
    ("computer-use-preview", _Tiles(65, 129)),
)
#: "If this count exceeds 30,000 patches, the API rejects the request": the bound of an
#: image of unknown size on a level without a patch budget.
_MAX_PATCHES = 30_000


def _openai_spec(model: str | None) -> tuple[_Tiles | _Patches, bool]:
    """The model's image rule, and whether the docs name it (else gpt-4o's tiles)."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    for prefix, spec in _OPENAI_MODELS:
        if name.startswith(prefix) and not name[len(prefix) : len(prefix) + 1].isdigit():
            return spec, True
    return _TILES_85, False


def _fit(width: int, height: int, side: int) -> tuple[int, int]:
    """Scaled down (never up) to fit a side x side box, aspect kept, rounded."""
    longest = max(width, height)
    if longest <= side:
        return width, height
    return max(1, round(width * side / longest)), max(1, round(height * side / longest))


def _tile_count(width: int, height: int) -> int:
    width, height = _fit(width, height, 2048)
    shortest = min(width, height)
    if shortest > 768:
        if width <= height:
            width, height = 768, height * 768 // shortest
        else:
            width, height = width * 768 // shortest, 768
    return math.ceil(width / 512) * math.ceil(height / 512)


def _patch_count(width: int, height: int, side: int, budget: int | None) -> int:
    width, height = _fit(width, height, side)
    patches = math.ceil(width / 32) * math.ceil(height / 32)
    if budget is None or patches <= budget:
        return patches
    shrink = math.sqrt(32 * 32 * budget / (width * height))
    scaled_w, scaled_h = width * shrink / 32, height * shrink / 32
    adjusted = shrink * min(math.floor(scaled_w) / scaled_w, math.floor(scaled_h) / scaled_h)
    resized_w = max(1, math.floor(width * adjusted))
    resized_h = max(1, math.floor(height * adjusted))
    return min(budget, math.ceil(resized_w / 32) * math.ceil(resized_h / 32))


def _openai_image(
    size: tuple[int, int] | None, model: str | None, detail: str | None
) -> tuple[int, str, bool]:
    spec, known = _openai_spec(model)
    level = _lower(detail) or "auto"
    if isinstance(spec, _Tiles):
        if level == "low":
            return spec.base, "detail low", known
        if size is None:  # at most 768x2048 px after scaling: 2 x 4 tiles
            return spec.base + 8 * spec.tile, "size unknown: upper bound", False
        tiles = _tile_count(*size)
        return spec.base + tiles * spec.tile, f"{size[0]}x{size[1]} {tiles} tiles", known
    side, budget = spec.level(level)
    if size is None:
        cap = budget if budget is not None else min(_MAX_PATCHES, math.ceil(side / 32) ** 2)
        return math.ceil(cap * spec.multiplier), "size unknown: upper bound", False
    patches = _patch_count(*size, side, budget)
    return math.ceil(patches * spec.multiplier), f"{size[0]}x{size[1]} {patches} patches", known


# Gemini: https://ai.google.dev/gemini-api/docs/tokens and .../media-resolution.
_GEMINI_TILE = 258
#: Gemini 3's media_resolution levels: (image, video frame, PDF page) tokens.
_GEMINI3_LEVELS = {
    "": (1120, 70, 560),  # unspecified: the default
    "low": (280, 70, 280),
    "medium": (560, 70, 560),
    "high": (1120, 280, 1120),
    "ultra_high": (2240, 280, 1120),  # per part, images only; video and PDFs as high
}
_GEMINI_AUDIO_PER_SECOND = 32
_GEMINI_VIDEO_PER_SECOND = 263
#: Images of unknown size on Gemini before 3 (no documented maximum): a 2048 px square.
_GEMINI_NOMINAL_SIDE = 2048


def _gemini_generation(model: str | None) -> int | None:
    """3 for Gemini 3 and later (media_resolution), 2 for earlier, None when unknown."""
    if not model:
        return None
    version = gemini_version(Target("gemini", model))
    if version is None:
        return None
    return 3 if version >= (3, 0) else 2


def _gemini_level(resolution: Any) -> tuple[str, int | None]:
    """(level, explicit token count) of a part's media_resolution."""
    if isinstance(resolution, dict):
        tokens = resolution.get("num_tokens", resolution.get("numTokens"))
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            return "", tokens
        resolution = resolution.get("level")
    level = _lower(resolution).removeprefix("media_resolution_")
    return (level if level in _GEMINI3_LEVELS and level != "unspecified" else ""), None


def _gemini_tiles(width: int, height: int) -> int:
    """Both sides <= 384 px: one tile; else crop units of a third of the short side
    doubled (short / 1.5), clamped to 256-768 px, each scaled to a 768x768 tile."""
    if width <= 384 and height <= 384:
        return 1
    unit_num, unit_den = 2 * min(width, height), 3
    if unit_num < 256 * unit_den:
        unit_num, unit_den = 256, 1
    elif unit_num > 768 * unit_den:
        unit_num, unit_den = 768, 1
    return -(-width * unit_den // unit_num) * -(-height * unit_den // unit_num)


def _gemini_image(
    size: tuple[int, int] | None, model: str | None, resolution: Any
) -> tuple[int, str, bool]:
    generation = _gemini_generation(model)
    level, explicit = _gemini_level(resolution)
    modern = explicit if explicit is not None else _GEMINI3_LEVELS[level][0]
    if generation == 3:
        return modern, f"media_resolution {level or 'default'}", True
    side = size or (_GEMINI_NOMINAL_SIDE, _GEMINI_NOMINAL_SIDE)
    tiles = _gemini_tiles(*side)
    older = tiles * _GEMINI_TILE
    note = f"{side[0]}x{side[1]} {tiles} tiles" if size else "size unknown: estimate"
    if generation == 2:
        return older, note, size is not None
    return max(older, modern), note, size is not None and older == modern


# -- documents ---------------------------------------------------------------------------------

_PAGE_OBJECT = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
_PAGES_COUNT = re.compile(
    rb"/Type\s*/Pages(?![A-Za-z])[^>]{0,4096}?/Count\s+(\d{1,7})"
    rb"|/Count\s+(\d{1,7})[^>]{0,4096}?/Type\s*/Pages(?![A-Za-z])"
)
_LINEARIZED = re.compile(rb"/Linearized\s[^>]{0,1024}?/N\s+(\d{1,7})")
_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm")
#: A PDF whose pages we cannot find (a URL, a file id) is taken to have this many: no
#: bound exists short of the providers' page limits (600 to 1,000), which fit no window.
_UNKNOWN_PAGES = 10
#: A PDF read whose page tree hides in places we do not read: pages by its size.
_BYTES_PER_PAGE = 50_000


def _inflated_streams(window: bytes, budget: list[int]) -> list[bytes]:
    """The object streams in ``window``, inflated within the budget (pages of PDFs 1.5+
    live in compressed object streams)."""
    out: list[bytes] = []
    for found in _OBJECT_STREAM.finditer(window):
        if len(out) >= _PDF_MAX_STREAMS or budget[0] <= 0:
            break
        begin = window.find(b"stream", found.end())
        end = window.find(b"endstream", begin + 6) if begin >= 0 else -1
        if begin < 0 or end < 0 or b"/FlateDecode" not in window[found.start() - 512 : begin]:
            continue
        body = window[begin + 6 : end].lstrip(b"\r\n")
        try:
            data = zlib.decompressobj().decompress(body, budget[0])
        except zlib.error:
            continue
        budget[0] -= len(data)
        out.append(data)
    return out


def _pdf_pages(payload: _Payload) -> tuple[int, bool]:
    """(pages, exact) from a bounded scan: the linearization dict's /N, else the page
    tree's largest /Count, else the page objects counted, in the head and the tail of
    the file and the object streams they hold. Exact when the whole file was read."""
    head = payload.read_at(0, _PDF_WINDOW)
    whole = len(head) >= payload.size and not payload.partial
    linear = _LINEARIZED.search(head[:2048])
    if linear:
        return max(1, int(linear.group(1))), True
    windows = [head]
    if not whole and payload.size > _PDF_WINDOW:
        start = max(_PDF_WINDOW, payload.size - _PDF_WINDOW)
        windows.append(payload.read_at(start, payload.size - start))
    budget = [_PDF_INFLATE_BUDGET]
    windows += [data for window in list(windows) for data in _inflated_streams(window, budget)]
    count = 0
    objects = 0
    for window in windows:
        for found in _PAGES_COUNT.finditer(window):
            count = max(count, int(found.group(1) or found.group(2)))
        objects += len(_PAGE_OBJECT.findall(window))
    pages = max(count, objects)
    if pages:
        return pages, whole
    return max(1, math.ceil(payload.size / _BYTES_PER_PAGE)), False


#: Anthropic's documented upper figure for a page's text ("1,500-3,000 tokens per page");
#: OpenAI documents none and is given the same.
_PAGE_TEXT = 3000
#: The page image providers render: a US Letter page at 200 DPI.
_PAGE_IMAGE = (1700, 2200)


def _page_tokens(rule: MediaRule, model: str | None, resolution: Any) -> tuple[int, bool]:
    """Tokens of one PDF page under ``rule`` and whether the figure is documented as is."""
    if rule == "gemini":
        generation = _gemini_generation(model)
        level, _ = _gemini_level(resolution)
        modern = _GEMINI3_LEVELS[level][2]
        if generation == 3:
            return modern, True
        return (_GEMINI_TILE, True) if generation == 2 else (max(modern, _GEMINI_TILE), False)
    if rule == "anthropic":
        image, _, _ = _claude_image(_PAGE_IMAGE, model)
    else:
        image, _, _ = _openai_image(_PAGE_IMAGE, model, "high")
    return _PAGE_TEXT + image, False


def _document(
    payload: _Payload | None, rule: MediaRule, model: str | None, media: _Media
) -> MediaCount:
    per_page, documented = _page_tokens(rule, model, media.resolution)
    if payload is None:
        where = "url" if media.url is not None else "file"
        detail = f"pdf {where} (pages unknown: {_UNKNOWN_PAGES} assumed)"
        return MediaCount(per_page * _UNKNOWN_PAGES, "document", detail, False)
    pages, exact = _pdf_pages(payload)
    detail = f"pdf {pages} page{'s' if pages != 1 else ''}" + ("" if exact else " (estimate)")
    return MediaCount(per_page * pages, "document", detail, exact and documented)


# -- audio and video ---------------------------------------------------------------------------

#: OpenAI: "Audio tokens in user messages are 1 token per 100 ms of audio".
_OPENAI_AUDIO_PER_SECOND = 10
#: A clip whose length cannot be known (a URL, a file id) is taken to last a minute.
_UNKNOWN_SECONDS = 60.0
#: The lowest bitrates we assume for formats whose header we do not read: a bound on
#: their length from their size (lossless audio, compressed audio, video).
_LOSSLESS_BPS = 256_000
_COMPRESSED_BPS = 16_000
_VIDEO_BPS = 1_000_000

_MP3_BITRATES = {
    (3, 3): (0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (3, 2): (0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (3, 1): (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (2, 3): (0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (2, 2): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (2, 1): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_MP3_RATES = {3: (44100, 48000, 32000), 2: (22050, 24000, 16000), 0: (11025, 12000, 8000)}


def _wav_seconds(payload: _Payload) -> float | None:
    """Length of a RIFF/WAVE clip from its fmt chunk's byte rate and its data chunk."""
    offset, byte_rate = 12, 0
    for _ in range(64):
        header = payload.read_at(offset, 8)
        if len(header) < 8:
            return None
        chunk, size = header[:4], int(struct.unpack("<I", header[4:])[0])
        if chunk == b"fmt ":
            fmt = payload.read_at(offset + 8, 12)
            if len(fmt) < 12:
                return None
            byte_rate = int(struct.unpack("<I", fmt[8:12])[0])
        elif chunk == b"data":
            if byte_rate <= 0:
                return None
            available = payload.size - offset - 8
            return min(size, available) / byte_rate
        offset += 8 + size + (size & 1)
    return None


def _mp3_seconds(payload: _Payload) -> tuple[float, bool] | None:
    """Length of an MP3 from its first frame: the Xing/Info frame count when there is
    one (exact), else the frame's bitrate over the file's size (constant bitrate)."""
    offset = 0
    tag = payload.read_at(0, 10)
    if tag[:3] == b"ID3" and len(tag) == 10:
        size = (tag[6] & 0x7F) << 21 | (tag[7] & 0x7F) << 14 | (tag[8] & 0x7F) << 7 | tag[9] & 0x7F
        offset = 10 + size + (10 if tag[5] & 0x10 else 0)
    buf = payload.read_at(offset, 4096)
    for i in range(max(0, len(buf) - 3)):
        if buf[i] != 0xFF or buf[i + 1] & 0xE0 != 0xE0:
            continue
        version, layer = (buf[i + 1] >> 3) & 3, (buf[i + 1] >> 1) & 3
        bitrate_index, rate_index = buf[i + 2] >> 4, (buf[i + 2] >> 2) & 3
        if version == 1 or layer == 0 or bitrate_index in (0, 15) or rate_index == 3:
            continue
        kbps = _MP3_BITRATES[(3 if version == 3 else 2, layer)][bitrate_index]
        rate = _MP3_RATES[version][rate_index]
        samples = 384 if layer == 3 else (1152 if layer == 2 or version == 3 else 576)
        frame = buf[i : i + 200]
        for marker in (b"Xing", b"Info"):
            at = frame.find(marker)
            if at >= 0 and len(frame) >= at + 12 and frame[at + 7] & 1:
                frames = struct.unpack(">I", frame[at + 8 : at + 12])[0]
                return frames * samples / rate, True
        return (payload.size - offset - i) * 8 / (kbps * 1000), False
    return None


def _mp4_seconds(payload: _Payload) -> float | None:
    """Length of an MP4/MOV from moov/mvhd, walking box headers (the moov box is often
    at the end: the boxes before it are skipped, not read)."""
    offset, end = 0, payload.size
    for _ in range(64):
        header = payload.read_at(offset, 16)
        if len(header) < 8:
            return None
        size, box = struct.unpack(">I", header[:4])[0], header[4:8]
        body = 8
        if size == 1 and len(header) == 16:
            size, body = struct.unpack(">Q", header[8:16])[0], 16
        elif size == 0:
            size = end - offset
        if size < body:
            return None
        if box == b"moov":
            end, offset = offset + size, offset + body
            continue
        if box == b"mvhd":
            info = payload.read_at(offset + body, 32)
            if len(info) >= 20 and info[0] == 0:
                scale, length = struct.unpack(">II", info[12:20])
            elif len(info) >= 32 and info[0] == 1:
                scale, length = struct.unpack(">IQ", info[20:32])
            else:
                return None
            return length / scale if scale else None
        offset += size
        if offset >= end:
            return None
    return None


def _seconds(payload: _Payload, mime: str, fmt: str | None) -> tuple[float, bool, str]:
    """(seconds, exact, how) of an audio or video payload, never None: a header where
    we read one, else the length its size allows at the lowest bitrate we assume."""
    if mime in ("audio/wav", "audio/x-wav", "audio/wave") or fmt == "wav":
        seconds = _wav_seconds(payload)
        if seconds is not None:
            return seconds, True, "wav"
    if mime in ("audio/mpeg", "audio/mp3") or fmt == "mp3":
        found = _mp3_seconds(payload)
        if found is not None:
            return found[0], found[1], "mp3"
    if mime.startswith(("video/mp4", "video/quicktime", "audio/mp4")):
        seconds = _mp4_seconds(payload)
        if seconds is not None:
            return seconds, True, mime.split("/", 1)[1]
    if mime.startswith("video/"):
        bps = _VIDEO_BPS
    elif mime in ("audio/flac", "audio/x-flac", "audio/aiff", "audio/x-aiff") or fmt in (
        "flac",
        "pcm16",
        "aiff",
    ):
        bps = _LOSSLESS_BPS
    else:
        bps = _COMPRESSED_BPS
    return payload.size * 8 / bps, False, "length from size"


def _audio(payload: _Payload | None, rule: MediaRule, media: _Media, mime: str) -> MediaCount:
    rate = _GEMINI_AUDIO_PER_SECOND if rule == "gemini" else _OPENAI_AUDIO_PER_SECOND
    if payload is None:
        detail = f"audio (length unknown: {_UNKNOWN_SECONDS:.0f} s assumed)"
        return MediaCount(math.ceil(_UNKNOWN_SECONDS * rate), "audio", detail, False)
    seconds, exact, how = _seconds(payload, mime, media.audio_format)
    return MediaCount(math.ceil(seconds * rate), "audio", f"audio {seconds:.1f} s ({how})", exact)


def _video_rate(model: str | None, resolution: Any) -> tuple[int, bool]:
    """Tokens per second of video: Gemini 3 bills a frame a second at its media
    resolution plus the audio track; earlier models 263 a second."""
    generation = _gemini_generation(model)
    level, _ = _gemini_level(resolution)
    modern = _GEMINI3_LEVELS[level][1] + _GEMINI_AUDIO_PER_SECOND
    if generation == 3:
        return modern, True
    if generation == 2:
        return _GEMINI_VIDEO_PER_SECOND, True
    return max(modern, _GEMINI_VIDEO_PER_SECOND), False


def _video(
    payload: _Payload | None, rule: MediaRule, model: str | None, media: _Media, mime: str
) -> MediaCount:
    rate, known = _video_rate(model if rule == "gemini" else None, media.resolution)
    if payload is None:
        detail = f"video (length unknown: {_UNKNOWN_SECONDS:.0f} s assumed)"
        return MediaCount(math.ceil(_UNKNOWN_SECONDS * rate), "video", detail, False)
    seconds, exact, how = _seconds(payload, mime, None)
    detail = f"video {seconds:.1f} s ({how})"
    return MediaCount(
        math.ceil(seconds * rate), "video", detail, exact and known and rule == "gemini"
    )


# -- the count ---------------------------------------------------------------------------------


def _image(
    payload: _Payload | None, rule: MediaRule, model: str | None, media: _Media, mime: str
) -> MediaCount:
    size = _image_size(payload) if payload is not None else None
    if rule == "anthropic":
        tokens, note, exact = _claude_image(size, model)
    elif rule == "gemini":
        tokens, note, exact = _gemini_image(size, model, media.resolution)
    else:
        tokens, note, exact = _openai_image(size, model, media.detail)
    if payload is None:
        where = "url" if media.url is not None else "file"
        return MediaCount(tokens, "image", f"{where} image ({note})", exact)
    if size is None:
        label = mime or "image"
        return MediaCount(tokens, "image", f"{label} (unreadable header: upper bound)", False)
    return MediaCount(tokens, "image", f"{mime or 'image'} {note}", exact)


def _file(payload: _Payload | None, media: _Media, mime: str) -> MediaCount:
    """A non-PDF file (text, office documents): providers extract its text, which we
    estimate at a token per 3 bytes; one we cannot read, as a 10-page PDF's text."""
    if payload is None:
        return MediaCount(
            _PAGE_TEXT * _UNKNOWN_PAGES, "file", "file (size unknown: estimate)", False
        )
    label = mime or media.filename or "file"
    return MediaCount(
        max(1, math.ceil(payload.size / 3)), "file", f"{label} {payload.size} bytes", False
    )


def _upper_bound(rule: MediaRule, model: str | None) -> int:
    """What a part we could not read at all counts: its rule's largest image."""
    if rule == "anthropic":
        return _claude_tiers(model)[0][1]
    if rule == "gemini":
        return max(_GEMINI3_LEVELS["ultra_high"][0], _gemini_tiles(2048, 2048) * _GEMINI_TILE)
    return _openai_image(None, model, "auto")[0]


def _count(media: _Media, rule: MediaRule, model: str | None) -> MediaCount:
    budget = _PDF_WINDOW * 2 + _HEADER_BUDGET
    payload = _Payload(media.data, media.start, budget) if media.data is not None else None
    sniffed = _sniff(payload.read_at(0, 32)) if payload is not None else ""
    mime = sniffed or media.mime
    kind = _kind_of_mime(mime, media.hint)
    if payload is not None:
        payload.decoded = 0  # the sniff is part of every header read
        payload.budget = _HEADER_BUDGET if kind in ("image", "audio", "video") else budget
    if kind == "image":
        return _image(payload, rule, model, media, mime)
    if kind == "document" or (
        kind == "file" and mime in ("", "application/pdf") and payload is None
    ):
        return _document(payload, rule, model, media)
    if kind == "audio":
        return _audio(payload, rule, media, mime)
    if kind == "video":
        return _video(payload, rule, model, media, mime)
    return _file(payload, media, mime)


def media_count(part: Any, rule: MediaRule, model: str | None = None) -> MediaCount | None:
    """What the provider of ``rule`` bills for ``part`` on ``model``, or None when
    ``part`` is not a media part. Reads headers only; never raises: a part it cannot
    read counts at its rule's upper bound with ``exact=False``."""
    try:
        media = _parse(part)
    except Exception:
        return None
    if media is None:
        return None
    try:
        return _count(media, rule, model if isinstance(model, str) else None)
    except Exception:
        try:
            tokens = _upper_bound(rule, model if isinstance(model, str) else None)
        except Exception:
            tokens = 4784
        return MediaCount(tokens, media.hint, "unreadable media part (upper bound)", False)
