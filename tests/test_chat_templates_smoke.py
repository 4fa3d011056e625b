"""Smoke tests for the real open-weight chat templates in ``chat_templates``.

Each family renders a plain valid conversation to the exact string its model was
trained on, and refuses at least one known-bad input the way vLLM/TGI would (a
``jinja2.TemplateError`` from the template's own ``raise_exception``, or, for the
Qwen templates, which never call it, the ``TypeError`` that a ``None`` content
causes).
"""

from __future__ import annotations

from typing import Any

import pytest
from chat_templates import FAMILIES, TemplateError, load_templates, render

Message = dict[str, Any]


def u(content: Any = "hi") -> Message:
    return {"role": "user", "content": content}


def a(content: Any = "yo", **extra: Any) -> Message:
    return {"role": "assistant", "content": content, **extra}


def s(content: Any = "S") -> Message:
    return {"role": "system", "content": content}


def call(id: str = "abcdefghi", arguments: Any = None) -> dict[str, Any]:
    args = {"city": "Paris"} if arguments is None else arguments
    return {"id": id, "type": "function", "function": {"name": "get_weather", "arguments": args}}


def tool(content: str = "sunny", id: str = "abcdefghi") -> Message:
    return {"role": "tool", "tool_call_id": id, "content": content}


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

LLAMA3_HEAD = (
    "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
)
LLAMA3_TAIL = (
    "S<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\nyo<|eot_id|>"
    "<|start_header_id|>user<|end_header_id|>\n\nq<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)
CHATML = (
    "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
    "<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>user\nq<|im_end|>\n"
    "<|im_start|>assistant\n"
)
GEMMA_TURNS = (
    "hi<end_of_turn>\n<start_of_turn>model\nyo<end_of_turn>\n"
    "<start_of_turn>user\nq<end_of_turn>\n<start_of_turn>model\n"
)

# family -> (valid conversation, exact rendering with add_generation_prompt=True)
VALID: dict[str, tuple[list[Message], str]] = {
    "llama2": (
        [s(), u(), a(), u("q")],
        "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nhi [/INST] yo </s><s>[INST] q [/INST]",
    ),
    # v0.3 puts the system message in front of the *last* user message.
    "mistral": ([s(), u(), a(), u("q")], "<s>[INST] hi[/INST] yo</s>[INST] S\n\nq[/INST]"),
    "mistral_v02": ([s(), u(), a(), u("q")], "<s> [INST] S\n\nhi [/INST] yo</s> [INST] q [/INST]"),
    "gemma": ([u(), a(), u("q")], "<bos><start_of_turn>user\n" + GEMMA_TURNS),
    "gemma3": ([s(), u(), a(), u("q")], "<bos><start_of_turn>user\nS\n\n" + GEMMA_TURNS),
    "llama3": ([s(), u(), a(), u("q")], LLAMA3_HEAD + LLAMA3_TAIL),
    "llama3_2": ([s(), u(), a(), u("q")], LLAMA3_HEAD + LLAMA3_TAIL),
    "qwen": ([s(), u(), a(), u("q")], CHATML),
    "qwen3": ([s(), u(), a(), u("q")], CHATML),
    "qwen3_2507": ([s(), u(), a(), u("q")], CHATML),
}

# family -> (bad conversation, tools, exception type, message fragment)
BAD: dict[str, list[tuple[list[Message], Any, type[Exception], str]]] = {
    "llama2": [
        (
            [u(), u("q")],
            None,
            TemplateError,
            "Conversation roles must alternate user/assistant/user/assistant/...",
        ),
        ([s(), a(), u()], None, TemplateError, "Conversation roles must alternate"),
    ],
    "mistral": [
        (
            [u(), u("q")],
            None,
            TemplateError,
            "After the optional system message, conversation roles must alternate",
        ),
        (
            [
                u(),
                a(None, tool_calls=[call("call_abc123def456")]),
                tool(id="call_abc123def456"),
                a("ok"),
            ],
            TOOLS,
            TemplateError,
            "Tool call IDs should be alphanumeric strings with length 9!",
        ),
        # After tool results the next counted turn must be an assistant's.
        (
            [u(), a(None, tool_calls=[call()]), tool(), u("q")],
            TOOLS,
            TemplateError,
            "conversation roles must alternate",
        ),
    ],
    "mistral_v02": [
        (
            [u(), u("q")],
            None,
            TemplateError,
            "After the optional system message, conversation roles must alternate",
        ),
        (
            [u(), tool()],
            None,
            TemplateError,
            "Only user and assistant roles are supported, with the exception of an initial optional system message!",
        ),
    ],
    "gemma": [
        ([s(), u()], None, TemplateError, "System role not supported"),
        (
            [u(), u("q")],
            None,
            TemplateError,
            "Conversation roles must alternate user/assistant/user/assistant/...",
        ),
    ],
    "gemma3": [
        (
            [u(), u("q")],
            None,
            TemplateError,
            "Conversation roles must alternate user/assistant/user/assistant/...",
        ),
        ([u(), a(None), u("q")], None, TemplateError, "Invalid content type"),
    ],
    "llama3": [
        (
            [u(), a(None, tool_calls=[call(), call("bcdefghij")]), tool(), tool(id="bcdefghij")],
            TOOLS,
            TemplateError,
            "This model only supports single tool-calls at once!",
        ),
        (
            [s()],
            TOOLS,
            TemplateError,
            "Cannot put tools in the first user message when there's no first user message!",
        ),
    ],
    "llama3_2": [
        (
            [u(), a(None, tool_calls=[call(), call("bcdefghij")])],
            TOOLS,
            TemplateError,
            "This model only supports single tool-calls at once!",
        ),
    ],
    # The Qwen templates never call raise_exception; None content breaks `+` instead.
    "qwen": [([u(), a(None), u("q")], None, TypeError, "can only concatenate str")],
    "qwen3": [([s(None), u()], None, TypeError, "can only concatenate str")],
    "qwen3_2507": [([s(None), u()], None, TypeError, "can only concatenate str")],
}


def test_every_family_is_loaded_from_the_installed_package() -> None:
    templates = load_templates()
    assert set(templates) == set(FAMILIES) == set(VALID) == set(BAD)
    assert {"llama2", "mistral", "gemma", "llama3", "qwen"} <= set(templates)
    assert all(src.strip() for src in templates.values())


@pytest.mark.parametrize("family", sorted(VALID))
def test_valid_conversation_renders_exactly(family: str) -> None:
    messages, expected = VALID[family]
    assert render(family, messages, date_string="26 Jul 2024") == expected


@pytest.mark.parametrize("family", sorted(VALID))
def test_rendering_does_not_touch_the_messages(family: str) -> None:
    messages, _ = VALID[family]
    before = repr(messages)
    render(family, messages, add_generation_prompt=False, date_string="26 Jul 2024")
    assert repr(messages) == before


@pytest.mark.parametrize(
    ("family", "case"), [(f, i) for f in sorted(BAD) for i in range(len(BAD[f]))]
)
def test_known_bad_input_raises(family: str, case: int) -> None:
    messages, tools, exc, fragment = BAD[family][case]
    with pytest.raises(exc) as info:
        render(family, messages, tools=tools)
    assert fragment in str(info.value)


def tool_round() -> list[Message]:
    return [
        s(),
        u("weather?"),
        a(None, tool_calls=[call()]),
        tool(),
        a("It is sunny."),
        u("thanks"),
    ]


@pytest.mark.parametrize(
    ("family", "markers"),
    [
        (
            "mistral",
            [
                "[AVAILABLE_TOOLS]",
                '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]</s>',
                '[TOOL_RESULTS] {"content": sunny, "call_id": "abcdefghi"}[/TOOL_RESULTS]',
            ],
        ),
        (
            "llama3",
            [
                '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>',
                '<|start_header_id|>ipython<|end_header_id|>\n\n"sunny"<|eot_id|>',
            ],
        ),
        ("llama3_2", ['{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>']),
        (
            "qwen",
            [
                '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
                "<|im_start|>user\n<tool_response>\nsunny\n</tool_response><|im_end|>",
            ],
        ),
        (
            "qwen3",
            [
                '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
                "<tool_response>\nsunny\n</tool_response>",
            ],
        ),
        (
            "qwen3_2507",
            [
                '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
                "<tool_response>\nsunny\n</tool_response>",
            ],
        ),
    ],
)
def test_tool_calling_round_renders(family: str, markers: list[str]) -> None:
    out = render(family, tool_round(), tools=TOOLS, date_string="26 Jul 2024")
    for marker in markers:
        assert marker in out


def test_tojson_is_transformers_not_jinja() -> None:
    # Jinja's own tojson would HTML-escape '<' and '&'; transformers' does not.
    out = render(
        "qwen",
        [u()],
        tools=[{"type": "function", "function": {"name": "f", "description": "a<b & c"}}],
    )
    assert '"description": "a<b & c"' in out
