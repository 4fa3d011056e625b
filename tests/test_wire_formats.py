"""One conformance test over the wire-format registry (formats/_registry.py).

Every registered :class:`WireFormat` has every entry, and each entry does its job on
a sample of that API: its govern function round-trips a minimal body, its error body
and streamed error are JSON in the API's own shape, its usage reader reads an answer,
its stream's end is recognised, its routes are served. A new format adds its samples
here (``SAMPLES``); the first test fails until it does.

The last tests walk docs/architecture.md's recipe for a new wire format: the files it
names exist for every registered format, every ``*_wire.py`` module is registered, and
no module outside the formats' own branches on an API's name.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from context_governor.formats import govern_request, validate_request
from context_governor.formats._base import APIS, DEFAULT_PROFILES, Options
from context_governor.formats._registry import FALLBACK, WIRE_FORMATS, wire_format
from context_governor.formats._wire import Route, Usage, WireFormat
from context_governor.observe._views import messages_of, text_of
from context_governor.proxy import ProxyConfig
from context_governor.proxy._apis import BY_API, KEY_HEADERS, ROUTES, route_for_path
from context_governor.proxy._conversation import digest, from_body
from context_governor.proxy._governing import govern_body
from context_governor.proxy._usage import may_carry_usage, usage_of
from context_governor.proxy._watch import StreamWatch

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "context_governor"


@dataclass(frozen=True)
class Sample:
    """What a test needs of one API: a minimal body, an answer, the events that end
    its stream (and one that does not), and its error shape."""

    body: dict[str, Any]
    #: an answer with usage, and the Usage it says
    answer: dict[str, Any]
    usage: Usage
    #: (event name, data) pieces that end a stream, and one that does not
    ends: tuple[tuple[str | None, bytes], ...]
    goes_on: tuple[str | None, bytes]
    #: the streamed error's event name
    error_event: str | None
    #: the message of an error body in this API's shape (KeyError/TypeError otherwise)
    message_of: Callable[[dict[str, Any]], str]


def _openai_message(body: dict[str, Any]) -> str:
    error = body["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return str(error["message"])


def _anthropic_message(body: dict[str, Any]) -> str:
    assert body["type"] == "error" and isinstance(body["error"]["type"], str)
    return str(body["error"]["message"])


def _google_message(body: dict[str, Any]) -> str:
    error = body["error"]
    assert isinstance(error["code"], int) and error["status"].isupper()
    return str(error["message"])


def _responses_event_message(body: dict[str, Any]) -> str:
    assert body["type"] == "error" and body["code"] == "upstream_error"
    return str(body["message"])


SAMPLES: dict[str, Sample] = {
    "openai": Sample(
        body={
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
            ],
            "max_tokens": 100,
        },
        answer={
            "usage": {
                "prompt_tokens": 120,
                "completion_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 100},
            }
        },
        usage=Usage(120, 7, 100),
        ends=((None, b"[DONE]"),),
        goes_on=(None, b'{"choices":[{"delta":{"content":"hi"}}]}'),
        error_event=None,
        message_of=_openai_message,
    ),
    "anthropic": Sample(
        body={
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "system": "be brief",
            "messages": [{"role": "user", "content": "hi"}],
        },
        answer={
            "type": "message_start",
            "message": {
                "usage": {
                    "input_tokens": 20,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 5,
                    "output_tokens": 1,
                }
            },
        },
        usage=Usage(125, 1, 100, 5),
        ends=(
            ("message_stop", b'{"type":"message_stop"}'),
            ("error", b'{"type":"error"}'),
            (None, b'{"type":"message_stop"}'),
        ),
        goes_on=("content_block_delta", b'{"type":"content_block_delta"}'),
        error_event="error",
        message_of=_anthropic_message,
    ),
    "responses": Sample(
        body={
            "model": "gpt-4o",
            "instructions": "be brief",
            "input": [{"role": "user", "content": "hi"}],
            "max_output_tokens": 100,
        },
        answer={
            "type": "response.completed",
            "response": {
                "usage": {
                    "input_tokens": 120,
                    "output_tokens": 7,
                    "input_tokens_details": {"cached_tokens": 100},
                }
            },
        },
        usage=Usage(120, 7, 100),
        ends=(
            ("response.completed", b'{"type":"response.completed"}'),
            ("error", b'{"type":"error"}'),
            (None, b'{"type":"response.incomplete"}'),
        ),
        goes_on=("response.output_text.delta", b'{"type":"response.output_text.delta"}'),
        error_event="error",
        message_of=_openai_message,
    ),
    "gemini": Sample(
        body={
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        },
        answer={
            "usageMetadata": {
                "promptTokenCount": 120,
                "candidatesTokenCount": 7,
                "cachedContentTokenCount": 100,
            }
        },
        usage=Usage(120, 7, 100),
        ends=(
            (None, b'{"candidates":[{"finishReason":"STOP"}]}'),
            (None, b'{"error":{"code":500}}'),
        ),
        goes_on=(None, b'{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]}'),
        error_event=None,
        message_of=_google_message,
    ),
}
#: the streamed error's data, where it is not the API's error body
STREAM_ERROR_MESSAGE: dict[str, Callable[[dict[str, Any]], str]] = {
    "responses": _responses_event_message,
}

FORMATS = list(WIRE_FORMATS.values())
IDS = [wire.api for wire in FORMATS]


def test_every_api_is_registered_once_with_a_sample() -> None:
    assert sorted(WIRE_FORMATS) == sorted(APIS)
    assert all(api == wire.api for api, wire in WIRE_FORMATS.items())
    assert sorted(SAMPLES) == sorted(APIS)
    assert FALLBACK in FORMATS
    assert all(wire_format(api) is WIRE_FORMATS[api] for api in APIS)


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_every_entry_is_set(wire: WireFormat) -> None:
    optional = {"passthrough", "output_event", "required", "stream_framing", "upstream_of"}  # None: "none"
    for entry in dataclasses.fields(WireFormat):
        assert entry.name in optional or getattr(wire, entry.name) is not None, entry.name
    functions = ("govern", "validate", "messages", "fixed_parts", "session", "usage")
    for name in (*functions, "stream_end", "error_body", "stream_error"):
        assert callable(getattr(wire, name)), name
    assert wire.passthrough is None or callable(wire.passthrough)
    assert wire.routes and all(isinstance(r, Route) and r.path for r in wire.routes)
    assert wire.key_header in KEY_HEADERS
    assert wire.usage_mark and wire.trace_operation and wire.trace_provider
    assert wire.required is None or isinstance(wire.required, str)
    assert all(isinstance(f, str) for f in wire.reserve_fields)
    assert wire.upstream_of is None or wire.upstream_of in WIRE_FORMATS


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_govern_round_trips_a_minimal_body(wire: WireFormat) -> None:
    body = SAMPLES[wire.api].body
    direct = wire.govern(body, DEFAULT_PROFILES[wire.api], None, Options(cache_breakpoints=False))
    assert direct.body == body
    assert direct.report.tokens_after > 0
    through = govern_request(body, api=wire.api, cache_breakpoints=False)
    assert through.body is body
    assert wire.validate(body, None, None) == []
    assert validate_request(body, api=wire.api) == []
    if wire.required is not None:
        assert wire.required in body


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_the_reserve_fields_are_the_reserve(wire: WireFormat) -> None:
    """A reserve the window cannot give is fitted, in the format's own field."""
    if not wire.reserve_fields:
        return
    field = wire.reserve_fields[0]
    body = {**SAMPLES[wire.api].body, field: 100_000}
    for other in wire.reserve_fields[1:]:
        body.pop(other, None)
    result = govern_request(body, api=wire.api, context_window=16_000, cache_breakpoints=False)
    assert 0 < result.body[field] < 100_000
    assert any(a.stage == "reserve" for a in result.report.actions)


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_the_page_and_the_conversation_read_the_body(wire: WireFormat) -> None:
    body = SAMPLES[wire.api].body
    shown = wire.messages(body)
    assert [m["role"] for m in shown] == ["system", "user"]
    page = messages_of(wire.api, json.dumps(body).encode())
    assert [(m["role"], text_of(m)) for m in page] == [(m["role"], text_of(m)) for m in shown]
    assert text_of(shown[-1]) == "hi"
    system, first = wire.fixed_parts(body)
    assert system and first
    assert wire.session(body) is None
    assert from_body(wire.api, body, "m") == digest(wire.api, body, "m")
    assert digest(wire.api, body, "m") != digest(wire.api, {}, "m")


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_the_usage_reader_reads_an_answer(wire: WireFormat) -> None:
    sample = SAMPLES[wire.api]
    raw = json.dumps(sample.answer).encode()
    assert wire.usage_mark in raw and may_carry_usage(raw)
    assert wire.usage(sample.answer) == sample.usage
    assert usage_of(wire.api, raw) == sample.usage
    assert wire.usage({}) is None


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_the_stream_end_is_recognised(wire: WireFormat) -> None:
    sample = SAMPLES[wire.api]
    for name, data in sample.ends:
        assert wire.stream_end(name, data), (name, data)
    assert not wire.stream_end(*sample.goes_on)
    watch = StreamWatch(wire.api)
    name, data = sample.goes_on
    watch.see((f"event: {name}\n" if name else "").encode() + b"data: " + data + b"\n\n")
    assert not watch.finished
    name, data = sample.ends[0]
    watch.see((f"event: {name}\n" if name else "").encode() + b"data: " + data + b"\n\n")
    assert watch.finished


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_errors_are_json_in_the_apis_shape(wire: WireFormat) -> None:
    sample = SAMPLES[wire.api]
    for status in (400, 413, 502):
        body = wire.error_body("no good", "invalid_request_error", None, None, status)
        assert sample.message_of(json.loads(json.dumps(body))) == "no good"
    route = BY_API[wire.api]
    assert route.error_body("no good", "upstream_error", status=502) == wire.error_body(
        "no good", "upstream_error", None, None, 502
    )
    event = route.stream_error("broke off").decode()
    lines = event.split("\n")
    assert event.endswith("\n\n")
    if sample.error_event is None:
        assert lines[0].startswith("data: ")
    else:
        assert lines[0] == f"event: {sample.error_event}" and lines[1].startswith("data: ")
    data = json.loads(next(line for line in lines if line.startswith("data: "))[6:])
    read = STREAM_ERROR_MESSAGE.get(wire.api, sample.message_of)
    assert read(data) == "broke off"


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_the_proxy_serves_its_routes(wire: WireFormat) -> None:
    served = [(r.path, r.versions, r.streams) for r in ROUTES if r.api == wire.api]
    assert served == [(r.path, r.versions, r.streams) for r in wire.routes]
    assert all(r.wire is wire and r.required == wire.required for r in ROUTES if r.wire is wire)
    assert route_for_path("not/anything/known").wire is FALLBACK
    if wire.passthrough is not None:
        claimed = [p for p in ("messages/batches", "models/x:countTokens", "files") if
                   wire.passthrough(p, "v1")]  # fmt: skip
        assert all(route_for_path(p).wire is wire for p in claimed)


@pytest.mark.parametrize("wire", FORMATS, ids=IDS)
def test_the_body_says_whether_the_answer_streams(wire: WireFormat) -> None:
    """``"stream": true`` / ``false`` as the body says; without it, the format's default."""
    config = ProxyConfig(upstream="http://127.0.0.1:9/v1", context_window=100_000)
    body = {k: v for k, v in SAMPLES[wire.api].body.items() if k != "stream"}
    for given, streams in ((True, True), (False, False), (None, wire.stream_default)):
        sent = body if given is None else {**body, "stream": given}
        raw = json.dumps(sent).encode()
        assert govern_body(raw, config, wire.api).stream is streams, given


# -- the recipe ----------------------------------------------------------------------------

PAGE = ROOT / "docs" / "architecture.md"
RECIPE_START = "### Recipe: a new wire format"


def _recipe() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    assert RECIPE_START in text
    section = text.split(RECIPE_START, 1)[1].split("\n#", 1)[0]
    return [line for line in section.splitlines() if line.startswith(("- ", "  "))]


def _prefix(wire: WireFormat) -> str:
    """The format's module prefix: ``chat`` of ``formats/_chat_wire.py``."""
    module = sys.modules[wire.stream_end.__module__].__name__
    assert module.startswith("context_governor.formats.") and module.endswith("_wire")
    return module.rsplit(".", 1)[1].removesuffix("_wire").removeprefix("_")


def test_the_recipe_names_files_that_exist_for_every_format() -> None:
    named = [
        (path, "optional" in line)
        for line in _recipe()
        for path in re.findall(r"`([\w/<>.-]+\.(?:py|md))`", line)
    ]
    assert len(named) >= 8
    for path, optional in named:
        concrete = [path] if "<name>" not in path else [
            path.replace("<name>", _prefix(wire)) for wire in FORMATS
        ]  # fmt: skip
        for found in concrete:
            where = ROOT / found if found.startswith(("tests/", "docs/")) else SRC / found
            assert optional or where.exists(), found


def test_every_wire_module_is_registered() -> None:
    modules = sorted(p.stem for p in (SRC / "formats").glob("_*_wire.py"))
    assert modules == sorted("_" + _prefix(wire) + "_wire" for wire in FORMATS)
    formats_doc = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    for wire in FORMATS:
        assert f"`_{_prefix(wire)}_wire.py`" in formats_doc, wire.api


def test_every_format_has_its_row_among_the_proxys_routes() -> None:
    """docs/proxy.md's table of governed routes names each format's first route."""
    page = (ROOT / "docs" / "proxy.md").read_text(encoding="utf-8")
    table = page.split("## Governed routes", 1)[1].split("\n\n", 2)[1]
    for wire in FORMATS:
        first = wire.routes[0]
        assert f"| `POST /{first.versions[0]}/{first.path}" in table, wire.api


#: Where an API's name may be compared with: the names table, each format's own modules.
ALLOWED = ("formats/_base.py", "formats/_registry.py", "formats/_wire.py")
#: Tables keyed by API names outside the registry, with the reason they are not in it.
TABLES = {
    # the run command's model clients live in llm/ (above formats/) and exist for three
    # of the four APIs: its table of them is the CLI's
    "cli/_run.py",
    # counting/ is below formats/: media_rule_for's optional ``api`` (a caller's hint,
    # which no module of the package passes) names the media billing rule of each
    "counting/_media.py",
}


def _own_module(rel: str) -> bool:
    """A format's own modules: its edge, rules, request, wire and helper modules."""
    if rel in ALLOWED:
        return True
    prefixes = {_prefix(wire) for wire in FORMATS}
    name = Path(rel).stem.removeprefix("_")
    return rel.startswith("formats/") and any(
        name == prefix or name.startswith(prefix + "_") for prefix in prefixes
    )


def _mentions_api(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return bool(re.search(r"(^|\.|_)api\b", text))


def _api_names(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and child.value in APIS:
            found.add(child.value)
    return found


def test_no_module_branches_on_an_api_name() -> None:
    """Outside the formats' own modules, no ``api == "anthropic"`` (or ``!=``, ``in``)
    and no table keyed by the API names: they look the API up in the registry."""
    branches: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("demo/project/") or _own_module(rel):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                named = set().union(*(_api_names(side) for side in sides))
                if named and any(_mentions_api(side) for side in sides):
                    branches.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Dict) and rel not in TABLES:
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if "responses" in keys and len(keys & set(APIS)) >= 2:
                    branches.append(f"{rel}:{node.lineno}: a table keyed by API names")
    assert not branches, "\n".join(branches)
