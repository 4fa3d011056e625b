"""bench.messages_request and bench.responses_request on a short session (well under a
second): their sections keep the table shape the docs show, their printed lines match
their rows, and the shared loop refuses labels that do not match what it times."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import messages_request, request_timing, responses_request  # noqa: E402
from context_governor import RequestResult  # noqa: E402

MODULES = [messages_request, responses_request]


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_section_is_a_table_with_one_row_per_window(
    module: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = module.measure(3, 1)
    printed = capsys.readouterr().out.splitlines()
    text = module.render(rows, 3, 1)
    lines = text.splitlines()
    assert lines[0] == module.HEADING
    assert "reruns this section" in lines[2] and "median of 1 calls" in lines[2]
    header, rule, *body = lines[4:]
    assert text.endswith(" |\n") and body == rows and len(rows) == 2 == len(printed)
    columns = _cells(header)
    assert rule == "|" + "---|" * len(columns)
    table = module.TABLE
    assert columns[:2] == ["window", table.unit] and columns[-1] == "rules broken"
    for row, line in zip(rows, printed, strict=True):
        cells = _cells(row)
        assert len(cells) == len(columns)
        size = int(cells[1])
        assert line.startswith(f"{size} {table.unit}, window {cells[0]}: ")
        # every timed column is printed under its own label, with the row's figure
        for label, cell in zip(table.columns, cells[2:], strict=False):
            assert re.fullmatch(r"\d+\.\d ms", cell)
            assert f"{label} {cell}" in line
        assert line.endswith(f"rules broken: {cells[-1]}")


def test_messages_table_counts_messages_and_responses_does_not() -> None:
    assert messages_request.TABLE.count_column and not responses_request.TABLE.count_column
    assert request_timing.section(messages_request.TABLE, "## H", "p", []).splitlines()[4] == (
        "| window | messages | govern_request | govern() on the chat view | decode+encode | "
        "tokens | messages | rules broken |"
    )
    assert request_timing.section(responses_request.TABLE, "## H", "p", []).splitlines()[4] == (
        "| window | items | Responses | Chat Completions (same session) | "
        "Responses decode+encode | json.dumps of the body | tokens | rules broken |"
    )


def test_time_windows_refuses_labels_that_do_not_match_the_times() -> None:
    def native(window: int) -> RequestResult:
        raise AssertionError("not reached: the labels are checked first")

    with pytest.raises(ValueError, match="4 column labels for 2 times"):
        request_timing.time_windows(responses_request.TABLE, 1, (64_000,), native, (), (1.0,), 1)
