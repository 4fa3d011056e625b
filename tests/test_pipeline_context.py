"""Context: every field is a setting or a finding, and a fresh pass starts every finding
again (a field added to Context without saying which it is fails here)."""

from __future__ import annotations

from dataclasses import fields

from context_governor.counting import exact_counter
from context_governor.report import Action
from context_governor.stages._base import FINDINGS, Context

#: The settings of a pass: what a caller gives, kept across passes.
SETTINGS = {
    "counter", "tools", "budget", "max_tool_result_chars", "target", "policy",
    "keep_prefill", "compaction", "compact_final", "fit_summary_input",
}  # fmt: skip


def test_every_context_field_is_a_setting_or_a_finding() -> None:
    names = {f.name for f in fields(Context)}
    assert not set(FINDINGS) & SETTINGS
    assert names == set(FINDINGS) | SETTINGS, names ^ (set(FINDINGS) | SETTINGS)


def test_fresh_starts_every_finding_again_and_keeps_the_settings() -> None:
    ctx = Context(counter=exact_counter("gpt-4o"), budget=1000, keep_prefill=True)
    ctx.record("orphans", "drop", 3, "gone")
    ctx.notes.append("a note")
    ctx.disable_thinking = True
    ctx.pairing = ([], None)  # type: ignore[assignment]
    again = ctx.fresh(compact_final=True)
    blank = Context(counter=ctx.counter)
    for name in FINDINGS:
        assert getattr(again, name) == getattr(blank, name), name
    assert again.actions is not blank.actions  # a new list, not one shared by passes
    assert (again.budget, again.keep_prefill, again.compact_final) == (1000, True, True)
    assert ctx.actions == [Action("orphans", "drop", 3, "gone")]  # the old pass keeps its own
