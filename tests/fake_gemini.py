"""A fake Gemini on localhost: ``generateContent`` and ``streamGenerateContent``.

A real HTTP server (a thread, a free port) that checks every request the way the
provider would: ``validate_request(api="gemini")`` under the model named by the
path, plus the window (governing the body again at ``window`` must find it within
budget), plus that each thought signature it issued comes back unchanged on the
part it issued it on. A request that breaks a rule gets Gemini's 400
(``{"error": {"code", "message", "status": "INVALID_ARGUMENT"}}``) and is recorded
in ``errors``, so a test asserts there were none.

It answers with function-call turns (the first call of each turn signed) until
``calls`` of them were served, then with text. ``:streamGenerateContent`` answers
with server-sent events when asked ``?alt=sse``, one part per event and no
``[DONE]``; asked without it, with one JSON array of the same chunks, as Gemini does
(``application/json``, ``[{...}`` then ``,\r\n{...}`` then ``]``), each element
written in two HTTP chunks so a relay sees half elements. ``cut_after`` makes the
next stream die after that many events or elements (a chunked body never finished;
in the array, after half of the next element), as an upstream that breaks off;
``delay`` makes it silent a while before answering, ``stall`` after the first
element (or two events). ``streamed`` keeps each stream's body as sent.

Everything is recorded: ``bodies`` (parsed), ``raw`` (bytes as received),
``paths``, ``queries`` and ``headers``. Also a ``:countTokens`` answer and a
``GET .../models`` listing, so tests can see the proxy pass them through.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from context_governor import govern_request, validate_request

WINDOW = 6_000
PATH = re.compile(
    r"^/v1(?:beta)?/models/(?P<model>[^:/]+):(?P<action>generateContent|streamGenerateContent)$"
)


def google_error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


@dataclass
class FakeGemini:
    """A scripted generateContent endpoint: ``calls`` function-call turns, then text."""

    calls: int = 6
    window: int = WINDOW
    bodies: list[dict[str, Any]] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    queries: list[dict[str, list[str]]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    issued: dict[str, str] = field(default_factory=dict)  # signature -> its part's JSON
    served: int = 0
    #: the next stream dies after this many events (then it is reset)
    cut_after: int | None = None
    #: the next answer is this (status, body) instead (then it is reset)
    fail_with: tuple[int, dict[str, Any]] | None = None
    #: seconds to wait before answering (an upstream gone silent)
    delay: float = 0.0
    #: seconds to go silent after the first piece of the next stream (then it is reset)
    stall: float = 0.0
    #: each stream's body as the fake sent it (all of it, or up to the cut)
    streamed: list[bytes] = field(default_factory=list)
    base_url: str = ""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        match = PATH.match(path)
        if match is None:
            self.errors.append(f"unexpected path {path}")
            return 404, google_error(404, "not found", "NOT_FOUND")
        self.bodies.append(body)
        if self.fail_with is not None:
            failure, self.fail_with = self.fail_with, None
            return failure
        model = match["model"]
        problems = [v.error for v in validate_request(body, api="gemini", model=model)]
        again = govern_request(body, api="gemini", model=model, context_window=self.window)
        if not again.report.within_budget:
            problems.append("over the window")
        problems += self._signatures(body)
        if problems:
            self.errors.extend(problems)
            return 400, google_error(400, problems[0], "INVALID_ARGUMENT")
        self.served += 1
        if self.served > self.calls:
            parts: list[dict[str, Any]] = [{"text": "All files summarised."}]
        else:
            signature = base64.b64encode(f"signature {self.served:04d}".encode()).decode()
            parts = [
                {"functionCall": {"name": "read_file", "args": {"path": f"f{self.served}.txt"}},
                 "thoughtSignature": signature},
                {"functionCall": {"name": "read_file", "args": {"path": f"g{self.served}.txt"}}},
            ]  # fmt: skip
            self.issued[signature] = json.dumps(parts[0], sort_keys=True)
        return 200, {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
        }  # fmt: skip

    def _signatures(self, body: dict[str, Any]) -> list[str]:
        out = []
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                part = _camel_keys(part)
                signature = part.get("thoughtSignature")
                if (
                    signature in self.issued
                    and json.dumps(part, sort_keys=True) != self.issued[signature]
                ):
                    out.append(f"signature {signature} came back on another part")
        return out


def _camel_keys(part: dict[str, Any]) -> dict[str, Any]:
    """A part with its own keys in camelCase: the REST API reads ``function_call`` as
    ``functionCall`` (LiteLLM sends the snake_case spelling back), so a signed part is
    the same part in either spelling. The keys inside (the call's args) are data."""
    return {re.sub(r"_([a-z])", lambda m: m[1].upper(), key): value for key, value in part.items()}


def stream_events(answer: dict[str, Any]) -> list[bytes]:
    """A generateContent answer as Gemini streams it: one part per event, the finish
    reason and usage on the last; ``data:`` lines, no ``[DONE]``."""
    candidate = answer["candidates"][0]
    parts = candidate["content"]["parts"]
    events = []
    for i, part in enumerate(parts):
        chunk: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                                 "index": 0}]}  # fmt: skip
        if i == len(parts) - 1:
            chunk["candidates"][0]["finishReason"] = candidate["finishReason"]
            chunk["usageMetadata"] = answer["usageMetadata"]
        events.append(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
    return events


def array_pieces(answer: dict[str, Any]) -> list[bytes]:
    """The same chunks as Gemini's streamed JSON array: ``[``, the elements (indented,
    as Gemini sends them) with ``,\r\n`` between, ``]``; two pieces per element (its
    halves: the opening bracket or separator goes with the first)."""
    chunks = [json.loads(e.removeprefix(b"data: ")) for e in stream_events(answer)]
    out = []
    for i, chunk in enumerate(chunks):
        element = (b"[" if i == 0 else b",\r\n") + json.dumps(chunk, indent=2).encode()
        half = len(element) // 2
        out += [element[:half], element[half:]]
    return [*out, b"\n]"]


def _handler(script: FakeGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # chunked streams, so a cut one is seen as cut

        def _record(self, body: bytes) -> str:
            target = urlsplit(self.path)
            script.raw.append(body)
            script.paths.append(target.path)
            script.queries.append(parse_qs(target.query))
            script.headers.append({k.lower(): v for k, v in self.headers.items()})
            return target.path

        def _json(self, status: int, answer: Any) -> None:
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json; charset=UTF-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = self._record(b"")
            if path.endswith("/models"):
                self._json(200, {"models": [{"name": "models/gemini-2.5-flash"}]})
            else:
                self._json(404, google_error(404, "not found", "NOT_FOUND"))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            path = self._record(raw)
            if path.endswith(":countTokens"):
                self._json(200, {"totalTokens": len(raw) // 4})
                return
            time.sleep(script.delay)
            status, answer = script.answer(path, json.loads(raw or b"{}"))
            if status != 200 or not path.endswith(":streamGenerateContent"):
                self._json(status, answer)
                return
            sse = parse_qs(urlsplit(self.path).query).get("alt") == ["sse"]
            self.send_response(200)
            kind = "text/event-stream" if sse else "application/json; charset=UTF-8"
            self.send_header("content-type", kind)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            # an array element is two pieces: cut after n elements is after 2n + 1 pieces
            pieces = stream_events(answer) if sse else array_pieces(answer)
            cut, script.cut_after = script.cut_after, None
            stall, script.stall = script.stall, 0.0
            if cut is not None and not sse:
                cut = 2 * cut + 1
            sent = b""
            for i, piece in enumerate(pieces):
                if cut is not None and i >= cut:
                    self.wfile.flush()
                    self.close_connection = True
                    script.streamed.append(sent)
                    return  # without the last chunk: the body broke off
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
                sent += piece
                if i == 1 and stall:  # after the first element (two pieces) or two events
                    time.sleep(stall)
            self.wfile.write(b"0\r\n\r\n")
            script.streamed.append(sent)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def serve(script: FakeGemini) -> Iterator[FakeGemini]:
    """Serve ``script`` until the generator is closed (a pytest fixture's body);
    ``script.base_url`` is set to its root URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    script.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
