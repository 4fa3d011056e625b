"""What the model sees after the cache policy cuts history (stages/_compact.py).

Properties over long random sessions, for every provider profile:

* a cut starts at a turn's user message; when it falls inside a turn (the turn was
  too long to keep whole), that turn's user message is kept — so no kept assistant
  message has lost the request it answers, and no output starts system→assistant;
* only the head (system prompt and task) and the user messages of the kept turns
  survive a cut: older prompts are not pinned forever (and then merged into the
  task by the alternation stage);
* one note, where the history was cut, says how much was removed; it is counted in
  the budget and the output still validates for the provider.
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from long_sessions import MODELS, TASK, long_session
from transcripts import cases, random_case

from context_governor import CompactionPolicy, ConfigError, Governor, govern
from context_governor.providers import PROVIDERS, validate
from context_governor.stages._receipt import RECEIPT_HEAD, RECEIPT_TAIL

Message = dict[str, Any]
NOTE = re.compile(
    r"\[(\d+) earlier messages of this conversation \((\d+) assistant turns, "
    r"(\d+) user messages\) were removed here to fit the context window\.\]"
)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
    return []


def _all_text(messages: list[Message]) -> str:
    return "\n".join(t for m in messages for t in _texts(m.get("content")))


def _cut(result: Any) -> set[int]:
    """Input indices the cache policy cut (the histories here need no repair before it,
    so its indices are the input's)."""
    return {a.index for a in result.report.actions if a.stage == "compact" and a.kind == "drop"}


def _turn_user(history: list[Message], index: int) -> int:
    """The user message the turn of ``index`` started with (-1: none)."""
    return next((i for i in range(index, -1, -1) if history[i]["role"] == "user"), -1)


def _first_non_system(messages: list[Message]) -> Message | None:
    return next((m for m in messages if m.get("role") != "system"), None)


def _governed(seed: int, provider: str, window: int) -> tuple[list[Message], Any, str | None]:
    rng = random.Random(seed)
    history = long_session(rng, rng.randint(40, 140))
    model = MODELS.get(provider)
    result = govern(history, profile=provider, model=model, context_window=window, max_output=1000)
    return history, result, model


CASES = given(
    seed=st.integers(0, 2**32 - 1),
    provider=st.sampled_from(PROVIDERS),
    window=st.sampled_from([9_000, 14_000, 24_000, 40_000]),
)


@SETTINGS
@CASES
def test_a_cut_never_strands_an_answer(seed: int, provider: str, window: int) -> None:
    """The first kept message after a cut still has its turn's user message (the task
    counts when the cut is inside the task's own turn)."""
    history, result, _ = _governed(seed, provider, window)
    first = _first_non_system(result.messages)
    assert first is not None and first["role"] != "assistant"
    cut = _cut(result)
    after = [i for i in range(min(cut, default=0), len(history)) if i not in cut]
    kept = next((i for i in after if cut and history[i]["role"] != "system"), None)
    if kept is not None:
        owner = _turn_user(history, kept)
        assert owner not in cut, f"message {kept} kept, its turn's user message {owner} cut"


@SETTINGS
@CASES
def test_a_cut_is_noted_once_and_the_output_validates(
    seed: int, provider: str, window: int
) -> None:
    history, result, model = _governed(seed, provider, window)
    out = result.messages
    assert validate(out, provider=provider, model=model) == []
    cut = _cut(result)
    notes = NOTE.findall(_all_text(out))
    if not cut:
        assert notes == []
        return
    assert len(notes) == 1, notes
    removed, turns, users = map(int, notes[0])
    assert removed == len(cut)
    assert turns == sum(history[i]["role"] == "assistant" for i in cut)
    assert users == sum(history[i]["role"] == "user" for i in cut)
    report = result.report
    assert report.within_budget or report.notes
    # cleared results still say the call succeeded and how to get the output back
    cleared = [a for a in report.actions if a.stage == "compact" and "cleared" in a.detail]
    placeholders = [t for t in _all_text(out).split("\n") if "was removed from the context" in t]
    assert len(placeholders) >= len(cleared)
    assert all("call itself succeeded" in t and "again" in t for t in placeholders)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    provider=st.sampled_from(["openai", "anthropic", "glm", "mistral", "bedrock"]),
)
def test_old_prompts_are_released_not_piled_into_the_task(seed: int, provider: str) -> None:
    """Many short prompts ("continue"), many compactions: the output holds the head and
    the prompts of the turns it keeps, never the prompts of the turns it cut."""
    rng = random.Random(seed)
    history = long_session(rng, rng.randint(100, 220), prompt="continue")
    model = MODELS.get(provider)
    result = govern(history, profile=provider, model=model, context_window=9_000, max_output=500)
    cut = _cut(result)
    assert cut
    kept_prompts = sum(
        1 for i, m in enumerate(history) if i > 1 and m["role"] == "user" and i not in cut
    )
    pinned = [i for i in range(2, max(cut)) if history[i]["role"] == "user" and i not in cut]
    assert len(pinned) <= 1, f"user messages kept behind the cut: {pinned}"
    # the note's receipt names the cut prompts once (deduplicated, bounded): not a pile
    receipt = re.compile(re.escape(RECEIPT_HEAD) + ".*?" + re.escape(RECEIPT_TAIL), re.S)
    text = _all_text(result.messages)
    assert sum(r.count("continue") for r in receipt.findall(text)) <= 1
    assert receipt.sub("", text).count("continue") <= kept_prompts
    # The task is kept verbatim; whatever joins it comes after it, behind the note.
    head = _first_non_system(result.messages)
    assert head is not None
    head_text = "\n\n".join(_texts(head.get("content")))
    assert head_text.startswith(TASK)
    if head_text != TASK:
        assert any(
            a.kind in ("replace", "merge") and a.stage in ("compact", "alternation")
            for a in result.report.actions
        )
        rest = head_text[len(TASK) :]
        if "continue" in rest:
            note = NOTE.search(rest)
            assert note is not None and note.start() < rest.index("continue")


def test_the_note_is_counted_in_the_budget_and_can_be_turned_off() -> None:
    history = long_session(random.Random(11), 150)
    on = govern(history, context_window=12_000, max_output=1000)
    off = govern(
        history,
        context_window=12_000,
        max_output=1000,
        compaction=CompactionPolicy(cut_note=None),
    )
    assert NOTE.search(_all_text(on.messages))
    assert not NOTE.search(_all_text(off.messages))
    assert _cut(on) and _cut(off)
    note_actions = [a for a in on.report.actions if "note" in a.detail]
    assert len(note_actions) == 1 and note_actions[0].tokens_saved < 0
    # the report's figures add up with the note in them
    saved = sum(a.tokens_saved for a in on.report.actions)
    assert saved == on.report.tokens_before - on.report.tokens_after
    assert on.report.within_budget


def test_custom_note_text() -> None:
    history = long_session(random.Random(12), 150)
    policy = CompactionPolicy(cut_note="[{messages} removed; {turns} turns; {unknown}]")
    out = govern(history, context_window=12_000, max_output=1000, compaction=policy)
    text = _all_text(out.messages)
    found = re.findall(r"\[(\d+) removed; (\d+) turns; \{unknown\}\]", text)
    assert len(found) == 1
    assert int(found[0][0]) == len(_cut(out))


@pytest.mark.parametrize("bad", ["", 3, b"x"])
def test_bad_note_setting_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(ConfigError, match="cut_note"):
        CompactionPolicy(cut_note=bad)


def test_a_turn_too_long_to_keep_is_cut_inside_and_reported() -> None:
    """One task, hundreds of tool steps: the only turn is cut inside, its user message
    (the task) stays first, and the report says so."""
    history = long_session(random.Random(5), 160)
    history = [m for m in history if m["role"] != "user" or m["content"] == TASK]
    history = [
        m
        for i, m in enumerate(history)
        if not (m["role"] == "assistant" and not m.get("tool_calls"))
    ]
    result = govern(history, profile="glm", context_window=12_000, max_output=1000)
    assert _cut(result)
    assert result.messages[1]["role"] == "user"
    assert result.messages[1]["content"].startswith(TASK)
    assert NOTE.search(result.messages[1]["content"])
    assert any("cut is inside" in n for n in result.report.notes)


def test_the_note_does_not_change_between_compactions() -> None:
    """Cache stability with the note: a Governor's requests only append between two
    compactions, note included (the general property is in test_compact.py)."""
    rng = random.Random(21)
    full = long_session(rng, 120)
    gov = Governor(context_window=14_000, max_output=1000)
    previous: list[Message] | None = None
    appended = 0
    for end in range(3, len(full) + 1):
        if full[end - 1]["role"] != "tool":
            continue
        out = gov.govern(full[:end]).messages
        if previous is not None and out[: len(previous)] == previous:
            appended += 1
        previous = out
    assert appended > 40


@pytest.mark.parametrize("provider", PROVIDERS)
def test_without_any_user_message_the_note_is_the_user_turn(provider: str) -> None:
    """A history with no user message at all (a runner that puts the task in the system
    prompt): the note becomes the user message after the system prompt, which every
    provider accepts (GLM rejects system→assistant)."""
    history = long_session(random.Random(3), 120)
    history = [
        m
        for m in history
        if m["role"] != "user" and not (m["role"] == "assistant" and not m.get("tool_calls"))
    ]
    model = MODELS.get(provider)
    result = govern(history, profile=provider, model=model, context_window=12_000, max_output=1000)
    out = result.messages
    assert [m["role"] for m in out[:3]] == ["system", "user", "assistant"]
    note, receipt, _ = out[1]["content"].partition("\n" + RECEIPT_HEAD)
    assert receipt  # the files the cut turns read come after the note
    found = NOTE.fullmatch(note)
    assert found is not None and int(found.group(1)) == len(_cut(result))
    assert validate(out, provider=provider, model=model) == []
    assert [a.kind for a in result.report.actions if "note" in a.detail] == ["insert"]


@SETTINGS
@given(case=cases(), provider=st.sampled_from(PROVIDERS))
@example(case=random_case(random.Random(368)), provider="moonshot")  # system→assistant on main
def test_messy_transcripts_never_start_system_assistant_after_a_cut(
    case: dict[str, Any], provider: str
) -> None:
    """The core generator (orphans, lost results, odd content...): after a compaction
    cut, the output's first non-system message is never an assistant's, and there is
    one note."""
    max_tokens = case.get("max_tokens")
    result = govern(
        case["messages"],
        tools=case["tools"],
        profile=provider,
        model=MODELS.get(provider),
        context_window=case["context_window"],
        max_output=max_tokens
        if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens >= 0
        else None,
    )
    if not _cut(result):
        return
    first = _first_non_system(result.messages)
    assert first is None or first.get("role") != "assistant"
    snipped = any(a.stage == "snip" and a.kind == "drop" for a in result.report.actions)
    if snipped:
        # the safety net after compaction (e.g. the newest turn holds an image at its
        # provider's upper bound): snip may take the note's message with what it drops
        assert len(NOTE.findall(_all_text(result.messages))) <= 1
    else:
        assert len(NOTE.findall(_all_text(result.messages))) == 1


def test_the_newest_reply_stays_when_its_request_is_the_task() -> None:
    """Task, one huge tool result, the model's reply, a new prompt: the cut falls inside
    the task's own turn (the task stays), so the reply the new prompt follows is kept."""
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": TASK},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "exec", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "exec", "content": "x " * 60_000},
        {"role": "assistant", "content": "The build printed a lot."},
        {"role": "user", "content": "summarize"},
    ]
    result = govern(history, context_window=32_000)
    out = result.messages
    assert _cut(result) == {2, 3}
    assert out[2:] == history[4:] and out[-1] is history[-1]
    assert out[1]["content"].startswith(TASK + "\n\n[2 earlier messages")
