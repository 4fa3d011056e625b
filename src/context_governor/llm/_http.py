"""What every HTTP model client shares: its httpx client's lifecycle, one JSON body sent
with retries, and the errors HTTP and the transport can give.

The Chat Completions client and the native (Messages, Responses) clients differ in
their bodies and their streams, not in how a body gets to the server: each holds
an httpx client (its own, closed with it, or the caller's, left open), serialises a
body once so that a retry resends the same bytes, retries 429/5xx and transport
failures, and names the server in each error.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Self, TypedDict, Unpack

import httpx

from ._base import ModelResponse
from ._errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
    is_retryable_status,
)
from ._retry import RetryCallback, RetryPolicy, Sleep, parse_retry_after, with_retries

#: How much of an error body goes into the error message.
ERROR_BODY_CHARS = 500


def _error_message(body: bytes) -> str:
    """The server's own words from an error body: ``error.message`` when it is JSON."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:ERROR_BODY_CHARS] or "(empty body)"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:ERROR_BODY_CHARS]
    if isinstance(error, str) and error:
        return error[:ERROR_BODY_CHARS]
    return text[:ERROR_BODY_CHARS]


def _retry_after(headers: httpx.Headers) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        seconds = parse_retry_after(millis)
        if seconds is not None:
            return seconds / 1000
    return parse_retry_after(headers.get("retry-after"))


def http_error(status: int, headers: httpx.Headers, body: bytes, url: str) -> ModelHTTPError:
    """The error for an HTTP error response, marked retryable for 408/409/429/5xx."""
    return ModelHTTPError(
        f"HTTP {status} from {url}: {_error_message(body)}",
        retryable=is_retryable_status(status),
        status=status,
        retry_after=_retry_after(headers),
    )


def error_body_message(data: Any) -> str:
    """The server's words from an error object it sent in place of an answer."""
    return _error_message(json.dumps(data).encode())


def json_value(data: str, what: str) -> Any:
    """``data`` parsed as JSON; ModelResponseError naming ``what`` if it is not."""
    try:
        return json.loads(data)
    except ValueError:
        raise ModelResponseError(f"{what} is not JSON: {data[:200]!r}") from None


def from_env(given: str | None, name: str) -> str | None:
    """A client setting: the one given (even ""), else the environment's (None if unset)."""
    return given if given is not None else os.environ.get(name)


def base_url_from(given: str | None, name: str, default: str) -> str:
    """A server's base URL: the one given, else the environment's, else ``default``;
    without a trailing slash (paths are appended to it)."""
    return (given or os.environ.get(name) or default).rstrip("/")


def bearer(api_key: str | None, name: str) -> dict[str, str]:
    """The ``Authorization`` header for a key given or in the environment (none without)."""
    key = from_env(api_key, name)
    return {"Authorization": f"Bearer {key}"} if key else {}


class Transport(TypedDict, total=False):
    """How a client talks to its server: the settings every HTTP client takes alike.

    ``stream``: ask for the answer as a stream (text reaches ``on_text`` as it comes);
    ``timeout``: seconds per read (default 120), ``connect_timeout`` (default 10);
    ``retry``: which failures are retried, how often (default: RetryPolicy());
    ``extra_body``: fields merged into every body; ``http_client``: an httpx client
    to use (left open); ``on_retry``: called before each retry; ``sleep``: how to
    wait between attempts (tests pass a fake).
    """

    stream: bool
    timeout: float
    connect_timeout: float
    retry: RetryPolicy | None
    extra_body: Mapping[str, Any] | None
    http_client: httpx.AsyncClient | None
    on_retry: RetryCallback | None
    sleep: Sleep


class HTTPModelClient:
    """The lifecycle and the sending a client of one model endpoint (``url``) shares.

    ``server`` is how connection errors name the server (a base URL; default ``url``).
    ``timeout`` bounds each read (a long streamed answer is fine while it keeps
    coming); ``retry`` retries 429/5xx, timeouts and dropped connections with
    backoff, honouring Retry-After.
    """

    def __init__(
        self,
        model: str,
        *,
        url: str,
        headers: Mapping[str, str],
        server: str | None = None,
        **transport: Unpack[Transport],
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError("model must be a non-empty string")
        self.model = model
        self.url = url
        self.stream = transport.get("stream", False)
        self.retry = transport.get("retry") or RetryPolicy()
        self.extra_body = dict(transport.get("extra_body") or {})
        self.on_retry = transport.get("on_retry")
        self._sleep = transport.get("sleep", asyncio.sleep)
        self._server = server or url
        self._headers = {"Content-Type": "application/json", **headers}
        http_client = transport.get("http_client")
        self._owns_client = http_client is None
        self._http = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(
                transport.get("timeout", 120.0), connect=transport.get("connect_timeout", 10.0)
            )
        )

    async def aclose(self) -> None:
        """Close the httpx client if this client made it (a caller's stays open)."""
        if self._owns_client:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _send_with_retries(
        self, body: dict[str, Any], attempt: Callable[[bytes], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """``attempt`` on ``body``'s bytes until it answers or retries are exhausted."""
        # Serialise once: a retry resends the same bytes, and a value JSON cannot
        # carry fails here, clearly, rather than inside httpx.
        try:
            content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise ModelError(f"request body is not JSON-serializable: {exc}") from None
        return await with_retries(
            lambda: attempt(content), self.retry, sleep=self._sleep, on_retry=self.on_retry
        )

    async def _post_json(self, content: bytes) -> Any:
        """POST ``content``; the JSON answer, or the error for the HTTP status."""
        try:
            response = await self._http.post(self.url, content=content, headers=self._headers)
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from None
        if response.status_code >= 400:
            raise http_error(response.status_code, response.headers, response.content, self.url)
        return json_value(response.text, f"response from {self.url}")

    def _transport_error(self, exc: httpx.HTTPError) -> ModelError:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            return ModelTimeoutError(
                f"no answer from {self.url} in time ({type(exc).__name__})", retryable=True
            )
        if isinstance(exc, httpx.ConnectError):
            return ModelConnectionError(
                f"cannot reach the model server at {self._server} ({detail})", retryable=True
            )
        if isinstance(exc, httpx.TransportError):
            return ModelConnectionError(
                f"connection to {self._server} failed ({detail})", retryable=True
            )
        return ModelError(f"request to {self.url} failed ({detail})")
