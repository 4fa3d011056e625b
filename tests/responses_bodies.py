"""Hypothesis strategies for OpenAI Responses request bodies.

Two families, as for Messages (anthropic_bodies.py):

* ``wild_bodies``: anything whose shape the edge can read, legal for the API or not
  (items of every kind in any order, unknown item types, unknown fields on the
  body, on items and on content parts, arguments that are not JSON). What the round trip
  must survive.
* ``sessions``: agent sessions the API accepts (every call answered after it,
  reasoning followed by its item, unique ids, call ids of at most 64 characters):
  parallel calls, custom tools, hosted tools, encrypted reasoning and unknown
  items, long enough to be cut and compacted at a small window. What governance
  must keep legal.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from images import png_b64

WORDS = ["alpha", "beta", "file", "read", "the", "tool", "résumé", "数据", "ok", "line\n", "{x}"]
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
long_words = st.lists(st.sampled_from(WORDS), min_size=40, max_size=400).map(" ".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | words,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(words, inner, max_size=2),
    max_leaves=4,
)
extra_fields = st.dictionaries(
    st.sampled_from(["x_future", "meta", "client_state"]), json_values, max_size=2
)
secrets = st.binary(min_size=8, max_size=48).map(lambda b: b.hex())


def _with(extra: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    return {**item, **extra}


input_text = st.builds(
    lambda t, x: _with(x, {"type": "input_text", "text": t}), words, extra_fields
)
input_image = st.builds(
    lambda d: {"type": "input_image", "image_url": f"data:image/png;base64,{d}", "detail": "auto"},
    st.builds(png_b64, st.integers(1, 48), st.integers(1, 48), st.binary(max_size=24)),
)
input_file = st.builds(
    lambda d: {"type": "input_file", "filename": "notes.txt", "file_data": d}, secrets
)
output_text = st.builds(
    lambda t, x: _with(x, {"type": "output_text", "text": t, "annotations": []}),
    words,
    extra_fields,
)
unknown_part = st.builds(lambda p: {"type": "future_part", "payload": p}, json_values)
user_content = st.one_of(
    words, st.lists(st.one_of(input_text, input_image, input_file, unknown_part), min_size=1,
                    max_size=3)
)  # fmt: skip


def message(role: str, n: int) -> st.SearchStrategy[dict[str, Any]]:
    if role == "assistant":
        return st.builds(
            lambda parts, x, typed: _with(
                x,
                ({"type": "message"} if typed else {})
                | {
                    "id": f"msg_{n:05d}",
                    "role": "assistant",
                    "status": "completed",
                    "content": parts,
                },
            ),
            st.lists(output_text, min_size=1, max_size=2),
            extra_fields,
            st.booleans(),
        )
    return st.builds(
        lambda c, x, typed: _with(x, ({"type": "message"} if typed else {}) | {"role": role,
                                                                              "content": c}),
        user_content,
        extra_fields,
        st.booleans(),
    )  # fmt: skip


def reasoning(n: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda summary, enc, x: _with(
            x,
            {"type": "reasoning", "id": f"rs_{n:05d}",
             "summary": [{"type": "summary_text", "text": s} for s in summary]}
            | ({"encrypted_content": enc} if enc is not None else {}),
        ),
        st.lists(words, max_size=2),
        st.none() | secrets,
        extra_fields,
    )  # fmt: skip


def function_call(call_id: Any, n: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda name, args, x: _with(
            x,
            {"type": "function_call", "id": f"fc_{n:05d}", "call_id": call_id, "name": name,
             "arguments": args, "status": "completed"},
        ),
        st.sampled_from(["read_file", "exec", "grep"]),
        st.sampled_from(['{"path": "a.txt"}', '{"cmd": "ls -la"}', "{}", '{"q": "x"}']),
        extra_fields,
    )  # fmt: skip


def custom_call(call_id: Any, n: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda text, x: _with(
            x, {"type": "custom_tool_call", "id": f"ctc_{n:05d}", "call_id": call_id,
                "name": "apply_patch", "input": text},
        ),
        words,
        extra_fields,
    )  # fmt: skip


def output(call_id: Any, kind: str, big: bool) -> st.SearchStrategy[dict[str, Any]]:
    body = long_words if big else words
    content = st.one_of(
        body, st.lists(st.one_of(body.map(lambda t: {"type": "input_text", "text": t}),
                                 input_image), min_size=1, max_size=2)
    )  # fmt: skip
    return st.builds(
        lambda c, x: _with(x, {"type": kind, "call_id": call_id, "output": c}),
        content,
        extra_fields,
    )


def hosted(n: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Items of hosted tools the model ran itself (results inside), or a computer call
    and the output the client sent for it."""
    return st.sampled_from(
        [
            [{"type": "web_search_call", "id": f"ws_{n:05d}", "status": "completed",
              "action": {"type": "search", "query": "weather"}}],
            [{"type": "file_search_call", "id": f"fs_{n:05d}", "status": "completed",
              "queries": ["notes"], "results": None}],
            [{"type": "image_generation_call", "id": f"ig_{n:05d}", "status": "completed",
              "result": "aGVsbG8="}],
            [{"type": "mcp_call", "id": f"mcp_{n:05d}", "server_label": "docs",
              "name": "lookup", "arguments": "{}", "output": "found"}],
            [{"type": "computer_call", "id": f"cu_{n:05d}", "call_id": f"call_cu{n}",
              "action": {"type": "screenshot"}, "pending_safety_checks": [],
              "status": "completed"},
             {"type": "computer_call_output", "call_id": f"call_cu{n}",
              "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64," + png_b64()}}],
            [{"type": "local_shell_call", "id": f"ls_{n:05d}", "call_id": f"call_ls{n}",
              "action": {"type": "exec", "command": ["ls"], "env": {}}, "status": "completed"},
             {"type": "local_shell_call_output", "id": f"call_ls{n}", "output": "a.txt"}],
            [{"type": "future_item", "id": f"fut_{n:05d}", "payload": {"k": [1, 2]}}],
        ]
    )  # fmt: skip


# -- wild bodies: for the round trip -----------------------------------------------------------

wild_item = st.one_of(
    message("user", 1),
    message("assistant", 2),
    message("developer", 3),
    message("system", 4),
    st.builds(lambda c: {"type": "message", "role": "future_role", "content": c}, user_content),
    reasoning(5),
    function_call("call_w1", 6),
    function_call("c" * 70, 7),
    custom_call("call_w2", 8),
    output("call_w1", "function_call_output", big=False),
    output("call_w9", "function_call_output", big=False),
    output("call_w2", "custom_tool_call_output", big=False),
    hosted(9).map(lambda items: items[0]),
    st.just({"type": "item_reference", "id": "msg_stored"}),
    st.builds(lambda v: {"type": "function_call", "call_id": v, "name": "read",
                         "arguments": v}, words),
    st.builds(lambda k, p: {"type": k, "payload": p}, st.sampled_from(["future_item", "x"]),
              json_values),
)  # fmt: skip


@st.composite
def wild_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"model": draw(st.sampled_from(["gpt-5", "o4-mini", "gpt-4.1"]))}
    if draw(st.booleans()):
        body["instructions"] = draw(st.one_of(words, st.just("")))
    body["input"] = draw(st.one_of(words, st.lists(wild_item, max_size=10)))
    if draw(st.booleans()):
        body["max_output_tokens"] = draw(st.integers(1, 4096))
    if draw(st.integers(0, 3)) == 0:
        body["previous_response_id"] = "resp_prev"
    if draw(st.booleans()):
        body["tools"] = [
            {"type": "function", "name": "read_file", "parameters": {"type": "object"}},
            {"type": "custom", "name": "apply_patch"},
            {"type": "web_search"},
        ]
    body.update(
        draw(st.dictionaries(st.sampled_from(["store", "x_new_setting", "include"]), json_values))
    )
    return body


# -- legal sessions: for governance ------------------------------------------------------------


@st.composite
def sessions(
    draw: st.DrawFn,
    *,
    min_turns: int = 1,
    max_turns: int = 8,
    big: bool = True,
    long_ids: bool = False,
) -> dict[str, Any]:
    """A legal agent session: user, then steps that reason, call tools (in parallel,
    custom, hosted) and get their outputs, with follow-up user messages.
    ``long_ids``: some call ids are over the API's 64 characters (to be repaired)."""
    counter = iter(range(100_000))
    items: list[dict[str, Any]] = [draw(message("user", next(counter)))]
    for _ in range(draw(st.integers(min_turns, max_turns))):
        step: list[dict[str, Any]] = []
        answers: list[dict[str, Any]] = []
        if draw(st.booleans()):
            step.append(draw(reasoning(next(counter))))
        if draw(st.integers(0, 4)) == 0:
            step += draw(hosted(next(counter)))
            if draw(st.booleans()):
                step.append(draw(reasoning(next(counter))))
        calls = draw(st.integers(0, 3))
        for _ in range(calls):
            n = next(counter)
            pad = draw(st.sampled_from([0, 0, 0, 60 if long_ids else 40]))
            call_id = f"call_{n:05d}" + "x" * pad
            if draw(st.integers(0, 3)) == 0:
                step.append(draw(custom_call(call_id, n)))
                answers.append(draw(output(call_id, "custom_tool_call_output", big)))
            else:
                step.append(draw(function_call(call_id, n)))
                answers.append(draw(output(call_id, "function_call_output", big)))
        if not calls or draw(st.integers(0, 3)) == 0:
            step.insert(len(step) - calls, draw(message("assistant", next(counter))))
        items += step
        items += answers
        if not calls or draw(st.integers(0, 2)) == 0:
            items.append(draw(message("user", next(counter))))
    body: dict[str, Any] = {
        "model": "gpt-5",
        "instructions": draw(words),
        "input": items,
        "max_output_tokens": 256,
        "tools": [
            {"type": "function", "name": "read_file", "parameters": {"type": "object"}},
            {"type": "custom", "name": "apply_patch"},
        ],
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    return body
