"""Checks and helpers every edge shares: the body fields that mean the same in each API."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InputError


def dumps(value: Any) -> str:
    """JSON text of a carried value, for counting it (never raises on odd values)."""
    return json.dumps(value, ensure_ascii=False, default=repr)


def type_name(value: Any) -> str:
    """A value's type as a JSON reader names it, for error messages."""
    return "null" if value is None else type(value).__name__


def check_common(body: dict[str, Any], max_key: str) -> None:
    """``tools``, the output reserve under ``max_key`` and ``model``: InputError naming
    the field when one is unusable."""
    tools = body.get("tools")
    if tools is not None and not (
        isinstance(tools, list) and all(isinstance(t, dict) for t in tools)
    ):
        raise InputError("tools", "expected a list of tool definition objects")
    out = body.get(max_key)
    if out is not None and (isinstance(out, bool) or not isinstance(out, int) or out < 0):
        raise InputError(max_key, f"expected a non-negative integer, got {out!r}")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise InputError("model", f"expected a string, got {type_name(model)}")
