"""Provider-native compaction: what the model reads starts at the newest compaction block
(Anthropic Messages) or item (OpenAI Responses), and nothing before it is counted,
governed or changed; the block or item goes out as it came; the rules for them; what
governance does beside the context edits a client asks the server for.

The shapes are the providers' own (tests/data/native_compaction, with SOURCES.md);
the long histories around them are made here. The proxy half drives whole sessions
through the real proxy in front of tests/fake_compaction.py, an upstream that
compacts the way the docs describe.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fake_compaction import COMPACT_BETA, FakeCompaction, anthropic_read, responses_read
from fake_native import NativeReply
from native_proxy import ProxyStarter, tool_result_text
from observe_session import metric

from context_governor import CompactionPolicy
from context_governor.errors import InputError
from context_governor.formats import govern_request, validate_request
from context_governor.proxy._usage import usage_of
from context_governor.report import note_kind

DATA = Path(__file__).parent / "data" / "native_compaction"
THRESHOLD = json.loads((DATA / "anthropic_threshold.json").read_text())
ON_DEMAND = json.loads((DATA / "anthropic_on_demand.json").read_text())
RS = json.loads((DATA / "responses_compaction.json").read_text())
CLAUDE = "claude-opus-4-6"
GPT = "gpt-5"
H = "x-context-governor-"


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# ---------------------------------------------------------------- Anthropic: bodies


def tool_turns(n: int, size: int, prefix: str = "t") -> list[dict[str, Any]]:
    """``n`` tool turns (a call, its result of ``size`` characters), after a task."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "Review the handlers module."}]
    for i in range(n):
        use = {
            "type": "tool_use",
            "id": f"{prefix}{i}",
            "name": "read_file",
            "input": {"path": f"f{i}.py"},
        }
        out.append({"role": "assistant", "content": [use]})
        result = {
            "type": "tool_result",
            "tool_use_id": f"{prefix}{i}",
            "content": tool_result_text(i, size),
        }
        out.append({"role": "user", "content": [result]})
    return out


def compacted_body(turns: int = 30, size: int = 50_000) -> dict[str, Any]:
    """The reproduced case of issue 36: 30 tool turns (782k tokens by the Claude estimate
    there, 791k here), then the answer that compacted them (the docs' block and text),
    then a new user message."""
    messages = tool_turns(turns, size)
    messages.append({"role": "assistant", "content": copy.deepcopy(THRESHOLD["response_content"])})
    messages.append({"role": "user", "content": "Now add error handling."})
    return {
        "model": CLAUDE,
        "max_tokens": 4096,
        "system": "You are a careful coding agent.",
        "messages": messages,
    }


def summary_only(body: dict[str, Any]) -> dict[str, Any]:
    """The body as the model reads it, without any compaction block (the block's summary as
    a text block): what the count must equal."""
    return {k: v for k, v in anthropic_read(body).items() if k != "context_management"}


def test_the_reproduced_case_counts_and_governs_only_what_the_model_reads() -> None:
    """Issue 36: 782k tokens of tool turns before a compaction block were counted, and
    their results cleared and reported as 622,920 tokens saved. What precedes the block
    is not read: it is neither counted nor governed, and it goes out as it came."""
    body = compacted_body()
    everything = govern_request(
        {**body, "messages": [*body["messages"][:-2], body["messages"][-1]]},
        api="anthropic", context_window=1 << 40, cache_breakpoints=False,
    )  # fmt: skip
    assert everything.report.tokens_before > 700_000  # what counting everything gives
    result = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    read = govern_request(summary_only(body), api="anthropic", context_window=1 << 40)
    # counted from the newest block on: a count that included the turns before it fails
    assert result.report.tokens_before == pytest.approx(read.report.tokens_before, abs=8)
    assert result.report.tokens_before < 200
    assert result.body is body  # nothing changed: the same object
    assert not [a for a in result.report.actions if a.tokens_saved]
    assert not [a for a in result.report.actions if a.stage in ("compact", "clear")]
    notes = [n for n in result.report.notes if note_kind(n) == "server"]
    assert len(notes) == 1 and "messages[61].content[0]" in notes[0]
    assert validate_request(result.body, api="anthropic") == []


def test_with_breakpoints_only_what_follows_the_block_is_marked() -> None:
    body = compacted_body(turns=3, size=2_000)
    result = govern_request(body, api="anthropic", context_window=200_000)
    sent = result.body["messages"]
    assert sent[:7] == body["messages"][:7]  # the turns before the block: as they came
    assert sent[7]["content"][0] == THRESHOLD["response_content"][0]  # the block itself
    marked = [a.detail for a in result.report.actions if a.stage == "cache"]
    assert marked and all("messages[7].content[0]" not in d for d in marked)
    assert all(f"messages[{i}]" not in d for d in marked for i in range(7))


def live_turns(n: int, size: int) -> list[dict[str, Any]]:
    """Tool turns after a compaction block: the assistant message that compacted opens
    them (the block, then its first call), as the API answers (the block first)."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        use = {
            "type": "tool_use",
            "id": f"live{i}",
            "name": "read_file",
            "input": {"path": f"g{i}.py"},
        }
        content = [copy.deepcopy(THRESHOLD["response_content"][0]), use] if i == 0 else [use]
        out.append({"role": "assistant", "content": content})
        result = {
            "type": "tool_result",
            "tool_use_id": f"live{i}",
            "content": tool_result_text(100 + i, size),
        }
        out.append({"role": "user", "content": [result]})
    return out


@pytest.mark.parametrize("window", [16_000, 32_000, 64_000])
def test_the_block_goes_out_byte_identical_when_governance_must_cut(window: int) -> None:
    """What follows the block is long enough to force clearing and cutting: the block
    stays where it is, byte for byte, the turns before it stay as they came, and the
    output is legal and inside the budget."""
    before = tool_turns(6, 20_000, prefix="old")
    body = {
        "model": CLAUDE, "max_tokens": 4096, "system": "You are a careful coding agent.",
        "messages": [*before, *live_turns(24, 8_000)],
    }  # fmt: skip
    result = govern_request(body, api="anthropic", context_window=window)
    sent = result.body["messages"]
    assert sent[: len(before)] == before
    block = sent[len(before)]["content"][0]
    assert dumps(block) == dumps(THRESHOLD["response_content"][0])
    blocks = [b for m in sent if isinstance(m["content"], list) for b in m["content"]]
    assert [b for b in blocks if b.get("type") == "compaction"] == [block]
    assert result.report.tokens_after <= result.report.budget
    assert any(a.stage in ("compact", "clear", "snip") for a in result.report.actions)
    assert validate_request(result.body, api="anthropic") == []


def test_pausing_after_compaction_is_a_continuation_not_a_prefill() -> None:
    """pause_after_compaction: the answer is the block alone, and the client sends it back
    as the final assistant message to let the API continue (the docs' flow). On a model
    that takes no prefill, it is not dropped, and no user message is made up."""
    messages = [
        *tool_turns(3, 2_000),
        {"role": "assistant", "content": [copy.deepcopy(THRESHOLD["response_content"][0])]},
    ]
    body = {"model": CLAUDE, "max_tokens": 4096, "messages": messages}
    result = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    assert result.body is body
    assert not [n for n in result.report.notes if "prefill" in n]
    assert validate_request(body, api="anthropic") == []


def test_the_on_demand_example_is_left_as_it_came() -> None:
    """The docs' request after an on-demand compaction: the signed block first, as an
    assistant message of its own, then a kept assistant turn (two in a row are fine:
    the block comes first), then the user. Nothing to change, nothing refused."""
    body = copy.deepcopy(ON_DEMAND["continued"])
    result = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    assert result.body is body
    assert validate_request(body, api="anthropic") == []


def test_a_signed_block_behind_the_messages_it_summarizes_is_repaired() -> None:
    """A block made on demand must come first (400 compaction_block_misplaced): the
    messages in front of it are what it summarizes, and the fix the docs give is to
    remove them. Reported; the block goes out as it came."""
    signed = ON_DEMAND["response"]["content"][0]
    body = {
        "model": CLAUDE, "max_tokens": 2048,
        "messages": [*tool_turns(2, 1_000), {"role": "assistant", "content": [signed]},
                     {"role": "user", "content": "Now do the same for Ingredient."}],
    }  # fmt: skip
    assert [v.rule for v in validate_request(body, api="anthropic")] == ["AN-12c"]
    result = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    assert result.body["messages"] == body["messages"][-2:]
    assert validate_request(result.body, api="anthropic") == []
    dropped = [a for a in result.report.actions if a.stage == "compacted"]
    assert len(dropped) == 1 and "AN-12c" in dropped[0].detail


@pytest.mark.parametrize(
    ("block", "rule"),
    [
        ({"type": "compaction", "content": ""}, "AN-12"),
        ({"type": "compaction", "content": 7}, "AN-12"),
        ({"type": "compaction", "content": "summary", "text": None, "citations": None}, "AN-12b"),
    ],
)
def test_a_malformed_block_is_reported_and_never_changed(block: dict[str, Any], rule: str) -> None:
    body = {
        "model": CLAUDE, "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": [block, {"type": "text", "text": "Hello."}]},
                     {"role": "user", "content": "again"}],
    }  # fmt: skip
    assert [v.rule for v in validate_request(body, api="anthropic")] == [rule]
    result = govern_request(body, api="anthropic", context_window=200_000)
    assert result.body["messages"][1]["content"][0] == block
    assert rule in [v["rule"] for v in result.report.violations]


def test_compaction_and_context_management_on_one_request_are_refused() -> None:
    body = {
        "model": CLAUDE, "max_tokens": 1024, "messages": [{"role": "user", "content": "hi"}],
        "compaction": {"type": "summarize"}, "context_management": THRESHOLD["request"]["context_management"],
    }  # fmt: skip
    assert [v.rule for v in validate_request(body, api="anthropic")] == ["AN-12d"]


def test_a_failed_compaction_is_no_boundary() -> None:
    """A block whose content is null is a failed compaction, a no-op for the API: what
    precedes it is read, and counted."""
    body = compacted_body(turns=3, size=4_000)
    body["messages"][7]["content"][0] = {"type": "compaction", "content": None}
    result = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    assert result.report.tokens_before > 3_000
    assert not [n for n in result.report.notes if note_kind(n) == "server"]


def test_dropping_what_precedes_the_block_is_an_option_and_reported() -> None:
    """compacted="drop": what the API ignores is left out (the docs allow it), the block
    and what follows are sent; the bytes saved are in the report; the count is the same."""
    body = compacted_body(turns=30, size=20_000)
    kept = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    dropped = govern_request(
        body, api="anthropic", context_window=200_000, cache_breakpoints=False, compacted="drop"
    )
    assert dropped.body["messages"] == body["messages"][-2:]
    assert dropped.report.tokens_before == kept.report.tokens_before
    sizes = [len(json.dumps(r.body).encode()) for r in (kept, dropped)]
    assert sizes[0] - sizes[1] == len(json.dumps(body["messages"][:61]))  # 582,110 bytes
    action = next(a for a in dropped.report.actions if a.stage == "compacted")
    assert (
        action.kind == "drop"
        and f"{len(json.dumps(body['messages'][:61]).encode()):,} bytes" in action.detail
    )
    assert validate_request(dropped.body, api="anthropic") == []
    with pytest.raises(Exception, match="compacted must be"):
        govern_request(body, api="anthropic", compacted="prune")  # type: ignore[arg-type]


# ---------------------------------------------------------------- context_management


def long_tool_session(n: int = 30, size: int = 10_000) -> dict[str, Any]:
    """~158k tokens: over the cache policy's trigger (100k), under a 200k window's budget."""
    messages = tool_turns(n, size)
    messages.append({"role": "assistant", "content": "Done reading."})
    messages.append({"role": "user", "content": "Summarize."})
    return {"model": CLAUDE, "max_tokens": 4096, "messages": messages}


@pytest.mark.parametrize(
    ("edit", "aside"),
    [
        ({"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 150_000}}, True),
        (THRESHOLD["edits"][2], True),  # clear_tool_uses_20250919
        (THRESHOLD["edits"][1], False),  # clear_thinking_20251015
        ({"type": "clear_everything_20990101"}, True),
    ],
)
def test_governance_steps_aside_for_the_servers_compaction_and_clearing(
    edit: dict[str, Any], aside: bool
) -> None:
    """Under the window, the cache policy would clear old results at its trigger; with the
    server asked to compact or clear, it leaves that to the server (legality and the
    hard window limit only); beside thinking clearing it runs as usual. Said in a note
    of kind "server"."""
    body = long_tool_session()
    plain = govern_request(body, api="anthropic", context_window=200_000, cache_breakpoints=False)
    assert any(a.stage in ("compact", "clear") for a in plain.report.actions)
    managed = {**body, "context_management": {"edits": [edit]}}
    result = govern_request(
        managed, api="anthropic", context_window=200_000, cache_breakpoints=False
    )
    note = next(n for n in result.report.notes if note_kind(n) == "server")
    assert edit["type"] in note
    assert ("steps aside" in note) is aside and ("runs as usual" in note) is not aside
    if aside:
        assert result.body is managed
        assert result.report.tokens_after == plain.report.tokens_before
    else:
        assert result.body["messages"] == plain.body["messages"]


def test_stepping_aside_still_keeps_the_hard_window_limit() -> None:
    body = {**long_tool_session(n=60), "context_management": {"edits": [THRESHOLD["edits"][0]]}}
    result = govern_request(body, api="anthropic", context_window=64_000, cache_breakpoints=False)
    assert result.report.tokens_before > 64_000
    assert result.report.tokens_after <= result.report.budget
    assert validate_request(result.body, api="anthropic") == []


def test_the_policy_given_still_steps_aside() -> None:
    body = {**long_tool_session(), "context_management": {"edits": [THRESHOLD["edits"][0]]}}
    result = govern_request(
        body, api="anthropic", context_window=200_000, cache_breakpoints=False,
        compaction=CompactionPolicy(keep_recent=2),
    )  # fmt: skip
    assert result.body is body


# ---------------------------------------------------------------- Responses


def rs_items(n: int, size: int, prefix: str = "c") -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "Review the handlers module."}
    ]
    for i in range(n):
        items.append(
            {
                "type": "function_call",
                "call_id": f"{prefix}{i}",
                "name": "read_file",
                "arguments": json.dumps({"path": f"f{i}.py"}),
            }
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": f"{prefix}{i}",
                "output": tool_result_text(i, size),
            }
        )
    return items


def compaction_item(size: int = 12_000) -> dict[str, Any]:
    """The SDK's compaction item, with an encrypted_content of ``size`` characters."""
    return {**RS["item"], "encrypted_content": "gAAAAA" + "x" * (size - 6)}


def test_responses_counts_from_the_newest_compaction_item() -> None:
    """The items before the newest compaction item are carried as they came; only the
    client's messages among them are counted (a compacted window keeps them); the item
    is counted by the estimate for OpenAI's ciphertext."""
    item = compaction_item()
    body = {"model": GPT, "instructions": "Be careful.",
            "input": [*rs_items(30, 60_000), item, {"type": "message", "role": "user", "content": "Next."}]}  # fmt: skip
    result = govern_request(body, api="responses", context_window=272_000)
    assert result.body is body
    read = govern_request(
        responses_read(
            {
                **body,
                "input": [
                    *body["input"][:-2],
                    {**item, "encrypted_content": "x"},
                    body["input"][-1],
                ],
            }
        ),
        api="responses",
        context_window=1 << 40,
    )
    assert result.report.tokens_before < 3_000
    # the item is (12,000 - 1,000) / 5.8 tokens: the rest is what responses_read keeps
    assert result.report.tokens_before == pytest.approx(
        read.report.tokens_before + 11_000 / 5.8, abs=40
    )
    assert validate_request(body, api="responses") == []


def test_responses_item_byte_identical_when_governance_must_cut() -> None:
    before = rs_items(4, 20_000, prefix="old")
    live = rs_items(30, 8_000, prefix="new")[1:]
    body = {"model": GPT, "input": [*before, RS["item_param"], *live]}
    result = govern_request(body, api="responses", context_window=32_000)
    sent = result.body["input"]
    assert sent[: len(before)] == before
    assert dumps(sent[len(before)]) == dumps(RS["item_param"])
    assert result.report.tokens_after <= result.report.budget
    assert validate_request(result.body, api="responses") == []


def test_responses_drop_keeps_the_clients_messages() -> None:
    body = {
        "model": GPT,
        "input": [*rs_items(10, 20_000), compaction_item(), {"role": "user", "content": "Next."}],
    }
    result = govern_request(body, api="responses", context_window=272_000, compacted="drop")
    assert result.body["input"] == [body["input"][0], *body["input"][-2:]]
    assert next(a for a in result.report.actions if a.stage == "compacted").kind == "drop"
    chained = govern_request({**body, "previous_response_id": "resp_1"}, api="responses",
                             context_window=272_000, compacted="drop")  # fmt: skip
    assert chained.body["input"] == body["input"]  # OpenAI: do not prune with chaining
    assert any("previous_response_id" in n for n in chained.report.notes)


def test_responses_rules_for_the_compaction_item() -> None:
    body = {
        "model": GPT,
        "input": [{"role": "user", "content": "hi"}, {"type": "compaction", "id": "cmp_1"}],
    }
    assert [v.rule for v in validate_request(body, api="responses")] == ["RS-8"]


def test_the_usage_of_a_request_the_server_compacted_is_read_from_its_steps() -> None:
    """The docs' example: the top-level figures are the last step's (23k read after the
    summary), the compaction step read the whole prompt (180k). The prompt's count is the
    compaction step's (calibration compares it with ours: the top-level 23k against our
    180k would teach a ratio of 0.13), the bill is every step's, outputs summed."""
    found = usage_of("anthropic", {"usage": THRESHOLD["usage"]})
    assert found is not None
    assert (found.input_tokens, found.extra_input_tokens, found.billed_input_tokens) == (
        180_000, 23_000, 203_000
    )
    assert found.output_tokens == 4_500 and found.uncached_tokens == 203_000
    paused = usage_of("anthropic", ON_DEMAND["response"])
    assert paused is not None and (paused.input_tokens, paused.output_tokens) == (144, 276)
    assert paused.extra_input_tokens == 0
    plain = usage_of("anthropic", {"usage": {**THRESHOLD["usage"], "iterations": None}})
    assert plain is not None and (plain.input_tokens, plain.extra_input_tokens) == (45_000, 0)


def test_responses_context_management_steps_aside() -> None:
    body = {"model": GPT, "input": rs_items(60, 12_000)}
    plain = govern_request(body, api="responses", context_window=400_000)
    assert any(a.stage in ("compact", "clear") for a in plain.report.actions)
    managed = {**body, "context_management": RS["context_management"]}
    result = govern_request(managed, api="responses", context_window=400_000)
    assert result.body is managed
    note = next(n for n in result.report.notes if note_kind(n) == "server")
    assert "compaction: governance steps aside" in note and "200,000 tokens" in note


# ---------------------------------------------------------------- through the proxy


@pytest.fixture(scope="module")
def compacting() -> Iterator[FakeCompaction]:
    server = FakeCompaction().start()
    yield server
    server.stop()


@pytest.fixture
def upstream(compacting: FakeCompaction) -> Iterator[FakeCompaction]:
    compacting.reset()
    yield compacting
    assert not compacting.rejections, compacting.rejections


@pytest.fixture
def start(upstream: FakeCompaction) -> Iterator[ProxyStarter]:
    starter = ProxyStarter(upstream)
    yield starter
    starter.stop()


#: Our count against the fake's bill: the Claude estimate of the same text, the
#: summary read as a system message here and as a text block there.
TOLERANCE = 0.02


def _newest_block(messages: list[dict[str, Any]]) -> tuple[int, int] | None:
    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].get("content")
        for j in range(len(content) - 1, -1, -1) if isinstance(content, list) else ():
            if content[j].get("type") == "compaction":
                return i, j
    return None


def test_an_anthropic_session_with_server_compaction_through_the_proxy(
    upstream: FakeCompaction, start: ProxyStarter
) -> None:
    """30 tool turns of ~4k tokens each, the server compacting at 50k (the smallest
    trigger it takes), a window of 80k that the whole history outgrows: no request is
    refused, every compaction block reaches the upstream as it issued it, what
    precedes the newest block arrives as the client sent it, and our count of each
    request is the fake's bill."""
    window = 80_000
    upstream.context_window = window
    url = start(context_window=window)
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01",
               "anthropic-beta": COMPACT_BETA}  # fmt: skip
    edits = {
        "edits": [
            {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000}}
        ]
    }
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Review the handlers module."}]
    ours: list[int] = []
    for step in range(30):
        upstream.push(NativeReply.tool_calls(("read_file", {"path": f"f{step}.py"})))
        body = {"model": CLAUDE, "max_tokens": 2048, "system": "You are a careful coding agent.",
                "messages": messages, "context_management": edits}  # fmt: skip
        issued = list(upstream.compactions)
        answer = httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        ours.append(int(answer.headers[f"{H}tokens-after"]))
        sent = upstream.requests[-1]["messages"]
        found = _newest_block(messages)
        if found is not None:
            at, block = found
            assert sent[:at] == messages[:at]  # what precedes the block: as the client sent it
            assert dumps(sent[at]["content"][block]) == dumps(issued[-1])
        content = answer.json()["content"]
        use = next(b for b in content if b["type"] == "tool_use")
        messages = [*messages, {"role": "assistant", "content": content},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"],
                                                  "content": tool_result_text(step, 14_000)}]}]  # fmt: skip
    assert len(upstream.compactions) >= 2
    plain = [{**m, "content": [b if b.get("type") != "compaction" else {"type": "text", "text": b["content"]}
                                for b in m["content"]]} if isinstance(m["content"], list) else m
             for m in messages[:-2]]  # fmt: skip
    whole = govern_request({**body, "messages": plain}, api="anthropic", context_window=1 << 40)
    assert whole.report.tokens_before > window  # the history outgrew the window
    for mine, billed in zip(ours, upstream.read_tokens, strict=True):
        assert abs(mine - billed) <= TOLERANCE * billed, (mine, billed)
    # the compacting answers billed their steps in all (usage.iterations), the others
    # their prompt: the proxy's upstream figure is every token billed
    assert len(upstream.compacting_bills) == len(upstream.compactions)
    reads = _compacting_reads(upstream)
    billed = sum(upstream.read_tokens) + sum(
        bill - read for bill, read in zip(upstream.compacting_bills, reads, strict=True)
    )
    assert metric(url, "context_governor_upstream_input_tokens_total") == billed


def _compacting_reads(upstream: FakeCompaction) -> list[int]:
    """The prompts of the requests the fake compacted (their compaction step's input)."""
    return [upstream.read_tokens[i] for i in upstream.compacted_at]


def test_a_responses_session_with_server_compaction_through_the_proxy(
    upstream: FakeCompaction, start: ProxyStarter
) -> None:
    """The same session over the Responses API (compact_threshold 20k, a window of 40k):
    no request refused, every compaction item sent back byte for byte, what precedes
    the newest one as the client sent it, our count within the tolerance of the bill."""
    window = 40_000
    upstream.context_window = window
    url = start(context_window=window)
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": "Review the handlers module."}
    ]
    ours: list[int] = []
    for step in range(30):
        upstream.push(NativeReply.tool_calls(("read_file", {"path": f"f{step}.py"})))
        body = {"model": GPT, "instructions": "You are a careful coding agent.", "input": items,
                "context_management": [{"type": "compaction", "compact_threshold": 20_000}]}  # fmt: skip
        issued = list(upstream.compactions)
        answer = httpx.post(
            f"{url}/v1/responses",
            json=body,
            headers={"authorization": "Bearer sk-test"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        ours.append(int(answer.headers[f"{H}tokens-after"]))
        sent = upstream.requests[-1]["input"]
        at = next(
            (i for i in range(len(items) - 1, -1, -1) if items[i].get("type") == "compaction"), None
        )
        if at is not None:
            assert sent[:at] == items[:at]
            assert dumps(sent[at]) == dumps(issued[-1])
        output = answer.json()["output"]
        call = next(o for o in output if o["type"] == "function_call")
        items = [*items, *output, {"type": "function_call_output", "call_id": call["call_id"],
                                   "output": tool_result_text(step, 7_000)}]  # fmt: skip
    assert len(upstream.compactions) >= 2
    whole = govern_request({**body, "input": [i for i in items if i.get("type") != "compaction"]},
                           api="responses", context_window=1 << 40)  # fmt: skip
    assert whole.report.tokens_before > window
    for mine, billed in zip(ours, upstream.read_tokens, strict=True):
        assert abs(mine - billed) <= TOLERANCE * billed, (mine, billed)


@pytest.mark.parametrize(
    ("api", "body", "where"),
    [
        (
            "anthropic",
            {"model": "claude-sonnet-4-5", "max_tokens": 10,
             "messages": [{"role": ["user"], "content": "hi"}]},
            "messages[0].role",
        ),
        (
            "responses",
            {"model": "gpt-5",
             "input": [{"type": "message", "role": ["user"], "content": "hi"}]},
            "input[0].role",
        ),
    ],
)  # fmt: skip
def test_a_role_that_is_not_a_string_is_an_input_error_not_a_crash(
    api: str, body: dict[str, Any], where: str
) -> None:
    """Looking for the compaction boundary reads every message's role: one that is a list
    (unhashable) once raised TypeError there, a 500 through the proxy (found by
    tests/test_proxy_native_fuzz.py)."""
    with pytest.raises(InputError) as raised:
        govern_request(body, api=api, context_window=10_000)
    assert raised.value.path == where


def test_the_proxy_drops_what_precedes_the_newest_block_when_told(
    upstream: FakeCompaction, start: ProxyStarter
) -> None:
    """``--compacted drop`` (ProxyConfig.compacted): the messages before the newest
    block are left out of what is forwarded; by default they are forwarded as sent."""
    upstream.context_window = 200_000
    block = {"type": "compaction", "content": "The user asked to review f1.py; it was read."}
    messages = [
        {"role": "user", "content": "Review f1.py."},
        {"role": "assistant", "content": "Reading it."},
        {"role": "user", "content": "Go on."},
        {"role": "assistant", "content": [block, {"type": "text", "text": "Done."}]},
        {"role": "user", "content": "Next file."},
    ]
    body = {"model": CLAUDE, "max_tokens": 256, "messages": messages}
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01",
               "anthropic-beta": COMPACT_BETA}  # fmt: skip
    sent = []
    for url in (start(), start(compacted="drop")):
        upstream.push(NativeReply.answer("ok"))
        answer = httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        sent.append(upstream.requests[-1]["messages"])
    assert sent[0][:3] == messages[:3] and len(sent[0]) == 5
    assert [m["role"] for m in sent[1]] == ["assistant", "user"]
    assert sent[1][0]["content"][0] == block
