"""Model-client building blocks without a network: SSE, stream assembly, retries, parsing."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from context_governor.llm import (
    ModelError,
    ModelHTTPError,
    ModelResponse,
    ModelResponseError,
    RetryPolicy,
    ScriptedModel,
    SSEDecoder,
    StreamAssembler,
    Usage,
    assistant_message,
    tool_call,
)
from context_governor.llm._openai_compat import OpenAICompatClient, parse_completion
from context_governor.llm._retry import parse_retry_after, with_retries


def _decode(lines: list[str]) -> list[str]:
    decoder = SSEDecoder()
    events = [e for line in lines if (e := decoder.feed(line)) is not None]
    tail = decoder.flush()
    return events + ([tail] if tail is not None else [])


def test_sse_joins_data_lines_skips_comments_and_flushes_the_tail() -> None:
    lines = [": keep-alive", "data: {\"a\":", "data: 1}", "", "event: x", "id: 7", "data:[DONE]"]
    assert _decode(lines) == ['{"a":\n1}', "[DONE]"]


def test_sse_blank_lines_without_data_dispatch_nothing() -> None:
    assert _decode(["", "", ": ping", ""]) == []


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_assembler_rebuilds_parallel_tool_calls_from_fragments() -> None:
    asm = StreamAssembler()
    pieces = [
        _chunk({"role": "assistant", "content": None}),
        _chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
        _chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "grep", "arguments": '{"pat'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}),
        _chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'tern": "x"}'}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"a.py"}'}}]}),
        _chunk({}, "tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 4}}},
    ]
    texts = [asm.feed(p) for p in pieces]
    response = asm.response()
    assert texts == [""] * len(pieces)
    assert response.message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "x"}'}},
        ],
    }
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(11, 5, 4)


def test_assembler_text_reasoning_repeated_names_and_missing_indexes() -> None:
    asm = StreamAssembler()
    out = [
        asm.feed(_chunk({"reasoning_content": "think "})),
        asm.feed(_chunk({"reasoning": "more"})),
        asm.feed(_chunk({"content": "Hel"})),
        asm.feed(_chunk({"content": "lo"})),
        # No index, the name repeated in every delta (seen from some servers).
        asm.feed(_chunk({"tool_calls": [{"id": "c1", "function": {"name": "exec", "arguments": '{"cmd"'}}]})),
        asm.feed(_chunk({"tool_calls": [{"function": {"name": "exec", "arguments": ': "ls"}'}}]})),
        asm.feed(_chunk({"tool_calls": [{"id": "c2", "function": {"name": "list_dir", "arguments": {"path": "."}}}]})),
    ]
    message = asm.response().message
    assert out[2:4] == ["Hel", "lo"]
    assert message["content"] == "Hello"
    assert message["reasoning_content"] == "think more"
    assert [c["function"] for c in message["tool_calls"]] == [
        {"name": "exec", "arguments": '{"cmd": "ls"}'},
        {"name": "list_dir", "arguments": '{"path": "."}'},
    ]


def test_assembler_raises_on_an_error_event() -> None:
    asm = StreamAssembler()
    with pytest.raises(ModelResponseError, match="overloaded"):
        asm.feed({"error": {"message": "overloaded", "type": "server_error"}})


def test_retry_policy_backoff_retry_after_and_giving_up() -> None:
    policy = RetryPolicy(max_retries=3, base_delay=0.5, max_delay=10)
    retryable = ModelHTTPError("503", retryable=True, status=503)
    assert [policy.delay(retryable, n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, None]
    assert policy.delay(ModelHTTPError("429", retryable=True, retry_after=7), 1) == 7
    # A server asking for more patience than we have: stop instead of hammering it.
    assert policy.delay(ModelHTTPError("429", retryable=True, retry_after=60), 1) is None
    assert policy.delay(ModelHTTPError("400", status=400), 1) is None


def test_parse_retry_after_forms() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.25 ") == 0.25
    assert parse_retry_after("Wed, 01 Jan 2025 12:00:05 GMT", now=now) == 5.0
    assert parse_retry_after("Wed, 01 Jan 2025 11:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after(None) is None


def test_with_retries_retries_only_retryable_errors() -> None:
    attempts: list[int] = []
    waits: list[float] = []

    async def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise ModelHTTPError("busy", retryable=True, status=503)
        return "ok"

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    policy = RetryPolicy(max_retries=5, base_delay=0.1)
    assert asyncio.run(with_retries(flaky, policy, sleep=no_sleep)) == "ok"
    assert waits == [0.1, 0.2]

    async def bad() -> str:
        attempts.append(1)
        raise ModelHTTPError("bad request", status=400)

    attempts.clear()
    with pytest.raises(ModelHTTPError):
        asyncio.run(with_retries(bad, policy, sleep=no_sleep))
    assert len(attempts) == 1


def test_assistant_message_keeps_only_what_a_request_may_carry() -> None:
    message = assistant_message(
        "",
        [{"id": "c", "function": {"name": "grep", "arguments": {"pattern": "é"}}}],
        reasoning="",
    )
    assert message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "é"}'}}],
    }


def test_parse_completion_reads_a_completion_and_rejects_garbage() -> None:
    data = {
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": "hi", "refusal": None, "annotations": []}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    response = parse_completion(data)
    assert response == ModelResponse({"role": "assistant", "content": "hi"}, Usage(3, 1), "stop", "m")
    for bad in ([], {"choices": []}, {"choices": [{"text": "legacy"}]}, {"error": {"message": "nope"}}):
        with pytest.raises(ModelResponseError):
            parse_completion(bad)


def test_client_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://example.invalid/v9/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    client = OpenAICompatClient("m", stream=True, extra_body={"temperature": 0})
    assert client.url == "http://example.invalid/v9/chat/completions"
    assert client._headers["Authorization"] == "Bearer sk-env"
    body = client.request_body([{"role": "user", "content": "x"}], None, 50)
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": 50,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
    }
    with pytest.raises(ValueError, match="model"):
        OpenAICompatClient("")


def test_client_refuses_a_body_json_cannot_carry() -> None:
    client = OpenAICompatClient("m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelError, match="not JSON-serializable"):
        asyncio.run(client.complete([{"role": "user", "content": {1, 2}}]))


def test_scripted_model_replays_records_and_streams() -> None:
    model = ScriptedModel(
        [
            {"content": "looking", "tool_calls": [tool_call("read_file", {"path": "a"})]},
            lambda messages: f"saw {len(messages)} messages",
            ModelHTTPError("HTTP 503", retryable=True, status=503),
        ]
    )
    pieces: list[str] = []
    history = [{"role": "user", "content": "hi"}]
    first = asyncio.run(model.complete(history, on_text=pieces.append))
    second = asyncio.run(model.complete(history * 3))
    assert first.tool_calls[0]["id"] == "call_1"
    assert json.loads(first.tool_calls[0]["function"]["arguments"]) == {"path": "a"}
    assert "".join(pieces) == "looking"
    assert second.text == "saw 3 messages" and second.usage.prompt_tokens > 0
    with pytest.raises(ModelHTTPError):
        asyncio.run(model.complete(history))
    with pytest.raises(ModelError, match="no response left"):
        asyncio.run(model.complete(history))
    assert [len(r.messages) for r in model.requests] == [1, 3, 1, 1]


def _mock_client(handler: Any, **kwargs: Any) -> OpenAICompatClient:
    import httpx

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    kwargs.setdefault("retry", RetryPolicy(max_retries=2, base_delay=0))
    return OpenAICompatClient("m", base_url="http://mock/v1", http_client=http, **kwargs)


def test_a_server_that_ignores_stream_is_read_as_a_completion() -> None:
    import httpx

    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content)["stream"] is True
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}]})

    response = asyncio.run(_mock_client(handler, stream=True).complete([{"role": "user", "content": "x"}]))
    assert response.text == "whole" and response.finish_reason == "stop"


def test_retry_after_ms_and_a_connection_dropped_mid_answer() -> None:
    import httpx

    calls: list[int] = []

    async def broken_body() -> Any:
        yield b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n'
        raise httpx.ReadError("connection reset")

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(429, headers={"retry-after-ms": "20"}, json={"error": {"message": "slow down"}})
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=broken_body())

    waits: list[float] = []
    client = _mock_client(handler, stream=True, on_retry=lambda e, n, w: waits.append(w))
    pieces: list[str] = []
    with pytest.raises(ModelError, match="connection reset") as info:
        asyncio.run(client.complete([{"role": "user", "content": "x"}], on_text=pieces.append))
    # The 429 was retried after 20 ms; the broken stream was not, as "Hel" was already shown.
    assert waits == [0.02] and len(calls) == 2 and pieces == ["Hel"]
    assert not info.value.retryable
