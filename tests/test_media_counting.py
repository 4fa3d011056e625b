"""Media parts counted as each provider bills them (counting/_media.py).

The worked examples below are the providers' own, quoted with their source; the image
bytes are real headers built here (PNG, JPEG, GIF, WebP by hand; Pillow, when it is
installed, cross-checks JPEG and WebP). Counting reads headers only: a 5 MB image
decodes no more than a 50 KB one with the same header. No input makes it raise.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import math
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor.counting import _media as media
from context_governor.counting._media import (
    MediaCount,
    is_media_part,
    media_count,
    media_parts,
    media_rule_for,
    stripped_text,
)

# -- real headers ------------------------------------------------------------------------------


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png(width: int, height: int, pad: int = 0) -> bytes:
    """A valid PNG header of the given size (one grey row; ``pad`` bytes of ancillary
    chunk after the header make the file as large as wanted)."""
    header = _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    extra = _chunk(b"tEXt", b"c\x00" + b"x" * pad) if pad else b""
    idat = _chunk(b"IDAT", zlib.compress(b"\x00" * (min(width, 64) + 1)))
    return b"\x89PNG\r\n\x1a\n" + header + extra + idat + _chunk(b"IEND", b"")


def jpeg(width: int, height: int, app_segments: int = 0) -> bytes:
    """SOI, JFIF, ``app_segments`` full 64 KiB APP1/APP2 segments (EXIF, ICC...), then
    the SOF0 frame header: the size sits behind every segment."""
    out = (
        b"\xff\xd8"
        + b"\xff\xe0"
        + struct.pack(">H", 16)
        + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    )
    for i in range(app_segments):
        marker = b"\xff\xe1" if i % 2 == 0 else b"\xff\xe2"
        out += marker + struct.pack(">H", 65535) + b"\x00" * 65533
    sof = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    out += b"\xff\xc0" + struct.pack(">H", 2 + len(sof)) + sof
    return out + b"\xff\xda\x00\x08\x01\x01\x00\x00\x3f\x00" + b"\x00" * 32 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00" + b"\x3b"


def webp(width: int, height: int) -> bytes:
    """An extended (VP8X) WebP header: the canvas size, 24 bits each, minus one."""
    vp8x = (
        b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    )
    body = b"WEBP" + b"VP8X" + struct.pack("<I", len(vp8x)) + vp8x
    return b"RIFF" + struct.pack("<I", len(body)) + body


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{b64(data)}"


def claude_image(data: bytes, mime: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": b64(data)}}


def chat_image(data: bytes, detail: str | None = None, mime: str = "image/png") -> dict[str, Any]:
    block: dict[str, Any] = {"url": data_url(mime, data)}
    if detail is not None:
        block["detail"] = detail
    return {"type": "image_url", "image_url": block}


def gemini_image(data: bytes, mime: str = "image/png", **extra: Any) -> dict[str, Any]:
    return {"inline_data": {"mime_type": mime, "data": b64(data)}, **extra}


def count(part: Any, rule: media.MediaRule, model: str | None = None) -> MediaCount:
    found = media_count(part, rule, model)
    assert found is not None
    return found


# -- which rule --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "api", "rule"),
    [
        ("anthropic", None, "anthropic"),
        ("bedrock", None, "anthropic"),
        ("gemini", None, "gemini"),
        ("openai", None, "openai"),
        ("mistral", None, "openai"),
        ("deepseek", "anthropic", "openai"),  # the provider decides when there is one
        ("groq", None, "openai"),
        ("ollama", None, "openai"),
        ("vllm", None, "openai"),
        ("qwen", None, "openai"),
        ("glm", None, "openai"),
        ("moonshot", None, "openai"),
        (None, "anthropic", "anthropic"),
        (None, "gemini", "gemini"),
        (None, "responses", "openai"),
        (None, "openai", "openai"),
        (None, None, "openai"),
    ],
)
def test_media_rule_for(provider: str | None, api: str | None, rule: str) -> None:
    assert media_rule_for(provider, api) == rule


# -- Anthropic ---------------------------------------------------------------------------------

# https://platform.claude.com/docs/en/build-with-claude/vision, "Resolution and token
# cost": "An image, therefore, costs ⌈width / 28⌉ × ⌈height / 28⌉ visual tokens", and
# its table (image size: standard tier tokens, high-resolution tier tokens).
CLAUDE_TABLE = [
    ((200, 200), 64, 64),
    ((1000, 1000), 1296, 1296),
    ((1092, 1092), 1521, 1521),
    ((1920, 1080), 1560, 2691),  # standard: downsized to 1456x819
    ((2000, 1500), 1564, 3888),  # standard: downsized to 1269x952 (reference code: 1270x952)
    ((3840, 2160), 1560, 4784),  # high: downsized to 2576x1449
]


@pytest.mark.parametrize(("size", "standard", "high"), CLAUDE_TABLE)
def test_claude_published_table(size: tuple[int, int], standard: int, high: int) -> None:
    part = claude_image(png(*size))
    for model in ("claude-sonnet-4-6", "claude-haiku-4-5", "claude-3-5-sonnet-20241022"):
        assert count(part, "anthropic", model) == MediaCount(
            standard, "image", count(part, "anthropic", model).detail, True
        )
    for model in ("claude-opus-4-7", "claude-opus-4-8", "claude-sonnet-5", "claude-fable-5"):
        assert count(part, "anthropic", model).tokens == high


def test_claude_resize_examples() -> None:
    # .../vision-coordinates, "How Claude resizes and pads images": "a 1920×1080
    # screenshot resizes to 1456×819" and "an A4 page scanned at 130 DPI is 1075×1520
    # pixels ... it costs 39 × 55 = 2145 visual tokens, so Claude resizes it to 924×1307"
    # (standard tier); "A high-resolution-tier model doesn't resize the same scan".
    assert (
        "1456x819" in count(claude_image(png(1920, 1080)), "anthropic", "claude-sonnet-4-5").detail
    )
    a4 = claude_image(png(1075, 1520))
    standard = count(a4, "anthropic", "claude-sonnet-4-6")
    assert "924x1307" in standard.detail
    assert standard.tokens == math.ceil(924 / 28) * math.ceil(1307 / 28)
    assert count(a4, "anthropic", "claude-opus-4-7").tokens == 2145


def test_claude_model_names() -> None:
    big = claude_image(png(3000, 2000))
    high = ("claude-opus-4-7-20260416", "us.anthropic.claude-opus-4-7-v1:0", "claude-mythos-5")
    for model in high:
        assert count(big, "anthropic", model).tokens > 4000, model
    for model in ("claude-opus-4-6", "claude-sonnet-4-20250514", "anthropic.claude-3-7-sonnet"):
        assert count(big, "anthropic", model).tokens <= 1568, model
    # Unknown model: the high tier, an upper bound, exact only where both tiers agree.
    unknown = count(big, "anthropic", None)
    assert unknown.tokens > 4000 and not unknown.exact
    assert count(claude_image(png(200, 200)), "anthropic", "some-proxy-alias").exact


def test_claude_unknown_size_is_the_documented_maximum() -> None:
    url = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    file = {"type": "image", "source": {"type": "file", "file_id": "file_011"}}
    for part in (url, file):
        standard = count(part, "anthropic", "claude-sonnet-4-6")
        assert (standard.tokens, standard.exact) == (1568, False)
        assert count(part, "anthropic", "claude-opus-4-7").tokens == 4784
    assert "url image" in count(url, "anthropic", "claude-sonnet-4-6").detail


# -- OpenAI ------------------------------------------------------------------------------------


def test_openai_tile_examples() -> None:
    # https://developers.openai.com/api/docs/guides/images-vision, tile-based models:
    # a 1024 x 1024 square image in "high" detail costs 765 tokens; a 2048 x 4096 image
    # costs 1105; with "detail": "low" an image costs only the base tokens (85).
    assert count(chat_image(png(1024, 1024), "high"), "openai", "gpt-4o").tokens == 765
    assert count(chat_image(png(2048, 4096), "high"), "openai", "gpt-4o").tokens == 1105
    assert count(chat_image(png(2048, 4096), "low"), "openai", "gpt-4o").tokens == 85
    # "auto" (the default) sizes like "high" on tile models.
    assert count(chat_image(png(1024, 1024)), "openai", "gpt-4.1").tokens == 765
    # Per-model base and tile tokens from the same page's table.
    four_tiles = chat_image(png(1024, 1024), "high")
    assert count(four_tiles, "openai", "gpt-4o-mini").tokens == 2833 + 4 * 5667
    assert count(four_tiles, "openai", "o1").tokens == 75 + 4 * 150
    assert count(four_tiles, "openai", "gpt-5").tokens == 70 + 4 * 140
    assert count(four_tiles, "openai", "gpt-5.1").tokens == 70 + 4 * 140
    assert count(four_tiles, "openai", "computer-use-preview").tokens == 65 + 4 * 129
    assert count(four_tiles, "openai", "openai/gpt-4o-2024-08-06").tokens == 765


def test_openai_patch_examples() -> None:
    # Same page, "Cost calculation examples for gpt-5.4 with detail: high": "A 1024 ×
    # 1024 image needs 32 × 32 = 1024 patches ... ceil(1024 × 1.2) = 1229 tokens"; "A
    # 2048 × 2048 image initially needs 64 × 64 = 4096 patches. The patch budget reduces
    # it to 1600 × 1600 pixels, or 50 × 50 = 2500 patches ... ceil(2500 × 1.2) = 3000".
    assert count(chat_image(png(1024, 1024), "high"), "openai", "gpt-5.4").tokens == 1229
    assert count(chat_image(png(2048, 2048), "high"), "openai", "gpt-5.4").tokens == 3000
    # The page's earlier example (1,536-patch budget): "A 1800 x 2400 image is 1452
    # tokens" before the multiplier; o4-mini multiplies by 1.72.
    part = chat_image(png(1800, 2400), "high")
    assert "1452 patches" in count(part, "openai", "o4-mini").detail
    assert count(part, "openai", "o4-mini").tokens == math.ceil(1452 * 1.72)
    assert count(part, "openai", "gpt-4.1-nano").tokens == math.ceil(1452 * 2.46)


def test_openai_detail_levels_by_family() -> None:
    photo = png(4032, 3024)
    # gpt-5.6: auto = original, no patch budget: 126 x 95 patches.
    assert count(chat_image(photo), "openai", "gpt-5.6-sol").tokens == math.ceil(126 * 95 * 1.2)
    assert count(chat_image(photo, "high"), "openai", "gpt-5.6-terra").tokens <= 3000
    # low fits 512 x 512: at most 16 x 16 patches.
    assert count(chat_image(photo, "low"), "openai", "gpt-5.6-luna").tokens <= math.ceil(256 * 1.2)
    # gpt-5.5: auto = original, 10,000-patch budget; gpt-5.4: auto = high.
    assert count(chat_image(photo), "openai", "gpt-5.5").tokens <= 12_000
    assert count(chat_image(photo), "openai", "gpt-5.4-mini").tokens <= 3000
    # gpt-5.4's low uses a 6,144-patch budget: "it can use more tokens than high".
    low = count(chat_image(photo, "low"), "openai", "gpt-5.4").tokens
    assert low > count(chat_image(photo, "high"), "openai", "gpt-5.4").tokens


def test_openai_unknown_model_and_size() -> None:
    part = chat_image(png(1024, 1024), "high")
    unknown = count(part, "openai", "mistral-large-latest")
    assert (unknown.tokens, unknown.exact) == (765, False)  # gpt-4o's tiles, an estimate
    url = {"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}
    assert count(url, "openai", "gpt-4o") == MediaCount(
        85 + 8 * 170, "image", "url image (size unknown: upper bound)", False
    )
    assert count(url, "openai", "gpt-5.4").tokens == 3000  # the 2,500-patch budget
    assert count(url, "openai", "gpt-5.6-sol").tokens == math.ceil(30_000 * 1.2)
    # Low detail on a tile model does not depend on the size: exact even for a URL.
    low = {"type": "image_url", "image_url": {"url": "https://example.com/x.png", "detail": "low"}}
    assert count(low, "openai", "gpt-4o") == MediaCount(85, "image", "url image (detail low)", True)


# -- Gemini ------------------------------------------------------------------------------------


def test_gemini_examples() -> None:
    # https://ai.google.dev/gemini-api/docs/tokens: "Image inputs with both dimensions
    # <=384 pixels are counted as 258 tokens. Images larger in one or both dimensions
    # are cropped and scaled as needed into tiles of 768x768 pixels, each counted as 258
    # tokens." The crop unit is the short side / 1.5, between 256 and 768 px (image
    # understanding page, Gemini 1.5): a 1600x900 image is 3 x 2 units of 600 px.
    assert count(gemini_image(png(384, 384)), "gemini", "gemini-2.0-flash").tokens == 258
    assert count(gemini_image(png(300, 200)), "gemini", "gemini-2.5-flash").tokens == 258
    assert count(gemini_image(png(1600, 900)), "gemini", "gemini-2.5-pro").tokens == 6 * 258
    assert count(gemini_image(png(3072, 3072)), "gemini", "gemini-2.5-pro").tokens == 16 * 258


def test_gemini_3_media_resolution() -> None:
    # Gemini 3 guide, media_resolution token table: image 1120 unspecified (default),
    # 280 low, 560 medium, 1120 high; ultra high 2240 (per part only).
    part = gemini_image(png(4000, 3000))
    assert count(part, "gemini", "gemini-3-pro-preview") == MediaCount(
        1120, "image", "image/png media_resolution default", True
    )
    low = gemini_image(png(4000, 3000), media_resolution={"level": "MEDIA_RESOLUTION_LOW"})
    assert count(low, "gemini", "gemini-3.1-pro").tokens == 280
    camel = gemini_image(png(40, 30), mediaResolution="media_resolution_ultra_high")
    assert count(camel, "gemini", "models/gemini-3-flash-preview").tokens == 2240
    explicit = gemini_image(png(40, 30), media_resolution={"numTokens": 99})
    assert count(explicit, "gemini", "gemini-3-flash-preview").tokens == 99
    # A file_data image: the size is not needed on Gemini 3.
    ref = {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://files/abc"}}
    assert count(ref, "gemini", "gemini-3-flash").exact
    # Unknown model: the larger of the two rules, not exact where they differ.
    both = count(gemini_image(png(4000, 3000)), "gemini", None)
    assert both.tokens == max(1120, 24 * 258) and not both.exact


# -- headers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (png(1280, 800), "image/png"),
        (jpeg(1280, 800), "image/jpeg"),
        (jpeg(1280, 800, app_segments=4), "image/jpeg"),  # SOF after 256 KiB of EXIF/ICC
        (gif(1280, 800), "image/gif"),
        (webp(1280, 800), "image/webp"),
    ],
)
def test_real_headers(data: bytes, mime: str) -> None:
    found = count(claude_image(data, "image/png"), "anthropic", "claude-sonnet-4-6")
    assert found.detail.startswith(f"{mime} 1280x800")  # the bytes decide, not the label
    assert found.tokens == math.ceil(1280 / 28) * math.ceil(800 / 28)
    assert found.exact


def test_pillow_images_agree() -> None:
    image = pytest.importorskip("PIL.Image")
    for fmt, mime in (("JPEG", "image/jpeg"), ("WEBP", "image/webp"), ("PNG", "image/png")):
        buf = io.BytesIO()
        image.new("RGB", (1366, 639)).save(buf, fmt)
        found = count(chat_image(buf.getvalue(), "high", mime), "openai", "gpt-4o")
        assert "1366x639" in found.detail, fmt


def test_unreadable_header_is_an_upper_bound() -> None:
    for data in (b"", b"\x89PNG\r\n", b"not an image at all", png(10, 10)[:20], jpeg(10, 10)[:25]):
        found = count(claude_image(data), "anthropic", "claude-sonnet-4-6")
        assert (found.tokens, found.exact) == (1568, False)
    broken = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "@@@!!"},
    }
    assert count(broken, "anthropic", "claude-opus-4-7").tokens == 4784


def test_huge_dimensions() -> None:
    huge = png(100_000, 100_000)
    assert count(claude_image(huge), "anthropic", "claude-sonnet-4-6").tokens <= 1568
    assert count(chat_image(huge, "high"), "openai", "gpt-4o").tokens == 765
    assert count(chat_image(huge), "openai", "gpt-5.6-sol").tokens > 1_000_000  # rejected upstream
    assert count(gemini_image(huge), "gemini", "gemini-2.5-flash").tokens > 0


def test_whitespace_and_urlsafe_base64() -> None:
    wrapped = base64.encodebytes(png(640, 480, pad=2000)).decode()  # 76-column lines
    part = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": wrapped},
    }
    assert "640x480" in count(part, "anthropic", "claude-sonnet-4-6").detail
    urlsafe = base64.urlsafe_b64encode(jpeg(640, 480, app_segments=1)).decode().rstrip("=")
    assert (
        "640x480"
        in count(
            gemini_image(b"", "image/jpeg")
            | {"inline_data": {"mime_type": "image/jpeg", "data": urlsafe}},
            "gemini",
            "gemini-2.5-flash",
        ).detail
    )
    raw = {"inline_data": {"mime_type": "image/png", "data": png(640, 480)}}  # SDK bytes
    assert "640x480" in count(raw, "gemini", "gemini-2.0-flash").detail


def test_headers_only_are_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting a 5 MB image decodes what counting a 50 KB one with the same header
    does: a bounded prefix, not the payload."""
    decoded: list[int] = []
    real = binascii.a2b_base64

    def counting(data: Any, *args: Any, **kwargs: Any) -> bytes:
        out = real(data, *args, **kwargs)
        decoded.append(len(out))
        return out

    parts = {
        (kind, size): claude_image(maker(size))
        for kind, maker in (
            ("png", lambda pad: png(1920, 1080, pad=pad)),
            ("jpeg", lambda segments: jpeg(1920, 1080, app_segments=segments)),
        )
        for size in ((50_000, 5_000_000) if kind == "png" else (1, 76))
    }
    monkeypatch.setattr(media.binascii, "a2b_base64", counting)
    spent: dict[tuple[str, int], int] = {}
    for key, part in parts.items():
        decoded.clear()
        started = time.perf_counter()
        assert count(part, "anthropic", "claude-sonnet-4-6").tokens == 1560
        elapsed = time.perf_counter() - started
        spent[key] = sum(decoded)
        assert elapsed < 0.25, (key, elapsed)  # well under in practice: a few ms
    assert spent[("png", 50_000)] == spent[("png", 5_000_000)] < 4096
    # A 5 MB JPEG whose SOF sits behind 76 EXIF/ICC segments: the segments are skipped.
    assert spent[("jpeg", 76)] < 8192


# -- documents ---------------------------------------------------------------------------------


def pdf(pages: int, object_stream: bool = False, linearized: bool = False, pad: int = 0) -> bytes:
    """A small PDF of ``pages`` pages: its page tree plain, or in a compressed object
    stream (PDF 1.5), optionally linearized, optionally padded with a big stream."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages,
    ]
    out = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"
    if linearized:
        out += f"99 0 obj\n<< /Linearized 1 /L 1000 /N {pages} /T 900 >>\nendobj\n".encode()
    if pad:
        filler = hashlib.shake_256(b"filler").digest(pad)  # incompressible, deterministic
        out += (
            f"98 0 obj\n<< /Length {len(filler)} >>\nstream\n".encode()
            + filler
            + b"\nendstream\nendobj\n"
        )
    if object_stream:
        packed = zlib.compress(b"\n".join(objects[1:]))
        out += b"1 0 obj\n" + objects[0] + b"\nendobj\n"
        out += f"50 0 obj\n<< /Type /ObjStm /N {pages + 1} /First 10 /Filter /FlateDecode /Length {len(packed)} >>\nstream\n".encode()
        out += packed + b"\nendstream\nendobj\n"
    else:
        for i, body in enumerate(objects, 1):
            out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    return out + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"


def claude_pdf(data: bytes) -> dict[str, Any]:
    return {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": b64(data)},
    }


@pytest.mark.parametrize("pages", [1, 3, 12])
@pytest.mark.parametrize("variant", ["plain", "object_stream", "linearized"])
def test_pdf_pages(pages: int, variant: str) -> None:
    data = pdf(pages, object_stream=variant == "object_stream", linearized=variant == "linearized")
    found = count(claude_pdf(data), "gemini", "gemini-2.5-flash")
    # https://ai.google.dev/gemini-api/docs/document-processing: "Each document page is
    # equivalent to 258 tokens."
    assert found == MediaCount(
        258 * pages, "document", f"pdf {pages} page{'s' * (pages > 1)}", True
    )


def test_pdf_rules() -> None:
    data = pdf(4)
    # Anthropic's pdf-support page: "Each page typically uses 1,500-3,000 tokens per page
    # depending on content density" and "Because each page is converted into an image,
    # the same image-based cost calculations are applied": the upper text figure plus a
    # Letter page's image at the model's tier.
    page_image = count(claude_image(png(1700, 2200)), "anthropic", "claude-sonnet-4-6").tokens
    standard = count(claude_pdf(data), "anthropic", "claude-sonnet-4-6")
    assert standard.tokens == 4 * (3000 + page_image) and not standard.exact
    high = count(claude_pdf(data), "anthropic", "claude-opus-4-7")
    assert high.tokens > standard.tokens
    # OpenAI (Chat file / Responses input_file): text plus each page's image at high.
    chat = {
        "type": "file",
        "file": {"file_data": data_url("application/pdf", data), "filename": "a.pdf"},
    }
    responses = {"type": "input_file", "file_data": data_url("application/pdf", data)}
    page_high = count(chat_image(png(1700, 2200), "high"), "openai", "gpt-4.1").tokens
    assert count(chat, "openai", "gpt-4.1").tokens == 4 * (3000 + page_high)
    assert count(responses, "openai", "gpt-4.1") == count(chat, "openai", "gpt-4.1")
    # Gemini 3: the media_resolution table's PDF column (560 per page by default).
    inline = {"inline_data": {"mime_type": "application/pdf", "data": b64(data)}}
    assert count(inline, "gemini", "gemini-3-pro-preview").tokens == 4 * 560
    high_res = inline | {"media_resolution": {"level": "media_resolution_high"}}
    assert count(high_res, "gemini", "gemini-3-pro-preview").tokens == 4 * 1120


def test_pdf_unknown_pages() -> None:
    url = {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}
    file = {"type": "input_file", "file_id": "file-abc"}
    for part, rule in ((url, "anthropic"), (file, "openai")):
        found = count(part, rule, None)  # type: ignore[arg-type]
        assert found.kind == "document" and not found.exact
        assert "pages unknown" in found.detail
    gemini = {"file_data": {"mime_type": "application/pdf", "file_uri": "gs://b/a.pdf"}}
    assert count(gemini, "gemini", "gemini-2.5-flash").tokens == 10 * 258


def test_big_pdf_reads_head_and_tail_only() -> None:
    data = pdf(7, object_stream=True, pad=6_000_000)  # page tree 6 MB in, past the head
    found = count(claude_pdf(data), "gemini", "gemini-2.0-flash")
    assert found.tokens == 7 * 258 and not found.exact  # not read whole: not exact
    started = time.perf_counter()
    count(claude_pdf(pdf(3, pad=20_000_000)), "gemini", "gemini-2.0-flash")
    assert time.perf_counter() - started < 1.0


def test_text_documents_are_text() -> None:
    text_doc = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "hello"},
    }
    assert not is_media_part(text_doc) and media_count(text_doc, "anthropic") is None
    inner = claude_image(png(100, 100))
    content_doc = {
        "type": "document",
        "source": {"type": "content", "content": [{"type": "text", "text": "a"}, inner]},
    }
    assert not is_media_part(content_doc)
    assert list(media_parts([content_doc])) == [inner]


# -- audio and video ---------------------------------------------------------------------------


def wav(seconds: float, rate: int = 16000) -> bytes:
    data = b"\x00\x00" * int(seconds * rate)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = (
        b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )
    return b"RIFF" + struct.pack("<I", len(body)) + body


def mp3(seconds: float, xing: bool = False) -> bytes:
    """An ID3v2 tag, then MPEG-1 layer III frames at 128 kbit/s, 44.1 kHz (417 bytes)."""
    header = b"\xff\xfb\x90\x64"
    frames = round(seconds * 44100 / 1152)
    first = header + b"\x00" * 32
    if xing:
        first += b"Xing" + struct.pack(">II", 1, frames)
    first = first.ljust(417, b"\x00")
    tag = b"ID3\x04\x00\x00" + bytes([0, 0, 0, 100]) + b"\x00" * 100
    return tag + first + (header + b"\x00" * 413) * (frames - 1)


def mp4(seconds: float, mdat: int = 100_000) -> bytes:
    ftyp = struct.pack(">I", 16) + b"ftypisom" + b"\x00\x00\x02\x00"
    body = struct.pack(">I", 8 + mdat) + b"mdat" + b"\x00" * mdat
    mvhd_data = (
        b"\x00\x00\x00\x00" + struct.pack(">IIII", 0, 0, 1000, int(seconds * 1000)) + b"\x00" * 80
    )
    mvhd = struct.pack(">I", 8 + len(mvhd_data)) + b"mvhd" + mvhd_data
    moov = struct.pack(">I", 8 + len(mvhd)) + b"moov" + mvhd
    return ftyp + body + moov  # moov at the end, as most cameras write it


def test_audio() -> None:
    clip = {"type": "input_audio", "input_audio": {"data": b64(wav(2.5)), "format": "wav"}}
    # OpenAI, Realtime costs: "Audio tokens in user messages are 1 token per 100 ms of audio".
    assert count(clip, "openai", "gpt-4o-audio-preview") == MediaCount(
        25, "audio", "audio 2.5 s (wav)", True
    )
    # Gemini, tokens page: "audio at 32 tokens per second".
    inline = {"inline_data": {"mime_type": "audio/wav", "data": b64(wav(2.5))}}
    assert count(inline, "gemini", "gemini-2.5-flash").tokens == 80
    cbr = count(
        {"type": "input_audio", "input_audio": {"data": b64(mp3(10)), "format": "mp3"}}, "openai"
    )
    assert abs(cbr.tokens - 100) <= 2 and not cbr.exact  # constant bitrate: an estimate
    vbr = count(
        {"type": "input_audio", "input_audio": {"data": b64(mp3(10, xing=True)), "format": "mp3"}},
        "openai",
    )
    assert abs(vbr.tokens - 100) <= 1 and vbr.exact  # the Xing frame count
    ogg = {"inline_data": {"mime_type": "audio/ogg", "data": b64(b"OggS" + b"\x00" * 19_996)}}
    bound = count(ogg, "gemini", "gemini-2.5-flash")  # 20 KB at 16 kbit/s: 10 s
    assert (bound.tokens, bound.exact) == (320, False)
    remote = {"file_data": {"mime_type": "audio/mp3", "file_uri": "gs://b/a.mp3"}}
    assert count(remote, "gemini", "gemini-2.5-flash") == MediaCount(
        60 * 32, "audio", "audio (length unknown: 60 s assumed)", False
    )


def test_video() -> None:
    clip = {"inline_data": {"mime_type": "video/mp4", "data": b64(mp4(12.5))}}
    # Gemini tokens page: "video at 263 tokens per second".
    assert count(clip, "gemini", "gemini-2.5-flash") == MediaCount(
        math.ceil(12.5 * 263), "video", "video 12.5 s (mp4)", True
    )
    # Gemini 3: a frame a second at 70 tokens (default) plus the audio track's 32.
    assert count(clip, "gemini", "gemini-3-flash-preview").tokens == math.ceil(12.5 * 102)


# -- shapes ------------------------------------------------------------------------------------

IMAGE = png(800, 600)
SHAPES: list[tuple[str, dict[str, Any], str]] = [
    ("chat image_url", chat_image(IMAGE, "low"), "image"),
    (
        "chat image_url string",
        {"type": "image_url", "image_url": data_url("image/png", IMAGE)},
        "image",
    ),
    (
        "chat image_url remote",
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        "image",
    ),
    (
        "chat input_audio",
        {"type": "input_audio", "input_audio": {"data": b64(wav(1)), "format": "wav"}},
        "audio",
    ),
    (
        "chat file data",
        {
            "type": "file",
            "file": {"file_data": data_url("application/pdf", pdf(2)), "filename": "a.pdf"},
        },
        "document",
    ),
    ("chat file id", {"type": "file", "file": {"file_id": "file-1"}}, "document"),
    ("anthropic image", claude_image(IMAGE), "image"),
    (
        "anthropic image url",
        {"type": "image", "source": {"type": "url", "url": "https://x"}},
        "image",
    ),
    (
        "anthropic image file",
        {"type": "image", "source": {"type": "file", "file_id": "f"}},
        "image",
    ),
    ("anthropic pdf", claude_pdf(pdf(2)), "document"),
    (
        "anthropic pdf url",
        {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}},
        "document",
    ),
    (
        "anthropic pdf file",
        {"type": "document", "source": {"type": "file", "file_id": "f"}},
        "document",
    ),
    (
        "responses input_image",
        {"type": "input_image", "image_url": data_url("image/png", IMAGE), "detail": "high"},
        "image",
    ),
    ("responses input_image id", {"type": "input_image", "file_id": "file-1"}, "image"),
    (
        "responses input_file",
        {
            "type": "input_file",
            "file_data": data_url("application/pdf", pdf(2)),
            "filename": "a.pdf",
        },
        "document",
    ),
    ("responses input_file id", {"type": "input_file", "file_id": "file-1"}, "document"),
    ("responses input_file url", {"type": "input_file", "file_url": "https://x/a.pdf"}, "document"),
    (
        "responses screenshot",
        {"type": "computer_screenshot", "image_url": data_url("image/png", IMAGE)},
        "image",
    ),
    ("gemini inline", gemini_image(IMAGE), "image"),
    ("gemini inlineData", {"inlineData": {"mimeType": "image/png", "data": b64(IMAGE)}}, "image"),
    (
        "gemini file_data",
        {"file_data": {"mime_type": "image/png", "file_uri": "gs://b/x.png"}},
        "image",
    ),
    (
        "gemini fileData",
        {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/a.pdf"}},
        "document",
    ),
    ("langchain image", {"type": "image", "base64": b64(IMAGE), "mime_type": "image/png"}, "image"),
    ("vllm video_url", {"type": "video_url", "video_url": {"url": "https://x/a.mp4"}}, "video"),
]
NOT_MEDIA: list[Any] = [
    {"type": "text", "text": "hello"},
    {"text": "gemini text"},
    {"type": "tool_use", "id": "t", "name": "f", "input": {}},
    {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
    {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
    {"type": "input_text", "text": "x"},
    {"functionCall": {"name": "f", "args": {}}},
    {"thought": True, "text": "x", "thoughtSignature": "c2ln"},
    {"type": "tool_result", "tool_use_id": "t", "content": [claude_image(IMAGE)]},  # a container
    "a string",
    None,
    42,
    [claude_image(IMAGE)],
]


@pytest.mark.parametrize(("name", "part", "kind"), SHAPES, ids=[s[0] for s in SHAPES])
@pytest.mark.parametrize("rule", ["anthropic", "openai", "gemini"])
def test_shapes(name: str, part: dict[str, Any], kind: str, rule: media.MediaRule) -> None:
    assert is_media_part(part)
    found = count(part, rule, None)
    assert found.kind == kind and found.tokens > 0, found
    assert list(media_parts([part])) == [part]
    text = stripped_text(part)
    assert len(text) < 400 and b64(IMAGE)[:200] not in text


@pytest.mark.parametrize("part", NOT_MEDIA)
def test_not_media(part: Any) -> None:
    assert not is_media_part(part)
    assert media_count(part, "openai", "gpt-4o") is None


def test_nested_media_parts() -> None:
    first, second, third = (
        claude_image(png(10, 10)),
        chat_image(png(20, 20)),
        gemini_image(png(30, 30)),
    )
    anthropic_user = [
        {"type": "text", "text": "see"},
        {
            "type": "tool_result",
            "tool_use_id": "t",
            "content": [{"type": "text", "text": "shot"}, first],
        },
    ]
    assert list(media_parts(anthropic_user)) == [first]
    screenshot = {"type": "input_image", "image_url": data_url("image/png", png(5, 5))}
    responses_output = {
        "type": "function_call_output",
        "call_id": "c",
        "output": [{"type": "input_text", "text": "x"}, screenshot],
    }
    assert list(media_parts([responses_output])) == [screenshot]
    computer = {
        "type": "computer_call_output",
        "call_id": "c",
        "output": {"type": "computer_screenshot", "image_url": "https://x"},
    }
    assert list(media_parts([computer])) == [computer["output"]]
    chat_tool_content = [{"type": "text", "text": "x"}, second]  # a chat tool message's content
    assert list(media_parts(chat_tool_content)) == [second]
    gemini_response = {"functionResponse": {"name": "f", "response": {}, "parts": [third]}}
    assert list(media_parts([gemini_response])) == [third]
    assert list(media_parts("plain text")) == [] and list(media_parts(None)) == []
    cyclic: list[Any] = [first]
    cyclic.append(cyclic)
    assert list(media_parts(cyclic)) == [first]


# -- stripped text -----------------------------------------------------------------------------


def test_stripped_text() -> None:
    big = claude_image(png(1920, 1080, pad=1_000_000))
    text = stripped_text(big)
    assert len(text) < 200 and text == stripped_text(json.loads(json.dumps(big)))
    assert json.loads(text)["source"]["media_type"] == "image/png"
    variants = [
        claude_image(png(1920, 1080)),
        claude_image(png(1920, 1081)),
        claude_image(png(1920, 1080), "image/jpeg"),
        chat_image(png(1920, 1080)),
        chat_image(png(1920, 1080), "low"),
        {"type": "image_url", "image_url": {"url": "https://a/1.png"}},
        {"type": "image_url", "image_url": {"url": "https://a/2.png"}},
        {"type": "input_audio", "input_audio": {"data": b64(wav(1)), "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": b64(wav(2)), "format": "wav"}},
        gemini_image(png(1920, 1080)),
    ]
    texts = [stripped_text(v) for v in variants]
    assert len(set(texts)) == len(texts)
    raw = {"inline_data": {"mime_type": "image/png", "data": png(64, 64, pad=5000)}}
    assert "payload" in stripped_text(raw) and len(stripped_text(raw)) < 200


# -- hostile input -----------------------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.sampled_from(
        [
            "data:image/png;base64,",
            "data:,",
            "data:image/png;base64,iVBORw0KGgo",
            "https://x",
            "@@@",
        ]
    ),
)
json_ish = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
TYPES = [
    "image_url",
    "input_image",
    "input_audio",
    "file",
    "input_file",
    "image",
    "document",
    "computer_screenshot",
    "audio_url",
    "video_url",
    "audio",
    "video",
    "tool_result",
    "function_call_output",
]
KEYS = [
    "image_url",
    "source",
    "input_audio",
    "file",
    "file_data",
    "file_id",
    "file_url",
    "detail",
    "data",
    "media_type",
    "inline_data",
    "inlineData",
    "file_data",
    "fileData",
    "content",
    "output",
    "media_resolution",
    "base64",
    "url",
]
shaped = st.builds(
    lambda kind, fields: {"type": kind, **fields},
    st.sampled_from(TYPES),
    st.dictionaries(st.sampled_from(KEYS), json_ish, max_size=4),
)
headers = st.sampled_from(
    [
        png(300, 200),
        jpeg(300, 200, 1),
        gif(3, 2),
        webp(300, 200),
        wav(0.1),
        mp3(0.5),
        mp4(1.0, 100),
        pdf(2),
        pdf(2, object_stream=True),
    ]
)
truncated = st.builds(lambda data, cut: data[:cut], headers, st.integers(0, 600))
payload_parts = st.builds(
    lambda data, maker: maker(data),
    st.one_of(truncated, st.binary(max_size=300)),
    st.sampled_from(
        [
            claude_image,
            claude_pdf,
            lambda d: chat_image(d),
            lambda d: gemini_image(d, "application/octet-stream"),
            lambda d: {"inline_data": {"mime_type": "video/mp4", "data": b64(d)}},
            lambda d: {"type": "input_audio", "input_audio": {"data": b64(d)}},
            lambda d: {
                "type": "input_file",
                "file_data": "data:application/pdf;base64," + b64(d)[: len(d) // 2],
            },
            lambda d: {
                "type": "image",
                "source": {"type": "base64", "data": b64(d).replace("A", "\n")},
            },
        ]
    ),
)


@settings(max_examples=examples(full=1500, fast=300), deadline=None)
@given(
    st.one_of(json_ish, shaped, payload_parts),
    st.sampled_from(["anthropic", "openai", "gemini"]),
    st.sampled_from(
        [None, "gpt-4o", "gpt-5.6-sol", "claude-opus-4-7", "gemini-3-pro", "gemini-2.5-flash", "x"]
    ),
)
def test_never_raises(part: Any, rule: media.MediaRule, model: str | None) -> None:
    found = media_count(part, rule, model)
    assert (found is not None) == is_media_part(part)
    if found is not None:
        assert isinstance(found.tokens, int) and found.tokens >= 0
        assert isinstance(found.detail, str) and found.kind in (
            "image",
            "document",
            "audio",
            "file",
            "video",
        )
    assert isinstance(stripped_text(part), str)
    assert stripped_text(part) == stripped_text(part)
    list(media_parts(part))
    list(media_parts([part, {"type": "tool_result", "content": [part]}]))


def test_pathological_inputs() -> None:
    deep: Any = claude_image(png(10, 10))
    for _ in range(5000):
        deep = {"type": "tool_result", "content": [deep]}
    assert list(media_parts(deep)) == []  # deeper than the bound: not searched, no error
    cyclic: dict[str, Any] = {"type": "image", "source": {}}
    cyclic["source"]["self"] = cyclic
    assert count(cyclic, "anthropic").tokens > 0
    assert "<cycle>" in stripped_text(cyclic)
    weird = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "é" * 100}}
    assert count(weird, "openai", "gpt-4o").exact is False
    assert (
        media_count({"type": "image", "source": {"type": "base64", "data": object()}}, "gemini")
        is not None
    )


# -- the page and the code ---------------------------------------------------------------------

DOC = Path(__file__).resolve().parent.parent / "docs" / "token-counting.md"


def _doc_rows(header: str) -> list[list[str]]:
    """The cells of the table in docs/token-counting.md whose header starts with ``header``."""
    text = DOC.read_text(encoding="utf-8").split("## Images, documents and audio", 1)[1]
    lines = text.split(header, 1)[1].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_doc_tile_table_is_the_code() -> None:
    """Each row of the page's tile table is what the counter bills: base at low, base
    plus four tiles for 1024x1024 at high."""
    rows = _doc_rows("| model | base tokens | tile tokens |")
    assert len(rows) == 5
    for models, base, tile in rows:
        for model in (m.strip() for m in models.split(",")):
            assert count(chat_image(png(1024, 1024), "low"), "openai", model).tokens == int(base)
            high = count(chat_image(png(1024, 1024), "high"), "openai", model).tokens
            assert high == int(base) + 4 * int(tile), model


def test_doc_patch_multipliers_are_the_code() -> None:
    rows = _doc_rows("| model | `low` | `high` | `original` | `auto` | multiplier |")
    models = {
        "gpt-5.6 (sol, terra, luna), gpt-6": ["gpt-5.6-sol", "gpt-6-astra"],
        "gpt-5.5": ["gpt-5.5"],
        "gpt-5.4 (mini, nano)": ["gpt-5.4", "gpt-5.4-nano"],
        "gpt-5.2 (and gpt-5.3)": ["gpt-5.2", "gpt-5.3-codex"],
        "gpt-4.1-mini": ["gpt-4.1-mini"],
        "gpt-5-mini, gpt-5-nano, gpt-4.1-nano, o4-mini": [
            "gpt-5-mini",
            "gpt-5-nano",
            "gpt-4.1-nano",
            "o4-mini",
        ],
    }
    assert [row[0] for row in rows] == list(models)
    for row in rows:
        multipliers = [float(m) for m in row[-1].split(",")]
        names = models[row[0]]
        for name, multiplier in zip(names, multipliers * len(names), strict=False):
            found = count(chat_image(png(1024, 1024), "high"), "openai", name)
            assert found.tokens == math.ceil(1024 * multiplier), name


def test_doc_claude_tiers_are_the_code() -> None:
    rows = _doc_rows("| resolution tier | models | max long edge | max visual tokens |")
    unknown_size = {"type": "image", "source": {"type": "url", "url": "https://x"}}
    for tier, model in zip(rows, ("claude-opus-4-7", "claude-sonnet-4-6"), strict=True):
        assert count(unknown_size, "anthropic", model).tokens == int(tier[3])


def test_doc_gemini_levels_are_the_code() -> None:
    rows = _doc_rows("| `media_resolution` | image | video frame | PDF page |")
    for level, image, frame, page in rows:
        name = {"unspecified (default)": None, "ultra high (per part)": "ultra_high"}.get(
            level, level
        )
        extra = {"media_resolution": {"level": name}} if name else {}
        model = "gemini-3-pro-preview"
        assert count(gemini_image(png(64, 64), **extra), "gemini", model).tokens == int(image)
        if frame:
            clip = {"inline_data": {"mime_type": "video/mp4", "data": b64(mp4(10))}, **extra}
            assert count(clip, "gemini", model).tokens == 10 * (int(frame) + 32)
        if page:
            doc = {"inline_data": {"mime_type": "application/pdf", "data": b64(pdf(2))}, **extra}
            assert count(doc, "gemini", model).tokens == 2 * int(page)
