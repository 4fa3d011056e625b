"""The native clients on their own: Anthropic Messages and OpenAI Responses, no network.

Bodies and answers go through httpx.MockTransport. The stream readers are
checked against an independent encoder of the APIs' event streams (the fake
native upstream's), and the round trip answer -> history -> next request is a
property: thinking blocks and reasoning items come back exactly as returned.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fake_native import _anthropic_events, _responses_events
from hypothesis import given, settings
from hypothesis import strategies as st
from levels import examples

from context_governor.llm import (
    ModelConnectionError,
    ModelHTTPError,
    ModelResponseError,
    RetryPolicy,
)
from context_governor.llm._anthropic_client import (
    AnthropicClient,
    MessageStream,
    anthropic_tools,
    parse_message,
    thinking_setting,
)
from context_governor.llm._base import NativeModelClient
from context_governor.llm._responses_client import (
    ITEMS,
    ResponsesClient,
    ResponseStream,
    parse_response,
    responses_tools,
)

NO_RETRY = RetryPolicy(max_retries=0)
#: Property budgets: fast by default, CI's full level draws more.
PROPERTY = settings(max_examples=examples(full=120, fast=40), deadline=None)
ECHO = {"type": "function", "function": {"name": "echo", "description": "Echo text.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}  # fmt: skip
Handler = Callable[[httpx.Request], httpx.Response]
#: Clients for building bodies only (one each: making an httpx client costs ~0.1 s).
ANTHROPIC = AnthropicClient("claude-sonnet-4-5", api_key="k")
RESPONSES = ResponsesClient("o4-mini", api_key="k")


def _http(handler: Handler, seen: list[httpx.Request]) -> httpx.AsyncClient:
    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    return httpx.AsyncClient(transport=httpx.MockTransport(record))


def _anthropic_stream(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The fake upstream's event encoder, plus ``redacted_thinking`` blocks (which it does not
    stream): the API sends such a block whole in its ``content_block_start``, no deltas."""
    redacted = {i: b for i, b in enumerate(message["content"]) if b["type"] == "redacted_thinking"}
    stand_in = {"type": "tool_use", "id": "x", "name": "x", "input": {}}
    content = [stand_in if i in redacted else b for i, b in enumerate(message["content"])]
    events = []
    for name, data in _anthropic_events({**message, "content": content}):
        index = data.get("index")
        if index in redacted and name == "content_block_start":
            data = {**data, "content_block": redacted[index]}
        elif index in redacted and name == "content_block_delta":
            continue
        events.append((name, data))
    return events


def _sse(events: list[tuple[str, dict[str, Any]]]) -> httpx.Response:
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})


# ----------------------------------------------------------------------------- generators

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=6,
)
_thinking = st.builds(
    lambda t, s: {"type": "thinking", "thinking": t, "signature": s},
    _text, st.text("abcdefABCDEF0123456789+/=", min_size=1, max_size=60),
)  # fmt: skip
_redacted = st.builds(lambda d: {"type": "redacted_thinking", "data": d}, _text)
_text_block = st.builds(lambda t: {"type": "text", "text": t}, _text)
_tool_use = st.builds(
    lambda n, name, i: {"type": "tool_use", "id": f"toolu_{n:04d}", "name": name, "input": i},
    st.integers(0, 9999), st.sampled_from(["echo", "read_file", "grep"]),
    st.dictionaries(st.sampled_from(["text", "path", "n", "deep"]), _json_value, max_size=3),
)  # fmt: skip


@st.composite
def answer_blocks(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An answer as the Messages API returns one: thinking first, then text, then tool_use."""
    thinking = draw(st.lists(st.one_of(_thinking, _redacted), max_size=2))
    texts = draw(st.lists(_text_block, max_size=2))
    uses = draw(st.lists(_tool_use, max_size=3, unique_by=lambda b: b["id"]))
    return [*thinking, *texts, *uses]


def _message(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": blocks, "stop_reason": "tool_use" if blocks and blocks[-1]["type"] == "tool_use"
        else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 2,
                  "cache_read_input_tokens": 30},
    }  # fmt: skip


_reasoning = st.builds(
    lambda n, s, e: {"type": "reasoning", "id": f"rs_{n}", "summary": [
        {"type": "summary_text", "text": s}], "encrypted_content": "gAAAA" + e},
    st.integers(0, 999), _text, st.text("abcdefXYZ0123456789-_", min_size=1, max_size=50),
)  # fmt: skip
_out_message = st.builds(
    lambda n, t: {"type": "message", "id": f"msg_{n}", "status": "completed", "role": "assistant",
                  "content": [{"type": "output_text", "text": t, "annotations": []}]},
    st.integers(0, 999), _text,
)  # fmt: skip
_function_call = st.builds(
    lambda n, name, a: {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                        "name": name, "arguments": json.dumps(a), "status": "completed"},
    st.integers(0, 9999), st.sampled_from(["echo", "grep"]),
    st.dictionaries(st.sampled_from(["text", "n"]), _json_value, max_size=2),
)  # fmt: skip


@st.composite
def output_items(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A Responses answer's output: reasoning before what it leads to, text, calls."""
    out: list[dict[str, Any]] = []
    if draw(st.booleans()):
        out.append(draw(_reasoning))
    if draw(st.booleans()):
        out.append(draw(_out_message))
    calls = draw(st.lists(_function_call, max_size=3, unique_by=lambda i: i["call_id"]))
    for call in calls:
        if draw(st.booleans()):
            out.append(draw(_reasoning))
        out.append(call)
    return out or [draw(_out_message)]


def _response(items: list[dict[str, Any]], status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_1", "object": "response", "status": status, "model": "o4-mini",
        "output": items, "error": None, "incomplete_details": None,
        "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 40},
                  "output_tokens": 7},
    }  # fmt: skip


# ----------------------------------------------------------------------------- Anthropic


def test_clients_are_native_model_clients() -> None:
    assert isinstance(ANTHROPIC, NativeModelClient) and ANTHROPIC.api == "anthropic"
    assert isinstance(RESPONSES, NativeModelClient) and RESPONSES.api == "responses"


@PROPERTY
@given(answer_blocks())
def test_anthropic_answer_round_trips_into_the_next_request(blocks: list[dict[str, Any]]) -> None:
    """answer -> history message -> next request body: the assistant message is the
    answer's content, block for block, byte for byte (thinking signatures included)."""
    answer = parse_message(_message(blocks))
    history = [{"role": "user", "content": "go"}, answer.message]
    body = ANTHROPIC.request_body(history, None, 1000)
    sent = body["messages"][1]
    assert sent["role"] == "assistant"
    if blocks:
        assert json.dumps(sent["content"]) == json.dumps(blocks)
    # Saving the history as JSON and loading it again changes nothing either.
    reloaded = json.loads(json.dumps(history))
    again = ANTHROPIC.request_body(reloaded, None, 1000)
    assert again == body


@PROPERTY
@given(answer_blocks())
def test_anthropic_stream_gives_the_same_answer_as_json(blocks: list[dict[str, Any]]) -> None:
    message = _message(blocks)
    reader = MessageStream()
    texts = [reader.feed(data) for _, data in _anthropic_stream(message)]
    assert reader.done
    streamed, whole = reader.response(), parse_message(message)
    assert streamed.message == whole.message
    assert streamed.finish_reason == whole.finish_reason
    assert "".join(texts) == whole.text


def test_anthropic_parse_maps_usage_stop_reason_and_tool_calls() -> None:
    blocks = [
        {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "é"}},
    ]
    answer = parse_message(_message(blocks))
    assert answer.text == "Let me look."
    assert answer.finish_reason == "tool_calls"
    assert answer.tool_calls == [{"id": "toolu_1", "type": "function",
                                  "function": {"name": "echo", "arguments": '{"text": "é"}'}}]  # fmt: skip
    assert answer.message["content"][0] is blocks[0]  # the thinking block itself, untouched
    assert (answer.usage.prompt_tokens, answer.usage.cached_tokens) == (42, 30)
    assert parse_message({**_message([]), "stop_reason": "max_tokens"}).finish_reason == "length"


def test_anthropic_request_body() -> None:
    client = AnthropicClient("claude-sonnet-4-5", api_key="k", thinking=2048, stream=True)
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "echo", "arguments": "{}"}},
            {"id": "toolu_2", "type": "function", "function": {"name": "echo", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "toolu_1", "name": "echo", "content": "a"},
        {"role": "tool", "tool_call_id": "toolu_2", "name": "echo", "content": "b"},
    ]  # fmt: skip
    body = client.request_body(history, [ECHO], 4000)
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 4000 and body["stream"] is True
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["tools"] == [{"name": "echo", "description": "Echo text.",
                              "input_schema": ECHO["function"]["parameters"]}]  # fmt: skip
    # Both results of the turn in one user message, as the API requires.
    assert body["messages"][2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "b"},
    ]}  # fmt: skip
    assert history[2]["content"] is None  # the history is not modified


def test_anthropic_tools_pass_native_tools_through() -> None:
    native = {"type": "web_search_20250305", "name": "web_search"}
    assert anthropic_tools([native]) == [native]


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("off", None), (0, None), ("adaptive", {"type": "adaptive"}),
     (1024, {"type": "enabled", "budget_tokens": 1024})],
)  # fmt: skip
def test_thinking_settings(value: Any, expected: Any) -> None:
    assert thinking_setting(value) == expected


@pytest.mark.parametrize("value", [1023, "lots", True, 2.5])
def test_bad_thinking_settings_are_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="thinking"):
        thinking_setting(value)


def test_a_thinking_budget_must_be_below_max_tokens() -> None:
    with pytest.raises(ValueError, match=r"thinking budget \(4096\) must be below max_tokens"):
        AnthropicClient("m", api_key="k", thinking=4096, max_tokens=4096)


@pytest.mark.asyncio
async def test_anthropic_sends_key_and_version_and_reads_a_json_answer() -> None:
    seen: list[httpx.Request] = []
    answer = _message([{"type": "text", "text": "Hi."}])
    http = _http(lambda r: httpx.Response(200, json=answer), seen)
    client = AnthropicClient("claude-sonnet-4-5", base_url="http://x/", api_key="sk-ant",
                             http_client=http, retry=NO_RETRY)  # fmt: skip
    texts: list[str] = []
    result = await client.complete([{"role": "user", "content": "hi"}], on_text=texts.append)
    assert result.text == "Hi." and texts == ["Hi."]
    assert str(seen[0].url) == "http://x/v1/messages"
    assert seen[0].headers["x-api-key"] == "sk-ant"
    assert seen[0].headers["anthropic-version"] == "2023-06-01"
    assert json.loads(seen[0].content)["max_tokens"] == 4096


@pytest.mark.asyncio
async def test_anthropic_streams_text_as_it_arrives() -> None:
    seen: list[httpx.Request] = []
    blocks = [{"type": "thinking", "thinking": "t" * 30, "signature": "sig=="},
              {"type": "text", "text": "Hello there, friend."}]  # fmt: skip
    http = _http(lambda r: _sse(_anthropic_events(_message(blocks))), seen)
    client = AnthropicClient("m", base_url="http://x", api_key="k", stream=True, http_client=http)
    texts: list[str] = []
    result = await client.complete([{"role": "user", "content": "hi"}], on_text=texts.append)
    assert len(texts) > 1 and "".join(texts) == "Hello there, friend."
    assert result.message["content"] == blocks


def _error_response(status: int, body: Any) -> Handler:
    return lambda r: httpx.Response(status, json=body)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("handler", "error", "text"),
    [
        (_error_response(400, {"type": "error", "error": {"type": "invalid_request_error",
         "message": "messages.1.content.0.type: Expected `thinking`"}}),
         ModelHTTPError, "HTTP 400 from http://x/v1/messages: messages.1.content.0.type"),
        (lambda r: httpx.Response(200, text="<html>gateway</html>"), ModelResponseError,
         "is not JSON"),
        (_error_response(200, {"type": "message", "role": "assistant"}), ModelResponseError,
         "response has no content blocks"),
        (_error_response(200, {"type": "message", "content": ["not a block"]}),
         ModelResponseError, "unreadable answer: content[0]: expected a content block object"),
        (_error_response(200, {"type": "error", "error": {"type": "overloaded_error",
         "message": "Overloaded"}}), ModelResponseError, "error in response: Overloaded"),
        (lambda r: _sse([("message_start", {"type": "message_start", "message": _message([])}),
                         ("error", {"type": "error", "error": {"type": "invalid_request_error",
                          "message": "bad"}})]), ModelResponseError, "error in stream: bad"),
        (lambda r: _sse(_anthropic_events(_message([{"type": "text", "text": "cut"}]))[:3]),
         ModelConnectionError, "ended before the answer was complete"),
        (lambda r: _sse([("content_block_delta", {"type": "content_block_delta", "index": 4,
          "delta": {"type": "text_delta", "text": "x"}})]), ModelResponseError,
         "unknown content block: 4"),
    ],
    ids=["http-400", "not-json", "no-content", "bad-block", "error-object", "error-event",
         "cut-stream", "delta-without-block"],
)  # fmt: skip
async def test_anthropic_bad_answers_are_clear_errors(
    handler: Handler, error: type[Exception], text: str
) -> None:
    http = _http(handler, [])
    client = AnthropicClient("m", base_url="http://x", api_key="k", http_client=http,
                             stream=True, retry=NO_RETRY)  # fmt: skip
    with pytest.raises(error) as caught:
        await client.complete([{"role": "user", "content": "hi"}])
    assert text in str(caught.value)


@pytest.mark.asyncio
async def test_anthropic_overloaded_is_retried() -> None:
    answers = iter([
        httpx.Response(529, json={"type": "error", "error": {"type": "overloaded_error",
                                                             "message": "Overloaded"}}),
        httpx.Response(200, json=_message([{"type": "text", "text": "ok"}])),
    ])  # fmt: skip
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    http = _http(lambda r: next(answers), [])
    client = AnthropicClient("m", base_url="http://x", api_key="k", http_client=http, sleep=sleep)
    assert (await client.complete([{"role": "user", "content": "hi"}])).text == "ok"
    assert len(waits) == 1


@pytest.mark.asyncio
async def test_an_overloaded_stream_before_any_text_is_retried() -> None:
    overloaded = [("error", {"type": "error", "error": {"type": "overloaded_error",
                                                       "message": "Overloaded"}})]  # fmt: skip
    answers = iter([_sse(overloaded),
                    _sse(_anthropic_events(_message([{"type": "text", "text": "ok"}])))])  # fmt: skip

    async def sleep(seconds: float) -> None:
        return None

    client = AnthropicClient("m", base_url="http://x", api_key="k", stream=True, sleep=sleep,
                             http_client=_http(lambda r: next(answers), []))  # fmt: skip
    assert (await client.complete([{"role": "user", "content": "hi"}])).text == "ok"


@pytest.mark.asyncio
async def test_an_error_event_after_text_was_shown_is_not_retried() -> None:
    events = _anthropic_events(_message([{"type": "text", "text": "partial answer"}]))[:4]
    events.append(("error", {"type": "error", "error": {"type": "overloaded_error",
                                                        "message": "Overloaded"}}))  # fmt: skip
    seen: list[httpx.Request] = []
    client = AnthropicClient("m", base_url="http://x", api_key="k", stream=True,
                             http_client=_http(lambda r: _sse(events), seen))  # fmt: skip
    shown: list[str] = []
    with pytest.raises(ModelResponseError, match="Overloaded") as caught:
        await client.complete([{"role": "user", "content": "hi"}], on_text=shown.append)
    assert shown and not caught.value.retryable and len(seen) == 1


def test_pings_and_unknown_events_are_ignored() -> None:
    reader = MessageStream()
    events = _anthropic_events(_message([{"type": "text", "text": "hi"}]))
    events.insert(1, ("ping", {"type": "ping"}))
    events.insert(2, ("future", {"type": "some_future_event", "x": 1}))
    events.insert(4, ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "future_delta", "y": 2}}))  # fmt: skip
    for _, data in events:
        reader.feed(data)
    assert reader.done and reader.response().message["content"] == [{"type": "text", "text": "hi"}]


# ----------------------------------------------------------------------------- Responses


@PROPERTY
@given(output_items())
def test_responses_answer_round_trips_into_the_next_request(items: list[dict[str, Any]]) -> None:
    """answer -> history message -> next request: the answer's items, reasoning and its
    encrypted_content included, go back exactly as returned, in their order."""
    answer = parse_response(_response(items))
    assert answer.message[ITEMS] == items
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in answer.tool_calls]
    history = [{"role": "user", "content": "go"}, answer.message, *results]
    reloaded = json.loads(json.dumps(history))  # a saved history keeps the items
    body = RESPONSES.request_body(reloaded, None, 500)
    sent = body["input"][1 : 1 + len(items)]
    assert json.dumps(sent) == json.dumps(items)
    assert [i["type"] for i in body["input"][1 + len(items) :]] == ["function_call_output"] * len(
        results
    )


@PROPERTY
@given(output_items())
def test_responses_stream_gives_the_same_answer_as_json(items: list[dict[str, Any]]) -> None:
    response = _response(items)
    reader = ResponseStream()
    texts = [reader.feed(data) for _, data in _responses_events(response)]
    assert reader.done
    streamed, whole = reader.response(), parse_response(response)
    assert streamed.message == whole.message
    assert "".join(texts) == whole.text


def test_responses_stream_without_final_output_uses_the_done_items() -> None:
    items = [{"type": "message", "id": "m", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": "hi", "annotations": []}]}]  # fmt: skip
    reader = ResponseStream()
    for _, data in _responses_events(_response(items)):
        if data["type"] == "response.completed":
            data = {**data, "response": {**data["response"], "output": []}}
        reader.feed(data)
    assert reader.response().message[ITEMS] == items


def test_responses_request_body() -> None:
    client = ResponsesClient("o4-mini", api_key="k", reasoning={"effort": "low"}, stream=True)
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "echo", "content": "a"},
    ]  # fmt: skip
    body = client.request_body(history, [ECHO], 800)
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low"} and body["stream"] is True
    assert body["max_output_tokens"] == 800
    assert body["tools"] == [{"type": "function", "name": "echo", "description": "Echo text.",
                              "parameters": ECHO["function"]["parameters"]}]  # fmt: skip
    assert body["input"] == [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "go"},
        {"type": "function_call", "call_id": "call_1", "name": "echo", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "a"},
    ]


def test_responses_tools_pass_hosted_tools_through() -> None:
    assert responses_tools([{"type": "web_search"}]) == [{"type": "web_search"}]


def test_responses_parse_usage_and_finish() -> None:
    calls = [{"type": "function_call", "id": "fc", "call_id": "c1", "name": "echo",
              "arguments": "{}"}]  # fmt: skip
    answer = parse_response(_response(calls))
    assert answer.finish_reason == "tool_calls"
    assert (answer.usage.prompt_tokens, answer.usage.cached_tokens) == (50, 40)
    cut = {**_response([]), "status": "incomplete",
           "incomplete_details": {"reason": "max_output_tokens"}}  # fmt: skip
    assert parse_response(cut).finish_reason == "length"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("handler", "error", "text"),
    [
        (_error_response(400, {"error": {"message": "No tool output found for function call "
         "call_1.", "type": "invalid_request_error"}}), ModelHTTPError, "No tool output found"),
        (_error_response(200, {"object": "response", "status": "failed", "output": [],
         "error": {"code": "server_error", "message": "boom"}}), ModelResponseError,
         "error in response: boom"),
        (_error_response(200, {"object": "response"}), ModelResponseError,
         "response has no output items"),
        (_error_response(200, _response([{"type": "message", "role": "user", "content": "x"}])),
         ModelResponseError, "holds input items"),
        (lambda r: _sse([("response.failed", {"type": "response.failed", "response": {
          "error": {"message": "the model crashed"}}})]), ModelResponseError, "the model crashed"),
        (lambda r: _sse([("error", {"type": "error", "code": "invalid_prompt",
          "message": "nope"})]), ModelResponseError, "error in stream: nope"),
        (lambda r: _sse(_responses_events(_response([]))[:2]), ModelConnectionError,
         "ended before the answer was complete"),
    ],
    ids=["http-400", "failed", "no-output", "input-items", "failed-event", "error-event", "cut"],
)  # fmt: skip
async def test_responses_bad_answers_are_clear_errors(
    handler: Handler, error: type[Exception], text: str
) -> None:
    seen: list[httpx.Request] = []
    client = ResponsesClient("o4-mini", base_url="http://x/v1", api_key="sk", stream=True,
                             http_client=_http(handler, seen), retry=NO_RETRY)  # fmt: skip
    with pytest.raises(error) as caught:
        await client.complete([{"role": "user", "content": "hi"}])
    assert text in str(caught.value)
    assert str(seen[0].url) == "http://x/v1/responses"
    assert seen[0].headers["authorization"] == "Bearer sk"
