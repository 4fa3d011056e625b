"""The proxy's native routes, POST /v1/messages and /v1/responses, with the real SDKs.

The real ``anthropic`` SDK (sync, async, streaming, tool use, thinking) and the
real ``openai`` SDK's ``responses`` calls talk to the proxy over HTTP; the proxy
talks to tests/fake_native.py, which validates every request it receives with
``validate_request`` under the API's rules and the configured window and rejects
what the provider would. The ``native`` fixture fails a test on any rejection:
"arrives valid" means a validator on the far side of two sockets agreed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from fake_native import FakeNative, NativeReply, fake_signature
from levels import examples
from native_proxy import (
    ANTHROPIC_HEADERS,
    CLAUDE,
    CLIENT_KEY,
    GPT,
    ProxyStarter,
    tool_result_text,
)

from context_governor.formats import govern_request, validate_request
from context_governor.proxy import CountingConfig, GoverningConfig, LimitsConfig, TimeoutsConfig
from context_governor.proxy._governing import encode

H = "x-context-governor-"
READ_TOOL = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
RS_TOOL = {
    "type": "function",
    "name": "read_file",
    "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
THINKING = {"type": "enabled", "budget_tokens": 512}


@pytest.fixture
def start(native: FakeNative) -> Iterator[ProxyStarter]:
    starter = ProxyStarter(native)
    yield starter
    starter.stop()


def _claude(url: str, **kw: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=url, api_key=CLIENT_KEY, max_retries=0, timeout=20,
        default_headers=ANTHROPIC_HEADERS, **kw,
    )  # fmt: skip


def _gpt(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="sk-client", max_retries=0, timeout=20)


# ---------------------------------------------------------------- Anthropic Messages


def test_anthropic_sdk_tool_use_with_thinking_round_trips_signatures(
    native: FakeNative, start: ProxyStarter
) -> None:
    """Thinking + tool_use out, tool_result back in: the signed thinking block reaches the
    upstream byte for byte, the SDK's headers arrive unchanged, the report is in headers."""
    client = _claude(start())
    native.push(NativeReply.tool_calls(("read_file", {"path": "a.py"}), thinking="look at a.py"))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug."}]
    raw = client.messages.with_raw_response.create(
        model=CLAUDE, max_tokens=2048, thinking=THINKING, tools=[READ_TOOL], messages=messages
    )
    first = raw.parse()
    assert int(raw.headers[f"{H}tokens-after"]) > 0 and raw.headers[f"{H}budget"] != ""
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    use = first.content[1]
    messages += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "x = 1"}]},
    ]
    native.push(NativeReply.answer("Fixed.", thinking="done"))
    second = client.messages.create(
        model=CLAUDE, max_tokens=2048, thinking=THINKING, tools=[READ_TOOL], messages=messages
    )
    assert second.content[-1].text == "Fixed."
    sent = native.requests[-1]["messages"][1]["content"][0]
    assert sent == {"type": "thinking", "thinking": "look at a.py", "signature": fake_signature("look at a.py")}
    headers = native.request_headers[-1]
    assert {k: headers[k] for k in ANTHROPIC_HEADERS} == ANTHROPIC_HEADERS
    assert headers["authorization"] == f"Bearer {CLIENT_KEY}"


def test_the_beta_messages_api_keeps_its_query(native: FakeNative, start: ProxyStarter) -> None:
    """Claude-style clients post to /v1/messages?beta=true: governed, and the query
    reaches the upstream (it selects the beta API there)."""
    url = start()
    native.push(NativeReply.answer("ok"))
    body = {"model": CLAUDE, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    response = httpx.post(f"{url}/v1/messages?beta=true", json=body, headers=ANTHROPIC_HEADERS, timeout=10)
    assert response.status_code == 200 and response.headers[f"{H}tokens-after"]
    assert native.targets == ["/v1/messages?beta=true"]
    assert native.apis == ["anthropic"]


def test_anthropic_sdk_streaming_relays_every_event(native: FakeNative, start: ProxyStarter) -> None:
    client = _claude(start())
    native.push(NativeReply.tool_calls(("read_file", {"path": "b.py"}), text="Reading.", thinking="hmm, b.py"))
    with client.messages.stream(
        model=CLAUDE, max_tokens=2048, thinking=THINKING, tools=[READ_TOOL],
        messages=[{"role": "user", "content": "Look at b.py"}],
    ) as stream:  # fmt: skip
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds.count("content_block_start") == 3 and "message_stop" in kinds
    assert final.content[0].type == "thinking" and final.content[0].signature == fake_signature("hmm, b.py")
    assert final.content[2].type == "tool_use" and final.content[2].input == {"path": "b.py"}
    assert native.stream_ends[-1][1] == "complete"


def test_anthropic_async_sdk_create_and_stream(native: FakeNative, start: ProxyStarter) -> None:
    url = start()

    async def session() -> list[str]:
        client = anthropic.AsyncAnthropic(base_url=url, api_key=CLIENT_KEY, max_retries=0, timeout=20)
        native.push(NativeReply.answer("one"), NativeReply.answer("two", thinking="t"))
        first = await client.messages.create(
            model=CLAUDE, max_tokens=256, messages=[{"role": "user", "content": "hi"}]
        )
        async with client.messages.stream(
            model=CLAUDE, max_tokens=2048, thinking=THINKING,
            messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": first.content},
                      {"role": "user", "content": "again"}],
        ) as stream:  # fmt: skip
            final = await stream.get_final_message()
        await client.close()
        return [first.content[0].text, final.content[-1].text]

    assert asyncio.run(session()) == ["one", "two"]


def test_a_damaged_history_is_repaired_before_it_reaches_anthropic(
    native: FakeNative, start: ProxyStarter
) -> None:
    """An unanswered tool_use (the agent crashed mid-tool) would be rejected upstream;
    through the proxy it is answered, and the report says what was done."""
    url = start()
    body = {
        "model": CLAUDE,
        "max_tokens": 256,
        "messages": [
            {"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_lost", "name": "read_file", "input": {}}]},
            {"role": "user", "content": "Are you there?"},
        ],
    }
    assert validate_request(body, api="anthropic") != []  # what the client sends is illegal
    native.push(NativeReply.answer("Yes."))
    raw = _claude(url).messages.with_raw_response.create(**body)
    assert raw.parse().content[0].text == "Yes."
    assert int(raw.headers[f"{H}actions"]) >= 1
    assert validate_request(native.requests[-1], api="anthropic") == []


@pytest.mark.parametrize("api", ["anthropic", "responses"])
@pytest.mark.parametrize("profile", [None, "glm"])
def test_the_proxy_forwards_exactly_what_govern_request_returns(
    native: FakeNative, start: ProxyStarter, api: str, profile: str | None
) -> None:
    """Differential: the upstream receives govern_request's body, under the configured
    profile or, with none, the route's own provider's (anthropic / openai)."""
    window = 3000
    native.context_window = window
    if profile is not None:
        native.profile[api] = profile
    url = start(context_window=window, **({"profile": profile} if profile else {}))
    body = _anthropic_session(8) if api == "anthropic" else _responses_session(8)
    native.push(NativeReply.answer("ok"))
    path = "messages" if api == "anthropic" else "responses"
    response = httpx.post(f"{url}/v1/{path}", json=body, timeout=20)
    assert response.status_code == 200, response.text
    expected = govern_request(
        body, api=api, profile=profile or {"anthropic": "anthropic", "responses": "openai"}[api],  # type: ignore[arg-type]
        context_window=window,
    )  # fmt: skip
    assert encode(native.requests[-1]) == encode(expected.body)
    assert int(response.headers[f"{H}tokens-before"]) > window  # it had to cut
    assert response.headers[f"{H}tokens-after"] == str(expected.report.tokens_after)


def _anthropic_session(steps: int, size: int = 1200) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the parser."}]
    for step in range(steps):
        tid = f"toolu_{step:03d}"
        messages += [
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": f"step {step}", "signature": fake_signature(f"step {step}")},
                {"type": "tool_use", "id": tid, "name": "read_file", "input": {"path": f"f{step}.py"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": tool_result_text(step, size)}]},
        ]  # fmt: skip
    return {"model": CLAUDE, "max_tokens": 512, "thinking": THINKING, "tools": [READ_TOOL], "messages": messages}


def _responses_session(steps: int, size: int = 1200) -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the parser."}]
    for step in range(steps):
        items += [
            {"type": "reasoning", "id": f"rs_{step:03d}", "summary": [], "encrypted_content": "gAAAA" + fake_signature(str(step))},
            {"type": "function_call", "id": f"fc_{step:03d}", "call_id": f"call_{step:03d}", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"call_{step:03d}", "output": tool_result_text(step, size)},
        ]  # fmt: skip
    return {"model": GPT, "max_output_tokens": 512, "tools": [RS_TOOL], "store": False, "input": items}


def test_a_long_anthropic_session_with_thinking_outgrows_the_window_and_keeps_working(
    native: FakeNative, start: ProxyStarter
) -> None:
    """The client appends every answer and tool result, thinking on; the proxy cuts and
    compacts; every upstream request is valid (the fixture) and inside the window."""
    window, reserve = 6000, 1024
    native.context_window = window
    client = _claude(start(context_window=window))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the whole parser."}]
    cut = 0
    for step in range(examples(full=20, fast=10)):
        native.push(NativeReply.tool_calls(("read_file", {"path": f"f{step}.py"}), thinking=f"next: f{step}.py"))
        with client.messages.stream(
            model=CLAUDE, max_tokens=reserve, thinking=THINKING, tools=[READ_TOOL], messages=messages
        ) as stream:  # fmt: skip
            answer = stream.get_final_message()
            before = int(stream.response.headers[f"{H}tokens-before"])
            cut += before > window - reserve
        use = answer.content[-1]
        assert use.type == "tool_use"
        messages += [
            {"role": "assistant", "content": answer.content},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": tool_result_text(step, 3000)}]},
        ]  # fmt: skip
    assert cut >= 2, "the session never outgrew the window: the test proves nothing"
    assert all(tokens + reserve <= window for tokens in native.prompt_tokens)
    # the newest turn's thinking went out signed and unchanged
    last = native.requests[-1]["messages"]
    assert last[-2]["content"][0]["signature"] == fake_signature(f"next: f{step - 1}.py")


def test_profile_glm_governs_an_anthropic_client_for_a_smaller_compatible_target(
    native: FakeNative, start: ProxyStarter
) -> None:
    native.context_window = 4000
    native.profile["anthropic"] = "glm"
    client = _claude(start(profile="glm", model_windows={"glm-4.6": 4000}))
    native.push(NativeReply.answer("ok"))
    body = _anthropic_session(6)
    reply = client.messages.with_raw_response.create(**{**body, "model": "glm-4.6"})
    assert reply.parse().content[-1].text == "ok"
    budget = int(reply.headers[f"{H}budget"])
    assert budget <= 4000 - 512  # the model's own window, not Claude's 200k
    assert int(reply.headers[f"{H}tokens-after"]) <= budget < int(reply.headers[f"{H}tokens-before"])


# ---------------------------------------------------------------- OpenAI Responses


def test_openai_sdk_responses_with_tools_and_reasoning_items(native: FakeNative, start: ProxyStarter) -> None:
    """Reasoning items with encrypted_content go back byte for byte (store=false)."""
    client = _gpt(start())
    native.push(NativeReply.tool_calls(("read_file", {"path": "a.py"}), thinking="plan"))
    settings: dict[str, Any] = {
        "model": GPT, "tools": [RS_TOOL], "store": False, "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"],
    }  # fmt: skip
    first = client.responses.with_raw_response.create(input="Fix the bug.", **settings)
    parsed = first.parse()
    assert [item.type for item in parsed.output] == ["reasoning", "function_call"]
    assert int(first.headers[f"{H}tokens-after"]) > 0
    assert f"{H}ungoverned" not in first.headers
    call = parsed.output[1]
    items: list[Any] = [{"role": "user", "content": "Fix the bug."}]
    items += [item.model_dump(exclude_none=True) for item in parsed.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "x = 1"})
    native.push(NativeReply.answer("Fixed."))
    second = client.responses.create(input=items, **settings)
    assert second.output_text == "Fixed."
    sent = native.requests[-1]["input"][1]
    assert sent["encrypted_content"] == "gAAAA" + fake_signature("plan")


def test_openai_sdk_responses_streaming(native: FakeNative, start: ProxyStarter) -> None:
    client = _gpt(start())
    native.push(NativeReply.tool_calls(("read_file", {"path": "b.py"}), text="Reading.", thinking="hmm"))
    with client.responses.stream(
        model=GPT, input="Look at b.py", tools=[RS_TOOL], reasoning={"effort": "low"}
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert final.output_text == "Reading."
    assert native.stream_ends[-1][1] == "complete"


def test_server_side_state_is_stated_in_a_header_and_logged(
    native: FakeNative, start: ProxyStarter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="context_governor.proxy")
    client = _gpt(start())
    native.push(NativeReply.answer("ok"))
    raw = client.responses.with_raw_response.create(
        model=GPT, input="and then?", previous_response_id="resp_earlier1\r\nx-evil: 1"
    )
    assert raw.parse().output_text == "ok"
    header = raw.headers[f"{H}ungoverned"]
    assert header.startswith("previous_response_id=resp_earlier1")
    assert "\r" not in header and "\n" not in header and "x-evil" not in raw.headers
    assert any("not governed (server-side)" in r.getMessage() for r in caplog.records)


def test_a_responses_body_with_only_a_stored_prompt_is_forwarded_and_said_ungoverned(
    native: FakeNative, start: ProxyStarter
) -> None:
    """``input`` is optional in the Responses API: a stored prompt is the whole history."""
    url = start()
    native.push(NativeReply.answer("ok"))
    body = {"model": GPT, "prompt": {"id": "pmpt_1", "variables": {"city": "Zürich"}}}
    response = httpx.post(f"{url}/v1/responses", json=body, timeout=10)
    assert response.status_code == 200, response.text
    assert native.requests[-1] == body
    header = response.headers[f"{H}ungoverned"]
    assert header.startswith('prompt={"id": "pmpt_1"') and "Z%C3%BCrich" in header


def test_a_long_responses_session_outgrows_the_window_and_keeps_working(
    native: FakeNative, start: ProxyStarter
) -> None:
    window, reserve = 6000, 1024
    native.context_window = window
    client = _gpt(start(context_window=window))
    items: list[Any] = [{"role": "user", "content": "Refactor the whole parser."}]
    settings: dict[str, Any] = {
        "model": GPT, "tools": [RS_TOOL], "store": False, "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"], "max_output_tokens": reserve,
    }  # fmt: skip
    cut = 0
    for step in range(examples(full=20, fast=10)):
        native.push(NativeReply.tool_calls(("read_file", {"path": f"f{step}.py"}), thinking=f"s{step}"))
        raw = client.responses.with_raw_response.create(input=items, stream=step % 2 == 1, **settings)
        cut += int(raw.headers[f"{H}tokens-before"]) > window - reserve
        parsed: Any = raw.parse()
        if step % 2:  # streamed: the final response is the response.completed event's
            output = next(e.response for e in parsed if e.type == "response.completed")
        else:
            output = parsed
        items += [item.model_dump(exclude_none=True) for item in output.output]
        call = output.output[-1]
        items.append({"type": "function_call_output", "call_id": call.call_id, "output": tool_result_text(step, 3000)})
    assert cut >= 2, "the session never outgrew the window: the test proves nothing"
    assert all(tokens + reserve <= window for tokens in native.prompt_tokens)


@pytest.mark.parametrize("api", ["anthropic", "responses"])
def test_native_streams_are_relayed_as_they_come(native: FakeNative, start: ProxyStarter, api: str) -> None:
    """The first event reaches the client while the upstream is still stalling."""
    stall = 1.5
    reply = NativeReply.answer("slow answer")
    reply.stall = stall
    native.push(NativeReply.answer("warm-up"), reply)
    url = start()
    if api == "anthropic":
        path, body = "messages", {"model": CLAUDE, "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    else:
        path, body = "responses", {"model": GPT, "stream": True, "input": "hi"}
    # the first request of a model may load its encoding (on both sides): not measured
    assert httpx.post(f"{url}/v1/{path}", json={**body, "stream": False}, timeout=10).status_code == 200
    started = time.monotonic()
    with httpx.stream("POST", f"{url}/v1/{path}", json=body, timeout=10) as response:
        assert response.status_code == 200
        assert int(response.headers[f"{H}tokens-after"]) > 0
        lines = response.iter_lines()
        first = next(line for line in lines if line)
        first_at = time.monotonic() - started
        rest = [line for line in lines if line]
    assert first == ("event: message_start" if api == "anthropic" else "event: response.created")
    assert first_at < stall * 0.7, f"first event after {first_at:.2f}s: the stream was buffered"
    assert rest[-1].startswith("data: ") and json.loads(rest[-1][6:])["type"] in ("message_stop", "response.completed")


# ---------------------------------------------------------------- errors, in each API's shape


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (json.dumps({"model": CLAUDE, "max_tokens": 10}).encode(), "'messages' is a required"),
        (json.dumps({"model": CLAUDE, "max_tokens": -1, "messages": []}).encode(), "max_tokens"),
        (json.dumps({"model": CLAUDE, "max_tokens": 9, "messages": "hi"}).encode(), "messages"),
    ],
)
def test_bad_messages_bodies_get_a_400_in_anthropic_shape(
    native: FakeNative, start: ProxyStarter, body: bytes, where: str
) -> None:
    url = start()
    headers = {"content-type": "application/json"}  # without it: a 415 (guard.py)
    response = httpx.post(f"{url}/v1/messages", content=body, headers=headers, timeout=10)
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert where in error["error"]["message"]
    assert native.requests == []


def test_the_anthropic_sdk_raises_its_own_errors_with_our_message(native: FakeNative, start: ProxyStarter) -> None:
    client = _claude(start(limits=LimitsConfig(max_body_bytes=2000)))
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": 5}])  # type: ignore[arg-type]
    assert "messages[0].content" in str(bad.value)
    with pytest.raises(anthropic.APIStatusError) as big:
        client.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "x" * 5000}])
    assert big.value.status_code == 413 and big.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]


def test_an_unreachable_upstream_gives_502_in_each_apis_shape(start: ProxyStarter) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = start(upstream=f"http://127.0.0.1:{port}/v1", timeouts=TimeoutsConfig(connect=2))
    with pytest.raises(anthropic.InternalServerError) as caught:
        _claude(url).messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502
    assert caught.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    with pytest.raises(openai.InternalServerError) as also:
        _gpt(url).responses.create(model=GPT, input="hi")
    assert also.value.status_code == 502 and "unreachable" in str(also.value)


def test_upstream_errors_come_back_unchanged_streaming_or_not(native: FakeNative, start: ProxyStarter) -> None:
    """The provider's own error (here Anthropic's 529 overloaded) reaches the SDK as sent,
    with the report's headers: governance does not hide or rewrite it."""
    client = _claude(start())
    native.push(NativeReply.error(529, "Overloaded"), NativeReply.error(529, "Overloaded"))
    for stream in (False, True):
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(
                model=CLAUDE, max_tokens=10, stream=stream, messages=[{"role": "user", "content": "hi"}]
            )
        assert caught.value.status_code == 529
        assert caught.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        assert caught.value.response.headers[f"{H}tokens-after"]


def test_a_config_without_a_profile_crosses_to_worker_processes() -> None:
    """--workers N hands the config to each process as JSON: None must stay None, or
    the workers would govern /v1/messages with OpenAI's profile."""
    from context_governor.proxy import ProxyConfig

    config = ProxyConfig(upstream="http://127.0.0.1:1/v1")
    assert config.profile is None
    assert ProxyConfig.from_json(config.to_json()).profile is None
    assert ProxyConfig.from_json(ProxyConfig(upstream="http://h/v1", profile="glm").to_json()).profile == "glm"


def test_a_messages_stream_that_breaks_off_ends_with_an_anthropic_error_event(
    native: FakeNative, start: ProxyStarter
) -> None:
    client = _claude(start())
    reply = NativeReply.answer("a long answer that never ends", thinking="x")
    reply.cut_after = 4
    native.push(reply)
    with pytest.raises(anthropic.APIStatusError) as caught:  # noqa: SIM117
        with client.messages.stream(
            model=CLAUDE, max_tokens=512, thinking=THINKING, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            stream.get_final_message()
    assert "incomplete" in str(caught.value)
    assert caught.value.body == {"type": "error", "error": {"type": "api_error", "message": caught.value.body["error"]["message"]}}  # type: ignore[index]


def test_a_responses_stream_that_breaks_off_ends_with_an_error_event(
    native: FakeNative, start: ProxyStarter
) -> None:
    client = _gpt(start())
    reply = NativeReply.answer("a long answer that never ends")
    reply.cut_after = 4
    native.push(reply)
    events = list(client.responses.create(model=GPT, input="hi", stream=True))
    assert events[-1].type == "error"
    assert "incomplete" in events[-1].message  # type: ignore[union-attr]


# ---------------------------------------------------------------- passed through, and said so


def test_other_paths_pass_through_and_are_logged_once_per_kind(
    native: FakeNative, start: ProxyStarter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="context_governor.proxy")
    url = start()
    client = _claude(url)
    counted = client.messages.count_tokens(model=CLAUDE, messages=[{"role": "user", "content": "hi there"}])
    assert counted.input_tokens > 0
    for rid in ("resp_0001", "resp_0002"):
        assert _gpt(url).responses.retrieve(rid).id == rid
    # paths the fake does not serve: relayed as its 404/405, but they reached it as sent
    # (count_tokens and responses/compact are side endpoints now: tests/test_proxy_side.py)
    others = [("POST", "responses/resp_0003/cancel"), ("GET", "responses/resp_0003/input_items?limit=5")]
    for method, path in others:
        assert httpx.request(method, f"{url}/v1/{path}", json={} if method == "POST" else None).status_code in (404, 405)
    assert native.targets == [
        "/v1/messages/count_tokens", "/v1/responses/resp_0001", "/v1/responses/resp_0002",
        *(f"/v1/{path}" for _, path in others),
    ]  # fmt: skip
    assert native.requests == []  # nothing went through a governed route
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("not governed")]
    kinds = ["GET /v1/responses/{id}", "POST /v1/responses/{id}/cancel",
             "GET /v1/responses/{id}/input_items"]  # fmt: skip
    assert len(said) == len(kinds), said
    assert all(f"not governed: {kind} is passed through" in line for kind, line in zip(kinds, said, strict=True))


def test_client_keys_are_forwarded_but_never_logged(
    native: FakeNative, start: ProxyStarter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = _claude(start())
    native.push(NativeReply.answer("ok"))
    client.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    client.messages.count_tokens(model=CLAUDE, messages=[{"role": "user", "content": "hi"}])
    assert all(h["x-api-key"] == CLIENT_KEY for h in native.request_headers)
    assert CLIENT_KEY not in caplog.text


def test_a_fixed_api_key_replaces_the_clients_in_its_own_header(native: FakeNative, start: ProxyStarter) -> None:
    client = _claude(start(api_key="sk-ant-proxy-key"))
    native.push(NativeReply.answer("ok"))
    client.messages.create(model=CLAUDE, max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    headers = native.request_headers[-1]
    assert headers["x-api-key"] == "sk-ant-proxy-key" and "authorization" not in headers


def test_native_routes_govern_in_a_process_pool_too(native: FakeNative, start: ProxyStarter) -> None:
    native.context_window = 3000
    url = start(context_window=3000, governing=GoverningConfig(run_in="process", processes=1))
    native.push(NativeReply.answer("ok"), NativeReply.answer("ok"))
    r1 = httpx.post(f"{url}/v1/messages", json=_anthropic_session(6), timeout=60)
    r2 = httpx.post(f"{url}/v1/responses", json=_responses_session(6), timeout=60)
    assert (r1.status_code, r2.status_code) == (200, 200), (r1.text, r2.text)
    assert int(r1.headers[f"{H}tokens-after"]) < int(r1.headers[f"{H}tokens-before"])


# ---------------------------------------------------------------- the CLI's profile default


@pytest.mark.parametrize(
    ("args", "expected"),
    [([], None), (["--profile", "glm"], "glm"), (["--profile", "openai"], "openai"), (["--provider", "openai"], "openai")],
)
def test_the_cli_leaves_the_profile_to_each_route_unless_given(
    monkeypatch: pytest.MonkeyPatch, args: list[str], expected: str | None
) -> None:
    """No --profile: None, so /v1/messages uses anthropic's rules and the others
    openai's; a --profile given (even the old default, openai) applies to every route."""
    from click.testing import CliRunner

    from context_governor.cli import _proxy as cli_proxy
    from context_governor.cli import main

    seen: list[Any] = []
    monkeypatch.setattr(cli_proxy, "_serve", lambda uvicorn, config, *rest: seen.append(config))
    result = CliRunner().invoke(main, ["proxy", "--upstream", "http://127.0.0.1:1/v1", "--port", "0", *args])
    assert result.exit_code == 0, result.output
    assert seen[0].profile == expected


def test_path_kinds_and_the_ungoverned_header_are_bounded_and_safe() -> None:
    from context_governor.proxy._apis import MAX_UNGOVERNED_HEADER, header_value, path_kind

    assert path_kind("responses/resp_68af0c1/cancel") == "responses/{id}/cancel"
    assert path_kind("messages/count_tokens") == "messages/count_tokens"
    assert path_kind("models/gpt-4o") == "models/{id}"
    value = header_value(("previous_response_id=r\r\nx: 1", "conversation=é" * 500))
    assert value.isascii() and "\r" not in value and "\n" not in value
    assert len(value) <= MAX_UNGOVERNED_HEADER


def test_a_restarted_proxy_reads_the_count_store_for_responses_bodies(
    native: FakeNative, start: ProxyStarter, tmp_path: Any
) -> None:
    """--count-store serves the native routes too: a restarted proxy (fresh counters,
    the same file) tokenizes none of a Responses body's tool outputs again."""
    from test_count_store import Spy, _fresh_counters, _native_body

    from context_governor.counting import ExactCounter
    from context_governor.counting import store as cs
    from context_governor.profiles import _cached_exact_counter

    url = f"sqlite:///{tmp_path / 'counts.db'}"
    body = _native_body("responses")
    spies = []
    for _ in range(2):  # the proxy, then a restarted one
        _fresh_counters()
        counter = _cached_exact_counter("gpt-4o")
        assert isinstance(counter, ExactCounter)
        spies.append(Spy(counter))
        native.push(NativeReply.answer("ok"))
        proxy = start(context_window=12_000, counting=CountingConfig(store=url))
        response = httpx.post(f"{proxy}/v1/responses", json=body, timeout=30)
        assert response.status_code == 200, response.text
        assert cs.flush()
    first, second = spies
    assert any("out3 " in text for text in first.texts)
    assert not any("out3 " in text for text in second.texts)
    assert encode(native.requests[-1]) == encode(native.requests[-2])


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}]}]}),
        ("/v1/responses", {"model": "gpt-5", "input": [
            {"type": "function_call_output", "call_id": "call_1", "output": "r"}]}),
    ],
    ids=["messages", "responses"],
)  # fmt: skip
def test_a_request_governed_to_nothing_is_answered_400_not_forwarded(
    native: FakeNative, start: ProxyStarter, path: str, body: dict[str, Any]
) -> None:
    """A lone tool result answering no call is dropped (the provider refuses it), which
    leaves nothing: the proxy says so in the API's error shape instead of forwarding an
    empty conversation the provider refuses with a bare "empty array"."""
    url = start(context_window=16_000)
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01",
               "authorization": "Bearer sk-test"}  # fmt: skip
    answer = httpx.post(f"{url}{path}", json=body, headers=headers, timeout=30)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert "nothing is left to send" in error["message"]
    assert "tool result answers no earlier tool call" in error["message"]
    assert native.requests == []


def test_cache_breakpoints_can_be_turned_off_in_the_proxy(native: FakeNative, start: ProxyStarter) -> None:
    """By default the proxy marks the stable prefix of a Messages body; with
    cache_breakpoints=False (--no-cache-breakpoints) it forwards no mark of its own."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "You are terse.",
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    marks = []
    for url in (start(), start(cache_breakpoints=False)):
        native.push(NativeReply.answer("ok"))
        assert httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=30).status_code == 200
        marks.append(json.dumps(native.requests[-1]).count("cache_control"))
    assert marks[0] > 0 and marks[1] == 0
