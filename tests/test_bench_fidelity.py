"""bench/fidelity.py and bench/recall.py measure what they claim (seconds).

Each figure is checked against a scripted policy whose losses are known: a policy that
drops one known message shows exactly that loss, from the step it starts; a result
replaced by a placeholder counts as masked, not gone; a fact carried only by the agent's
restatement, a summary block or a placeholder is classified so. The anchors
(clear_tool_uses as documented, LiteLLM with its counts memoized, LangChain at the
budget) are checked against their definitions.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the model map

from bench import cache, fidelity, recall, sessions  # noqa: E402
from bench.shapes import SHAPES  # noqa: E402
from context_governor.stages._receipt import RECEIPT_HEAD, RECEIPT_TAIL  # noqa: E402
from context_governor.stages._summary import SUMMARY_HEAD, SUMMARY_TAIL  # noqa: E402

Message = dict[str, Any]


def _call(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


HISTORY: list[Message] = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "task"},
    {"role": "assistant", "content": None, "tool_calls": [_call("a")]},
    {"role": "tool", "tool_call_id": "a", "name": "read_file", "content": "AAA"},
    {"role": "assistant", "content": "thinking", "tool_calls": [_call("b")]},
    {"role": "tool", "tool_call_id": "b", "name": "read_file", "content": "BBB"},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": "next"},
]


def _fid(output: list[Message]) -> fidelity.StepFidelity:
    texts = [cache.serialize(m) for m in HISTORY]
    return fidelity.step_fidelity(HISTORY, texts, output, [cache.serialize(m) for m in output])


def test_untouched_request_keeps_everything() -> None:
    f = _fid(list(HISTORY))
    assert (f.own, f.own_kept, f.user, f.user_kept) == (3, 3, 2, 2)
    assert (f.results, f.verbatim, f.masked, f.gone) == (2, 2, 0, 0)
    assert not any(f.lost(k) for k in fidelity.KINDS)


def test_a_cut_turn_is_gone_and_a_placeholder_is_masked() -> None:
    masked = {**HISTORY[5], "content": "[Output of read_file was removed]"}
    f = _fid([HISTORY[0], {**HISTORY[1]}, *HISTORY[4:5], masked, *HISTORY[6:]])
    assert (f.own, f.own_kept) == (3, 2)  # the first call's assistant message is cut
    assert (f.results, f.verbatim, f.masked, f.gone) == (2, 0, 1, 1)
    assert f.share("own") == 2 / 3 and f.share("gone") == 0.5 and f.share("masked") == 0.5
    assert f.lost("own") and f.lost("verbatim") and f.lost("gone") and not f.lost("user")


def test_a_prompt_folded_into_another_message_still_counts_as_kept() -> None:
    merged = {"role": "user", "content": "[12 earlier messages were removed]\n\ntask"}
    f = _fid([HISTORY[0], merged, *HISTORY[2:]])
    assert (f.user, f.user_kept) == (2, 2)
    # an assistant message changed at all is not kept
    f = _fid([*HISTORY[:6], {"role": "assistant", "content": "done."}, HISTORY[7]])
    assert (f.own, f.own_kept) == (3, 2)


def test_equal_messages_are_matched_one_for_one() -> None:
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}] * 2
    texts = [cache.serialize(m) for m in history]
    out = history[2:]
    f = fidelity.step_fidelity(history, texts, out, [cache.serialize(m) for m in out])
    assert (f.own, f.own_kept) == (2, 1)


def _dropping(index: int, from_step: int) -> cache.Config:
    """A scripted policy: from request ``from_step`` on, the history without message
    ``index`` (and nothing else changed)."""

    def make(replay: sessions.Replay, window: int) -> cache.StepFn:
        calls = iter(range(1, 10_000))

        def step(history: list[Message]) -> cache.Outcome:
            n = next(calls)
            out = [m for i, m in enumerate(history) if not (n >= from_step and i == index)]
            return cache.Outcome(out)

        return step

    return cache.Config("drops one message", make)


def test_a_scripted_policy_that_drops_one_agent_message_shows_exactly_that_loss() -> None:
    replay = sessions.coding_session(12)
    index = len(replay.steps[0])  # the first step's assistant message
    assert replay.messages[index]["role"] == "assistant"
    run = cache.measure(_dropping(index, 5), replay, 128_000)
    f = run.fidelity()
    assert f.first_lost("own") == 5
    assert f.first_lost("user") is None and f.first_lost("verbatim") is None
    for number, step in enumerate(f.steps, 1):
        own = sum(m["role"] == "assistant" for s in replay.steps[:number] for m in s)
        assert step.own == own
        assert step.own_kept == own - (number >= 5)
        assert step.verbatim == step.results  # its results are still there, whole
    assert f.last("own") == 1 - 1 / f.steps[-1].own
    assert 0 < 1 - f.share("own") < 1


# ----------------------------------------------------------------------------- recall


def _planted(steps: int = 40, key: str = "coding") -> tuple[sessions.Replay, list[recall.Fact]]:
    shape = next(s for s in SHAPES if s.key == key)
    return recall.plant(shape.make(steps), chat=key == "chat")


def test_planted_facts_are_unique_tokens_where_they_were_planted() -> None:
    original = next(s for s in SHAPES if s.key == "coding").make(40)
    replay, facts = _planted()
    again, facts2 = _planted()
    assert facts == facts2 and again.steps == replay.steps  # deterministic
    assert {f.kind for f in facts} == set(recall.KINDS)
    assert len({f.token for f in facts}) == len(facts)
    before = cache.serialize({"steps": original.steps})
    for f in facts:
        assert f.token not in before
        step = replay.steps[f.step]
        role = recall.PLANTED_ROLE[f.kind]
        # (a file or command fact is in its call's arguments)
        holders = [m for m in step if m["role"] == role and f.token in json.dumps(m)]
        assert holders, f
        if f.kind in ("result", "error"):
            assert holders[0]["tool_call_id"] == f.call_id
        assert all(n > f.step for n in f.needed) and all(n <= len(replay.steps) for n in f.needed)


def test_carried_says_how() -> None:
    fact = recall.Fact("K-0badf00d", "result", 1, (5,), "a")
    result = {"role": "tool", "tool_call_id": "a", "name": "read_file", "content": "x K-0badf00d"}
    said = {"role": "assistant", "content": "the key is K-0badf00d"}
    cleared = {**result, "content": "[cleared]"}
    summary = SUMMARY_HEAD.format(messages=3, turns=1, user_messages=1)
    summary += "Agent: the key is K-0badf00d" + SUMMARY_TAIL
    note = {"role": "user", "content": summary + "\n\nnext"}
    assert recall.carried(fact, recall.view([result, said])) == "verbatim"
    assert recall.carried(fact, recall.view([said, cleared])) == "own words"
    assert recall.carried(fact, recall.view([note, cleared])) == "summary"
    assert recall.carried(fact, recall.view([cleared])) == "placeholder"
    assert not recall.behind_cut(fact, recall.view([cleared]))
    assert recall.carried(fact, recall.view([{"role": "user", "content": "hi"}])) is None
    order = recall.Fact("T-12345678", "instruction", 0, (3,))
    told = {"role": "user", "content": "always answer in French, ticket T-12345678"}
    assert recall.carried(order, recall.view([told])) == "verbatim"
    # in a summary only: not verbatim, even though the summary sits in a user message
    inside = {"role": "user", "content": summary.replace("K-0badf00d", "T-12345678")}
    assert recall.carried(order, recall.view([inside])) == "summary"


def test_a_fact_in_the_receipt_is_carried_there_and_behind_a_cut() -> None:
    fact = recall.Fact("K-0badf00d", "command", 1, (5,))
    receipt = f"{RECEIPT_HEAD}\n- commands run: `RUN_ID=K-0badf00d make`\n{RECEIPT_TAIL}"
    note = {"role": "user", "content": f"[3 earlier messages were removed.]\n{receipt}\n\nnext"}
    v = recall.view([note])
    assert recall.carried(fact, v) == "receipt" and recall.behind_cut(fact, v)
    assert "K-0badf00d" not in v.by_role["user"]  # the receipt is not the user's text


def test_a_policy_that_drops_a_planted_fact_loses_exactly_its_needs() -> None:
    replay, facts = _planted()
    target = next(f for f in facts if f.kind == "conclusion")
    index = next(i for i, m in enumerate(replay.messages) if target.token in str(m.get("content")))
    runs = recall.run(
        len(replay.steps),
        [next(s for s in SHAPES if s.key == "coding")],
        (128_000,),
        lambda meter: [
            cache.Config("whole history", lambda r, w: lambda h: cache.Outcome(list(h))),
            _dropping(index, 1),
        ],
    )
    whole, dropped = runs
    assert whole.reachable() == 1.0 and whole.how("verbatim") == 1.0
    lost = [how for kind, how in dropped.found if how is None]
    assert len(lost) == len(target.needed) > 0
    assert dropped.reachable("conclusion") < 1.0 == dropped.reachable("instruction")
    assert dropped.fidelity[-1].own_kept == dropped.fidelity[-1].own - 1


def test_clear_tool_uses_follows_its_documented_defaults() -> None:
    history = [HISTORY[0], HISTORY[1]]
    for i in range(6):
        history += [
            {"role": "assistant", "content": None, "tool_calls": [_call(f"c{i}")]},
            {"role": "tool", "tool_call_id": f"c{i}", "name": "grep", "content": f"out {i}"},
        ]
    small = [10] * len(history)
    assert recall.clear_tool_uses(history, small) == history
    big = [20_000] * len(history)  # 280,000 tokens: over the 100,000 trigger
    out = recall.clear_tool_uses(history, big)
    results = [m for m in out if m["role"] == "tool"]
    assert [m["content"] for m in results] == [recall.CLEARED] * 3 + ["out 3", "out 4", "out 5"]
    assert [m for m in out if m["role"] != "tool"] == [m for m in history if m["role"] != "tool"]


def test_litellm_counts_memoized_are_litellms_own_and_trim_the_same() -> None:
    import litellm.utils as lu

    replay, _ = _planted(14)
    history = replay.messages
    plain = lu.trim_messages(history, model="gpt-4o", max_tokens=3_000)
    with recall.litellm_memo():
        memo = lu.trim_messages(history, model="gpt-4o", max_tokens=3_000)
    assert memo == plain and len(plain) < len(history)
    original = lu.token_counter
    with recall.litellm_memo():
        patched = lu.token_counter
        for n in (1, 7, 30, len(history)):
            assert patched(model="gpt-4o", messages=history[:n]) == original(
                model="gpt-4o", messages=history[:n]
            )
    assert lu.token_counter is original


def test_langchain_trim_stays_inside_the_budget() -> None:
    replay, _ = _planted(30)
    meter = cache.Meter()
    (config,) = [c for c in recall.contenders(meter) if c.label == "LangChain trim_messages"]
    step = config.make(replay, 16_000)
    for history in replay.histories():
        out = step(history).messages
    assert out[0]["role"] == "system"
    assert sum(meter.tokens(m, meter.text(m)) for m in out) <= recall._budget(16_000)
    assert len(out) < len(history)
    kept = {cache.serialize(m) for m in history}
    assert all(cache.serialize(m) in kept for m in out)  # whole messages, unchanged


def test_extractive_summary_keeps_requests_and_reasoning_never_tool_output() -> None:
    summarize = recall.Extractive()
    text = summarize(HISTORY)
    assert "User: task" in text and "Agent: thinking" in text and "Agent: done" in text
    assert "AAA" not in text and "BBB" not in text
    long = [{"role": "assistant", "content": "x" * 500} for _ in range(20)]
    text = summarize([{"role": "user", "content": "keep me"}, *long])
    assert len(text) <= recall.SUMMARY_CHARS and text.startswith("User: keep me")


def test_quick_recall_renders_every_contender_and_a_verdict() -> None:
    results = recall.run(12, [next(s for s in SHAPES if s.key == "chat")], (32_000,))
    labels = [r.label for r in results]
    assert labels[:2] == list(recall.OURS) and recall.SEED in labels and len(labels) == 9
    assert labels[2:4] == list(recall.NO_RECEIPT)
    text = recall.render(results, recall.planted_counts(SHAPES[3:4], 12))
    assert text.startswith(recall.HEADING)
    assert "chat, rare tools at 32,000:" in text
    for r in results:
        assert r.found and 0.0 <= r.reachable() <= 1.0
        assert len(r.fidelity) == 12
