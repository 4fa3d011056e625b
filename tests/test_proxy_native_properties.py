"""Random legal sessions (with damage the pipeline repairs) through the native routes.

For each generated Messages session (thinking on and off) and Responses session
(parallel, custom and hosted calls, reasoning items, over-long call ids), sent
over HTTP to the proxy at a small window:

- the upstream receives exactly ``govern_request``'s body (differential: the
  proxy adds no format logic of its own), byte for byte after canonical encoding;
- the validating fake accepts it under the API's rules: no rule rejection ever;
- it is inside the window, unless the report itself says nothing more could be
  cut (``tokens-after`` over ``budget``): then, and only then, the fake may refuse
  it as too long.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic_bodies
import httpx
import pytest
import responses_bodies
from fake_native import FakeNative, NativeReply
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from levels import examples
from native_proxy import ProxyStarter

from context_governor.formats import govern_request
from context_governor.proxy._governing import encode

WINDOWS = (6000, 12000)
SETTINGS = settings(
    max_examples=examples(full=40, fast=12),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
H = "x-context-governor-"


@pytest.fixture(scope="module")
def proxies() -> Iterator[tuple[FakeNative, dict[int, str]]]:
    """One fake, and one proxy per window (the fake's window is set per example)."""
    native = FakeNative().start()
    native.auto = lambda api, body: NativeReply.answer("ok")
    starter = ProxyStarter(native)
    urls = {window: starter(context_window=window) for window in WINDOWS}
    yield native, urls
    starter.stop()
    native.stop()


def _governed_window(body: dict[str, Any], api: str, window: int, budget: str) -> int:
    """The window the proxy governed this body to: ``window``, or the smaller one its
    calibration chose once the upstream's usage counted more than the proxy does
    (learning.governed_window: window / ratio, said in the report's notes), found as the
    window whose budget is the one the proxy reported (budgets grow with the window)."""

    def budget_at(w: int) -> int:
        found = govern_request(body, api=api, context_window=w).report.budget  # type: ignore[arg-type]
        return -1 if found is None else found

    wanted = int(budget)
    if budget_at(window) <= wanted:
        return window
    low, high = 1, window
    while low < high:
        middle = (low + high + 1) // 2
        if budget_at(middle) <= wanted:
            low = middle
        else:
            high = middle - 1
    assert budget_at(low) == wanted, (window, wanted)
    return low


def _through(
    proxies: tuple[FakeNative, dict[int, str]], api: str, body: dict[str, Any], window: int
) -> None:
    native, urls = proxies
    native.context_window = window
    seen = len(native.rejections)
    path = "messages" if api == "anthropic" else "responses"
    response = httpx.post(f"{urls[window]}/v1/{path}", json=body, timeout=60)
    governed = _governed_window(body, api, window, response.headers[f"{H}budget"])
    expected = govern_request(body, api=api, context_window=governed)  # type: ignore[arg-type]
    assert encode(native.requests[-1]) == encode(expected.body)
    rejected = native.rejections[seen:]
    del native.rejections[seen:]  # judged here, not by a fixture
    budget = int(response.headers[f"{H}budget"])
    fits = int(response.headers[f"{H}tokens-after"]) <= budget
    if fits:
        assert response.status_code == 200 and not rejected, rejected
    else:  # the report says it could not fit; the only refusal allowed is the window's
        assert all("prompt is too long" in r for r in rejected), rejected


@SETTINGS
@given(
    body=st.one_of(
        anthropic_bodies.sessions(thinking=True, min_turns=4, max_turns=14),
        anthropic_bodies.sessions(thinking=False, min_turns=4, max_turns=14),
    ),
    window=st.sampled_from(WINDOWS),
)
def test_messages_sessions_arrive_valid_and_as_governed(
    proxies: tuple[FakeNative, dict[int, str]], body: dict[str, Any], window: int
) -> None:
    _through(proxies, "anthropic", body, window)


@SETTINGS
@given(
    body=responses_bodies.sessions(min_turns=4, max_turns=16, long_ids=True),
    window=st.sampled_from(WINDOWS),
)
def test_responses_sessions_arrive_valid_and_as_governed(
    proxies: tuple[FakeNative, dict[int, str]], body: dict[str, Any], window: int
) -> None:
    _through(proxies, "responses", body, window)
