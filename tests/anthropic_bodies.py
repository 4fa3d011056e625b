"""Hypothesis strategies for Anthropic Messages request bodies.

Two families:

* ``wild_bodies``: anything whose shape the edge can read, legal for the API or not
  (roles in any order, unknown roles, blocks of every kind in any order, unknown
  block types and fields at every level). What the round trip must survive.
* ``sessions``: agent sessions the API accepts (tool use answered in the next turn,
  thinking first, unique ids, at most 4 breakpoints...), long enough to be cut and
  compacted at a small window. What governance must keep legal.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from images import png_b64

WORDS = ["alpha", "beta", "file", "read", "the", "tool", "résumé", "数据", "ok", "line\n", "{x}"]
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=12).map(" ".join)
long_words = st.lists(st.sampled_from(WORDS), min_size=20, max_size=400).map(" ".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | words,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(words, inner, max_size=2),
    max_leaves=4,
)
extra_fields = st.dictionaries(
    st.sampled_from(["x_future", "meta", "client_state"]), json_values, max_size=2
)
CACHE = {"type": "ephemeral"}
signatures = st.binary(min_size=8, max_size=24).map(lambda b: b.hex())


def _with(extra: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    return {**block, **extra}


text_block = st.builds(
    lambda t, extra, cite: _with(
        extra,
        {"type": "text", "text": t}
        | (
            {
                "citations": [
                    {
                        "type": "char_location",
                        "cited_text": t,
                        "document_index": 0,
                        "start_char_index": 0,
                        "end_char_index": len(t),
                    }
                ]
            }
            if cite
            else {}
        ),
    ),
    words,
    extra_fields,
    st.booleans(),
)
image_block = st.builds(
    lambda data, extra: _with(
        extra,
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
    ),
    st.builds(png_b64, st.integers(1, 48), st.integers(1, 48), st.binary(max_size=24)),
    extra_fields,
)
document_block = st.builds(
    lambda t, extra: _with(
        extra,
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": t},
            "title": "notes",
            "citations": {"enabled": True},
        },
    ),
    words,
    extra_fields,
)
unknown_block = st.builds(
    lambda kind, payload: {"type": kind, "payload": payload},
    st.sampled_from(["future_block", "mcp_tool_use", "container_upload"]),
    json_values,
)
thinking_block = st.one_of(
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, words, signatures),
    st.builds(lambda s: {"type": "redacted_thinking", "data": s}, signatures),
)
user_blocks = st.one_of(text_block, image_block, document_block, unknown_block)


def server_tool(n: int) -> st.SearchStrategy[list[dict[str, Any]]]:
    """A server tool call and its result block (both in the assistant message)."""
    sid = f"srvtoolu_{n:04d}"
    return st.builds(
        lambda q, enc: [
            {"type": "server_tool_use", "id": sid, "name": "web_search", "input": {"query": q}},
            {
                "type": "web_search_tool_result",
                "tool_use_id": sid,
                "content": [
                    {
                        "type": "web_search_result",
                        "url": "https://example.com",
                        "title": q,
                        "encrypted_content": enc,
                    }
                ],
            },
        ],
        words,
        signatures,
    )


def tool_use(call_id: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda name, args, extra: _with(
            extra, {"type": "tool_use", "id": call_id, "name": name, "input": args}
        ),
        st.sampled_from(["read", "bash", "grep"]),
        st.dictionaries(st.sampled_from(["path", "cmd", "n"]), json_values, max_size=3),
        extra_fields,
    )


def tool_result(call_id: str, big: bool) -> st.SearchStrategy[dict[str, Any]]:
    body = long_words if big else words
    content = st.one_of(
        body,
        st.lists(
            st.one_of(body.map(lambda t: {"type": "text", "text": t}), image_block),
            min_size=1,
            max_size=2,
        ),
    )
    return st.builds(
        lambda c, err, extra: _with(
            extra,
            {"type": "tool_result", "tool_use_id": call_id, "content": c}
            | ({"is_error": err} if err is not None else {}),
        ),
        content,
        st.none() | st.booleans(),
        extra_fields,
    )


# -- wild bodies: for the round trip -----------------------------------------------------------

any_block = st.one_of(
    user_blocks,
    thinking_block,
    tool_use("toolu_w1"),
    tool_result("toolu_w1", big=False),
    server_tool(0).map(lambda pair: pair[0]),
    server_tool(1).map(lambda pair: pair[1]),
    st.builds(lambda b: {**b, "cache_control": CACHE}, text_block),
    st.builds(lambda t: {"type": "tool_result", "tool_use_id": t}, st.just("toolu_w2")),
    # ids of any JSON type, as a broken client might send them
    st.builds(lambda v: {"type": "tool_use", "id": v, "name": "read", "input": {}}, json_values),
    st.builds(lambda v: {"type": "tool_result", "tool_use_id": v, "content": "r"}, json_values),
)
wild_content = st.one_of(words, st.just(""), st.lists(any_block, max_size=5))
wild_message = st.builds(
    lambda role, content, extra: {"role": role, "content": content, **extra},
    st.sampled_from(["user", "assistant", "user", "assistant", "future_role", "developer"]),
    wild_content,
    extra_fields,
)
systems = st.one_of(
    st.just(None),
    words,
    st.just(""),
    st.lists(
        text_block | st.builds(lambda b: {**b, "cache_control": CACHE}, text_block), max_size=2
    ),
)


@st.composite
def wild_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"model": draw(st.sampled_from(["claude-sonnet-4-5", "glm-4.6"]))}
    body["max_tokens"] = draw(st.integers(1, 4096))
    system = draw(systems)
    if system is not None:
        body["system"] = system
    body["messages"] = draw(st.lists(wild_message, max_size=8))
    if draw(st.booleans()):
        body["thinking"] = draw(
            st.sampled_from(
                [
                    {"type": "enabled", "budget_tokens": 1024},
                    {"type": "disabled"},
                    {"type": "adaptive"},
                ]
            )
        )
    if draw(st.booleans()):
        body["tools"] = [
            {"name": "read", "description": "read a file", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
        ]
    body.update(draw(st.dictionaries(st.sampled_from(["metadata", "x_new_setting"]), json_values)))
    return body


# -- legal sessions: for governance ------------------------------------------------------------


@st.composite
def sessions(
    draw: st.DrawFn,
    *,
    thinking: bool,
    min_turns: int = 1,
    max_turns: int = 8,
    big: bool = True,
    opaque: bool = True,
) -> dict[str, Any]:
    """A legal agent session: user, then assistant turns that call tools and get results.
    ``opaque=False``: no message-level unknown fields or unknown-role messages."""
    counter = iter(range(10_000))
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": draw(st.one_of(words, st.lists(user_blocks, min_size=1, max_size=3))),
        }
    ]
    for _ in range(draw(st.integers(min_turns, max_turns))):
        blocks: list[dict[str, Any]] = []
        if thinking or draw(st.integers(0, 3)) == 0:
            blocks += draw(st.lists(thinking_block, min_size=1, max_size=2))
        blocks += draw(st.lists(text_block, max_size=1))
        if draw(st.integers(0, 4)) == 0:
            blocks += draw(server_tool(next(counter)))
        ids = [f"toolu_{next(counter):05d}" for _ in range(draw(st.integers(0, 2)))]
        blocks += [draw(tool_use(i)) for i in ids]
        if not any(b["type"] not in ("thinking", "redacted_thinking") for b in blocks):
            blocks.append(draw(text_block))
        extra = draw(extra_fields) if opaque else {}
        messages.append({"role": "assistant", "content": blocks, **extra})
        reply: list[dict[str, Any]] = [draw(tool_result(i, big)) for i in ids]
        if not ids or draw(st.booleans()):
            reply += draw(st.lists(user_blocks, min_size=1, max_size=2))
        messages.append({"role": "user", "content": reply})
        if opaque and draw(st.integers(0, 6)) == 0:
            messages.append({"role": "future_role", "content": draw(json_values)})
    if not thinking and draw(st.integers(0, 3)) == 0:  # a prefill
        messages.append({"role": "assistant", "content": [draw(text_block)]})
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "system": draw(st.one_of(words, st.lists(text_block, min_size=1, max_size=2))),
        "tools": [{"name": "read", "description": "read", "input_schema": {"type": "object"}}],
        "messages": messages,
    }
    if thinking:
        body["thinking"] = {"type": "enabled", "budget_tokens": 128}
    _mark(draw, body)
    return body


def _mark(draw: st.DrawFn, body: dict[str, Any]) -> None:
    """Put 0-6 cache_control breakpoints on text blocks (more than 4 must be repaired)."""
    spots = [
        b
        for m in body["messages"]
        if m["role"] in ("user", "assistant") and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "text"
    ]
    if not spots:
        return
    for n in draw(st.lists(st.integers(0, len(spots) - 1), max_size=6, unique=True)):
        spots[n]["cache_control"] = CACHE
