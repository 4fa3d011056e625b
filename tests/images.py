"""Real image bytes for the generators: a media part is counted from its header, so a
generated image must have one (garbage base64 is an unreadable image, counted at its
provider's upper bound, ~1,500-4,800 tokens, as a real request holding one would be)."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int, height: int, data: bytes = b"") -> bytes:
    """A PNG of ``width`` x ``height`` (header and a data chunk of ``data``)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data)


def png_b64(width: int = 16, height: int = 16, data: bytes = b"") -> str:
    """``png`` as base64, the form requests carry it in."""
    return base64.b64encode(png(width, height, data)).decode()
