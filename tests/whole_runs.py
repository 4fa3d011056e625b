"""Counting a Governor's whole runs: a test of the appending path counts the steps that
left it (work, not time)."""

from __future__ import annotations

from typing import Any

from context_governor import Governor


class WholeRuns:
    """The whole runs of ``gov`` (``gov._full``) since this was made: ``count``."""

    def __init__(self, gov: Governor) -> None:
        self.count = 0
        full = gov._full

        def counted(messages: list[Any]) -> Any:
            self.count += 1
            return full(messages)

        gov._full = counted  # type: ignore[method-assign]
