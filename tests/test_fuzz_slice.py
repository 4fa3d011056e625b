"""A bounded slice of `make fuzz` (fuzz/): hostile inputs across all profiles.

FUZZ_CI_N inputs (default 1,000, ~25 s of CPU; a fixed seed, so the slice is the
same on every run) must show no finding outside the known open classes listed in
fuzz/known.py.
`make fuzz` runs the same checks on a million inputs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fuzz import generate, known, oracle, run  # noqa: E402

SLICE = int(os.environ.get("FUZZ_CI_N", "1000"))
SEED = int(os.environ.get("FUZZ_CI_SEED", "20261203"))


def test_a_slice_of_the_fuzz_campaign_finds_nothing_new() -> None:
    result = run.campaign(SLICE, SEED, jobs=1, out=None, quiet=True)
    new = {
        key: f"{SEED}:{index} {finding.detail[:300]}"
        for key, (index, finding) in result["first"].items()
        if not known.is_known(*key)
    }
    assert new == {}, "replay with: python -m fuzz.run --replay SEED:INDEX"


def test_the_generators_are_hostile() -> None:
    """The slice covers what it claims to: every mutation and every profile occurs."""
    corpus = generate.load_corpus()
    assert len(corpus) >= 4
    cases = [generate.make_case(SEED, i, corpus) for i in range(300)]
    seen = {m for c in cases for m in c.mutations}
    assert set(generate.MUTATIONS) | {"corpus"} <= seen
    assert {c.settings["profile"] for c in cases} == set(generate.PROFILES)


def test_the_oracle_sees_each_class() -> None:
    """Each class the campaign reports is detectable: checks on planted defects."""
    messages = [{"role": "user", "content": "keep me"}]
    case = generate.Case(messages, None, {"profile": "openai"})
    assert oracle.check(case) == []
    picture, size = oracle.fingerprint(messages)
    messages[0]["content"] = "changed"
    assert oracle.fingerprint(messages)[0] != picture and size > 7
    assert oracle._newest_user_lost(
        [{"role": "user", "content": "a"}, {"role": "user", "content": "newest"}],
        [{"role": "user", "content": "a"}],
    )
    loop: list[object] = []
    loop.append(loop)
    assert oracle.fingerprint(loop)[0] == [("list", 1), ("ref", 0)]


def test_the_mutation_check_sees_any_change_by_identity() -> None:
    """The campaign's mutation check (oracle.Snapshot) compares what every container
    holds by identity: a change anywhere, at any depth, is seen; cycles end."""
    chain: list[object] = ["leaf"]
    for _ in range(100_000):
        chain = [chain]
    messages: list[dict[str, object]] = [{"role": "user", "content": ["a", {"x": [1, 2]}]}]
    snapshot = oracle.Snapshot([messages, chain])
    assert snapshot.unchanged()
    messages[0]["content"][1]["x"].append(3)  # type: ignore[index]
    assert not snapshot.unchanged()

    link = chain
    for _ in range(99_999):
        link = link[0]  # type: ignore[assignment]
    snapshot = oracle.Snapshot([chain])
    link[0] = ["leaf"]  # an equal value, but not the caller's: a change all the same
    assert not snapshot.unchanged()

    pair: list[list[int]] = [[1], [2]]
    snapshot = oracle.Snapshot(pair)
    pair[0].append(pair[1].pop())  # same objects in the same order, other containers
    assert not snapshot.unchanged()

    ordered = {"a": "x", "b": 2}
    snapshot = oracle.Snapshot([ordered])
    ordered["a"] = ordered.pop("a")  # same keys and values, other order
    assert not snapshot.unchanged()

    loop: list[object] = []
    loop.append(loop)
    assert oracle.Snapshot(loop).unchanged()


#: the focus of the targeted campaigns on one-call-per-turn models (fuzz.run --profile vllm
#: --model llama-3.3-70b --model meta-llama/Llama-3.1-8B-Instruct --window 1500 ...)
_ONE_CALL = generate.Focus(
    ("vllm",), ("llama-3.3-70b", "meta-llama/Llama-3.1-8B-Instruct"), (1500, 3000, 8000)
)


@pytest.mark.parametrize(
    ("spec", "focus"),
    [
        ("7:5468", generate.NO_FOCUS),  # mistral: the repairs carry the output past the budget
        ("11:11909", generate.NO_FOCUS),  # mistral: the repairs make a cut's savings reach the min
        ("7:2233", generate.NO_FOCUS),  # bedrock without tools: snip cut a flattened turn again
        ("22:6683", generate.NO_FOCUS),  # vllm + llama: results out of call order, microcompact
        ("23:7472", generate.NO_FOCUS),  # openai: a cut past a system message only, and its note
        ("23:4931", generate.NO_FOCUS),  # mistral, seed policy: the resnips did not shrink enough
        ("42:463", _ONE_CALL),  # vllm + llama: an oversized parallel turn cut between its calls
    ],
)
def test_replays_of_fixed_findings_find_nothing(spec: str, focus: generate.Focus) -> None:
    """Each input a campaign found a defect on, rebuilt from its SEED:INDEX (and the
    campaign's focus)."""
    seed, index = (int(x) for x in spec.split(":"))
    case = generate.make_case(seed, index, generate.load_corpus(), focus)
    assert [(f.kind, f.signature) for f in oracle.check(case)] == []


@pytest.mark.parametrize("spec", ["1:0", "7:123"])
def test_replay_rebuilds_the_same_input(spec: str) -> None:
    seed, index = (int(x) for x in spec.split(":"))
    corpus = generate.load_corpus()
    first = generate.make_case(seed, index, corpus)
    again = generate.make_case(seed, index, corpus)
    assert (
        oracle.fingerprint([first.messages, first.tools, first.settings])[0]
        == (oracle.fingerprint([again.messages, again.tools, again.settings])[0])
    )


def test_a_hang_is_stopped_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    def forever(*args: object, **kwargs: object) -> None:
        while True:
            pass

    monkeypatch.setattr(oracle, "HANG_SECONDS", 0.2)
    monkeypatch.setattr(oracle, "govern", forever)
    case = generate.Case([{"role": "user", "content": "x"}], None, {"profile": "openai"})
    assert [(f.kind, f.signature) for f in oracle.check(case)] == [("slow", "hang")]


def test_a_check_that_blocks_without_cpu_is_stopped_by_the_wall_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    monkeypatch.setattr(oracle, "STALL_SECONDS", 0.3)
    monkeypatch.setattr(oracle, "govern", lambda *a, **k: time.sleep(30))
    case = generate.Case([{"role": "user", "content": "x"}], None, {"profile": "openai"})
    started = time.monotonic()
    assert [(f.kind, f.signature) for f in oracle.check(case)] == [("slow", "hang")]
    assert time.monotonic() - started < 5
