"""LiteLLM's SDK pointed at the proxy (``api_base``), on every API it can send there.

LiteLLM (``litellm.completion`` / ``acompletion``, ``litellm.anthropic.messages``,
``litellm.responses``) talks to a real proxy server on localhost, which talks to the
fake upstreams (tests/fake_upstream.py for Chat Completions, tests/fake_native.py for
Anthropic Messages and Responses). The fakes validate every request they receive
under the API's rules and the window and refuse what the provider would, and the
fixtures fail a test on any refusal: sessions that outgrow the window keep working
only if the proxy governed every request LiteLLM sent.

What each API needs as ``api_base`` is measured here too (docs/proxy.md lists it):
``test_the_api_base_each_litellm_api_needs`` fails if LiteLLM starts building its URLs
another way.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_gemini import FakeGemini, serve
from fake_native import FakeNative, NativeReply
from fake_upstream import FakeUpstream, Reply
from native_proxy import tool_result_text
from test_proxy import Served

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the model map
import litellm
from litellm.exceptions import MidStreamFallbackError

from context_governor.formats import govern_request
from context_governor.proxy import LimitsConfig, ProxyConfig, create_app
from context_governor.proxy._governing import encode

litellm.suppress_debug_info = True

WINDOW = 4_000
KEY = "sk-litellm-client-0123456789"
HEADER = "llm_provider-x-context-governor-"  # how LiteLLM hands back the upstream's headers
CHAT_MODEL = "openai/gpt-4o-mini"
CLAUDE = "anthropic/claude-sonnet-4-5"
GPT = "openai/gpt-5-mini"
GEMINI = "gemini/gemini-2.5-flash"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
RS_TOOL = {
    "type": "function",
    "name": "read_file",
    "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
READ_TOOL = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
STEPS = 8


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    """The fake Gemini; the test fails if it refused any request."""
    for fake in serve(FakeGemini()):
        yield fake
        assert fake.errors == []


@pytest.fixture
def proxy() -> Iterator[Callable[..., str]]:
    """Start proxies (ProxyConfig keywords); gives each one's root URL."""
    served: list[Served] = []

    def start(**config: Any) -> str:
        served.append(Served(create_app(ProxyConfig(**config))))
        return served[-1].url

    yield start
    for one in served:
        one.stop()


def _over_the_window(body: dict[str, Any], api: str, profile: str) -> int:
    """The body's tokens as the library counts them, ungoverned."""
    counted = govern_request(body, api=api, profile=profile, context_window=1 << 40)  # type: ignore[arg-type]
    return counted.report.tokens_before


# ------------------------------------------------------------------ Chat Completions


def _chat_turn(url: str, history: list[dict[str, Any]], stream: bool, use_async: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """One ``litellm.completion`` (or ``acompletion``) call through the proxy: the
    assistant message, as an agent keeps it, and the headers LiteLLM hands back."""
    kwargs: dict[str, Any] = {
        "model": CHAT_MODEL, "api_base": f"{url}/v1", "api_key": KEY, "messages": history,
        "tools": TOOLS, "max_tokens": 300, "stream": stream, "max_retries": 0,
    }  # fmt: skip

    async def run_async() -> Any:
        response = await litellm.acompletion(**kwargs)
        if not stream:
            return response
        chunks = [chunk async for chunk in response]
        return litellm.stream_chunk_builder(chunks, messages=history)

    def run_sync() -> Any:
        response = litellm.completion(**kwargs)
        if not stream:
            return response
        return litellm.stream_chunk_builder(list(response), messages=history)

    response = asyncio.run(run_async()) if use_async else run_sync()
    message = response.choices[0].message
    built: dict[str, Any] = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        built["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.function.name, "arguments": c.function.arguments}}
            for c in message.tool_calls
        ]
    headers = response._hidden_params.get("additional_headers") or {}
    return built, headers


@pytest.mark.parametrize(("stream", "use_async"), [(False, False), (True, False), (False, True), (True, True)])
def test_a_chat_session_through_litellm_outgrows_the_window_and_stays_legal(
    upstream: FakeUpstream, proxy: Callable[..., str], stream: bool, use_async: bool
) -> None:
    """``litellm.completion(model="openai/...", api_base=<proxy>/v1)``: every request the
    fake received fit its window (the fixture fails on any refusal), though the
    history grew past it; LiteLLM hands the report's headers back."""
    upstream.context_window = WINDOW
    url = proxy(upstream=upstream.base_url, context_window=WINDOW)
    upstream.push(*(Reply.calls(("read_file", {"path": f"f{i}.py"})) for i in range(STEPS)), Reply.text("Done."))
    history: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]
    for step in range(STEPS + 1):
        turn, headers = _chat_turn(url, history, stream, use_async)
        history.append(turn)
        if not stream:  # LiteLLM keeps the upstream's headers of a whole answer
            assert int(headers[f"{HEADER}tokens-after"]) <= WINDOW
        if step == STEPS:
            assert turn["content"] == "Done." and "tool_calls" not in turn
            break
        call = turn["tool_calls"][0]
        assert json.loads(call["function"]["arguments"]) == {"path": f"f{step}.py"}
        history.append({"role": "tool", "tool_call_id": call["id"], "content": tool_result_text(step, 1200)})
    assert len(upstream.requests) == STEPS + 1
    assert all(r.get("stream", False) is stream for r in upstream.requests)
    assert _over_the_window({"messages": history[:-1]}, "openai", "openai") > WINDOW
    assert len(upstream.requests[-1]["messages"]) < len(history) - 1  # old turns were cut
    assert upstream.request_headers[-1]["authorization"] == f"Bearer {KEY}"


# ------------------------------------------------------------------ Anthropic Messages


@pytest.mark.parametrize("stream", [False, True])
def test_an_anthropic_session_through_litellm_completion_stays_legal(
    native: FakeNative, proxy: Callable[..., str], stream: bool
) -> None:
    """``litellm.completion(model="anthropic/...", api_base=<proxy root>)``: LiteLLM
    turns the OpenAI-style history into a Messages body, the proxy governs it."""
    native.context_window = WINDOW
    url = proxy(upstream=native.base_url, context_window=WINDOW)
    native.push(*(NativeReply.tool_calls(("read_file", {"path": f"f{i}.py"})) for i in range(STEPS)))
    native.push(NativeReply.answer("Done."))
    history: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]
    for step in range(STEPS + 1):
        response = litellm.completion(
            model=CLAUDE, api_base=url, api_key=KEY, messages=history, tools=TOOLS,
            max_tokens=300, stream=stream,
        )  # fmt: skip
        if stream:
            response = litellm.stream_chunk_builder(list(response), messages=history)
        else:  # the report's headers, as LiteLLM keeps them
            headers = response._hidden_params["additional_headers"]
            assert int(headers[f"{HEADER}tokens-after"]) <= WINDOW
        message = response.choices[0].message
        if step == STEPS:
            assert message.content == "Done."
            break
        call = message.tool_calls[0]
        history.append({"role": "assistant", "content": message.content, "tool_calls": [
            {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": call.function.arguments}}]})  # fmt: skip
        history.append({"role": "tool", "tool_call_id": call.id, "content": tool_result_text(step, 1200)})
    assert native.apis == ["anthropic"] * (STEPS + 1)
    assert all(r.get("stream", False) is stream for r in native.requests)
    assert len(native.requests[-1]["messages"]) < len(history)  # old turns were cut
    assert native.request_headers[-1]["x-api-key"] == KEY


def test_litellm_anthropic_messages_round_trips_tool_use(native: FakeNative, proxy: Callable[..., str]) -> None:
    """``litellm.anthropic.messages.acreate(api_base=<proxy root>)``, the Messages API
    as LiteLLM passes it through: a session of tool_use / tool_result turns."""
    native.context_window = WINDOW
    url = proxy(upstream=native.base_url, context_window=WINDOW)
    native.push(*(NativeReply.tool_calls(("read_file", {"path": f"f{i}.py"})) for i in range(STEPS)))
    native.push(NativeReply.answer("Done."))
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]

    async def turn() -> dict[str, Any]:
        answer = await litellm.anthropic.messages.acreate(
            model=CLAUDE, api_base=url, api_key=KEY, messages=messages, tools=[READ_TOOL], max_tokens=300
        )
        return dict(answer)

    for step in range(STEPS + 1):
        answer = asyncio.run(turn())
        if step == STEPS:
            assert answer["content"][0]["text"] == "Done."
            break
        use = answer["content"][-1]
        assert use["type"] == "tool_use" and use["input"] == {"path": f"f{step}.py"}
        messages.append({"role": "assistant", "content": answer["content"]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": use["id"], "content": tool_result_text(step, 1200)}]})  # fmt: skip
    body = {"model": "claude-sonnet-4-5", "max_tokens": 300, "messages": messages[:-1]}
    assert _over_the_window(body, "anthropic", "anthropic") > WINDOW
    assert len(native.requests[-1]["messages"]) < len(messages)


def test_what_litellm_anthropic_messages_cannot_do(native: FakeNative, proxy: Callable[..., str]) -> None:
    """What docs/proxy.md says of ``litellm.anthropic.messages``, measured: ``create``
    (sync) refuses before sending anything; ``acreate(stream=True)`` sends the request
    (governed as any) and reads the stream only with ``fastapi`` installed (LiteLLM's
    ``[proxy]`` extra imports it)."""
    url = proxy(upstream=native.base_url)
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(ValueError, match="not implemented for sync calls"):
        litellm.anthropic.messages.create(model=CLAUDE, api_base=url, api_key=KEY, messages=messages, max_tokens=50)
    assert native.requests == []
    native.push(NativeReply.answer("streamed"))

    async def stream() -> list[Any]:
        events = await litellm.anthropic.messages.acreate(
            model=CLAUDE, api_base=url, api_key=KEY, messages=messages, max_tokens=50, stream=True
        )
        return [event async for event in events]

    try:
        import fastapi  # noqa: F401
    except ModuleNotFoundError:
        with pytest.raises(ModuleNotFoundError, match="fastapi"):
            asyncio.run(stream())
    else:
        assert asyncio.run(stream())
    assert native.apis == ["anthropic"] and native.requests[0]["stream"] is True


# ------------------------------------------------------------------ Responses


@pytest.mark.parametrize("stream", [False, True])
def test_a_responses_session_through_litellm_stays_legal(
    native: FakeNative, proxy: Callable[..., str], stream: bool
) -> None:
    """``litellm.responses(model="openai/...", api_base=<proxy>/v1)``, function calls
    and their outputs sent back as input items, streamed or not."""
    native.context_window = WINDOW
    url = proxy(upstream=native.base_url, context_window=WINDOW)
    native.push(*(NativeReply.tool_calls(("read_file", {"path": f"f{i}.py"})) for i in range(STEPS)))
    native.push(NativeReply.answer("Done."))
    items: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]
    for step in range(STEPS + 1):
        response = litellm.responses(
            model=GPT, api_base=f"{url}/v1", api_key=KEY, input=items, tools=[RS_TOOL],
            max_output_tokens=300, store=False, stream=stream,
        )  # fmt: skip
        if stream:
            events = list(response)
            assert events[-1].type == "response.completed"
            response = events[-1].response
        else:  # the report's headers, as LiteLLM keeps them
            headers = response._hidden_params["additional_headers"]
            assert int(headers[f"{HEADER}tokens-after"]) <= WINDOW
        output = [item.model_dump(exclude_none=True) if hasattr(item, "model_dump") else dict(item)
                  for item in response.output]  # fmt: skip
        if step == STEPS:
            assert output[-1]["content"][0]["text"] == "Done."
            break
        call = output[-1]
        assert call["type"] == "function_call" and json.loads(call["arguments"]) == {"path": f"f{step}.py"}
        items.append({"type": "function_call", "call_id": call["call_id"], "name": call["name"],
                      "arguments": call["arguments"]})  # fmt: skip
        items.append({"type": "function_call_output", "call_id": call["call_id"],
                      "output": tool_result_text(step, 1400)})  # fmt: skip
    assert native.apis == ["responses"] * (STEPS + 1)
    body = {"model": "gpt-5-mini", "max_output_tokens": 300, "input": items}
    assert _over_the_window(body, "responses", "openai") > WINDOW
    assert len(native.requests[-1]["input"]) < len(items)  # old items were cut
    assert native.request_headers[-1]["authorization"] == f"Bearer {KEY}"


# ------------------------------------------------------------------ Gemini


@pytest.mark.parametrize("stream", [False, True])
def test_a_gemini_session_through_litellm_stays_legal(
    gemini: FakeGemini, proxy: Callable[..., str], stream: bool
) -> None:
    """``litellm.completion(model="gemini/...", api_base=<proxy>/v1beta)``: LiteLLM's
    Gemini provider calls ``:generateContent`` / ``:streamGenerateContent?alt=sse``;
    the fake checks the rules and its 6000-token window on each request."""
    url = proxy(upstream=f"{gemini.base_url}/v1beta", context_window=gemini.window)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Summarise every file."}]
    for step in range(gemini.calls + 1):
        response = litellm.completion(
            model=GEMINI, api_base=f"{url}/v1beta", api_key=KEY, messages=history, tools=TOOLS,
            max_tokens=300, stream=stream,
        )  # fmt: skip
        if stream:
            response = litellm.stream_chunk_builder(list(response), messages=history)
        else:  # LiteLLM's Gemini provider keeps none of the upstream's headers
            assert response._hidden_params["additional_headers"] == {}
        message = response.choices[0].message
        if step == gemini.calls:
            assert message.content == "All files summarised."
            break
        calls = message.tool_calls
        assert [json.loads(c.function.arguments)["path"] for c in calls] == [f"f{step + 1}.txt", f"g{step + 1}.txt"]
        history.append(message.model_dump(exclude_none=True))
        history += [{"role": "tool", "tool_call_id": c.id, "content": tool_result_text(step, 3000)} for c in calls]
    action = "streamGenerateContent" if stream else "generateContent"
    assert gemini.paths == [f"/v1beta/models/gemini-2.5-flash:{action}"] * (gemini.calls + 1)
    assert all(q.get("alt") == (["sse"] if stream else None) for q in gemini.queries)
    parts = [p for c in gemini.bodies[-1]["contents"] for p in c["parts"]]
    results = [p for p in parts if "function_response" in p]  # LiteLLM's spelling, kept
    assert 0 < len(results) < 2 * gemini.calls  # old turns were cut
    assert not any("functionResponse" in p or "functionCall" in p for p in parts)


# ------------------------------------------------------------------ differential


def test_litellm_through_the_proxy_sends_exactly_what_govern_request_makes(
    native: FakeNative, proxy: Callable[..., str]
) -> None:
    """The same LiteLLM call, once straight at the fake and once through the proxy: the
    second body is govern_request's output for the first (the proxy adds nothing)."""
    window = 3_000
    url = proxy(upstream=native.base_url, context_window=window)
    items: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read every file."}]
    for step in range(6):
        call_id = f"call_{step:03d}"
        items += [
            {"type": "function_call", "call_id": call_id, "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": call_id, "output": tool_result_text(step, 1200)},
        ]  # fmt: skip
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": call_id, "content": tool_result_text(step, 1200)},
        ]  # fmt: skip
    sent: dict[str, list[dict[str, Any]]] = {}
    for base, name in ((native.root_url, "direct"), (url, "proxied")):
        native.push(NativeReply.answer("ok"), NativeReply.answer("ok"))
        litellm.responses(model=GPT, api_base=f"{base}/v1", api_key=KEY, input=items, tools=[RS_TOOL],
                          max_output_tokens=300, store=False)  # fmt: skip
        litellm.completion(model=CLAUDE, api_base=base, api_key=KEY, messages=messages, tools=TOOLS, max_tokens=300)
        sent[name] = native.requests[-2:]
    for api, direct, proxied in zip(("responses", "anthropic"), sent["direct"], sent["proxied"], strict=True):
        profile = "openai" if api == "responses" else "anthropic"
        expected = govern_request(direct, api=api, profile=profile, context_window=window)  # type: ignore[arg-type]
        assert expected.report.actions, f"{api}: nothing was cut, the test proves nothing"
        assert encode(proxied) == encode(expected.body)


# ------------------------------------------------------------------ base URLs and errors


@pytest.mark.parametrize(
    ("api", "suffix", "works"),
    [
        ("chat", "/v1", True),
        ("chat", "", False),
        ("anthropic", "", True),
        ("anthropic", "/v1/messages", True),
        ("anthropic", "/v1", False),  # LiteLLM adds /v1/messages: /v1/v1/messages
        ("responses", "/v1", True),
        ("responses", "", False),
        ("gemini", "/v1beta", True),
        ("gemini", "", False),  # LiteLLM calls /models/...: no such route on the proxy
    ],
)
def test_the_api_base_each_litellm_api_needs(
    upstream: FakeUpstream,
    native: FakeNative,
    gemini: FakeGemini,
    proxy: Callable[..., str],
    api: str,
    suffix: str,
    works: bool,
) -> None:
    """What docs/proxy.md says of each API's ``api_base``, measured: the proxy's root for
    Anthropic (LiteLLM adds ``/v1/messages``), the root plus ``/v1`` for the OpenAI APIs
    (LiteLLM adds ``/chat/completions``, ``/responses``)."""
    if api == "gemini":
        gemini.calls = 0  # a text answer
        url = proxy(upstream=f"{gemini.base_url}/v1beta")
        base = url + suffix
        if works:
            answer = litellm.completion(model=GEMINI, api_base=base, api_key=KEY,
                                        messages=[{"role": "user", "content": "hi"}])  # fmt: skip
            assert answer.choices[0].message.content == "All files summarised."
        else:
            with pytest.raises(litellm.NotFoundError):
                litellm.completion(model=GEMINI, api_base=base, api_key=KEY,
                                   messages=[{"role": "user", "content": "hi"}])  # fmt: skip
            assert gemini.paths == []
        return
    fake = upstream if api == "chat" else native
    url = proxy(upstream=fake.base_url)
    if works:
        fake.push(Reply.text("hi") if api == "chat" else NativeReply.answer("hi"))  # type: ignore[arg-type]
    base = url + suffix

    def call() -> str:
        if api == "chat":
            answer = litellm.completion(model=CHAT_MODEL, api_base=base, api_key=KEY, max_retries=0,
                                        messages=[{"role": "user", "content": "hi"}])  # fmt: skip
            return str(answer.choices[0].message.content)
        if api == "anthropic":
            answer = litellm.completion(model=CLAUDE, api_base=base, api_key=KEY, max_tokens=50,
                                        messages=[{"role": "user", "content": "hi"}])  # fmt: skip
            return str(answer.choices[0].message.content)
        response = litellm.responses(model=GPT, api_base=base, api_key=KEY, input="hi")
        return str(response.output[0].content[0].text)  # type: ignore[union-attr]

    if works:
        assert call() == "hi"
    else:
        with pytest.raises(litellm.NotFoundError):
            call()
        governed = [t for t in fake.targets if t in ("/v1/chat/completions", "/v1/messages", "/v1/responses")]
        assert governed == []


def test_the_proxys_errors_reach_litellm_with_our_message(
    upstream: FakeUpstream, native: FakeNative, proxy: Callable[..., str]
) -> None:
    """A body over ``--max-body`` is refused in each API's shape; LiteLLM raises its usual
    exception carrying our message. A stream the upstream breaks off raises too,
    instead of passing for a finished answer."""
    chat = proxy(upstream=upstream.base_url, limits=LimitsConfig(max_body_bytes=5_000))
    messages = [{"role": "user", "content": "x" * 6_000}]
    with pytest.raises(litellm.APIError, match="larger than the proxy's limit") as raised:
        litellm.completion(model=CHAT_MODEL, api_base=f"{chat}/v1", api_key=KEY, messages=messages, max_retries=0)
    assert raised.value.status_code == 413
    url = proxy(upstream=native.base_url, limits=LimitsConfig(max_body_bytes=5_000))
    with pytest.raises(litellm.BadRequestError, match="larger than the proxy's limit"):
        litellm.completion(model=CLAUDE, api_base=url, api_key=KEY, messages=messages, max_tokens=50)
    with pytest.raises(litellm.BadRequestError, match="larger than the proxy's limit"):
        litellm.responses(model=GPT, api_base=f"{url}/v1", api_key=KEY, input="x" * 6_000)
    assert upstream.requests == [] and native.requests == []

    cut = Reply.text("a long answer streamed in many small pieces")
    cut.cut_after = 2
    upstream.push(cut)
    with pytest.raises(MidStreamFallbackError, match="broke off the stream"):
        for _ in litellm.completion(model=CHAT_MODEL, api_base=f"{chat}/v1", api_key=KEY, stream=True,
                                    messages=[{"role": "user", "content": "hi"}], max_retries=0):  # fmt: skip
            pass
    for api in ("anthropic", "responses"):
        reply = NativeReply.answer("a long answer streamed in many small pieces")
        reply.cut_after = 3
        native.push(reply)
        with pytest.raises(MidStreamFallbackError, match="broke off the stream"):
            if api == "anthropic":
                stream = litellm.completion(model=CLAUDE, api_base=url, api_key=KEY, max_tokens=50, stream=True,
                                            messages=[{"role": "user", "content": "hi"}])  # fmt: skip
            else:
                stream = litellm.responses(model=GPT, api_base=f"{url}/v1", api_key=KEY, input="hi", stream=True)
            for _ in stream:
                pass
    assert [end for _, end in native.stream_ends] == ["cut", "cut"]
