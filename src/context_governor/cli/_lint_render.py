"""What ``context-governor lint`` finds and how it shows it.

Checking is ``validate()``; this module only turns its violations (and the rule
catalog, for ``--list-rules``) into a table a person can scan, a one-line
summary, or a JSON document whose shape does not depend on how many bodies
were read, so scripts never have to special-case JSON Lines.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..errors import InputError
from ..providers import Violation, applicable_rules, resolve, validate
from ._common import Body

__all__ = [
    "BodyLint",
    "index_note",
    "lint_body",
    "lint_json",
    "lint_lines",
    "lint_summary",
    "lint_table",
    "render_rules",
    "rules_heading",
    "rules_json",
    "rules_lines",
]


@dataclass(frozen=True, slots=True)
class BodyLint:
    """The violations of one request body, with what was checked to find them."""

    number: int  # 1-based position among the bodies read
    line: int | None  # 1-based line for JSON Lines input, else None
    provider: str
    model: str  # "" when neither --model nor the body named one
    rules_checked: int
    violations: tuple[Violation, ...]


def lint_body(
    body: Body, number: int, provider: str, model: str | None, tools: Any = None
) -> BodyLint:
    """Validate one body; ``model`` (from --model) wins over the body's own ``model``,
    and ``tools`` (from --tools) over its ``tools``. A request body without ``tools``
    declares none; a bare message list says nothing about them (rules that depend on
    the tools, like Bedrock's toolConfig, are then not checked).

    Raises the library's InputError/ConfigError unchanged, so the CLI prints the
    same one-line errors as ``govern`` does.
    """
    chosen = model if model is not None else body.data.get("model")
    if chosen is not None and not isinstance(chosen, str):
        raise InputError("model", f"expected a string, got {type(chosen).__name__}")
    if tools is None and not body.bare:
        tools = body.data.get("tools") or []
    _, target = resolve(provider, chosen)
    violations = validate(
        body.data["messages"], provider=provider, model=target.model or None, tools=tools
    )
    checked = len(applicable_rules(provider, target.model or None))
    return BodyLint(number, body.line, provider, target.model, checked, tuple(violations))


def _where(index: int) -> str:
    # validate() reports request-level problems (e.g. "no user message") at index -1.
    return str(index) if index >= 0 else "request"


_WIRE_INDEX = re.compile(r"messages\.(\d+)")


def index_note(v: Violation) -> str:
    """Why the provider's quoted ``messages.N`` differs from our message number, if it does.

    Our number is the position in the list the user gave; providers such as
    Anthropic and Bedrock send system messages apart and number their own turns,
    so their index counts a different list. Empty when they agree or none is quoted.
    """
    quoted = {int(n) for n in _WIRE_INDEX.findall(v.error)}
    if v.index < 0 or not quoted or quoted == {v.index}:
        return ""
    named = ", ".join(f"messages.{n}" for n in sorted(quoted))
    return (
        f"(the provider's {named} counts its own turns, without the system messages; "
        f"it is message {v.index} of your list)"
    )


def _error_text(v: Violation) -> str:
    note = index_note(v)
    return f"{v.error} {note}" if note else v.error


def lint_lines(results: list[BodyLint]) -> list[str]:
    """The violations for a pipe or a file: one per line, nothing wrapped or boxed, so
    that grep, cut and a log viewer see whole call ids and whole errors."""
    several = any(r.line is not None for r in results)
    lines = []
    for result in results:
        for v in sorted(result.violations, key=lambda v: v.index):
            where = "request" if v.index < 0 else f"message {v.index}"
            line = f"line {result.line}: " if several else ""
            lines.append(f"{line}{where}: {v.rule}: {_error_text(v)} | fix: {v.hint}")
    return lines


def _model_phrase(models: list[str]) -> str:
    named = sorted({m for m in models if m})
    if not named:
        return "no model given"
    return ("model " if len(named) == 1 else "models ") + ", ".join(named)


def lint_table(results: list[BodyLint]) -> Table:
    """One row per violation, in message order (validate() lists them in rule order,
    but a person reads a transcript top to bottom); the line column appears only
    for JSON Lines input.

    Cells are Text, not markup: provider errors quote regexes such as
    ``[a-zA-Z0-9_-]`` that rich would otherwise read as style tags.
    """
    several = any(r.line is not None for r in results)
    table = Table(show_lines=True, expand=False)
    if several:
        table.add_column("line", justify="right", no_wrap=True)
    # The message's position (from 0) in the list the user gave.
    table.add_column("message", justify="right", no_wrap=True)
    table.add_column("rule", no_wrap=True, style="bold")
    # fold, not ellipsis: a cut-off tool_call id is no help in finding the message.
    table.add_column("provider error", ratio=3, overflow="fold")
    table.add_column("fix", ratio=2, overflow="fold")
    for result in results:
        for v in sorted(result.violations, key=lambda v: v.index):
            cells = [Text(_where(v.index)), Text(v.rule), Text(_error_text(v)), Text(v.hint)]
            if several:
                cells.insert(0, Text(str(result.line)))
            table.add_row(*cells)
    return table


def lint_summary(results: list[BodyLint]) -> str:
    """One line: clean or not, how many violations of which rules, in how many bodies."""
    provider = results[0].provider if results else "?"
    models = _model_phrase([r.model for r in results])
    bodies = f"{len(results)} bod{'y' if len(results) == 1 else 'ies'}"
    counts = Counter(v.rule for r in results for v in r.violations)
    if not counts:
        return f"clean: no violations of the {provider} rules ({bodies}, {models})"
    total = sum(counts.values())
    failing = sum(1 for r in results if r.violations)
    rules = ", ".join(f"{rule} ×{n}" if n > 1 else rule for rule, n in counts.items())
    scope = f" in {failing} of {bodies}" if len(results) > 1 else ""
    plural = "s" if total != 1 else ""
    return f"{total} violation{plural} of the {provider} rules{scope} ({models}): {rules}"


def lint_json(results: list[BodyLint]) -> dict[str, Any]:
    """Always an object with a ``bodies`` list, even for one body: one shape to parse."""
    return {
        "ok": not any(r.violations for r in results),
        "violations": sum(len(r.violations) for r in results),
        "bodies": [
            {
                "body": r.number,
                "line": r.line,
                "provider": r.provider,
                "model": r.model or None,
                "rules_checked": r.rules_checked,
                "violations": [asdict(v) for v in r.violations],
            }
            for r in results
        ],
    }


def rules_json(provider: str, model: str | None) -> dict[str, Any]:
    """The rules ``validate()`` checks for this provider and model, and the ones it does not.

    ``other_models`` are the provider's rules that hold for other models only,
    so that a user who forgot ``--model`` sees what they are missing.
    """
    entry, target = resolve(provider, model)
    applied = [rule for rule in entry.rules if rule.applies(target)]
    others = [rule for rule in entry.rules if not rule.applies(target)]
    return {
        "provider": entry.name,
        "title": entry.title,
        "model": target.model or None,
        "rules": [
            {
                "id": r.id,
                "summary": r.summary,
                "verbatim_error": r.verbatim,
                "sources": list(r.source),
            }
            for r in applied
        ],
        "other_models": [{"id": r.id, "summary": r.summary} for r in others],
        "not_checked": [{"id": rid, "reason": why} for rid, why in entry.not_checked],
    }


def _two_columns(rows: list[tuple[str, str]], heading: str) -> Table:
    table = Table(title=heading, title_justify="left", show_header=False, box=None)
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    for left, right in rows:
        table.add_row(Text(left), Text(right))
    return table


def rules_heading(listing: dict[str, Any]) -> str:
    """The first line of ``--list-rules``: whose rules, for which model, how many."""
    model = listing["model"] or "no model given"
    count = len(listing["rules"])
    return (
        f"{listing['title']} ({listing['provider']}), {model}: "
        f"{count} rule{'' if count == 1 else 's'} checked"
    )


def rules_lines(listing: dict[str, Any]) -> list[str]:
    """``rules_json()`` as plain lines for a pipe: a heading per part, one rule a line."""
    lines: list[str] = []
    parts = [
        (
            "Checked",
            [
                (
                    r["id"],
                    r["summary"] + ("" if r["verbatim_error"] else " (error text paraphrased)"),
                )
                for r in listing["rules"]
            ],
        ),
        (
            "Only for other models (try --model)",
            [(r["id"], r["summary"]) for r in listing["other_models"]],
        ),
        ("Not checked", [(r["id"], r["reason"]) for r in listing["not_checked"]]),
    ]
    for heading, rows in parts:
        if rows:
            lines.append(heading)
            lines.extend(f"  {rule}  {text}" for rule, text in rows)
    return lines


def render_rules(listing: dict[str, Any]) -> RenderableType:
    """``rules_json()`` for people: checked rules, other models' rules, unchecked ones."""
    parts: list[RenderableType] = []
    checked = [
        (r["id"], r["summary"] + ("" if r["verbatim_error"] else " (error text paraphrased)"))
        for r in listing["rules"]
    ]
    if checked:
        parts.append(_two_columns(checked, "Checked"))
    if listing["other_models"]:
        rows = [(r["id"], r["summary"]) for r in listing["other_models"]]
        parts.append(_two_columns(rows, "Only for other models (try --model)"))
    if listing["not_checked"]:
        rows = [(r["id"], r["reason"]) for r in listing["not_checked"]]
        parts.append(_two_columns(rows, "Not checked"))
    return Group(*parts)
