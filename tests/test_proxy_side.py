"""The side endpoints agent CLIs call (proxy/_side.py): count_tokens and responses/compact.

Through a real proxy on localhost: against tests/fake_native.py, which has Anthropic's
count_tokens but no responses/compact, and against the chat fake (tests/fake_upstream.py),
which has neither, as many Anthropic- and OpenAI-compatible servers. What is counted
or compacted is the governed body; where the upstream lacks the endpoint the proxy
answers itself, and what it answers is usable by the client (a compaction sent back
as input is accepted by a validating upstream).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_native import FakeNative, NativeReply
from fake_upstream import FakeUpstream
from native_proxy import ANTHROPIC_HEADERS, ProxyStarter, tool_result_text

from context_governor.formats import govern_request, validate_request

MODEL = "claude-sonnet-4-5"
WINDOW = 12_000


@pytest.fixture
def start(native: FakeNative) -> Iterator[ProxyStarter]:
    starter = ProxyStarter(native)
    yield starter
    starter.stop()


def _messages(turns: int) -> list[dict[str, Any]]:
    """A Claude tool session of ``turns`` file reads, far over WINDOW."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read the files."}]
    for step in range(turns):
        tid = f"toolu_{step:03d}"
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": tid, "name": "read", "input": {"path": f"f{step}.py"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": tool_result_text(step, 3000)}]})
    return messages  # fmt: skip


def _responses_input(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Read the files."}]
    for step in range(turns):
        call = f"call_{step:03d}"
        items.append({"type": "function_call", "call_id": call, "name": "read",
                      "arguments": json.dumps({"path": f"f{step}.py"})})
        items.append({"type": "function_call_output", "call_id": call,
                      "output": tool_result_text(step, 3000)})
    return items  # fmt: skip


def test_count_tokens_counts_the_governed_body_upstream(native: FakeNative, start: ProxyStarter) -> None:
    url = start(context_window=WINDOW)
    body = {"model": MODEL, "messages": _messages(24)}
    answer = httpx.post(f"{url}/v1/messages/count_tokens", json=body, headers=ANTHROPIC_HEADERS)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-context-governor-side"] == "upstream"
    sent = native.targets[-1]
    assert sent == "/v1/messages/count_tokens"
    # The upstream counted the governed body (no max_tokens, no stream: its schema has
    # neither), which is far smaller than what the client asked about.
    whole = govern_request({**body, "max_tokens": 4096}, api="anthropic", context_window=1 << 40)
    assert answer.json()["input_tokens"] < whole.report.tokens_before / 2
    assert int(answer.headers["x-context-governor-tokens-after"]) <= WINDOW
    assert not native.rejections


def test_count_tokens_is_answered_here_when_the_upstream_has_none(
    upstream: FakeUpstream, native: FakeNative, start: ProxyStarter
) -> None:
    url = start(upstream=upstream.base_url, context_window=WINDOW)
    body = {"model": MODEL, "messages": _messages(24)}
    answer = httpx.post(f"{url}/v1/messages/count_tokens", json=body, headers=ANTHROPIC_HEADERS)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-context-governor-side"] == "local"
    counted = answer.json()["input_tokens"]
    assert counted == int(answer.headers["x-context-governor-tokens-after"])
    assert 0 < counted <= WINDOW - 4096 - 1024
    assert upstream.targets[-1] == "/v1/messages/count_tokens"  # it was asked first


def test_a_side_body_that_cannot_be_governed_is_refused_in_the_api_shape(
    native: FakeNative, start: ProxyStarter
) -> None:
    url = start(context_window=WINDOW)
    bad = httpx.post(f"{url}/v1/messages/count_tokens", content=b"[1, 2]", headers=ANTHROPIC_HEADERS)
    assert bad.status_code == 400
    assert bad.json()["type"] == "error" and bad.json()["error"]["type"] == "invalid_request_error"
    bad = httpx.post(f"{url}/v1/responses/compact", content=b"not json",
                     headers={"content-type": "application/json"})  # fmt: skip
    assert bad.status_code == 400
    assert bad.json()["error"]["type"] == "invalid_request_error"
    assert native.targets == []  # nothing was forwarded


def test_responses_compact_is_answered_with_the_governed_input(
    native: FakeNative, start: ProxyStarter
) -> None:
    url = start(context_window=WINDOW)
    body = {"model": "gpt-5-mini", "input": _responses_input(24), "instructions": "Be brief."}
    answer = httpx.post(f"{url}/v1/responses/compact", json=body, headers={"authorization": "Bearer sk-x"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-context-governor-side"] == "local"  # the fake has no compact
    compacted = answer.json()
    assert compacted["object"] == "response.compaction"
    output = compacted["output"]
    # The client's own items, governed: a legal Responses input, inside the window ...
    assert output and len(json.dumps(output)) < len(json.dumps(body["input"])) / 2
    assert validate_request({"model": "gpt-5-mini", "input": output}, api="responses") == []
    assert output[0]["content"].startswith("Read the files.")  # the task survives
    # ... that the client sends back as its new history, and the upstream accepts.
    native.push(NativeReply.answer("done"))
    again = httpx.post(f"{url}/v1/responses", json={"model": "gpt-5-mini", "input": [
        *output, {"type": "message", "role": "user", "content": "Go on."}]},
        headers={"authorization": "Bearer sk-x"})  # fmt: skip
    assert again.status_code == 200, again.text
    assert not native.rejections


TRIGGER = {"type": "compaction_trigger"}


def _trigger_body(stream: bool) -> dict[str, Any]:
    return {"model": "gpt-5-mini", "stream": stream, "store": False,
            "input": [*_responses_input(24), TRIGGER]}  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_a_compaction_trigger_the_upstream_ignores_is_answered_here(
    native: FakeNative, start: ProxyStarter, stream: bool
) -> None:
    """Codex's remote compaction against an upstream that does not do it: the proxy
    mints the compaction item, and puts the history back in its place when it returns."""
    url = start(context_window=WINDOW)
    native.push(NativeReply.answer("I do not know what a compaction is."))
    body = _trigger_body(stream)
    answer = httpx.post(f"{url}/v1/responses", json=body, headers={"authorization": "Bearer sk-x"})
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-context-governor-side"] == "local"
    if stream:
        events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
        assert [e["type"] for e in events] == ["response.created", "response.output_item.added",
                                               "response.output_item.done", "response.completed"]  # fmt: skip
        response = events[-1]["response"]
    else:
        response = answer.json()
    [item] = response["output"]
    assert item["type"] == "compaction" and item["encrypted_content"].startswith("cg-compaction-v1:")
    assert native.requests[-1]["input"][-1] == TRIGGER  # the upstream was asked first
    # The client's next request: what it kept, the compaction, a new message. The
    # upstream gets the governed history instead of the item, each item once.
    native.push(NativeReply.answer("Going on."))
    kept = body["input"][0]
    follow = {"model": "gpt-5-mini", "store": False,
              "input": [kept, item, {"type": "message", "role": "user", "content": "Go on."}]}  # fmt: skip
    again = httpx.post(f"{url}/v1/responses", json=follow, headers={"authorization": "Bearer sk-x"})
    assert again.status_code == 200, again.text
    sent = native.requests[-1]["input"]
    assert all(i.get("type") not in ("compaction", "compaction_trigger") for i in sent)
    assert [json.dumps(i, sort_keys=True) for i in sent].count(json.dumps(kept, sort_keys=True)) <= 1
    assert any(i.get("type") == "function_call_output" for i in sent)
    assert sent[-1]["content"] == "Go on."
    assert not native.rejections


def test_a_compaction_the_upstream_gives_is_relayed(native: FakeNative, start: ProxyStarter) -> None:
    url = start(context_window=WINDOW)
    theirs = {"id": "resp_1", "object": "response", "status": "completed",
              "output": [{"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-openai"}]}  # fmt: skip
    native.push(NativeReply.raw(200, json.dumps(theirs).encode(), "application/json"))
    answer = httpx.post(f"{url}/v1/responses", json=_trigger_body(False))
    assert answer.status_code == 200 and answer.json() == theirs
    assert answer.headers["x-context-governor-side"] == "upstream"
    # ... and an OpenAI compaction item sent back is forwarded as it is
    native.push(NativeReply.answer("ok"))
    follow = {"model": "gpt-5-mini", "input": [theirs["output"][0], {"type": "message", "role": "user", "content": "Go on."}]}
    assert httpx.post(f"{url}/v1/responses", json=follow).status_code == 200
    assert native.requests[-1]["input"][0] == theirs["output"][0]


def test_an_upstream_error_on_a_trigger_that_is_not_about_it_is_relayed(
    native: FakeNative, start: ProxyStarter
) -> None:
    url = start(context_window=WINDOW)
    native.push(NativeReply.error(401, "bad key"))
    answer = httpx.post(f"{url}/v1/responses", json=_trigger_body(False))
    assert answer.status_code == 401 and answer.json()["error"]["message"] == "bad key"
