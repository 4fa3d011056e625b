"""Lossless shrink (stages/_shrink.py, issue 37 items 1-2).

Each transform is exact: JSON parses to an equal value with every number written as it
was; what a terminal shows of the text is unchanged by the colour and redraw transforms
(a small terminal of this file's own draws both); a folded run reads back to the lines
it stood for. Exact-text results (file reads, ``cat``, numbered lines, tools the user
names) come out byte-identical.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_governor import CompactionPolicy, Governor, govern
from context_governor.errors import ConfigError
from context_governor.policies import (
    DEFAULT_EXACT_COMMANDS,
    DEFAULT_EXACT_TOOLS,
    SEED,
    policy_from_settings,
)
from context_governor.stages import shrink_text

# ---------------------------------------------------------------- a small terminal

_CSI = re.compile(r"\x1b\[([0-9;:?]*)([@-~])")


def terminal(text: str) -> list[str]:
    """What a terminal shows of ``text``: one string per line, trailing blanks dropped.
    Written apart from the stage: a cell grid, a cursor, CR, LF, tab stops, SGR, EL, CHA,
    ?25h/l."""
    rows: list[list[str]] = [[]]
    col = 0
    i = 0
    while i < len(text):
        found = _CSI.match(text, i)
        if found:
            params, final = found.groups()
            row = rows[-1]
            if final == "K":
                if params in ("", "0"):
                    del row[col:]
                elif params == "1":
                    row[: col + 1] = " " * min(col + 1, len(row))
                else:
                    row[:] = " " * len(row)
            elif final == "G":
                col = max(int(params or 1), 1) - 1
            i = found.end()
            continue
        char = text[i]
        if char == "\n":
            rows.append([])
            col = 0
        elif char == "\r":
            col = 0
        elif char == "\t":
            col = (col // 8 + 1) * 8  # to the next tab stop, drawing nothing
        else:
            row = rows[-1]
            while len(row) < col:
                row.append(" ")
            if col < len(row):
                row[col] = char
            else:
                row.append(char)
            col += 1
        i += 1
    return ["".join(r).rstrip(" \t") for r in rows]


def unfold(text: str) -> str:
    """A shrunk text with every folded run written out again."""
    out: list[str] = []
    for line in text.split("\n"):
        more = re.fullmatch(r"\[the line above repeated (\d+) more times\]", line)
        out.extend([out[-1]] * int(more.group(1)) if more else [line])
    return "\n".join(out)


# ---------------------------------------------------------------- json


def _tagged(text: str) -> Any:
    return json.loads(
        text,
        parse_float=lambda s: ("n", s),
        parse_int=lambda s: ("n", s),
        parse_constant=lambda s: ("n", s),
        object_pairs_hook=lambda pairs: ("o", pairs),
    )


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON, indent=st.sampled_from([None, 1, 2, 4, "\t"]), ascii_only=st.booleans())
def test_json_is_the_same_data_with_every_number_as_written(
    value: Any, indent: Any, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    out, done = shrink_text(text)
    assert json.loads(out) == json.loads(text)
    if done == ("json",):
        assert _tagged(out) == _tagged(text)  # keys in order, numbers written the same
        assert len(out) < len(text)
    assert shrink_text(out)[0] == out


@pytest.mark.parametrize(
    "text",
    [
        '{\n  "a": 1e5\n}',  # re-serialised: 100000.0
        '{\n  "a": 1.10\n}',  # 1.1
        '{\n  "a": -0\n}',  # 0
        '{\n  "a": 1,\n  "a": 2\n}',  # a repeated key would be lost
        '{\n  "a": "\\ud800"\n}',  # a lone surrogate cannot be written raw
    ],
)
def test_json_that_would_change_is_left_alone(text: str) -> None:
    assert shrink_text(text) == (text, ())


def test_a_json_api_response_is_compacted() -> None:
    body = {
        "id": "repo-1",
        "name": "context-governor",
        "owner": {"login": "octo", "id": 1, "site_admin": False},
        "topics": ["llm", "agents"],
        "stars": 1024,
        "score": 0.75,
        "description": "Gouvernance du contexte — é",
    }
    text = json.dumps(body, indent=2, ensure_ascii=True) + "\n"
    out, done = shrink_text(text)
    assert done == ("json",)
    assert out == json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    assert len(out) < 0.8 * len(text)


# ---------------------------------------------------------------- terminal text

_PIECES = st.sampled_from(
    [
        "a", "b", "xyz", "12%", "100%", " ", "  ", "\t", "é", "—", "\r", "\r",
        "\x1b[0m", "\x1b[31m", "\x1b[1;32m", "\x1b[K", "\x1b[0K", "\x1b[1K", "\x1b[2K",
        "\x1b[1G", "\x1b[G", "\x1b[4G", "\x1b[?25l", "\x1b[?25h",
    ]
)  # fmt: skip
_LINES = st.lists(st.lists(_PIECES, max_size=12).map("".join), min_size=1, max_size=8)


@settings(max_examples=500, deadline=None)
@given(lines=_LINES)
def test_what_the_terminal_shows_is_unchanged(lines: list[str]) -> None:
    text = "\n".join(lines)
    out, done = shrink_text(text)
    assert terminal(unfold(out)) == terminal(text)
    assert shrink_text(out)[0] == out  # idempotent: the same form on every request
    if not done:
        assert out is text


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.sampled_from(["x", "row 1", "", "  ", "[the line above repeated 2 more times]"]), max_size=30)
)
def test_folded_runs_read_back_exactly(lines: list[str]) -> None:
    text = "\n".join(lines)
    out, done = shrink_text(text)
    if "[the line above repeated 2 more times]" in lines:
        assert "repeats" not in done  # a result with such a line could not be read back
    elif done:  # folded: then trailing blanks go too
        assert unfold(out) == "\n".join(line.rstrip(" \t") for line in lines)
    else:  # trailing blanks alone are left
        assert out == text


def test_a_line_with_escapes_it_cannot_render_is_left_alone() -> None:
    for text in ("up\x1b[Aover", "link \x1b]8;;http://x\x1b\\x\x1b]8;;\x1b\\", "a\bb\x1b[0m",
                 "wide 漢字\rx", "\x1b(B\x1b[m plain"):  # fmt: skip
        assert shrink_text(text) == (text, ())


def test_pip_and_npm_progress_keep_their_last_picture() -> None:
    pip = (
        "Collecting numpy\n"
        "  Downloading numpy-2.0.whl (19.5 MB)\n"
        + "".join(f"\r     |{'█' * k}{' ' * (20 - k)}| {k * 5}%" for k in range(21))
        + "\nInstalling collected packages: numpy\nSuccessfully installed numpy-2.0\n"
    )
    out, done = shrink_text(pip)
    assert done == ("redraw",)
    assert out.split("\n")[2] == f"     |{'█' * 20}| 100%"
    assert terminal(out) == terminal(pip)
    npm = "\x1b[?25l" + "".join(
        f"\r\x1b[K\x1b[36m⠋\x1b[0m reify:lodash: timing {k}" for k in range(50)
    ) + "\r\x1b[K\x1b[?25h\nadded 1 package in 2s\n"
    out, _ = shrink_text(npm)
    assert out == "\nadded 1 package in 2s\n"
    assert terminal(out) == terminal(npm)


def test_pytest_colours_are_removed() -> None:
    text = (
        "\x1b[1m============ test session starts ============\x1b[0m\n"
        "tests/test_a.py \x1b[32m.\x1b[0m\x1b[31mF\x1b[0m\x1b[32m.\x1b[0m\x1b[32m    [100%]\x1b[0m\n"
        "\x1b[31mFAILED\x1b[0m tests/test_a.py::test_b - assert 1 == 2\n"
        "\x1b[31m======== \x1b[1m1 failed\x1b[0m, \x1b[32m2 passed\x1b[0m\x1b[31m in 0.03s ========\x1b[0m\n"
    )
    out, done = shrink_text(text)
    assert done == ("ansi",)
    assert "\x1b" not in out and terminal(out) == terminal(text)
    assert "tests/test_a.py .F.    [100%]" in out


def test_ls_trailing_spaces_and_repeated_log_lines() -> None:
    ls = "total 12   \ndrwxr-xr-x 2 me me 4096 May  1 10:00 .   \n-rw-r--r-- 1 me me   20 May  1 10:00 a b \n"
    assert shrink_text(ls) == (ls, ())  # trailing blanks alone: no token to save
    coloured = ls.replace(" .   ", " \x1b[01;34m.\x1b[0m   ")
    assert shrink_text(coloured) == (
        "total 12\ndrwxr-xr-x 2 me me 4096 May  1 10:00 .\n-rw-r--r-- 1 me me   20 May  1 10:00 a b\n",
        ("ansi", "trailing"),
    )
    log = "starting\n" + "WARNING: connection refused, retrying\n" * 37 + "connected\n"
    out, done = shrink_text(log)
    assert done == ("repeats",)
    assert out == (
        "starting\nWARNING: connection refused, retrying\n"
        "[the line above repeated 36 more times]\nconnected\n"
    )
    assert unfold(out) == log
    assert shrink_text("a\na\na\nb") == ("a\na\na\nb", ())  # three is not a run
    assert shrink_text("\n" * 10) == ("\n" * 10, ())  # blank lines are never folded


def test_code_is_touched_only_at_line_ends() -> None:
    code = "def f(x):  \n\tif x:\t\n\t\treturn  x  *  2\n"
    assert shrink_text(code) == (code, ())  # trailing blanks alone are left
    coloured = "\x1b[1mdef\x1b[0m f(x):  \n\tif x:\t\n\t\treturn  x  *  2\n"
    assert shrink_text(coloured)[0] == "def f(x):\n\tif x:\n\t\treturn  x  *  2\n"


# ---------------------------------------------------------------- the stage

_SHRINKABLE = st.sampled_from(
    [
        json.dumps({"a": [1, 2, {"b": "c"}]}, indent=2),
        "\x1b[31mred\x1b[0m   \n",
        "10%\r50%\r100%",
        "same line\n" * 20,
        "     1\tdef f():   \n     2\t    return 1\n",
        "     1→import os\n     2→\x1b[0m\n",
        "12: x = 1  \n13: y = 2  \n",
    ]
)


def _session(name: str, arguments: dict[str, Any], content: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": content},
    ]


#: The shrink is on by default; said here so that the tests do not depend on it.
ON = CompactionPolicy(shrink=True)


def _governed_result(messages: list[dict[str, Any]], **kw: Any) -> Any:
    kw.setdefault("compaction", ON)
    return govern(messages, model="gpt-4o", context_window=128_000, **kw).messages[2]["content"]


def _case(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([name, name.upper(), name.title()])


_EXACT_NAMES = st.sampled_from(sorted(DEFAULT_EXACT_TOOLS)).flatmap(_case)
_COMMAND_PREFIXES = st.sampled_from(["", "cd src && ", "FOO=1 ", "sudo ", "ls | ", "/usr/bin/"])


@settings(max_examples=200, deadline=None)
@given(
    name=_EXACT_NAMES,
    content=_SHRINKABLE | st.text(max_size=200),
    parts=st.booleans(),
)
def test_exact_tools_output_is_byte_identical(name: str, content: str, parts: bool) -> None:
    value: Any = [{"type": "text", "text": content}] if parts else content
    assert _governed_result(_session(name, {"path": "a.py"}, value)) == value


@settings(max_examples=200, deadline=None)
@given(
    program=st.sampled_from(DEFAULT_EXACT_COMMANDS),
    prefix=_COMMAND_PREFIXES,
    content=_SHRINKABLE | st.text(max_size=200),
    key=st.sampled_from(["command", "cmd"]),
    listed=st.booleans(),
)
def test_exact_commands_output_is_byte_identical(
    program: str, prefix: str, content: str, key: str, listed: bool
) -> None:
    command = f"{prefix}{program} -n file.py"
    arguments = {key: ["bash", "-lc", command] if listed else command}
    assert _governed_result(_session("bash", arguments, content)) == content


@settings(max_examples=200, deadline=None)
@given(
    name=st.text(min_size=1, max_size=12),
    start=st.integers(1, 5000),
    # no lone surrogates: the input repair replaces them (not the shrink's doing)
    lines=st.lists(st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=30), min_size=1, max_size=20),
    style=st.sampled_from(["{n:6}\t{line}", "{n:6}→{line}", "{n}: {line}", "{n:4} | {line}"]),
    tail=st.sampled_from(["", "   ", "\x1b[0m", "\r"]),
)
def test_numbered_lines_are_byte_identical_whatever_the_tool(
    name: str, start: int, lines: list[str], style: str, tail: str
) -> None:
    content = "\n".join(style.format(n=start + k, line=line + tail) for k, line in enumerate(lines))
    assert _governed_result(_session(name, {}, content)) == content


def test_a_named_tool_and_a_user_rule_from_the_config_file() -> None:
    policy = policy_from_settings(
        "cache",
        {"shrink": True, "exact_tools": ["run_query"], "exact_commands": ["make"], "exact_content": []},
    )
    assert isinstance(policy, CompactionPolicy)
    text = "\x1b[31mx\x1b[0m"
    assert _governed_result(_session("run_query", {}, text), compaction=policy) == text
    assert _governed_result(_session("bash", {"command": "make all"}, text), compaction=policy) == text
    # the defaults are replaced: a Read is shrunk now, numbered lines too
    assert _governed_result(_session("Read", {}, text), compaction=policy) == "x"
    numbered = "     1\t\x1b[31mx\x1b[0m  \n     2\ty"
    assert _governed_result(_session("t", {}, numbered), compaction=policy) == "     1\tx\n     2\ty"
    with pytest.raises(ConfigError, match="exact_content"):
        policy_from_settings("cache", {"exact_content": ["("]})
    with pytest.raises(ConfigError, match="exact_tools"):
        policy_from_settings("cache", {"exact_tools": "Read"})


def test_reported_as_a_replace_with_the_tokens_saved() -> None:
    content = json.dumps({"items": [{"id": k, "name": f"n{k}"} for k in range(30)]}, indent=4)
    result = govern(_session("search", {"q": "x"}, content), model="gpt-4o", context_window=128_000, compaction=ON)
    assert result.messages[2]["content"] == json.dumps(json.loads(content), separators=(",", ":"))
    (action,) = result.report.actions
    assert (action.stage, action.kind, action.index, action.tool_call_id) == ("shrink", "replace", 2, "c1")
    assert action.tokens_saved > 0 and "json" in action.detail


def test_off_under_the_seed_policy_and_when_switched_off() -> None:
    messages = _session("bash", {"command": "pytest"}, "\x1b[31mred\x1b[0m   \n")
    assert _governed_result(messages, compaction=SEED) == messages[2]["content"]
    off = CompactionPolicy(shrink=False)
    assert _governed_result(messages, compaction=off) == messages[2]["content"]
    assert _governed_result(messages) == "red\n"
    default = govern(messages, model="gpt-4o", context_window=128_000)
    assert default.messages[2]["content"] == "red\n"  # on by default
    assert _governed_result(messages, profile="nanobot") == messages[2]["content"]


def test_the_history_is_never_touched_and_the_form_is_stable() -> None:
    """A result's shrunk form is the same on every later request (the cached prefix does
    not move), and the Governor gives govern()'s answer at every step."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    outputs = [
        "\x1b[32mok\x1b[0m   \n" * 3,
        json.dumps({"k": list(range(20))}, indent=2),
        "plain output",
        "a\rb\rc",
        "same\n" * 12,
    ]
    gov = Governor(model="gpt-4o", context_window=128_000, compaction=ON)
    previous: list[Any] = []
    for k, output in enumerate(outputs):
        call = {"id": f"c{k}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": "run"})}}  # fmt: skip
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": output},
            {"role": "user", "content": "next"},
        ]
        before = json.dumps(history)
        once = govern(list(history), model="gpt-4o", context_window=128_000, compaction=ON)
        stepped = gov.govern(history)
        assert json.dumps(history) == before
        assert stepped.messages == once.messages
        assert once.messages[: len(previous)] == previous  # append-only: the prefix holds
        previous = list(once.messages)


# ---------------------------------------------------------------- the clean-text check


_NOISY_TEXT = st.text(alphabet=st.sampled_from(list("ab \t\n\r\x1b[0m;K2G|")), max_size=120)


_CLEAN = st.text(alphabet=st.sampled_from(list("ab\n")), max_size=40)
#: long enough that folding it is shorter (the marker line is 38 characters)
_LINE = st.from_regex(r"[ab][ab ]{12,30}[ab]", fullmatch=True)
_RUNS = st.tuples(_CLEAN, _LINE, st.integers(3, 5), _CLEAN).map(
    lambda t: (t[0] + "\n" if t[0] else "") + (t[1] + "\n") * t[2] + t[3]  # or at the start
)


@settings(max_examples=500, deadline=None)
@given(text=_NOISY_TEXT | _RUNS | st.text(max_size=80))
def test_the_clean_text_check_never_skips_a_transform(text: str) -> None:
    """shrink_text decides "nothing to do" from three searches over the whole text; the
    line-by-line transforms agree on every text (a mutation of either search fails)."""
    from context_governor.stages._shrink import _shrink_lines, _shrink_text

    if text.strip()[:1] in ("{", "["):
        return  # JSON is decided before either
    assert _shrink_text(text) == _shrink_lines(text)
