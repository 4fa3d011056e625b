"""Calibration with the upstream's count_tokens, near the budget only.

The library function is driven by fake counts; the proxy's counter posts to a fake
upstream (httpx.MockTransport) that checks what it receives.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from context_governor.formats._anthropic_count import (
    COUNT_FIELDS,
    count_body,
    govern_with_upstream_count,
    quantized,
)
from context_governor.formats._request import RequestResult, govern_request
from context_governor.proxy._config import CountingConfig, GoverningConfig, ProxyConfig
from context_governor.proxy._count_tokens import (
    COUNT_PATH,
    CountError,
    upstream_counter,
)
from context_governor.proxy._upstream import Upstream


def _body(turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "task " * 50}]
    for n in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "read",
                             "input": {"n": n}}],
            }
        )  # fmt: skip
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}",
                                          "content": f"line {n}\n" * 120}]}
        )  # fmt: skip
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": "you are terse",
        "tools": [{"name": "read", "input_schema": {"type": "object"}}],
        "metadata": {"user_id": "u1"},
        "messages": messages,
    }


async def _inline(call: Any) -> RequestResult:
    result: RequestResult = call()
    return result


def _calibrate(body: dict[str, Any], count: Any, **kw: Any) -> Any:
    return asyncio.run(govern_with_upstream_count(body, count, run=_inline, **kw))


def test_far_under_the_budget_nothing_is_asked() -> None:
    asked: list[dict[str, Any]] = []

    async def count(body: dict[str, Any]) -> int:
        asked.append(body)
        return 1

    counted = _calibrate(_body(2), count, context_window=200_000)
    assert asked == [] and counted.exact is None


def test_near_the_budget_an_overcount_is_scaled_down_and_more_is_kept() -> None:
    """The estimate errs high: when the upstream says the body is 60% of it, the second
    pass keeps what the estimate alone would have cut."""
    body = _body(30)
    window = 12_000
    asked: list[dict[str, Any]] = []

    async def count(sent: dict[str, Any]) -> int:
        asked.append(sent)
        raise RuntimeError("no answer: the first pass is kept")

    plain = _calibrate(body, count, context_window=window, cache_breakpoints=False)
    assert len(asked) == 1
    assert set(asked[0]) <= {"model", "messages", "system", "tools", "thinking"}
    assert "metadata" not in asked[0] and "max_tokens" not in asked[0]

    async def exact(sent: dict[str, Any]) -> int:
        return int(0.6 * plain.estimate)

    counted = _calibrate(body, exact, context_window=window, cache_breakpoints=False)
    assert counted.ratio == 0.6
    report = counted.result.report
    assert report.counter == "custom:claude_estimate_x0.6"
    # more of the history is sent as it is (fewer turns cut or results cleared)
    assert len(json.dumps(counted.result.body)) > len(json.dumps(plain.result.body))
    assert any("governed again with the estimate × 0.6" in n for n in report.notes)


def test_an_undercount_is_scaled_up_and_more_is_cut() -> None:
    body = _body(30)
    first = _calibrate(body, _fail_count, context_window=12_000)

    async def double(sent: dict[str, Any]) -> int:
        return 2 * first.estimate

    counted = _calibrate(body, double, context_window=12_000)
    assert counted.ratio == 2.0
    assert len(counted.result.body["messages"]) < len(first.result.body["messages"])
    assert counted.result.report.within_budget


async def _fail_count(body: dict[str, Any]) -> int:
    raise RuntimeError("upstream down")


def test_a_failed_count_keeps_the_estimate_and_says_so() -> None:
    counted = _calibrate(_body(30), _fail_count, context_window=12_000)
    assert counted.exact is None
    assert any(
        "upstream count_tokens failed (RuntimeError" in n for n in counted.result.report.notes
    )


def test_a_user_hook_is_exact_already() -> None:
    asked: list[int] = []

    async def count(body: dict[str, Any]) -> int:
        asked.append(1)
        return 1

    _calibrate(_body(30), count, context_window=12_000, count_tokens=lambda t: len(t) // 2)
    assert asked == []


@pytest.mark.parametrize(
    ("exact", "estimate", "ratio"),
    [(100, 100, 1.0), (101, 100, 1.05), (60, 100, 0.6), (59, 100, 0.6), (0, 1000, 0.5)],
)
def test_the_ratio_is_rounded_up_to_a_step(exact: int, estimate: int, ratio: float) -> None:
    assert quantized(exact, estimate) == ratio


def test_count_body_keeps_only_what_count_tokens_takes() -> None:
    body = {**_body(1), "stream": True, "temperature": 0.2, "thinking": {"type": "disabled"}}
    assert set(count_body(body)) == {"model", "messages", "system", "tools", "thinking"}


# -- the proxy's counter, against a fake upstream ------------------------------------------


def _upstream(handler: Any) -> Upstream:
    config = ProxyConfig(
        upstream="https://upstream.test/v1", counting=CountingConfig(calibrate_upstream=True)
    )
    upstream = Upstream(config, "https://upstream.test/v1")
    upstream._clients = [httpx.AsyncClient(transport=httpx.MockTransport(handler))]
    return upstream


def test_the_proxy_counter_posts_the_clients_headers_and_reads_input_tokens() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"input_tokens": 1234})

    headers = [("x-api-key", "sk-test"), ("anthropic-version", "2023-06-01"),
               ("content-type", "application/json")]  # fmt: skip
    count = upstream_counter(_upstream(handler), headers)
    assert asyncio.run(count({"model": "m", "messages": []})) == 1234
    (request,) = seen
    assert request.method == "POST" and request.url.path == "/v1/" + COUNT_PATH
    assert request.headers["x-api-key"] == "sk-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert json.loads(request.content) == {"model": "m", "messages": []}


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(400, json={"type": "error"}),
        httpx.Response(200, content=b"not json"),
        httpx.Response(200, json={"input_tokens": "12"}),
        httpx.Response(200, json=[1]),
    ],
)
def test_a_bad_count_answer_is_a_count_error(response: httpx.Response) -> None:
    count = upstream_counter(_upstream(lambda request: response), [])
    with pytest.raises(CountError):
        asyncio.run(count({"model": "m", "messages": []}))


class _CountingUpstream:
    """A Messages upstream on localhost whose count_tokens says ``factor`` x what the
    proxy's estimate says (tokens_before of the body as governed, same estimate), and
    which records what it was asked and sent."""

    def __init__(self, factor: float) -> None:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        self.factor = factor
        self.counted: list[dict[str, Any]] = []
        self.sent: list[dict[str, Any]] = []

        async def count(request: Request) -> JSONResponse:
            body = json.loads(await request.body())
            self.counted.append(body)
            estimate = govern_request(
                {"max_tokens": 0, **body}, api="anthropic", context_window=1 << 40
            ).report.tokens_before
            return JSONResponse({"input_tokens": int(estimate * self.factor)})

        async def messages(request: Request) -> JSONResponse:
            self.sent.append(json.loads(await request.body()))
            return JSONResponse(
                {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                 "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                 "usage": {"input_tokens": 1, "output_tokens": 1}}
            )  # fmt: skip

        self.app = Starlette(
            routes=[
                Route("/v1/messages/count_tokens", count, methods=["POST"]),
                Route("/v1/messages", messages, methods=["POST"]),
            ]
        )


@pytest.mark.parametrize("govern_in", ["thread", "process"])
def test_the_messages_route_calibrates_with_the_upstreams_count(govern_in: str) -> None:
    """Through a real proxy: with the flag, a body near the budget is counted upstream
    once with the client's key, and an upstream that counts twice what we estimate gets
    a body cut to fit its own count; without the flag nothing is asked and more is sent."""
    from test_proxy import Served

    from context_governor.proxy import create_app

    upstream = _CountingUpstream(factor=2.0)
    served_upstream = Served(upstream.app)
    body = _body(30)
    sent: dict[bool, dict[str, Any]] = {}
    try:
        for flag in (False, True):
            config = ProxyConfig(
                upstream=served_upstream.url + "/v1",
                counting=CountingConfig(calibrate_upstream=flag),
                context_window=12_000,
                governing=GoverningConfig(run_in=govern_in, processes=1),
            )
            proxy = Served(create_app(config))
            try:
                response = httpx.post(
                    proxy.url + "/v1/messages",
                    json=body,
                    headers={"x-api-key": "sk-client", "anthropic-version": "2023-06-01"},
                    timeout=60,
                )
            finally:
                proxy.stop()
            assert response.status_code == 200, response.text
            sent[flag] = upstream.sent[-1]
            assert len(upstream.counted) == (1 if flag else 0)
    finally:
        served_upstream.stop()
    counted = upstream.counted[0]
    assert set(counted) <= set(COUNT_FIELDS) and counted["messages"]
    assert len(sent[True]["messages"]) < len(sent[False]["messages"])
    # the calibrated body fits the upstream's own (doubled) count within the window
    exact = (
        2
        * govern_request(
            {**sent[True], "max_tokens": 0}, api="anthropic", context_window=1 << 40
        ).report.tokens_before
    )
    assert exact + sent[True]["max_tokens"] <= 12_000
