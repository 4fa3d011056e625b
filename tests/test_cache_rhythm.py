"""Clearing in a rhythm the prompt cache can follow.

* The marks: a compacting Messages request marks the block before the call of the
  oldest result it cleared, every request marks the block before the next one to clear,
  and through the simulated Claude cache of bench/anthropic_cache.py a compacting
  request reads back everything before its first edit (a Claude-Code-like session,
  the client's own two marks kept).
* The wait: ``CompactionPolicy.clear_room`` is the cost model's optimum, never under
  the chunk, larger where writes are dear and reads cheap; a compaction that only
  clears waits for it, and governing the output again waits as well (a fixed point).
* The report: a compacting request says what it costs and gains
  (``Report.compaction_cost``), an appending step of a Governor says nothing, and a
  Governor's compacting step says what govern() says.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, Governor, govern, govern_request
from context_governor.formats import _anthropic_cache as cache
from context_governor.providers.prices import cache_price
from context_governor.stages import Clearing

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.anthropic_cache import MAX_TOKENS, PromptCache, blocks  # noqa: E402
from bench.rhythm import WINDOW as RHYTHM_WINDOW  # noqa: E402
from bench.rhythm import (  # noqa: E402
    Trail,
    best_schedule,
    client_alone,
    client_bodies,
    floor,
    measure,
    ours,
    schedule_cost,
    session,
)
from bench.sessions import coding_session  # noqa: E402

WINDOW = 64_000


def _call(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "read", "input": {"path": call_id}}


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "x" * 600}


def _body(calls: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "the task"}]
    for n in range(calls):
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"step {n}"},
                                                          _call(f"t{n}")]})  # fmt: skip
        messages.append({"role": "user", "content": [_result(f"t{n}")]})
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "S", "messages": messages}


def _labels(spots: list[cache.Spot]) -> dict[str, tuple[int, int]]:
    return {s.why: (s.message, s.block) for s in spots}


def test_marks_before_the_next_clearing_and_before_this_one() -> None:
    body = _body(6)
    spots = _labels(cache.wanted(body, Clearing(now=None, next="t2")))
    # the call of t2 is messages[5].content[1]: the block before it is its text
    assert spots["where the next clearing starts"] == (5, 0)
    assert "previous request's end" in spots
    spots = _labels(cache.wanted(body, Clearing(now="t2", next="t4")))
    assert spots["where this request's clearing starts"] == (5, 0)
    assert spots["where the next clearing starts"] == (9, 0)
    assert "previous request's end" not in spots  # past the edit on this request
    # no text before the call: the block before is the previous message's last one
    bare = _body(3)
    bare["messages"][3]["content"] = [_call("t1")]
    assert _labels(cache.wanted(bare, Clearing(next="t1")))["where the next clearing starts"] == (
        2,
        0,
    )
    # a call id that is not in the body marks nothing
    assert "where the next clearing starts" not in _labels(cache.wanted(body, Clearing(next="zz")))
    out, placed = cache.place(body, Clearing(now="t2", next="t4"))
    assert len(placed) <= 4 and out["messages"][5]["content"][0]["cache_control"] == {
        "type": "ephemeral"
    }


def test_a_compacting_request_reads_back_what_precedes_its_first_edit() -> None:
    """Through the simulated Claude cache, a Claude-Code-like session at 64k: every
    compacting request whose first edit is past the head (the system prompt and the
    task, under the cache's minimum of 1,024 tokens) reads from the cache (before these
    marks it read nothing), and a request that does not compact repeats the one before
    it."""
    replay = session(70)
    cache_sim = PromptCache(lambda text: len(text) // 4)
    compactions = 0
    previous: list[str] = []
    for number, (_, body) in enumerate(client_bodies(replay)):
        governed = govern_request(body, api="anthropic", context_window=WINDOW)
        cost = governed.report.compaction_cost
        _, read, _ = cache_sim.send(governed.body)
        keys = [key for key, _ in blocks(governed.body)]
        if cost is None and previous:
            assert keys[: len(previous)] == previous, number
        if cost is not None and cost.first_edit > 2:  # past system and task
            compactions += 1
            assert read > 0, number
        previous = keys
    assert compactions >= 3


PRICES = [cache_price("anthropic", "claude-sonnet-4-5"), cache_price("openai", "gpt-5"),
          cache_price("openai", "gpt-4o"), None]  # fmt: skip


@given(
    trigger=st.integers(4_000, 150_000),
    recent=st.integers(0, 200_000),
    which=st.sampled_from(range(len(PRICES))),
)
@settings(max_examples=200, deadline=None)
def test_clear_room_is_the_optimum_and_never_under_the_chunk(
    trigger: int, recent: int, which: int
) -> None:
    policy = CompactionPolicy(cache_price=PRICES[which])
    room = policy.clear_room(trigger, recent)
    assert room >= policy.clear_chunk(trigger)
    assert policy.clear_room(trigger, recent + 1_000) >= room  # more to re-send: wait longer
    price = PRICES[which]
    read = price.read if price is not None else 0.1
    miss = price.miss if price is not None else 1.0
    if recent and room > policy.clear_chunk(trigger):
        growth = recent / policy.keep_recent

        def per_call(x: float) -> float:
            return (miss - read) * recent * growth / x + read * x / 2

        assert per_call(room) <= per_call(room * 0.8) and per_call(room) <= per_call(room * 1.25)


def test_clear_room_follows_the_prices() -> None:
    def room(price: Any) -> int:
        return CompactionPolicy(cache_price=price).clear_room(100_000, 40_000)

    anthropic, gpt5, gpt4o = (cache_price("anthropic", "claude-sonnet-4-5"),
                              cache_price("openai", "gpt-5"), cache_price("openai", "gpt-4o"))  # fmt: skip
    assert room(anthropic) > room(gpt5) == room(None) > room(gpt4o)
    assert room(anthropic) == pytest.approx(40_000 * (2 * 1.15 / 0.1 / 10) ** 0.5, abs=1)


@pytest.mark.parametrize("window", [64_000, 128_000])
def test_governing_the_output_again_waits_as_this_call_did(window: int) -> None:
    """A fixed point on the Claude-Code-like session: the output governed again is the
    same, and no note says a compaction was forced by the output's own replay."""
    replay = session(90)
    for number, (_, body) in enumerate(client_bodies(replay)):
        if number % 7:
            continue
        once = govern_request(body, api="anthropic", context_window=window)
        assert not any("compacted at this request because" in n for n in once.report.notes), number
        again = govern_request(once.body, api="anthropic", context_window=window)
        assert again.body == once.body, number


def test_the_report_says_what_a_compaction_costs_and_gains() -> None:
    replay = coding_session(160)
    seen = 0
    for history in replay.histories():
        result = govern(history, tools=replay.tools, model="gpt-4o", context_window=32_000)
        cost = result.report.compaction_cost
        if cost is None:
            continue
        seen += 1
        report = result.report
        assert 0 < cost.removed <= report.tokens_before
        assert 0 < cost.rewritten <= report.tokens_after
        assert 0 <= cost.first_edit < report.messages_after
        assert "compaction at this request" in str(report)
        pays = cost.pays_after(0.1, 1.25)
        assert pays is not None and pays > 0
    assert seen >= 3


def test_a_governor_reports_the_cost_as_govern_does() -> None:
    replay = coding_session(120)
    governor = Governor(model="gpt-4o", context_window=32_000, tools=replay.tools)
    costs = 0
    for history in replay.histories():
        step = governor.govern(list(history))
        expected = govern(list(history), tools=replay.tools, model="gpt-4o",
                          context_window=32_000).report.compaction_cost  # fmt: skip
        assert step.report.compaction_cost == expected
        costs += expected is not None
    assert costs >= 2


# ----------------------------------------------------------------------------- superseded reads


def _read_session(
    reads: list[str], tool: str = "read_file", size: int = 6_000
) -> list[dict[str, Any]]:
    """A task, then one read per entry of ``reads`` (a path), each result ``size`` chars
    that the lossless shrink leaves as they are."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the bug."},
    ]
    for n, path in enumerate(reads):
        call = {"id": f"c{n}", "type": "function",
                "function": {"name": tool, "arguments": json.dumps({"path": path})}}  # fmt: skip
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        # no line repeats the one before it: the lossless shrink folds runs of one line
        body = f"{path} as read at step {n}\n" + "".join(
            f"x = {k % 10}\n" for k in range(size // 6)
        )
        history.append({"role": "tool", "tool_call_id": f"c{n}", "content": body})
    return history


def _superseded_actions(history: list[dict[str, Any]], **policy: Any) -> list[str]:
    result = govern(history, context_window=40_000, max_output=1_000,
                    compaction=CompactionPolicy(**policy))  # fmt: skip
    return [a.detail for a in result.report.actions if "is repeated at message" in a.detail]


def test_a_read_made_again_is_cleared_with_its_reason() -> None:
    """The stale read among the newest results is cleared at the compaction, and the
    report names the newer call; an older result cleared anyway keeps the plain detail."""
    # 29 reads at 24k: the last request compacts below the ceiling (where the newest
    # results kept whole are keep_recent's four, not the two kept at the ceiling)
    paths = [f"src/m{n}.py" for n in range(29)]
    paths[28] = paths[26]
    history = _read_session(paths, size=3_000)
    result = govern(history, context_window=24_000, max_output=1_000,
                    compaction=CompactionPolicy(keep_recent=4))  # fmt: skip
    stale = [a for a in result.report.actions if "is repeated at message" in a.detail]
    newer = 2 + 2 * 28 + 1
    assert [a.tool_call_id for a in stale] == ["c26"]
    assert stale[0].detail.startswith(
        f"old tool result (3030 chars) cleared: the same call is repeated at message {newer} "
    ), stale[0].detail
    sent = {m.get("tool_call_id"): m["content"] for m in result.messages if m.get("role") == "tool"}
    assert sent["c28"] == history[newer]["content"]  # the newer read whole


def test_only_exact_reads_repeated_with_the_same_arguments_are_superseded() -> None:
    paths = [f"src/m{n}.py" for n in range(30)]
    paths[26] = paths[22]
    assert _superseded_actions(_read_session(paths, tool="web_search")) == []  # not a read
    paths[26] = "src/other.py"
    assert _superseded_actions(_read_session(paths)) == []  # another file


@given(st.lists(st.sampled_from(["a.py", "b.py", "c.py", "d.py"]), min_size=20, max_size=40))
@settings(max_examples=30, deadline=None)
def test_every_superseded_result_has_a_newer_identical_read(paths: list[str]) -> None:
    history = _read_session(paths, size=3_000)
    result = govern(history, context_window=32_000, max_output=1_000)
    calls = {f"c{n}": path for n, path in enumerate(paths)}
    for action in result.report.actions:
        if "is repeated at message" not in action.detail:
            continue
        newer = int(action.detail.split("is repeated at message ")[1].split()[0])
        old_call, new_call = action.tool_call_id, history[newer]["tool_call_id"]
        assert old_call is not None and calls[old_call] == calls[new_call]
        assert int(old_call[1:]) < int(new_call[1:])


def test_a_stale_read_among_the_newest_results_is_cleared_with_them_kept() -> None:
    """The newest ``keep_recent`` results stay whole at a compaction, but one whose read
    is made again after it is stale: it is cleared, and the results around it are not."""
    paths = [f"src/m{n}.py" for n in range(29)]  # as above: compacts below the ceiling
    paths[28] = paths[26]
    history = _read_session(paths, size=3_000)

    def whole(**policy: Any) -> list[str]:
        result = govern(history, context_window=24_000, max_output=1_000,
                        compaction=CompactionPolicy(keep_recent=4, **policy))  # fmt: skip
        sent = {
            m.get("tool_call_id"): m["content"] for m in result.messages if m.get("role") == "tool"
        }
        return [c for c, text in sent.items() if text == history[2 + 2 * int(c[1:]) + 1]["content"]]

    assert whole() == ["c25", "c27", "c28"]
    assert whole(supersede=False) == ["c25", "c26", "c27", "c28"]


@given(
    keep=st.integers(0, 12),
    window=st.sampled_from([8_000, 16_000, 40_000]),
    reads=st.lists(st.sampled_from(["a.py", "b.py", "c.py"]), min_size=0, max_size=30),
    prose=st.integers(0, 40),
)
@settings(max_examples=40, deadline=None)
def test_compaction_never_falls_back(keep: int, window: int, reads: list[str], prose: int) -> None:
    """Whatever the number of results against ``keep_recent`` (none at all: a chat), the
    cache policy decides without failing: a failure would leave the request to the
    pipeline's minimal repair, uncompacted and over its budget."""
    history = _read_session(reads, size=2_000)
    for n in range(prose):
        history.append({"role": "user", "content": f"question {n} " + "why " * 300})
        history.append({"role": "assistant", "content": f"answer {n} " + "because " * 300})
    history.append({"role": "user", "content": "go on"})
    result = govern(history, context_window=window, max_output=1_000,
                    compaction=CompactionPolicy(keep_recent=keep))  # fmt: skip
    assert not [a for a in result.report.actions if a.stage == "pipeline"], result.report
    assert result.report.within_budget


def test_huge_newest_results_do_not_cost_the_agent_its_turns() -> None:
    """Results so big that five of them outgrow the budget (API responses, whole CI logs
    at a small window): the newest two stay whole and every turn stays, where keeping
    five whole cut the agent's own messages away."""
    history = _read_session([f"src/m{n}.py" for n in range(20)], tool="fetch", size=6_000)
    history.append({"role": "user", "content": "go on"})
    result = govern(history, context_window=16_000, max_output=1_000)
    sent = result.messages
    assistants = [m for m in history if m["role"] == "assistant"]
    assert all(m in sent for m in assistants)  # every turn of the agent kept
    whole = [m["tool_call_id"] for m in sent if m.get("role") == "tool" and m in history]
    assert whole == ["c18", "c19"]  # the newest two results whole, the rest masked
    assert result.report.within_budget


@given(
    limit=st.integers(4_000, 200_000),
    growth=st.floats(1, 20_000),
    which=st.sampled_from(range(len(PRICES))),
)
@settings(max_examples=200, deadline=None)
def test_cut_room_is_the_optimum_under_its_cap(limit: int, growth: float, which: int) -> None:
    """A cut at the ceiling leaves the room that makes re-sending the kept request at
    each cut and reading the room between cuts cheapest, never more than the cap."""
    from context_governor.policies import CUT_ROOM_CALLS, CUT_ROOM_SHARE

    policy = CompactionPolicy(cache_price=PRICES[which])
    room = policy.cut_room(limit, growth)
    assert 0 <= room <= CUT_ROOM_SHARE * limit
    assert room == 0 or room >= CUT_ROOM_CALLS * growth - 1  # it puts the next cut off
    faster = policy.cut_room(limit, growth * 2)
    assert faster == 0 or faster >= room  # faster growth: cut deeper, or not at all
    price = PRICES[which]
    read = price.read if price is not None else 0.1
    miss = price.miss if price is not None else 1.0
    if 10 <= room < int(CUT_ROOM_SHARE * limit):  # the optimum, not the cap

        def per_call(x: float) -> float:
            return (miss - read) * limit * growth / x + read * x / 2

        assert per_call(room) <= per_call(room * 0.8) and per_call(room) <= per_call(room * 1.25)


def test_cuts_at_the_ceiling_come_rarely_and_leave_their_room(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long coding session whose masked trail outgrows a small window is cut at its
    ceiling; each cut now leaves the priced room, so a Governor cuts far less often than
    with the old room of a few calls of the masked trail, and every request still fits."""
    from context_governor import policies

    history = _read_session([f"src/m{n}.py" for n in range(240)], size=3_000)
    for message in history[2::2]:  # the agent says what it does: a trail worth keeping
        message["content"] = f"Reading {message['tool_calls'][0]['id']} next. " + "why " * 250

    def cuts(share: float) -> int:
        monkeypatch.setattr(policies, "CUT_ROOM_SHARE", share)
        gov = Governor(model="gpt-5", context_window=64_000, max_output=1_000)
        made = 0
        for end in range(4, len(history) + 1, 2):
            result = gov.govern(history[:end])
            assert result.report.within_budget
            made += result.report.compaction_cost is not None
        return made

    priced, old = cuts(policies.CUT_ROOM_SHARE), cuts(0.0)
    assert 2 * old >= 3 * priced > 0, (old, priced)  # 116 -> 58 when written


def test_the_floor_is_what_the_simulated_cache_bills_and_never_above_us() -> None:
    """bench.rhythm's floor: with every result kept it is the simulated cache's bill of
    the client's own bodies (which never break a prefix); it falls as fewer results are
    kept whole; and our proxy, which keeps the newest result whole, never costs less."""
    replay = session(40)
    everything = floor(replay, 10**6)
    client = measure("client", client_alone, replay, RHYTHM_WINDOW)
    assert everything.written * 1e6 == pytest.approx(client.cost, rel=1e-3)
    costs = [floor(replay, keep).written for keep in (10, 4, 1)]
    assert everything.written > costs[0] > costs[1] > costs[2] > 0
    proxy = measure("ours", ours(RHYTHM_WINDOW), replay, RHYTHM_WINDOW)
    assert proxy.newest == proxy.results
    assert proxy.cost >= costs[2] * 1e6


def test_the_best_schedule_is_the_cheapest_of_every_schedule() -> None:
    """bench.rhythm's best schedule of clearings: on a short session, every schedule of
    clearings billed by the same model (2^steps of them) costs at least what the dynamic
    programme finds, it finds one of them, and it never goes below the floor nor above
    not clearing at all (the client's own bodies, which fit the window here)."""
    replay = session(12)
    window = 30_000 + MAX_TOKENS  # small enough that some schedules are over it
    for keep in (1, 3):
        best, chosen = best_schedule(replay, keep, window)
        trail = Trail(replay, keep, window)
        requests = len(trail.ends)
        costs = []
        for mask in range(1 << requests):
            clearings = [t for t in range(requests) if mask >> t & 1]
            cost = schedule_cost(trail, clearings)
            if cost is not None:
                costs.append(cost)
        assert len(costs) < 1 << requests  # the window rules some out
        assert min(costs) == pytest.approx(best, abs=1e-9)
        assert schedule_cost(trail, chosen) == pytest.approx(best, abs=1e-9)
        assert floor(replay, keep).written <= best + 1e-9
    best, _ = best_schedule(replay, 1, RHYTHM_WINDOW)
    never = measure("client", client_alone, replay, RHYTHM_WINDOW)
    assert best * 1e6 <= never.cost + 1e-3
