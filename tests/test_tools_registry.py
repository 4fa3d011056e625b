"""ToolRegistry: schemas from type hints and docstrings, argument checks, and calls.

Calls run through ``asyncio.run`` (``call``), so each test owns its event loop.
Every failure the model can cause must come back as an error outcome whose text
starts with ``Error:``; ``call()`` must never raise for them.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import functools
import json
import threading
import time
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import pytest

from context_governor.errors import ConfigError
from context_governor.tools import (
    Tool,
    ToolDefinitionError,
    ToolError,
    ToolOutcome,
    ToolRegistry,
    make_tool,
    tool,
)
from context_governor.tools._registry import truncate
from context_governor.tools._schema import parse_docstring


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


def call(
    registry: ToolRegistry,
    name: str,
    arguments: str | Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> ToolOutcome:
    return asyncio.run(registry.call(name, arguments, **kwargs))


def params_of(fn: Any, **kwargs: Any) -> dict[str, Any]:
    return make_tool(fn, **kwargs).parameters


# --------------------------------------------------------------------------- schema generation


def test_scalar_types_defaults_and_required() -> None:
    def f(a: str, b: int = 2, c: float = 0.5, d: bool = False, e: str | None = None) -> str:
        return ""

    assert params_of(f) == {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer", "description": "(default: 2)"},
            "c": {"type": "number", "description": "(default: 0.5)"},
            "d": {"type": "boolean", "description": "(default: false)"},
            # Optional with a None default: a plain schema, simply left out by the model.
            "e": {"type": "string"},
        },
        "required": ["a"],
    }


def test_containers_choices_and_unions() -> None:
    def f(
        ids: list[int],
        tags: list[str] | None = None,
        meta: dict[str, Any] | None = None,
        counts: dict[str, int] | None = None,
        anything: list | None = None,  # type: ignore[type-arg]
        mode: Literal["fast", "slow"] = "fast",
        color: Color = Color.RED,
        level: Level = Level.LOW,
        key: int | str = 0,
        maybe: int | None = 1,
        note=None,  # type: ignore[no-untyped-def]
    ) -> None:
        return None

    props = params_of(f)["properties"]
    assert props["ids"] == {"type": "array", "items": {"type": "integer"}}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["meta"] == {"type": "object"}
    assert props["counts"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["anything"] == {"type": "array"}
    assert props["mode"] == {
        "type": "string",
        "enum": ["fast", "slow"],
        "description": '(default: "fast")',
    }
    assert props["color"] == {
        "type": "string",
        "enum": ["red", "green"],
        "description": '(default: "red")',
    }
    assert props["level"]["type"] == "integer" and props["level"]["enum"] == [1, 2]
    assert props["key"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    # Nullable with a non-None default: null must stay expressible.
    assert props["maybe"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert props["note"] == {}
    assert params_of(f)["required"] == ["ids"]


def test_required_nullable_parameter_stays_required() -> None:
    def f(x: int | None) -> None:
        return None

    params = params_of(f)
    assert params["required"] == ["x"]
    assert params["properties"]["x"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}


def test_annotated_description_and_docstring_precedence() -> None:
    def f(a: Annotated[int, "from the hint"], b: Annotated[str, "hint b"] = "x") -> None:
        """Do it.

        Args:
            b: from the docstring
        """

    props = params_of(f)["properties"]
    assert props["a"] == {"type": "integer", "description": "from the hint"}
    assert props["b"]["description"] == 'from the docstring (default: "x")'


def test_docstring_first_paragraph_and_google_args() -> None:
    def f(path: str, offset: int = 1, *, verbose: bool = False) -> str:
        """Read a file from the workspace,
        numbering its lines.

        A second paragraph that is not part of the description.

        Args:
            path (str): The file to read. It may be
                long and continue on the next line.
            offset: First line.
            verbose: Say more.

        Returns:
            The text.
            path: not a parameter description.
        """
        return ""

    schema = make_tool(f).schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "f"
    assert fn["description"] == "Read a file from the workspace, numbering its lines."
    props = fn["parameters"]["properties"]
    assert props["path"]["description"] == (
        "The file to read. It may be long and continue on the next line."
    )
    assert props["offset"]["description"] == "First line. (default: 1)"
    assert props["verbose"]["description"] == "Say more. (default: false)"


def test_parse_docstring_variants() -> None:
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("One line.") == ("One line.", {})
    doc = """Summary.

    Arguments:
        *args: ignored star
        x (int, optional): An x.
    Raises:
        ValueError: never a parameter
    """
    assert parse_docstring(doc) == ("Summary.", {"args": "ignored star", "x": "An x."})
    # A section header right after the summary ends the paragraph.
    assert parse_docstring("Summary.\nArgs:\n    a: A.\n") == ("Summary.", {"a": "A."})


def test_name_description_and_timeout_overrides() -> None:
    def f() -> str:
        """Docstring text."""
        return ""

    t = make_tool(f, name="other-name", description="Given text.", timeout=2.0)
    assert (t.name, t.description, t.timeout) == ("other-name", "Given text.", 2.0)
    assert t.schema()["function"]["parameters"] == {
        "type": "object",
        "properties": {},
        "required": [],
    }
    assert make_tool(lambda: 1, name="no_doc").description == ""


@pytest.mark.parametrize(
    "source",
    [
        "def f(x: set[int]): pass",
        "def f(x: tuple[int, int]): pass",
        "def f(x: dict[int, str]): pass",
        "def f(x: Literal[b'raw']): pass",
        "def f(*xs: int): pass",
        "def f(**kw: int): pass",
        "def f(x: int, /): pass",
        "def f(x: 'Undefined'): pass",
    ],
)
def test_signatures_that_cannot_be_tools(source: str) -> None:
    namespace: dict[str, Any] = {"Literal": Literal}
    exec(source, namespace)
    with pytest.raises(ToolDefinitionError, match="f:"):
        make_tool(namespace["f"])


def test_bad_names_duplicates_and_timeouts_are_refused() -> None:
    reg = ToolRegistry()

    def f() -> None:
        return None

    for bad in ("", "has space", "x" * 65, "dot.ted"):
        with pytest.raises(ToolDefinitionError, match="name"):
            reg.register(f, name=bad)
    reg.register(f)
    with pytest.raises(ToolDefinitionError, match="already registered"):
        reg.register(f)
    with pytest.raises(ToolDefinitionError, match="timeout"):
        reg.register(f, name="g", timeout=0)
    with pytest.raises(ConfigError):
        ToolRegistry(max_output_chars=0)
    with pytest.raises(ConfigError):
        call(reg, "f", None, timeout=-1)


# --------------------------------------------------------------------------- registration


def test_decorator_bare_and_with_arguments_and_introspection() -> None:
    reg = ToolRegistry()

    @reg.tool
    def first(a: int) -> int:
        """First tool."""
        return a

    @reg.tool(name="second_tool", description="Second.", timeout=1.5)
    async def second() -> str:
        return "ok"

    assert first(3) == 3  # the decorator returns the function itself
    assert reg.names() == ["first", "second_tool"]
    assert "first" in reg and "second" not in reg and 42 not in reg
    assert len(reg) == 2
    assert [t.name for t in reg] == ["first", "second_tool"]
    second_tool = reg.get("second_tool")
    assert second_tool is not None and second_tool.is_async and second_tool.timeout == 1.5
    assert [s["function"]["name"] for s in reg.schemas()] == ["first", "second_tool"]
    assert reg.schemas()[1]["function"]["description"] == "Second."


async def _scaled(x: int, factor: int) -> int:
    return x * factor


class Counter:
    """A callable object: its ``__call__`` annotations give the schema."""

    def __call__(self, step: int = 1) -> int:
        return step + 1


def test_partials_and_callable_objects() -> None:
    reg = ToolRegistry()
    triple = reg.register(functools.partial(_scaled, factor=3), name="triple")
    assert triple.is_async
    assert triple.parameters["required"] == ["x"]
    assert triple.parameters["properties"]["factor"]["description"] == "(default: 3)"
    counter = reg.register(Counter(), name="count")
    assert counter.parameters["properties"]["step"]["type"] == "integer"
    assert call(reg, "triple", {"x": "2"}).content == "6"
    assert call(reg, "count", {"step": 4}).content == "5"


def test_schemas_are_fresh_copies() -> None:
    reg = ToolRegistry()
    reg.register(lambda a: a, name="echo")  # type: ignore[no-untyped-call]
    reg.schemas()[0]["function"]["parameters"]["properties"]["a"]["type"] = "mutated"
    assert reg.schemas()[0]["function"]["parameters"]["properties"]["a"] == {}


def test_module_level_tool_decorator_and_registering_tools() -> None:
    @tool
    def shared(x: int) -> int:
        """Shared tool."""
        return x * 2

    @tool(name="renamed", timeout=3)
    def other() -> str:
        return "o"

    assert isinstance(shared, Tool) and shared.name == "shared"
    assert isinstance(other, Tool) and (other.name, other.timeout) == ("renamed", 3)
    a, b = ToolRegistry(), ToolRegistry()
    assert a.register(shared) is shared
    alias = b.register(shared, name="double", description="Twice x.")
    assert alias.name == "double" and alias.description == "Twice x."
    assert call(b, "double", '{"x": 4}').content == "8"
    assert call(a, "shared", {"x": 5}).content == "10"


# --------------------------------------------------------------------------- calls


def registry_with_examples() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def add(a: int, b: float = 1.0) -> dict[str, Any]:
        return {"sum": a + b, "types": [type(a).__name__, type(b).__name__]}

    @reg.tool
    async def greet(name: str, loud: bool = False) -> str:
        await asyncio.sleep(0)
        return f"HELLO {name.upper()}" if loud else f"hello {name}"

    @reg.tool
    def kinds(
        color: Color,
        mode: Literal["a", "b"] = "a",
        ids: list[int] | None = None,
        key: int | str = 0,
        level: Level = Level.LOW,
    ) -> str:
        return repr((color, mode, ids, key, level))

    @reg.tool
    def nothing() -> None:
        return None

    return reg


def test_sync_and_async_tools_return_text_and_json() -> None:
    reg = registry_with_examples()
    out = call(reg, "add", '{"a": 2, "b": 3}')
    assert out == ToolOutcome('{"sum": 5.0, "types": ["int", "float"]}')
    assert 0 < out.elapsed < 1
    assert call(reg, "greet", {"name": "ada", "loud": True}).content == "HELLO ADA"
    assert call(reg, "nothing", None).content == "null"
    assert call(reg, "nothing", "").content == "null"
    assert call(reg, "nothing", "null").content == "null"
    assert call(reg, "nothing", "  ").is_error is False


def test_simple_coercions() -> None:
    reg = registry_with_examples()
    assert json.loads(call(reg, "add", {"a": "7", "b": "2.5"}).content)["sum"] == 9.5
    assert json.loads(call(reg, "add", {"a": 3.0}).content)["types"] == ["int", "float"]
    assert call(reg, "greet", {"name": 42, "loud": "TRUE"}).content == "HELLO 42"
    got = call(reg, "kinds", {"color": "green", "ids": "[1, 2]", "level": "2"}).content
    assert got == "(<Color.GREEN: 'green'>, 'a', [1, 2], 0, <Level.HIGH: 2>)"
    # Member names are accepted as well as values.
    assert call(reg, "kinds", {"color": "RED"}).content.startswith("(<Color.RED")
    # A union tries every option strictly before coercing: "5" stays a string.
    assert call(reg, "kinds", {"color": "red", "key": "5"}).content.endswith("'5', <Level.LOW: 1>)")
    assert call(reg, "kinds", {"color": "red", "key": 5}).content.endswith(", 5, <Level.LOW: 1>)")


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a": 1,', "arguments for add are not valid JSON"),
        ("[1, 2]", "must be a JSON object of named parameters, got array"),
        ('"text"', "must be a JSON object of named parameters, got string"),
        ({}, "missing required parameter 'a'"),
        ({"a": 1, "c": 2}, "unknown parameter 'c'"),
        ({"a": "x"}, "parameter 'a' must be an integer, got string \"x\""),
        ({"a": True}, "parameter 'a' must be an integer, got boolean true"),
        ({"a": 1.5}, "parameter 'a' must be an integer, got number 1.5"),
        ({"a": 1, "b": "inf"}, "parameter 'b' must be a number"),
    ],
)
def test_bad_arguments_become_error_outcomes(arguments: Any, expected: str) -> None:
    out = call(registry_with_examples(), "add", arguments)
    assert out.is_error
    assert out.content.startswith("Error: ")
    assert expected in out.content
    assert "Parameters: a, b?." in out.content or "JSON" in out.content


def test_all_argument_problems_are_reported_at_once() -> None:
    out = call(registry_with_examples(), "kinds", {"mode": "c", "ids": [1, "x"], "zz": 0})
    assert out.is_error
    assert "unknown parameter 'zz'" in out.content
    assert "missing required parameter 'color'" in out.content
    assert 'parameter \'mode\' must be one of "a", "b", got string "c"' in out.content
    assert "parameter 'ids[1]' must be an integer" in out.content


def test_unknown_tool_lists_the_available_ones() -> None:
    out = call(registry_with_examples(), "ad", {})
    assert out.is_error
    assert out.content == ("Error: unknown tool 'ad'. Available tools: add, greet, kinds, nothing.")
    assert call(ToolRegistry(), "x").content.endswith("Available tools: none.")


def test_raising_tools_become_error_outcomes() -> None:
    reg = ToolRegistry()

    @reg.tool
    def boom() -> str:
        raise ValueError("bad thing")

    @reg.tool
    async def aboom() -> str:
        raise KeyError("k")

    @reg.tool
    def expected() -> str:
        raise ToolError("file not found: x.txt")

    @reg.tool
    def own_timeout() -> str:
        raise TimeoutError("socket read")

    @reg.tool
    def stop() -> str:
        raise StopIteration("done")

    @reg.tool
    def explicit() -> ToolOutcome:
        return ToolOutcome("Error: told you", is_error=True)

    @reg.tool
    def unserializable() -> Any:
        loop: list[Any] = []
        loop.append(loop)
        return loop

    assert call(reg, "boom") == ToolOutcome("Error: boom failed: ValueError: bad thing", True)
    assert call(reg, "aboom").content == "Error: aboom failed: KeyError: 'k'"
    assert call(reg, "expected").content == "Error: file not found: x.txt"
    assert (
        call(reg, "own_timeout").content == "Error: own_timeout failed: TimeoutError: socket read"
    )
    # A Future cannot carry StopIteration; without the conversion this call would hang.
    assert (
        call(reg, "stop", timeout=5).content
        == "Error: stop failed: RuntimeError: StopIteration: done"
    )
    assert call(reg, "explicit").content == "Error: told you"
    assert call(reg, "explicit").is_error
    bad = call(reg, "unserializable")
    assert bad.is_error and "cannot be serialized" in bad.content


def test_sync_timeout_returns_without_waiting_for_the_thread() -> None:
    reg = ToolRegistry()
    release = threading.Event()

    @reg.tool(timeout=0.2)
    def stuck() -> str:
        release.wait(10)
        return "late"

    start = time.perf_counter()
    out = call(reg, "stuck")  # includes asyncio.run() shutting its loop down
    took = time.perf_counter() - start
    release.set()
    assert out.is_error
    assert out.content == "Error: stuck timed out after 0.2s and was abandoned."
    assert 0.2 <= out.elapsed < 1.0
    assert took < 1.5


def test_async_timeout_cancels_the_coroutine() -> None:
    reg = ToolRegistry()
    cancelled: list[bool] = []

    @reg.tool
    async def slow() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "late"

    out = call(reg, "slow", timeout=0.1)
    assert out.is_error and "timed out after 0.1s" in out.content
    assert cancelled == [True]


def test_the_smallest_timeout_applies() -> None:
    reg = ToolRegistry(timeout=0.5)

    @reg.tool
    async def nap() -> str:
        await asyncio.sleep(0.2)
        return "done"

    @reg.tool(timeout=0.1)
    async def strict() -> str:
        await asyncio.sleep(0.2)
        return "done"

    assert call(reg, "nap").content == "done"  # 0.5 from the registry
    assert "after 0.05s" in call(reg, "nap", timeout=0.05).content  # the call's is smaller
    assert "after 0.1s" in call(reg, "strict").content  # the tool's own
    # A larger per-call limit (an agent loop's default) cannot lift the tool's.
    assert "after 0.1s" in call(reg, "strict", timeout=60).content


def test_sync_tools_do_not_block_the_event_loop() -> None:
    reg = ToolRegistry()

    @reg.tool
    def nap() -> str:
        time.sleep(0.3)
        return "rested"

    async def main() -> tuple[list[ToolOutcome], int, float]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        start = time.perf_counter()
        outs = await asyncio.gather(reg.call("nap", None), reg.call("nap", None))
        took = time.perf_counter() - start
        task.cancel()
        return list(outs), ticks, took

    outs, ticks, took = asyncio.run(main())
    assert [o.content for o in outs] == ["rested", "rested"]
    assert took < 0.55  # the two naps overlapped
    assert ticks >= 10  # and the loop kept running meanwhile


def test_context_variables_reach_sync_tools() -> None:
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id")
    reg = ToolRegistry()
    reg.register(lambda: request_id.get("unset"), name="whoami")

    async def main() -> str:
        request_id.set("req-7")
        return (await reg.call("whoami", None)).content

    assert asyncio.run(main()) == "req-7"


def test_cancelling_the_call_propagates() -> None:
    reg = ToolRegistry()

    @reg.tool
    async def forever() -> str:
        await asyncio.sleep(10)
        return ""

    async def main() -> None:
        task = asyncio.create_task(reg.call("forever", None))
        await asyncio.sleep(0.05)
        task.cancel()
        await task

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())


# --------------------------------------------------------------------------- output limits


def test_long_outputs_are_truncated_with_a_count() -> None:
    reg = ToolRegistry(max_output_chars=500)
    text = "".join(f"{i:05d}" for i in range(2000))  # 10,000 distinct characters
    reg.register(lambda: text, name="big")
    out = call(reg, "big")
    assert len(out.content) <= 500
    head, marker_and_tail = out.content.split("\n[... ", 1)
    count, tail = marker_and_tail.split(" characters cut ...]\n", 1)
    assert text.startswith(head) and text.endswith(tail)
    assert int(count) == len(text) - len(head) - len(tail)
    assert not out.is_error
    # The smaller of the per-call and the registry limit applies; none means no limit.
    assert len(call(reg, "big", max_output_chars=100).content) <= 100
    assert len(call(reg, "big", max_output_chars=100_000).content) <= 500
    assert call(ToolRegistry(), "x" * 3).is_error
    unlimited = ToolRegistry()
    unlimited.register(lambda: text, name="big")
    assert call(unlimited, "big").content == text


def test_errors_are_truncated_too() -> None:
    reg = ToolRegistry()

    @reg.tool
    def loud() -> str:
        raise ToolError("x" * 5000)

    out = call(reg, "loud", max_output_chars=300)
    assert out.is_error and len(out.content) <= 300 and out.content.startswith("Error: xxx")


def test_truncate_edges() -> None:
    assert truncate("short", 10) == "short"
    assert truncate("exactly10!", 10) == "exactly10!"
    cut = truncate("a" * 100, 40)
    assert cut == "aaaaa\n[... 90 characters cut ...]\naaaaa"  # 39 chars: the count shrank
    assert len(truncate("b" * 12345, 1000)) <= 1000
    # Too small for the marker: only the marker remains, still saying what was cut.
    assert truncate("a" * 100, 5) == "\n[... 100 characters cut ...]\n"
