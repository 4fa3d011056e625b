"""Hostile structure: nesting of any depth and values that contain themselves.

Each reaches every entry point (govern for every profile, a Governor, validate,
the govern and lint commands) and must give an InputError naming the place, never
a RecursionError or another traceback; input at exactly the limit must still be
governed by every profile.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from context_governor import ConfigError, Governor, InputError, govern, validate
from context_governor.cli import main
from context_governor.messages.inputs import MAX_DEPTH, structure_problem, unserializable_path
from context_governor.profiles import PROFILES

Message = dict[str, Any]


def nested_lists(levels: int, leaf: Any = "x") -> Any:
    """``levels`` lists, one inside the other, around ``leaf`` (built iteratively)."""
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def nested_dicts(levels: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def history(*, message: Message | None = None, arguments: Any = "{}") -> list[Message]:
    """A small legal history; ``message`` is inserted as messages[1], ``arguments``
    is the tool call's arguments (messages[2])."""
    return [
        {"role": "system", "content": "be brief"},
        message or {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
        {"role": "user", "content": "go on"},
    ]


def _govern_openai(messages: list[Message]) -> object:
    return govern(messages, context_window=4000)


def _govern_nanobot(messages: list[Message]) -> object:
    return govern(messages, profile="nanobot", context_window=4000)


def _governor(messages: list[Message]) -> object:
    return Governor(context_window=4000).govern(messages)


def _validate(messages: list[Message]) -> object:
    return validate(messages, provider="anthropic")


ENTRY_POINTS: list[Callable[[list[Message]], object]] = [
    _govern_openai,
    _govern_nanobot,
    _governor,
    _validate,
]

# Where the deep value goes: (history, expected start of the error's path).
PLACES: dict[str, Callable[[Any], tuple[list[Message], str]]] = {
    "content part": lambda deep: (
        history(message={"role": "user", "content": [{"type": "text", "text": "a", "x": deep}]}),
        "messages[1].content[0].x",
    ),
    "unknown key": lambda deep: (
        history(message={"role": "user", "content": "hi", "metadata": deep}),
        "messages[1].metadata",
    ),
    "tool-call arguments": lambda deep: (
        history(arguments=deep),
        "messages[2].tool_calls[0].function.arguments",
    ),
}


@pytest.mark.parametrize("levels", [MAX_DEPTH, 3_000, 100_000])
@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__.strip("_"))
def test_too_deep_is_an_input_error_naming_the_place(
    entry: Callable[[list[Message]], object], place: str, levels: int
) -> None:
    deep = nested_lists(levels) if place != "unknown key" else nested_dicts(levels)
    messages, path = PLACES[place](deep)
    with pytest.raises(InputError) as info:
        entry(messages)
    assert info.value.path.startswith(path)
    assert info.value.problem == f"nested deeper than {MAX_DEPTH} levels"
    assert len(str(info.value)) < 200  # one line, even for 10^5 levels


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda f: f.__name__.strip("_"))
def test_a_value_that_contains_itself_is_an_input_error(
    entry: Callable[[list[Message]], object], place: str
) -> None:
    loop: dict[str, Any] = {"k": [1, 2]}
    loop["k"].append(loop)
    messages, path = PLACES[place](loop)
    with pytest.raises(InputError) as info:
        entry(messages)
    assert info.value.path.startswith(path) and info.value.path.endswith(".k[2]")
    assert "cycle" in info.value.problem


def test_deep_or_cyclic_tools_are_input_errors() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": nested_dicts(10_000)}}
    with pytest.raises(InputError, match=r"^tools\[0\]\.function\.parameters"):
        govern(history(), tools=[tool])
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(InputError, match=r"^tools\[0\]\.x\[0\]: contains a cycle"):
        Governor(tools=[{"type": "function", "x": loop}])


def _at_limit() -> list[Message]:
    """Every message part as deep as allowed, with a lone surrogate at the bottom so
    that the unicode repair has to walk all the way down."""
    # the message is level 1, its content list 2, the part 3, "x" 4: MAX_DEPTH - 4 more
    part = {"type": "text", "text": "a", "x": nested_lists(MAX_DEPTH - 3, "bad \ud800")}
    return history(
        message={"role": "user", "content": [part], "meta": nested_dicts(MAX_DEPTH - 1)},
        arguments=nested_dicts(MAX_DEPTH - 4),
    )


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_input_at_the_depth_limit_is_governed_by_every_profile(profile: str) -> None:
    messages = _at_limit()
    before = copy.deepcopy(messages)
    assert structure_problem(messages[1], "m") is None
    for window in (None, 3000):
        govern(messages, profile=profile, context_window=window)
        governor = Governor(profile=profile, context_window=window)
        governor.govern(messages)
        governor.govern([*messages, {"role": "assistant", "content": "ok"}, messages[-1]])
    validate(messages, provider="openai" if profile == "nanobot" else profile)
    assert messages == before


def test_the_unicode_repair_reaches_the_bottom_and_copies_only_the_way_there() -> None:
    messages = _at_limit()
    out = govern(messages).messages
    bottom = out[1]["content"][0]["x"]
    for _ in range(MAX_DEPTH - 3):
        bottom = bottom[0]
    assert bottom == "bad \ufffd"
    assert out[1]["meta"] is messages[1]["meta"]  # untouched parts are shared
    assert messages[1]["content"][0]["x"] is not out[1]["content"][0]["x"]


def test_a_container_used_twice_is_not_a_cycle() -> None:
    shared = {"type": "image_url", "image_url": {"url": "data:,"}}
    messages = [{"role": "user", "content": [shared, shared]}]
    assert govern(messages).messages == messages
    # a shared value counts where it is deepest
    inner = nested_lists(MAX_DEPTH - 4)  # the message is level 1, "b"'s lists 2 to 4
    ok = {"role": "user", "content": "x", "a": inner, "b": [[[inner]]]}
    assert structure_problem(ok, "m") is None
    too_deep = {"role": "user", "content": "x", "a": inner, "b": [[[[inner]]]]}
    assert structure_problem(too_deep, "m") == (
        "m.b[0][0][0][...][0][0]",
        f"nested deeper than {MAX_DEPTH} levels",
    )


def test_unserializable_path_walks_any_depth() -> None:
    assert unserializable_path(nested_lists(100_000, {1, 2}), "v") == "v[0][0][0][0][...][0][0]"
    assert unserializable_path(nested_dicts(100_000), "v") is None
    loop: dict[str, Any] = {}
    loop["me"] = loop
    assert unserializable_path({"a": loop}, "v") == "v.a.me"


DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("command", ["govern", "lint"])
def test_cli_answers_deep_json_with_a_one_line_error(command: str) -> None:
    result = CliRunner().invoke(main, [command, "-"], input=DEEP_JSON)
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"error: input: nested too deeply to parse (a message may nest at most {MAX_DEPTH} "
        "levels)\n"
    )
    lines = '{"messages": []}\n' + DEEP_JSON + "\n"
    result = CliRunner().invoke(main, [command, "-"], input=lines)
    assert result.exit_code == 2
    assert result.output.startswith("error: line 2: nested too deeply to parse")


def test_cli_deep_json_in_a_real_process_has_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "context_governor", "govern", "-"],
        input=DEEP_JSON,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("error: input: nested")
    body = '{"messages": [{"role": "user", "content": "x", "k": ' + "[" * 500 + "]" * 500 + "}]}"
    proc = subprocess.run(
        [sys.executable, "-m", "context_governor", "govern", "-"],
        input=body,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        f"error: messages[0].k[0][0][0][...][0][0]: nested deeper than {MAX_DEPTH} levels\n"
    )


def test_error_messages_never_render_a_hostile_value() -> None:
    """repr() of a deep value raises RecursionError; of a huge one, makes a huge message."""
    deep = nested_lists(100_000)
    with pytest.raises(InputError) as info:
        govern([{"role": deep, "content": "x"}])
    assert (
        str(info.value) == "messages[0].role: unknown role a list; expected system, developer, user, "
        "assistant or tool"
    )
    with pytest.raises(InputError, match=r"unknown role 'xxxx.*\.\.\.; expected"):
        govern([{"role": "x" * 10_000_000, "content": "x"}])
    for setting in ("context_window", "max_output", "max_tool_result_chars", "compaction"):
        with pytest.raises(ConfigError) as config:
            govern([{"role": "user", "content": "x"}], **{setting: deep})
        assert "got a list" in str(config.value)


def test_shared_lists_that_expand_exponentially_are_refused() -> None:
    """60 lists of two, each holding the next twice: 2^60 copies once serialized."""
    bomb: Any = []
    for _ in range(60):
        bomb = [bomb, bomb]
    with pytest.raises(InputError, match=r"^messages\[0\]\.x.*holds more than 1,000,000"):
        govern([{"role": "user", "content": "hi", "x": bomb}])
    wide = [[] for _ in range(200_000)]  # many containers, none shared: fine
    assert structure_problem({"x": wide}, "m") is None
