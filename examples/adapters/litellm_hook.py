"""LiteLLM with a governing hook: an agent loop whose history outgrows the window.

Every ``litellm.acompletion`` call is governed for the provider LiteLLM routes the
model to, with the window from LiteLLM's model info (here overridden to a small
one, so that the six long tool results soon outgrow it). The loop's own
``messages`` list keeps everything. It talks to an OpenAI-compatible server:
OPENAI_BASE_URL and OPENAI_API_KEY (the tests point it at a local fake server).
"""

import asyncio
import json
import os

import litellm

from context_governor import Report
from context_governor.adapters.litellm import ContextGovernorHook


def show(report: Report) -> None:
    before, after = report.tokens_before, report.tokens_after
    print(f"{report.profile}: {before:,} -> {after:,} tokens (budget {report.budget:,})")


litellm.callbacks = [ContextGovernorHook(context_window=4_000, on_report=show)]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the project.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def read_file(path: str) -> str:
    return "\n".join(f"{path}:{n}: value_{n} = compute({n})" for n in range(60))


async def main() -> None:
    messages: list = [{"role": "user", "content": "Find the bug in the m files."}]
    while True:
        response = await litellm.acompletion(
            model="openai/gpt-4o-mini",
            messages=messages,
            tools=TOOLS,
            max_tokens=500,
            api_base=os.environ["OPENAI_BASE_URL"],
            api_key=os.environ["OPENAI_API_KEY"],
            litellm_session_id="bug-42",  # one Governor per session
        )
        message = response.choices[0].message
        messages.append(message)
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            path = json.loads(call.function.arguments)["path"]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": read_file(path)})
    print(f"history: {len(messages)} messages, none cut")
    print("answer:", message.content)


asyncio.run(main())
