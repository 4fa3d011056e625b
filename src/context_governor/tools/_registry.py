"""Tools as plain Python functions: registration, schemas, and calls that never raise.

Usage::

    registry = ToolRegistry()

    @registry.tool
    def add(a: int, b: int = 1) -> int:
        \"\"\"Add two integers.

        Args:
            a: The first addend.
            b: The second addend.
        \"\"\"
        return a + b

    registry.schemas()          # OpenAI chat-completions "tools" list
    await registry.call("add", '{"a": 2}')   # ToolOutcome(content="3", ...)

``call()`` is what an agent loop runs for each tool call the model makes. Every
problem the model could cause or fix (an unknown tool, bad JSON, a missing or
wrong-typed argument, a tool that raises or hangs) comes back as a
``ToolOutcome(is_error=True)`` whose content starts with ``Error:``, as the seed's
tools do, so the loop can send it straight back to the model. Programming
mistakes on our side of the line (an unsupported annotation, a duplicate name)
raise :class:`ToolDefinitionError` at registration instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import enum
import functools
import inspect
import json
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_type_hints, overload

from ..errors import ConfigError, ContextGovernorError
from ._schema import Invalid, Shape, UnsupportedType, json_type, parse_docstring, shape_of

__all__ = [
    "Tool",
    "ToolDefinitionError",
    "ToolError",
    "ToolOutcome",
    "ToolRegistry",
    "make_tool",
    "tool",
    "truncate",
]

F = TypeVar("F", bound=Callable[..., Any])
_N = TypeVar("_N", int, float)

#: OpenAI's rule for function names; other providers accept a subset of it.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolDefinitionError(ContextGovernorError, TypeError):
    """A function cannot become a tool (unsupported annotation, bad or duplicate name)."""


class ToolError(Exception):
    """Raise this inside a tool to report a problem the model should read as is.

    The outcome's content is ``"Error: " + str(exc)``, without the exception type
    or a traceback, which suits expected failures such as "file not found".
    """


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call, ready to become a ``tool`` message.

    ``content`` is always a string (truncated to the output limit), ``is_error``
    says the call failed (the content then starts with ``Error:``) and
    ``elapsed`` is the wall-clock seconds the call took. Equality ignores
    ``elapsed``: two outcomes with the same text and status are the same result.
    """

    content: str
    is_error: bool = False
    elapsed: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class _Param:
    name: str
    shape: Shape
    required: bool
    default: Any


@dataclass(frozen=True, eq=False)
class Tool:
    """A function with the JSON schema the model sees; build one with :func:`make_tool`."""

    name: str
    description: str
    #: JSON schema of the arguments object
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    #: seconds before a call is abandoned; None means no limit
    timeout: float | None = None
    is_async: bool = False
    _params: tuple[_Param, ...] = field(default=(), repr=False)

    def schema(self) -> dict[str, Any]:
        """The OpenAI chat-completions entry for this tool (a fresh copy each time)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(self.parameters),
            },
        }


# --------------------------------------------------------------------------- building tools


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool:
    """Build a :class:`Tool` from a function's signature, type hints and docstring.

    The description is ``description`` or the docstring's first paragraph;
    parameter descriptions come from the docstring's ``Args:`` section or an
    ``Annotated[X, "text"]`` hint. Parameters with a default are not required;
    the default is stated in the description rather than as a JSON-schema
    ``default``, which some providers reject. Raises ToolDefinitionError for
    anything the model could not call correctly.
    """
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    if not isinstance(tool_name, str) or not _NAME.match(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-'"
        )
    if timeout is not None and not timeout > 0:
        raise ToolDefinitionError(f"{tool_name}: timeout must be positive, got {timeout!r}")
    summary, arg_docs = parse_docstring(inspect.getdoc(fn))
    params = _params_of(fn, tool_name)
    return Tool(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=_parameters_schema(params, arg_docs),
        fn=fn,
        timeout=timeout,
        is_async=_is_async(fn),
        _params=params,
    )


def _is_async(fn: Callable[..., Any]) -> bool:
    """Coroutine functions, including partials and objects with an async ``__call__``."""
    call = getattr(fn, "__call__", None)  # noqa: B004 - we want the method itself
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _params_of(fn: Callable[..., Any], tool_name: str) -> tuple[_Param, ...]:
    try:
        signature = inspect.signature(fn)
        hints = _type_hints(fn)
    except (TypeError, ValueError, NameError) as exc:
        raise ToolDefinitionError(f"{tool_name}: cannot read the signature: {exc}") from exc
    params = []
    for p in signature.parameters.values():
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise ToolDefinitionError(
                f"{tool_name}: parameter {p.name!r} is {p.kind.description}; "
                "tools take named arguments only"
            )
        try:
            shape = shape_of(hints.get(p.name, p.empty))
        except UnsupportedType as exc:
            raise ToolDefinitionError(f"{tool_name}: parameter {p.name!r}: {exc}") from exc
        params.append(_Param(p.name, shape, p.default is p.empty, p.default))
    return tuple(params)


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolved annotations of a function, a ``functools.partial`` or a callable object."""
    try:
        return get_type_hints(fn, include_extras=True)
    except TypeError:
        inner = fn.func if isinstance(fn, functools.partial) else type(fn).__call__
        return get_type_hints(inner, include_extras=True)


def _parameters_schema(params: tuple[_Param, ...], docs: Mapping[str, str]) -> dict[str, Any]:
    properties = {p.name: _property_schema(p, docs.get(p.name)) for p in params}
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in params if p.required],
    }


def _property_schema(param: _Param, doc: str | None) -> dict[str, Any]:
    schema = dict(param.shape.schema)
    if param.default is None and schema.get("anyOf", [None])[-1] == {"type": "null"}:
        # An optional parameter that defaults to None is simply left out by the
        # model; a plain schema is easier for every provider than anyOf-with-null.
        rest = schema["anyOf"][:-1]
        described = schema.get("description")
        schema = dict(rest[0]) if len(rest) == 1 else {"anyOf": rest}
        if described:
            schema["description"] = described
    text = " ".join(t for t in (doc or schema.get("description", ""), _default_note(param)) if t)
    if text:
        schema["description"] = text
    return schema


def _default_note(param: _Param) -> str:
    if param.required or param.default is None:
        return ""
    value = param.default.value if isinstance(param.default, enum.Enum) else param.default
    try:
        return f"(default: {json.dumps(value, ensure_ascii=False)})"
    except (TypeError, ValueError):
        return ""


@overload
def tool(fn: F, /) -> Tool: ...
@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Callable[[F], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[F], Tool]:
    """Decorator turning a function into a :class:`Tool` (bare or with arguments).

    Unlike :meth:`ToolRegistry.tool`, the decorated name becomes the Tool; pass it
    to :meth:`ToolRegistry.register` later. Useful for tools shared between registries.
    """

    def build(f: Callable[..., Any]) -> Tool:
        return make_tool(f, name=name, description=description, timeout=timeout)

    return build(fn) if fn is not None else build


# --------------------------------------------------------------------------- registry


class ToolRegistry:
    """The tools one agent may call, in registration order.

    ``timeout`` and ``max_output_chars`` apply to every call. Each limit is a cap:
    the registry's, the tool's own timeout and the arguments of :meth:`call` all
    apply, so the smallest one wins. An agent loop that always passes its own
    per-call limit therefore cannot lift a stricter limit a tool was declared with.
    """

    def __init__(
        self, *, timeout: float | None = None, max_output_chars: int | None = None
    ) -> None:
        _check_limits(timeout, max_output_chars)
        self.timeout = timeout
        self.max_output_chars = max_output_chars
        self._tools: dict[str, Tool] = {}

    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> Callable[[F], F]: ...
    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> Callable[..., Any]:
        """Decorator registering a function; the function itself is returned unchanged."""

        def decorate(f: F) -> F:
            self.register(f, name=name, description=description, timeout=timeout)
            return f

        return decorate(fn) if fn is not None else decorate

    def register(
        self,
        fn: Callable[..., Any] | Tool,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """Add a function (or a prepared :class:`Tool`); a name already taken is an error."""
        if isinstance(fn, Tool):
            built = _override(fn, name=name, description=description, timeout=timeout)
        else:
            built = make_tool(fn, name=name, description=description, timeout=timeout)
        if built.name in self._tools:
            raise ToolDefinitionError(f"a tool named {built.name!r} is already registered")
        self._tools[built.name] = built
        return built

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def schemas(self) -> list[dict[str, Any]]:
        """The ``tools`` list of a chat-completions request, in registration order.

        The order is stable from call to call, so the serialized tool list (which
        providers put before the messages) never breaks the cached prompt prefix.
        """
        return [t.schema() for t in self._tools.values()]

    async def call(
        self,
        name: str,
        arguments: str | Mapping[str, Any] | None,
        *,
        timeout: float | None = None,
        max_output_chars: int | None = None,
    ) -> ToolOutcome:
        """Run one tool call; problems become error outcomes, never exceptions.

        ``arguments`` is the model's JSON text (or an already-decoded mapping;
        None and "" mean no arguments). Sync tools run in a separate thread so the
        event loop never blocks; when one times out, its thread cannot be killed
        and keeps running in the background until the function returns. Async
        tools are cancelled on timeout. Cancelling the call itself propagates.
        """
        _check_limits(timeout, max_output_chars)
        limit = _smallest(max_output_chars, self.max_output_chars)
        start = time.perf_counter()
        content, is_error = await self._run(name, arguments, timeout)
        if limit is not None:
            content = truncate(content, limit)
        return ToolOutcome(content, is_error, time.perf_counter() - start)

    async def _run(
        self, name: str, arguments: str | Mapping[str, Any] | None, timeout: float | None
    ) -> tuple[str, bool]:
        found = self._tools.get(name) if isinstance(name, str) else None
        if found is None:
            available = ", ".join(self._tools) or "none"
            return f"Error: unknown tool {name!r}. Available tools: {available}.", True
        try:
            kwargs = _bind_arguments(found, arguments)
        except _BadArguments as exc:
            return f"Error: {exc}", True
        return await _invoke(found, kwargs, _smallest(timeout, found.timeout, self.timeout))


def _override(t: Tool, *, name: str | None, description: str | None, timeout: float | None) -> Tool:
    if name is None and description is None and timeout is None:
        return t
    return make_tool(
        t.fn,
        name=name if name is not None else t.name,
        description=description if description is not None else t.description,
        timeout=timeout if timeout is not None else t.timeout,
    )


def _smallest(*limits: _N | None) -> _N | None:
    """The strictest of the limits that are set; None when none is."""
    given = [x for x in limits if x is not None]
    return min(given) if given else None


def _check_limits(timeout: float | None, max_output_chars: int | None) -> None:
    if timeout is not None and not timeout > 0:
        raise ConfigError(f"timeout must be positive, got {timeout!r}")
    if max_output_chars is not None and (
        isinstance(max_output_chars, bool)
        or not isinstance(max_output_chars, int)
        or max_output_chars < 1
    ):
        raise ConfigError(f"max_output_chars must be a positive int, got {max_output_chars!r}")


# --------------------------------------------------------------------------- arguments


class _BadArguments(Exception):
    """The model's arguments cannot be used; the message tells it what to send instead."""


def _bind_arguments(t: Tool, arguments: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """Decode, validate and coerce the model's arguments into keyword arguments for ``t``.

    Every problem is collected, so the model can fix them all in one retry.
    """
    decoded = _decode(t.name, arguments)
    known = {p.name for p in t._params}
    problems = [f"unknown parameter {k!r}" for k in decoded if k not in known]
    kwargs: dict[str, Any] = {}
    for p in t._params:
        if p.name not in decoded:
            if p.required:
                problems.append(f"missing required parameter {p.name!r}")
            continue
        try:
            kwargs[p.name] = p.shape.convert(decoded[p.name], True)
        except Invalid as exc:
            problems.append(f"parameter '{p.name}{exc.where}' {exc.message}")
    if problems:
        expected = ", ".join(f"{p.name}{'' if p.required else '?'}" for p in t._params)
        raise _BadArguments(
            f"invalid arguments for {t.name}: {'; '.join(problems)}. "
            f"Parameters: {expected or 'none'}."
        )
    return kwargs


def _decode(tool_name: str, arguments: str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise _BadArguments(
                f"arguments for {tool_name} are not valid JSON ({exc}); "
                "send a JSON object of named parameters"
            ) from None
        if arguments is None:
            return {}
    if not isinstance(arguments, Mapping):
        raise _BadArguments(
            f"arguments for {tool_name} must be a JSON object of named parameters, "
            f"got {json_type(arguments)}"
        )
    return arguments


# --------------------------------------------------------------------------- invocation


async def _invoke(t: Tool, kwargs: dict[str, Any], timeout: float | None) -> tuple[str, bool]:
    """Run the function under the timeout and turn whatever happens into (content, is_error)."""
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            pending: Awaitable[Any] = (
                t.fn(**kwargs) if t.is_async else _in_daemon_thread(t.fn, kwargs)
            )
            result = await pending
    except TimeoutError as exc:
        if not scope.expired():  # the tool's own TimeoutError (a socket, say)
            return f"Error: {t.name} failed: TimeoutError: {exc}", True
        return f"Error: {t.name} timed out after {timeout:g}s and was abandoned.", True
    except ToolError as exc:
        return f"Error: {exc}", True
    except Exception as exc:
        return f"Error: {t.name} failed: {type(exc).__name__}: {exc}", True
    return _render_result(t.name, result)


def _in_daemon_thread(fn: Callable[..., Any], kwargs: dict[str, Any]) -> asyncio.Future[Any]:
    """Run a sync function in its own daemon thread and return a future for its result.

    Not ``asyncio.to_thread``: a timed-out function would keep a worker of the
    shared default executor busy, and ``asyncio.run()`` joins that executor on
    exit, so one hung tool would hang the program's shutdown. A daemon thread
    holds up neither. Context variables are copied, as ``to_thread`` does.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():  # the caller may have given up (timeout, cancel)
            future.set_result(value) if ok else future.set_exception(value)

    def work() -> None:
        try:
            value = context.run(fn, **kwargs)
        except StopIteration as exc:  # a Future refuses StopIteration; coroutines convert it too
            outcome: tuple[bool, Any] = (False, RuntimeError(f"StopIteration: {exc}"))
        except BaseException as exc:
            outcome = (False, exc)
        else:
            outcome = (True, value)
        # RuntimeError: the loop closed while the tool was still running.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name=f"tool-{getattr(fn, '__name__', 'fn')}", daemon=True).start()
    return future


def _render_result(name: str, result: Any) -> tuple[str, bool]:
    """A tool's return value as (content, is_error): str as is, anything else as JSON."""
    if isinstance(result, ToolOutcome):
        return result.content, result.is_error
    if isinstance(result, str):
        return result, False
    try:
        return json.dumps(result, ensure_ascii=False, default=str), False
    except (TypeError, ValueError) as exc:
        return f"Error: {name} returned a value that cannot be serialized: {exc}", True


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters, keeping its head and its tail.

    Both ends matter for tool output: the head says what ran, the tail holds the
    error or the summary. The marker in the middle says how many characters were
    cut, so the model knows to narrow its request. The result never exceeds
    ``limit`` unless ``limit`` is too small for the marker itself.
    """
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text):d} characters cut ...]\n"  # widest possible count
    keep = max(0, limit - len(marker))
    head = keep - keep // 2
    tail = keep // 2
    cut = len(text) - head - tail
    marker = f"\n[... {cut} characters cut ...]\n"
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")
