"""Malformed bodies on the native routes: a 400 in the API's own error shape, never a 500.

Random JSON of any shape, valid sessions with one part replaced by junk, and raw
bytes go to POST /v1/messages and /v1/responses. Whatever the proxy cannot govern
must come back as the API's error (Anthropic's ``{"type": "error", "error":
{...}}``, OpenAI's ``{"error": {...}}``) naming the problem; what it can govern is
forwarded (the fake upstream answers). Nothing may crash the handler.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_native import FakeNative, NativeReply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from native_proxy import ProxyStarter
from test_proxy_native import _anthropic_session, _responses_session

SETTINGS = settings(
    max_examples=examples(full=120, fast=40),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PATHS = {"anthropic": "messages", "responses": "responses"}

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip


@pytest.fixture(scope="module")
def proxied() -> Iterator[tuple[FakeNative, str]]:
    native = FakeNative().start()
    native.auto = lambda api, body: NativeReply.answer("ok")
    starter = ProxyStarter(native)
    url = starter(context_window=4000)
    yield native, url
    starter.stop()
    native.stop()


def _check(url: str, api: str, content: bytes) -> None:
    response = httpx.post(
        f"{url}/v1/{PATHS[api]}", content=content, timeout=30,
        headers={"content-type": "application/json"},
    )  # fmt: skip
    assert response.status_code in (200, 400), (response.status_code, response.text[:500])
    if response.status_code == 200:
        return
    error = response.json()
    if api == "anthropic":
        assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
        message = error["error"]["message"]
    else:
        assert error["error"]["type"] == "invalid_request_error"
        message = error["error"]["message"]
    assert isinstance(message, str) and message


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in ``value`` a piece of junk could go."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _paths(item, (*prefix, n))


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return [_replaced(v, rest, new) if n == head else v for n, v in enumerate(value)]


def _base(api: str) -> dict[str, Any]:
    return _anthropic_session(3, 200) if api == "anthropic" else _responses_session(3, 200)


@SETTINGS
@given(api=st.sampled_from(["anthropic", "responses"]), body=junk)
def test_any_json_value_gets_forwarded_or_a_400_in_shape(
    proxied: tuple[FakeNative, str], api: str, body: Any
) -> None:
    _check(proxied[1], api, json.dumps(body).encode())


@SETTINGS
@given(api=st.sampled_from(["anthropic", "responses"]), data=st.data(), new=junk)
def test_a_session_with_one_part_replaced_by_junk_gets_forwarded_or_a_400(
    proxied: tuple[FakeNative, str], api: str, data: st.DataObject, new: Any
) -> None:
    base = _base(api)
    path = data.draw(st.sampled_from(list(_paths(base))[1:]))
    _check(proxied[1], api, json.dumps(_replaced(base, path, new)).encode())


@SETTINGS
@given(api=st.sampled_from(["anthropic", "responses"]), raw=st.binary(max_size=200))
def test_raw_bytes_get_a_400_in_shape(proxied: tuple[FakeNative, str], api: str, raw: bytes) -> None:
    _check(proxied[1], api, raw)


@pytest.mark.parametrize("api", ["anthropic", "responses"])
@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,  # deeper than the recursion limit
        b'{"model": "m", "max_tokens": 1e999, "messages": [], "input": []}',
        b'{"model": "m", "max_tokens": NaN, "messages": [], "input": []}',
        b"\xff\xfe{}",
    ],
)
def test_hostile_bodies_get_a_400_in_shape(proxied: tuple[FakeNative, str], api: str, body: bytes) -> None:
    _check(proxied[1], api, body)

