"""Rules as data: what a provider rejects, the error it returns, and how to fix it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..messages import Message
from ..targets import Target

__all__ = ["Check", "Rule", "Violation", "always", "find_violations"]

Check = Callable[[list[Message]], Iterable[tuple[int, dict[str, Any]]]]


def always(target: Target) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Rule:
    """One thing a provider rejects.

    ``error`` is the provider's text (``verbatim=False`` when only a paraphrase is
    known), with ``{index}`` and the check's fields as placeholders.
    ``applies`` narrows the rule to the models it holds for.
    """

    id: str
    summary: str
    error: str
    hint: str
    check: Check
    applies: Callable[[Target], bool] = always
    verbatim: bool = True
    #: A condition on the request rather than the model (e.g. "declares no tools"): the
    #: rule holds for the model, but is checked only when the request meets it.
    when: Callable[[Target], bool] = always
    #: Public pages where the provider's behaviour is documented or was reported (URLs).
    source: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Violation:
    """One place where a message list breaks a rule."""

    rule: str
    index: int
    error: str
    hint: str
    provider: str

    def __str__(self) -> str:
        where = f"messages[{self.index}]" if self.index >= 0 else "request"
        return f"{self.rule} at {where}: {self.error}"


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def find_violations(
    rules: Iterable[Rule], messages: list[Message], target: Target
) -> Iterator[Violation]:
    for rule in rules:
        if not (rule.applies(target) and rule.when(target)):
            continue
        for index, fields in rule.check(messages):
            text = rule.error.format_map(_Fields(fields, index=index, model=target.model))
            yield Violation(rule.id, index, text, rule.hint, target.provider)
