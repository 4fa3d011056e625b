"""The real ``openai`` SDK talks to the fake upstream: proof that the fake speaks the
real protocol (so the end-to-end tests against it mean something), and that a
runner can drive an SDK-based model client as well as ours."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from fake_upstream import FakeUpstream, Reply
from openai import AsyncOpenAI

from context_governor import Governor
from context_governor.llm import ModelResponse, StreamAssembler, TextCallback, Usage
from context_governor.llm._base import assistant_message
from context_governor.runner import AgentRunner

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
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "read a.py"},
]


def _sdk(upstream: FakeUpstream) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=upstream.base_url, api_key="sk-sdk", max_retries=0)


@pytest.mark.asyncio
async def test_sdk_parses_a_tool_call_completion(upstream: FakeUpstream) -> None:
    upstream.push(Reply.calls(("read_file", {"path": "a.py"}), content="Reading."))
    async with _sdk(upstream) as client:
        completion = await client.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, max_tokens=100
        )
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Reading."
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_fake") and call.function.name == "read_file"
    assert json.loads(call.function.arguments) == {"path": "a.py"}
    assert completion.usage is not None and completion.usage.prompt_tokens > 0
    assert upstream.requests[0]["max_tokens"] == 100
    assert upstream.request_headers[0]["authorization"] == "Bearer sk-sdk"


@pytest.mark.asyncio
async def test_sdk_stream_matches_our_assembler(upstream: FakeUpstream) -> None:
    upstream.push(Reply.calls(("read_file", {"path": "src/a_rather_long_name.py"}), content="Let me look."))
    assembler = StreamAssembler()
    texts: list[str] = []
    async with _sdk(upstream) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=MESSAGES,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        sdk_args = ""
        async for chunk in stream:
            texts.append(assembler.feed(chunk.model_dump()))
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or []:
                    sdk_args += (delta.function and delta.function.arguments) or ""
    response = assembler.response()
    assert "".join(texts) == "Let me look." == response.text
    assert response.tool_calls[0]["function"]["arguments"] == sdk_args
    assert json.loads(sdk_args) == {"path": "src/a_rather_long_name.py"}
    assert response.finish_reason == "tool_calls" and response.usage.completion_tokens == 7


class SDKModel:
    """A ModelClient on top of the openai SDK: the runner needs nothing more."""

    def __init__(self, client: AsyncOpenAI, model: str) -> None:
        self.client = client
        self.model = model

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        on_text: TextCallback | None = None,
    ) -> ModelResponse:
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            kwargs["tools"] = list(tools)
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        completion = await self.client.chat.completions.create(**kwargs)
        message = completion.choices[0].message.model_dump()
        usage = Usage.from_openai(completion.usage.model_dump() if completion.usage else None)
        built = assistant_message(message.get("content"), message.get("tool_calls") or [])
        return ModelResponse(built, usage, completion.choices[0].finish_reason, completion.model)


class EchoTools:
    def schemas(self) -> list[dict[str, Any]]:
        return TOOLS

    async def call(self, name: str, arguments: Any, **kwargs: Any) -> Any:
        class Out:
            content = f"contents of {json.loads(arguments)['path']}"
            is_error = False

        return Out()


@pytest.mark.asyncio
async def test_runner_drives_an_sdk_based_client(upstream: FakeUpstream) -> None:
    upstream.push(Reply.calls(("read_file", {"path": "a.py"})), Reply.text("a.py is fine."))
    history = [*MESSAGES, {"role": "tool", "tool_call_id": "stale", "content": "orphan"}]
    async with _sdk(upstream) as client:
        runner = AgentRunner(SDKModel(client, "gpt-4o-mini"), EchoTools(), Governor(max_output=256))
        result = await runner.run(history)
    assert result.final_answer == "a.py is fine."
    assert upstream.requests[1]["messages"][-1]["content"] == "contents of a.py"
    assert result.reports[0].counts()[("orphans", "drop")] == 1
