"""Hypothesis strategies for Google Gen AI ``generateContent`` request bodies.

Two families, as for Messages and Responses (anthropic_bodies.py, responses_bodies.py):

* ``wild_bodies``: anything whose shape the edge can read, legal for the API or not
  (contents of any role in any order, function responses with and without ids, with no
  call or too many, unknown parts and fields, snake_case spellings, parts without
  anything). What the round trip must survive.
* ``sessions``: agent sessions the API accepts (user and model turns alternate, each call
  turn answered by the user turn right after it, one response per call, signatures on
  the first call of a turn): parallel calls, calls with and without ids, thoughts with
  signatures, code execution, inline data and unknown parts, long enough to be cut and
  compacted at a small window. What governance must keep legal.
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
    st.sampled_from(["x_future", "partMetadata", "client_state"]), json_values, max_size=1
)
signatures = st.binary(min_size=8, max_size=48).map(lambda b: b.hex())
NAMES = ["read_file", "exec", "grep"]


def _with(extra: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    return {**part, **extra}


text = st.builds(lambda t: {"text": t}, words)
odd_text = st.builds(lambda t, x: _with(x, {"text": t}), words, extra_fields)
inline = st.builds(
    lambda d, snake: {("inline_data" if snake else "inlineData"): {"mimeType": "image/png",
                                                                  "data": d}},
    st.builds(png_b64, st.integers(1, 48), st.integers(1, 48), st.binary(max_size=24)),
    st.booleans(),
)  # fmt: skip
file_data = st.just({"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/doc.pdf"}})
thought = st.builds(
    lambda t, s: {"text": t, "thought": True} | ({"thoughtSignature": s} if s else {}),
    words,
    st.none() | signatures,
)
code = st.sampled_from(
    [
        {"executableCode": {"language": "PYTHON", "code": "print(1 + 1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2\n"}},
    ]
)
unknown_part = st.builds(lambda p: {"futurePart": {"payload": p}}, json_values)
user_part = st.one_of(text, text, odd_text, inline, file_data, unknown_part)
model_part = st.one_of(text, text, thought, code, unknown_part)


def call(name: str, call_id: str | None, signature: str | None, snake: bool) -> dict[str, Any]:
    fc: dict[str, Any] = {"name": name, "args": {"path": "a.txt"}}
    if call_id is not None:
        fc["id"] = call_id
    part: dict[str, Any] = {("function_call" if snake else "functionCall"): fc}
    if signature is not None:
        part["thought_signature" if snake else "thoughtSignature"] = signature
    return part


def response(name: str, call_id: str | None, value: Any, snake: bool) -> dict[str, Any]:
    fr: dict[str, Any] = {"name": name, "response": value}
    if call_id is not None:
        fr["id"] = call_id
    return {("function_response" if snake else "functionResponse"): fr}


def response_value(big: bool) -> st.SearchStrategy[Any]:
    body = long_words if big else words
    return st.one_of(
        body.map(lambda t: {"output": t}),
        body.map(lambda t: {"result": t}),
        st.builds(lambda t, n: {"content": t, "lines": n}, body, st.integers(0, 9)),
    )


# -- wild bodies: for the round trip -----------------------------------------------------------


@st.composite
def wild_content(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "model", "user", "model", None, "null", "function"]))
    name = draw(st.sampled_from(NAMES))
    call_id = draw(st.none() | st.sampled_from(["c1", "c2", "c3"]))
    snake = draw(st.booleans())
    parts = draw(
        st.lists(
            st.one_of(
                user_part,
                model_part,
                st.just(call(name, call_id, None, snake)),
                response_value(False).map(lambda v: response(name, call_id, v, snake)),
            ),
            max_size=4,
        )
    )
    content: dict[str, Any] = {"parts": parts}
    if role is not None:
        content = {"role": None if role == "null" else role, **content}
    return _with(draw(extra_fields), content)


@st.composite
def wild_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": draw(st.lists(wild_content(), max_size=8))}
    if draw(st.booleans()):
        key = draw(st.sampled_from(["systemInstruction", "system_instruction"]))
        body[key] = {"parts": draw(st.lists(st.one_of(text, odd_text), max_size=2))}
    if draw(st.booleans()):
        body["generationConfig"] = {"maxOutputTokens": draw(st.integers(1, 4000))}
    if draw(st.booleans()):
        body["model"] = draw(st.sampled_from(["models/gemini-2.5-flash", "gemini-3-pro-preview"]))
    body.update(draw(st.dictionaries(st.sampled_from(["x_future", "labels"]), json_values,
                                     max_size=1)))  # fmt: skip
    return body


# -- sessions: legal bodies, for governance ---------------------------------------------------


@st.composite
def sessions(
    draw: st.DrawFn, *, min_turns: int = 1, max_turns: int = 8, big: bool = True
) -> dict[str, Any]:
    """A legal agent session: user, then (model call turn, user response turn)* steps,
    model answers and new user questions; it ends with a user turn."""
    snake = draw(st.booleans())
    with_ids = draw(st.booleans())
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": draw(st.lists(user_part, min_size=1, max_size=2))}
    ]
    serial = 0
    for _ in range(draw(st.integers(min_turns, max_turns))):
        if draw(st.integers(0, 3)) == 0:  # the model answers, the user asks again
            contents.append({"role": "model", "parts": draw(st.lists(model_part, min_size=1,
                                                                     max_size=2))})  # fmt: skip
            contents.append({"role": "user", "parts": [draw(text)]})
            continue
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3))
        ids = []
        for _ in names:
            serial += 1
            ids.append(f"call_{serial}" if with_ids else None)
        signature = draw(signatures)
        lead = draw(st.lists(st.one_of(thought, text), max_size=1))
        calls = [call(n, i, signature if k == 0 else None, snake)
                 for k, (n, i) in enumerate(zip(names, ids, strict=True))]  # fmt: skip
        contents.append({"role": "model", "parts": lead + calls})
        responses = [
            response(n, i, draw(response_value(big)), snake)
            for n, i in zip(names, ids, strict=True)
        ]
        after = draw(st.lists(text, max_size=1))
        contents.append({"role": "user", "parts": responses + after})
    body: dict[str, Any] = {
        "model": draw(st.sampled_from(["gemini-2.5-flash", "gemini-3-pro-preview"])),
        "contents": contents,
        "tools": [
            {"functionDeclarations": [{"name": n, "description": f"{n} tool"} for n in NAMES]}
        ],
        "generationConfig": {"maxOutputTokens": 512, "thinkingConfig": {"thinkingBudget": 128}},
    }
    if draw(st.booleans()):
        body["systemInstruction"] = {"parts": [{"text": "You are a careful agent."}]}
    return body
