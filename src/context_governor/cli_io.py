"""Reading request bodies for the CLI: one JSON body, a bare message list, or JSON Lines.

Every problem becomes an InputError whose message points at the place (line,
message index, field), because the CLI prints it as its one-line error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, BinaryIO

from .errors import InputError
from .messages.inputs import MAX_DEPTH

__all__ = ["Body", "dumps", "read_bodies"]


@dataclass(slots=True)
class Body:
    """One request to govern: the parsed body and where it came from."""

    data: dict[str, Any]
    bare: bool  # the input was a bare message list, so output is one too
    line: int | None = None  # 1-based line for JSON Lines input

    @property
    def where(self) -> str:
        return f"line {self.line}: " if self.line is not None else ""


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError("input", f"not valid UTF-8 (byte {exc.start})") from None


def _as_body(value: Any, line: int | None) -> Body:
    if isinstance(value, list):
        return Body({"messages": value}, bare=True, line=line)
    if isinstance(value, dict):
        if "messages" not in value:
            where = f"line {line}" if line is not None else "input"
            raise InputError(where, "a request body needs a 'messages' list")
        return Body(value, bare=False, line=line)
    where = f"line {line}" if line is not None else "input"
    raise InputError(
        where,
        f"expected a request body object, a list of messages or JSON Lines of bodies, "
        f"got {type(value).__name__}",
    )


def _loads(text: str, where: str) -> Any:
    """json.loads, except that input nested too deeply for the parser (it recurses once
    per level) is an InputError, not a RecursionError traceback."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError(
            where, f"nested too deeply to parse (a message may nest at most {MAX_DEPTH} levels)"
        ) from None


def read_bodies(stream: BinaryIO) -> list[Body]:
    """Parse the whole input; JSON Lines is tried only when it is not one JSON document."""
    text = _decode(stream.read())
    if not text.strip():
        raise InputError("input", "empty; expected JSON")
    try:
        return [_as_body(_loads(text, "input"), None)]
    except json.JSONDecodeError as whole_error:
        lines = [(n, s) for n, s in enumerate(text.splitlines(), 1) if s.strip()]
        if len(lines) < 2:
            raise InputError(
                "input",
                f"not JSON: {whole_error.msg} at line {whole_error.lineno} "
                f"column {whole_error.colno}",
            ) from None
    bodies = []
    for number, line in lines:
        try:
            value = _loads(line, f"line {number}")
        except json.JSONDecodeError as exc:
            raise InputError(
                f"line {number}", f"not JSON: {exc.msg} at column {exc.colno}"
            ) from None
        bodies.append(_as_body(value, number))
    return bodies


def dumps(value: Any, *, indent: int | None = None) -> str:
    """JSON text that can always be written out, even with lone surrogates inside."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, indent=indent)
    return text
