"""Type hints and docstrings to JSON schema, and the argument checks that go with it.

A parameter's annotation compiles once, at registration, into a :class:`Shape`:
the JSON schema the model sees and a converter that validates what the model
sends back. Keeping both in one object means the schema can never promise
something the validator rejects, or the other way round.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``list``/``list[X]``,
``dict``/``dict[str, X]``, ``Literal[...]``, ``Enum`` subclasses, ``X | None``,
unions of these, ``Any`` (or no annotation), and ``Annotated[X, "description"]``.
Anything else is refused when the tool is registered, not when the model calls it.
"""

from __future__ import annotations

import enum
import inspect
import json
import math
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

__all__ = [
    "Invalid",
    "Shape",
    "UnsupportedType",
    "json_type",
    "parse_docstring",
    "shape_of",
]

#: ``(value, lenient) -> converted value``; raises :class:`Invalid`.
Converter = Callable[[Any, bool], Any]


class Invalid(Exception):
    """A value does not fit its shape; ``where`` is a suffix like ``[2]`` for list items."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where


class UnsupportedType(TypeError):
    """An annotation that has no JSON-schema equivalent here."""


@dataclass(frozen=True)
class Shape:
    """What one annotation means: the schema shown to the model and how to check a value.

    ``label`` is the expectation in words ("an integer"), used in error messages
    the model reads. ``convert(value, lenient)`` returns the value to pass to the
    function; ``lenient`` enables the coercions models commonly need ("5" for 5,
    "true" for True, a JSON string holding an array).
    """

    schema: dict[str, Any]
    label: str
    convert: Converter


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages such as "got string"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _got(value: Any) -> str:
    """``got string 'abc'``: the type and a short rendering, so the model sees its mistake."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"got {json_type(value)} {text}"


def _fail(label: str, value: Any) -> Invalid:
    return Invalid(f"must be {label}, {_got(value)}")


# --------------------------------------------------------------------------- scalars


def _to_str(value: Any, lenient: bool) -> str:
    if isinstance(value, str):
        return value
    if lenient and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise _fail("a string", value)


def _to_int(value: Any, lenient: bool) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if lenient:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
            return int(value)
    raise _fail("an integer", value)


def _to_float(value: Any, lenient: bool) -> float:
    # A JSON integer is a valid JSON number, so this one is not a coercion.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if lenient and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    raise _fail("a number", value)


def _to_bool(value: Any, lenient: bool) -> bool:
    if isinstance(value, bool):
        return value
    if lenient and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _fail("a boolean", value)


def _to_none(value: Any, lenient: bool) -> None:
    if value is None:
        return None
    raise _fail("null", value)


def _to_any(value: Any, lenient: bool) -> Any:
    return value


_SCALARS: dict[Any, Shape] = {
    str: Shape({"type": "string"}, "a string", _to_str),
    int: Shape({"type": "integer"}, "an integer", _to_int),
    float: Shape({"type": "number"}, "a number", _to_float),
    bool: Shape({"type": "boolean"}, "a boolean", _to_bool),
    type(None): Shape({"type": "null"}, "null", _to_none),
    Any: Shape({}, "any value", _to_any),
    inspect.Parameter.empty: Shape({}, "any value", _to_any),
}


# --------------------------------------------------------------------------- containers


def _parse_json_text(value: Any, kind: type) -> Any:
    """Models sometimes send an array or object as a JSON string; unwrap it when lenient."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, kind):
            return parsed
    return value


def _list_shape(item: Shape | None) -> Shape:
    schema: dict[str, Any] = {"type": "array"}
    if item is not None:
        schema["items"] = item.schema
    label = "an array" if item is None else f"an array of {_plural(item.label)}"

    def convert(value: Any, lenient: bool) -> list[Any]:
        if lenient:
            value = _parse_json_text(value, list)
        if not isinstance(value, list):
            raise _fail(label, value)
        if item is None:
            return list(value)
        out = []
        for i, element in enumerate(value):
            try:
                out.append(item.convert(element, lenient))
            except Invalid as exc:
                raise Invalid(exc.message, f"[{i}]{exc.where}") from None
        return out

    return Shape(schema, label, convert)


def _dict_shape(value_shape: Shape | None) -> Shape:
    schema: dict[str, Any] = {"type": "object"}
    if value_shape is not None and value_shape.schema:
        schema["additionalProperties"] = value_shape.schema

    def convert(value: Any, lenient: bool) -> dict[str, Any]:
        if lenient:
            value = _parse_json_text(value, dict)
        if not isinstance(value, dict):
            raise _fail("an object", value)
        if value_shape is None:
            return dict(value)
        out = {}
        for key, element in value.items():
            try:
                out[key] = value_shape.convert(element, lenient)
            except Invalid as exc:
                raise Invalid(exc.message, f"[{json.dumps(key)}]{exc.where}") from None
        return out

    return Shape(schema, "an object", convert)


def _plural(label: str) -> str:
    """ "an integer" -> "integers", for labels like "an array of integers"."""
    word = label.split(" ", 1)[1] if label.startswith(("a ", "an ")) else label
    return word if word.endswith("s") or " " in word else word + "s"


# --------------------------------------------------------------------------- choices


def _choices_schema(values: list[Any]) -> dict[str, Any]:
    """``{"type": ..., "enum": [...]}``, with a type only when all values share one."""
    kinds = {json_type(v) for v in values}
    schema: dict[str, Any] = {}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    schema["enum"] = values
    return schema


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps True and 1 apart, as JSON does."""
    return type(a) is type(b) and a == b


def _choice_shape(values: list[Any], results: list[Any], aliases: dict[str, Any]) -> Shape:
    """One of fixed ``values`` (mapped to ``results``); ``aliases`` are lenient extra spellings."""
    label = "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in values)

    def convert(value: Any, lenient: bool) -> Any:
        for candidate, result in zip(values, results, strict=True):
            if _same(value, candidate):
                return result
        if lenient and isinstance(value, str):
            for candidate, result in zip(values, results, strict=True):
                if str(candidate) == value:
                    return result
            if value in aliases:
                return aliases[value]
        raise _fail(label, value)

    return Shape(_choices_schema(values), label, convert)


def _literal_shape(values: tuple[Any, ...]) -> Shape:
    for v in values:
        if not isinstance(v, str | int | float | bool) and v is not None:
            raise UnsupportedType(f"Literal value {v!r} is not a JSON scalar")
    return _choice_shape(list(values), list(values), {})


def _enum_shape(cls: type[enum.Enum]) -> Shape:
    members = list(cls)
    values = [m.value for m in members]
    for v in values:
        if not isinstance(v, str | int | float | bool):
            raise UnsupportedType(f"{cls.__name__} has a non-JSON value {v!r}")
    # The member name is accepted too: models often echo the Python spelling.
    return _choice_shape(values, members, {m.name: m for m in members})


# --------------------------------------------------------------------------- unions


def _union_shape(options: list[Shape]) -> Shape:
    """``anyOf``; a value is matched strictly against every option before any coercion.

    Trying the strict pass first keeps ``int | str`` from turning ``"5"`` into 5.
    """
    label = " or ".join(o.label for o in options)

    def convert(value: Any, lenient: bool) -> Any:
        for strict_pass in (True, False) if lenient else (True,):
            for option in options:
                try:
                    return option.convert(value, not strict_pass)
                except Invalid:
                    continue
        raise _fail(label, value)

    return Shape({"anyOf": [o.schema for o in options]}, label, convert)


def _optional_shape(inner: Shape) -> Shape:
    """``X | None``: null passes, anything else is checked as X."""
    schema = {"anyOf": [inner.schema, {"type": "null"}]}

    def convert(value: Any, lenient: bool) -> Any:
        if value is None:
            return None
        return inner.convert(value, lenient)

    return Shape(schema, f"{inner.label} or null", convert)


# --------------------------------------------------------------------------- dispatch


def shape_of(annotation: Any) -> Shape:
    """Compile a type annotation into a :class:`Shape`; raise UnsupportedType otherwise."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _annotated_shape(args)
    if origin is Literal:
        return _literal_shape(args)
    if origin in (Union, types.UnionType):
        return _union_of(args)
    if annotation is list or origin is list:
        return _list_shape(shape_of(args[0]) if args else None)
    if annotation is dict or origin is dict:
        if args and args[0] is not str:
            raise UnsupportedType("dict keys must be str (JSON object keys are strings)")
        return _dict_shape(shape_of(args[1]) if args else None)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_shape(annotation)
    raise UnsupportedType(
        f"unsupported type {annotation!r}; use str, int, float, bool, list, dict, "
        "Literal, an Enum, or a union of these"
    )


def _union_of(args: tuple[Any, ...]) -> Shape:
    present = [a for a in args if a is not type(None)]
    if len(present) == 1:
        inner = shape_of(present[0])
    else:
        inner = _union_shape([shape_of(a) for a in present])
    return _optional_shape(inner) if len(present) < len(args) else inner


def _annotated_shape(args: tuple[Any, ...]) -> Shape:
    """``Annotated[X, "text"]``: the first string in the metadata describes the parameter."""
    inner = shape_of(args[0])
    text = next((m for m in args[1:] if isinstance(m, str)), None)
    if text is None:
        return inner
    return Shape({**inner.schema, "description": text}, inner.label, inner.convert)


# --------------------------------------------------------------------------- docstrings

_SECTION = re.compile(r"^(\w[\w ]*):\s*$")
_ARG_SECTIONS = frozenset({"args", "arguments", "parameters", "params", "keyword args"})
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its first paragraph and its ``Args:`` entries.

    The first paragraph (up to the first blank line or section header) is the
    tool description, its lines joined by spaces; each ``name (type): text``
    entry of an ``Args:`` section, with its more-indented continuation lines, is
    that parameter's description. Other sections are ignored.
    """
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    return _first_paragraph(lines), _arg_descriptions(lines)


def _first_paragraph(lines: list[str]) -> str:
    paragraph: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line):
            break
        paragraph.append(line.strip())
    return " ".join(paragraph)


def _arg_descriptions(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    in_args = False
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        indent = len(line) - len(line.lstrip())
        header = _SECTION.match(line) if indent == 0 else None
        if header:
            in_args = header.group(1).strip().lower() in _ARG_SECTIONS
            entry_indent, current = None, None
            continue
        if not in_args or not line.strip():
            continue
        if indent == 0:
            in_args = False
            continue
        if entry_indent is None:
            entry_indent = indent
        match = _ARG_LINE.match(line.strip()) if indent == entry_indent else None
        if match:
            current = match.group(1)
            out[current] = match.group(2).strip()
        elif current is not None and indent > entry_indent:
            out[current] = f"{out[current]} {line.strip()}".strip()
    return out
