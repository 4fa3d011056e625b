"""The built-in tools: behaviour, confinement to the workspace, and exec's limits.

Each test builds a small workspace under ``tmp_path`` next to an ``outside``
directory holding a secret; no tool may ever show that secret, whichever path,
``..``, absolute path or symlink the model tries.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_governor.errors import ConfigError
from context_governor.stages._microcompact import COMPACTABLE_TOOLS
from context_governor.tools import ToolOutcome, ToolRegistry, builtin_tools
from context_governor.tools import _files as files
from context_governor.tools._lines import Deadline, LineReader, OutOfTime
from context_governor.tools._registry import ToolError
from context_governor.tools._workspace import Workspace, glob_matches

SECRET = "TOP-SECRET-42"


def call(
    registry: ToolRegistry, name: str, arguments: Mapping[str, Any] | None = None, **kw: Any
) -> ToolOutcome:
    return asyncio.run(registry.call(name, arguments, **kw))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret.txt").write_text(f"{SECRET}\n")
    return d


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / ".git").mkdir()
    (root / "empty").mkdir()
    (root / "src" / "pkg" / "core.py").write_text("def alpha():\n    return 'Alpha'\n")
    (root / "src" / "main.py").write_text("import pkg\nprint('alpha beta')\n")
    (root / "docs" / "notes.md").write_text("Alpha notes\nsecond line\n")
    (root / ".git" / "config").write_text("alpha in git internals\n")
    (root / "blob.bin").write_bytes(b"alpha\x00\x01\x02")
    (root / "lines.txt").write_text("".join(f"line {i}\n" for i in range(1, 301)))
    (root / "empty.txt").write_text("")
    os.symlink(outside / "secret.txt", root / "leak.txt")
    os.symlink(outside, root / "leakdir")
    os.symlink(root / "docs" / "notes.md", root / "notes-link.md")
    return root


@pytest.fixture
def tools(ws: Path) -> ToolRegistry:
    return builtin_tools(ws)


def lines(outcome: ToolOutcome) -> list[str]:
    assert not outcome.is_error, outcome.content
    return outcome.content.splitlines()


# --------------------------------------------------------------------------- the set


def test_names_schemas_and_settings(ws: Path) -> None:
    reg = builtin_tools(ws)
    assert reg.names() == ["read_file", "list_dir", "grep", "find_files", "exec"]
    # Their results are the ones the seed's microcompact knows how to stub.
    assert set(reg.names()) <= COMPACTABLE_TOOLS
    schemas = {s["function"]["name"]: s["function"] for s in reg.schemas()}
    assert schemas["read_file"]["parameters"]["required"] == ["path"]
    assert set(schemas["grep"]["parameters"]["properties"]) == {
        "pattern",
        "path",
        "glob",
        "ignore_case",
        "max_matches",
    }
    exec_timeout = schemas["exec"]["parameters"]["properties"]["timeout"]
    assert exec_timeout["type"] == "number" and "maximum: 30" in exec_timeout["description"]
    assert all(s["description"] for s in schemas.values())
    assert "exec" not in builtin_tools(ws, allow_exec=False)
    assert len(builtin_tools(ws, allow_exec=False)) == 4


def test_bad_settings_are_refused(ws: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be resolved"):
        builtin_tools(ws / "missing")
    with pytest.raises(ConfigError, match="not a directory"):
        builtin_tools(ws / "lines.txt")
    with pytest.raises(ConfigError, match="max_output_chars"):
        builtin_tools(ws, max_output_chars=10)
    with pytest.raises(ConfigError, match="exec_timeout"):
        builtin_tools(ws, exec_timeout=0)


# --------------------------------------------------------------------------- read_file


def test_read_file_numbers_lines(tools: ToolRegistry) -> None:
    assert lines(call(tools, "read_file", {"path": "src/pkg/core.py"})) == [
        "1|def alpha():",
        "2|    return 'Alpha'",
    ]
    assert lines(call(tools, "read_file", {"path": "lines.txt", "offset": 10, "limit": 2})) == [
        "10|line 10",
        "11|line 11",
        "[more lines follow; continue with offset=12]",
    ]
    assert lines(call(tools, "read_file", {"path": "lines.txt", "offset": 299})) == [
        "299|line 299",
        "300|line 300",
    ]
    assert call(tools, "read_file", {"path": "empty.txt"}).content == "(empty.txt is empty)"


def test_read_file_pages_through_a_long_file(ws: Path) -> None:
    reg = builtin_tools(ws, max_output_chars=400)
    seen: list[str] = []
    offset = 1
    for _ in range(100):
        got = lines(call(reg, "read_file", {"path": "lines.txt", "offset": offset}))
        assert len("\n".join(got)) <= 400
        if got[-1].startswith("[more lines follow"):
            offset = int(got[-1].rsplit("=", 1)[1].rstrip("]"))
            got = got[:-1]
        else:
            offset = 0
        seen += got
        if not offset:
            break
    assert seen == [f"{i}|line {i}" for i in range(1, 301)]


def test_read_file_cuts_one_huge_line(ws: Path) -> None:
    (ws / "min.js").write_text("x" * 50_000)
    out = call(builtin_tools(ws, max_output_chars=1000), "read_file", {"path": "min.js"})
    assert not out.is_error
    assert out.content.startswith("1|xxx") and "line 1 cut at 920 characters" in out.content
    assert len(out.content) <= 1000


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"path": "nope.txt"}, "Error: no such file or directory: nope.txt"),
        ({"path": "src"}, "Error: src is a directory; use list_dir or find_files"),
        ({"path": "blob.bin"}, "Error: blob.bin is a binary file (8 bytes); not shown"),
        (
            {"path": "lines.txt", "offset": 301},
            "Error: offset 301 is past the end of lines.txt (300 lines)",
        ),
        (
            {"path": "lines.txt", "offset": 0},
            "Error: offset must be 1 or more (lines are numbered from 1), got 0",
        ),
        ({"path": "lines.txt", "limit": 0}, "Error: limit must be 1 or more, got 0"),
        ({"path": ""}, "Error: path is empty; use '.' for the workspace root"),
    ],
)
def test_read_file_errors(tools: ToolRegistry, arguments: dict[str, Any], message: str) -> None:
    out = call(tools, "read_file", arguments)
    assert out.is_error and out.content == message


def test_read_file_refuses_fifos(ws: Path, tools: ToolRegistry) -> None:
    os.mkfifo(ws / "pipe")
    out = call(tools, "read_file", {"path": "pipe"}, timeout=5)
    assert out.content == "Error: pipe is not a regular file"


# --------------------------------------------------------------------------- list_dir


def test_list_dir(ws: Path, tools: ToolRegistry, outside: Path) -> None:
    assert lines(call(tools, "list_dir")) == [
        ".git/",
        "blob.bin",
        "docs/",
        "empty/",
        "empty.txt",
        f"leak.txt -> {outside / 'secret.txt'}",
        f"leakdir -> {outside}",
        "lines.txt",
        f"notes-link.md -> {ws / 'docs' / 'notes.md'}",
        "src/",
    ]
    assert lines(call(tools, "list_dir", {"path": "src"})) == ["main.py", "pkg/"]
    assert call(tools, "list_dir", {"path": "empty"}).content == "(empty is empty)"
    assert call(tools, "list_dir", {"path": "lines.txt"}).content == (
        "Error: lines.txt is not a directory; use read_file for files"
    )


def test_list_dir_caps_entries(ws: Path) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(505):
        (many / f"f{i:03d}").write_text("")
    got = lines(call(builtin_tools(ws), "list_dir", {"path": "many"}))
    assert len(got) == 501 and got[0] == "f000" and got[-1] == "[... 5 more entries not shown]"


# --------------------------------------------------------------------------- grep


def test_grep_finds_lines_and_skips_binaries_noise_and_links(tools: ToolRegistry) -> None:
    assert lines(call(tools, "grep", {"pattern": "alpha"})) == [
        "src/main.py:2:print('alpha beta')",
        "src/pkg/core.py:1:def alpha():",
    ]
    assert lines(call(tools, "grep", {"pattern": "alpha", "ignore_case": True})) == [
        "docs/notes.md:1:Alpha notes",
        "src/main.py:2:print('alpha beta')",
        "src/pkg/core.py:1:def alpha():",
        "src/pkg/core.py:2:    return 'Alpha'",
    ]


def test_grep_path_glob_and_explicit_file(tools: ToolRegistry) -> None:
    assert lines(call(tools, "grep", {"pattern": r"^\w+\(", "path": "src", "glob": "*.py"})) == [
        "src/main.py:2:print('alpha beta')",
    ]
    assert lines(call(tools, "grep", {"pattern": "a", "glob": "src/*.py"})) == [
        "src/main.py:2:print('alpha beta')",
    ]
    assert lines(call(tools, "grep", {"pattern": "line", "path": "docs/notes.md"})) == [
        "docs/notes.md:2:second line",
    ]
    # A directory named explicitly is searched even when it is a noise directory.
    assert lines(call(tools, "grep", {"pattern": "alpha", "path": ".git"})) == [
        ".git/config:1:alpha in git internals",
    ]
    assert call(tools, "grep", {"pattern": "zzz"}).content == "No matches for 'zzz' (searched '.')."


def test_grep_caps_matches_and_clips_long_lines(ws: Path, tools: ToolRegistry) -> None:
    got = lines(call(tools, "grep", {"pattern": "line", "path": "lines.txt", "max_matches": 3}))
    assert got == [
        "lines.txt:1:line 1",
        "lines.txt:2:line 2",
        "lines.txt:3:line 3",
        "[stopped at 3 matches; narrow the pattern, path or glob]",
    ]
    (ws / "long.txt").write_text("a" * 1000 + "NEEDLE" + "b" * 1000 + "\n")
    (hit,) = lines(call(tools, "grep", {"pattern": "NEEDLE", "path": "long.txt"}))
    assert "NEEDLE" in hit and hit.startswith("long.txt:1:...") and hit.endswith("...")
    assert len(hit) < 330


def test_grep_errors(tools: ToolRegistry) -> None:
    bad = call(tools, "grep", {"pattern": "("})
    assert bad.is_error and bad.content.startswith("Error: invalid regular expression '('")
    assert call(tools, "grep", {"pattern": "a", "max_matches": 0}).is_error
    assert call(tools, "grep", {"pattern": "a", "glob": "[!]"}).content.startswith(
        "Error: invalid glob"
    )


# --------------------------------------------------------------------------- find_files


def test_find_files(tools: ToolRegistry) -> None:
    assert lines(call(tools, "find_files", {"pattern": "*.py"})) == [
        "src/main.py",
        "src/pkg/core.py",
    ]
    assert lines(call(tools, "find_files", {"pattern": "src/*.py"})) == ["src/main.py"]
    assert lines(call(tools, "find_files", {"pattern": "src/**/*.py"})) == [
        "src/main.py",
        "src/pkg/core.py",
    ]
    # Relative to the searched directory for matching, to the root for display.
    assert lines(call(tools, "find_files", {"pattern": "pkg/*.py", "path": "src"})) == [
        "src/pkg/core.py",
    ]
    assert lines(call(tools, "find_files", {"pattern": "config", "path": ".git"})) == [
        ".git/config",
    ]
    # Noise directories, symlinks and directories themselves are not listed.
    assert lines(call(tools, "find_files", {"pattern": "*"})) == [
        "blob.bin",
        "empty.txt",
        "lines.txt",
        "docs/notes.md",
        "src/main.py",
        "src/pkg/core.py",
    ]
    assert call(tools, "find_files", {"pattern": "*.rs"}).content == (
        "No files match '*.rs' (searched '.')."
    )


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "c.pyc", False),
        ("a/*.py", "a/b/c.py", False),
        ("a/**/*.py", "a/c.py", True),
        ("a/**/*.py", "a/b/d/c.py", True),
        ("**/c.py", "c.py", True),
        ("a/**", "a/b/c", True),
        ("file?.txt", "file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("[!a]*.md", "b.md", True),
        ("[!a]*.md", "a.md", False),
        ("[ab].md", "b.md", True),
        ("x+y(1).txt", "x+y(1).txt", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert glob_matches(pattern, path) is expected


# --------------------------------------------------------------------------- confinement


ESCAPES = [
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "leak.txt",
    "leakdir/secret.txt",
    "leakdir",
    "../outside/missing.txt",  # escaping is reported before existence
    "..",
]


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize("tool", ["read_file", "list_dir", "grep", "find_files"])
def test_paths_outside_the_workspace_are_refused(tools: ToolRegistry, tool: str, path: str) -> None:
    arguments: dict[str, Any] = {"path": path}
    if tool == "grep":
        arguments["pattern"] = "."
    if tool == "find_files":
        arguments["pattern"] = "*"
    out = call(tools, tool, arguments)
    assert out.is_error
    assert out.content == f"Error: path escapes the workspace: {path}"


def test_absolute_paths_are_allowed_only_inside(
    ws: Path, outside: Path, tools: ToolRegistry
) -> None:
    out = call(tools, "read_file", {"path": str(outside / "secret.txt")})
    assert out.content == f"Error: path escapes the workspace: {outside / 'secret.txt'}"
    assert call(tools, "list_dir", {"path": "/"}).content == "Error: path escapes the workspace: /"
    assert lines(call(tools, "read_file", {"path": str(ws / "docs" / "notes.md")}))[0] == (
        "1|Alpha notes"
    )


def test_links_and_dots_that_stay_inside_are_allowed(tools: ToolRegistry) -> None:
    assert lines(call(tools, "read_file", {"path": "notes-link.md"}))[0] == "1|Alpha notes"
    assert lines(call(tools, "read_file", {"path": "src/../docs/./notes.md"}))[1] == (
        "2|second line"
    )
    assert lines(call(tools, "list_dir", {"path": "src/pkg/../.."}))[0] == ".git/"


def test_the_workspace_itself_may_be_reached_through_a_symlink(ws: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    os.symlink(ws, alias)
    reg = builtin_tools(alias)
    assert lines(call(reg, "read_file", {"path": str(alias / "docs" / "notes.md")}))[0] == (
        "1|Alpha notes"
    )
    assert call(reg, "read_file", {"path": "leak.txt"}).is_error


def test_searches_never_reveal_what_links_point_to(tools: ToolRegistry) -> None:
    pattern = SECRET[:-1] + "[2]"  # matches the secret without spelling it
    for arguments in ({"pattern": pattern}, {"pattern": pattern, "glob": "*.txt"}):
        out = call(tools, "grep", arguments)
        assert SECRET not in out.content and out.content.startswith("No matches")
    assert call(tools, "find_files", {"pattern": "secret.txt"}).content.startswith("No files")


def test_odd_paths(ws: Path, tools: ToolRegistry) -> None:
    os.symlink("loop-b", ws / "loop-a")
    os.symlink("loop-a", ws / "loop-b")
    looped = call(tools, "read_file", {"path": "loop-a"})
    assert looped.is_error and looped.content.startswith("Error: cannot resolve loop-a")
    assert call(tools, "read_file", {"path": "a\x00b"}).content == (
        "Error: path contains a NUL character"
    )


# --------------------------------------------------------------------------- exec


def test_exec_reports_exit_code_and_streams(ws: Path, tools: ToolRegistry) -> None:
    out = call(tools, "exec", {"command": "echo out; echo err >&2; exit 3"})
    assert out == ToolOutcome("exit code: 3\nstdout:\nout\nstderr:\nerr")
    assert call(tools, "exec", {"command": "true"}).content == "exit code: 0\n(no output)"
    assert call(tools, "exec", {"command": "pwd -P"}).content == (
        f"exit code: 0\nstdout:\n{ws.resolve()}"
    )
    assert call(tools, "exec", {"command": "kill -9 $$"}).content.startswith(
        "exit code: -9 (killed by signal 9)"
    )
    assert call(tools, "exec", {"command": "  "}).content == "Error: command is empty"
    assert call(tools, "exec", {"command": "true", "timeout": 0}).is_error


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting for its reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_exec_timeout_kills_the_whole_process_group(ws: Path, tools: ToolRegistry) -> None:
    start = time.perf_counter()
    out = call(
        tools,
        "exec",
        {"command": "sleep 30 & echo $! > child.pid; echo started; wait", "timeout": 0.5},
    )
    took = time.perf_counter() - start
    assert out.is_error
    assert out.content == (
        "Error: command timed out after 0.5s; it and every process it started were killed.\n"
        "stdout:\nstarted"
    )
    assert took < 3
    child = int((ws / "child.pid").read_text())
    assert _wait_gone(child), "the background sleep survived the timeout"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(
    "command",
    [
        # its own session and process group, still our descendant
        "setsid sh -c 'echo $$ > child.pid; exec sleep 30' & wait",
        # a daemon: a new session, then its parent exits, so it is reparented away
        "setsid sh -c '(sleep 30 & echo $! > child.pid); exit 0' & sleep 30",
        # setsid -f forks first; the waiting shell itself holds the call open
        "setsid -f sh -c 'echo $$ > child.pid; exec sleep 30'; sleep 30",
    ],
    ids=["setsid", "daemon", "setsid-fork"],
)
def test_exec_timeout_kills_processes_that_left_the_group(
    ws: Path, tools: ToolRegistry, command: str
) -> None:
    out = call(tools, "exec", {"command": command, "timeout": 1.0})
    assert out.is_error and "timed out" in out.content
    _assert_gone(int((ws / "child.pid").read_text()), command)


def _assert_gone(pid: int, command: str) -> None:
    """Fail if ``pid`` outlives the call, killing it then so that no test leaves it behind."""
    gone = _wait_gone(pid)
    if not gone:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    assert gone, f"{command!r}: pid {pid} survived the timeout"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_a_cancelled_exec_call_kills_processes_that_left_the_group(
    ws: Path, tools: ToolRegistry
) -> None:
    command = "setsid sh -c 'echo $$ > child.pid; exec sleep 30' & wait"
    out = call(tools, "exec", {"command": command}, timeout=1.0)
    assert "abandoned" in out.content
    _assert_gone(int((ws / "child.pid").read_text()), command)


def test_a_command_run_inside_another_keeps_both_marks(
    tools: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent run by exec (whose environment carries the outer mark) marks its own
    commands with a second variable, so the outer timeout still reaches them."""
    monkeypatch.setenv("CONTEXT_GOVERNOR_EXEC_outer", "1")
    out = call(tools, "exec", {"command": "env | grep -c '^CONTEXT_GOVERNOR_EXEC_.*=1$'"})
    assert out.content == "exit code: 0\nstdout:\n2"


def test_exec_leaves_other_processes_alone(ws: Path, tools: ToolRegistry) -> None:
    """Only processes carrying this call's marker are killed: not the agent, not a
    process another call started, not one started outside exec."""
    import subprocess

    bystander = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        out = call(tools, "exec", {"command": "sleep 30", "timeout": 0.5})
        assert out.is_error
        assert _alive(bystander.pid) and _alive(os.getpid())
    finally:
        bystander.kill()
        bystander.wait()


def test_exec_timeout_is_capped_by_exec_timeout(ws: Path) -> None:
    reg = builtin_tools(ws, exec_timeout=0.4)
    start = time.perf_counter()
    out = call(reg, "exec", {"command": "sleep 20", "timeout": 100})
    assert out.content.startswith("Error: command timed out after 0.4s")
    assert time.perf_counter() - start < 3


def test_an_abandoned_exec_call_still_kills_its_command(ws: Path, tools: ToolRegistry) -> None:
    out = call(tools, "exec", {"command": "sleep 30 & echo $! > child.pid; wait"}, timeout=0.5)
    assert out.content == "Error: exec timed out after 0.5s and was abandoned."
    assert _wait_gone(int((ws / "child.pid").read_text()))


def test_exec_output_is_bounded(ws: Path) -> None:
    reg = builtin_tools(ws, max_output_chars=2000)
    out = call(reg, "exec", {"command": "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo END"})
    assert not out.is_error
    assert len(out.content) <= 2000
    assert out.content.startswith("exit code: 0\nstdout:\nxxx")
    assert out.content.endswith("x\nEND")  # the tail survives
    assert "bytes omitted" in out.content or "characters cut" in out.content


def test_exec_is_absent_when_disabled(ws: Path) -> None:
    reg = builtin_tools(ws, allow_exec=False)
    out = call(reg, "exec", {"command": "cat ../outside/secret.txt"})
    assert out.is_error and out.content.startswith("Error: unknown tool 'exec'")


# --------------------------------------------------------------------------- bounded reads


@given(
    data=st.lists(st.sampled_from([b"a", b"bb", b"\r", b"\n", b"\r\n", b"\xc3\xa9"]), max_size=60),
    keep=st.integers(1, 12),
    chunk=st.integers(1, 9),
)
def test_line_reader_matches_universal_newlines(data: list[bytes], keep: int, chunk: int) -> None:
    """Whatever the chunk size, the reader splits as Python's universal newlines do and
    returns each line's first ``keep`` bytes, flagging the longer ones."""
    raw = b"".join(data)
    reader = LineReader(io.BytesIO(raw), keep=keep, deadline=Deadline(60), chunk=chunk)
    got = []
    while (item := reader.next_line()) is not None:
        got.append(item)
    expected = [line.encode() for line in raw.decode().splitlines()]
    assert got == [(line[:keep], len(line) > keep) for line in expected]


def test_line_reader_stops_at_its_deadline() -> None:
    reader = LineReader(io.BytesIO(b"x" * 100), keep=10, deadline=Deadline(-1), chunk=4)
    with pytest.raises(OutOfTime):
        reader.next_line()


_MEASURE = """
import asyncio, json, resource, sys, time
from context_governor.tools import builtin_tools
workspace, tool, arguments, timeout = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4])
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a regression fails, not the host
registry = builtin_tools(workspace, exec_timeout=timeout)
rss = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # peak, KiB on Linux
before, start = rss(), time.perf_counter()
out = asyncio.run(registry.call(tool, arguments))  # waits for the worker thread to end
print(json.dumps({"seconds": time.perf_counter() - start, "rss_growth_mib": (rss() - before) / 1024,
                  "content": out.content[:400], "length": len(out.content), "error": out.is_error}))
"""


def _measure(ws: Path, tool: str, arguments: dict[str, Any], timeout: float = 10.0) -> Any:
    """Run one tool call in a fresh interpreter: its time (the worker thread included)
    and how much its peak RSS grew."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(ws), tool, json.dumps(arguments), str(timeout)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(proc.stdout)


@pytest.fixture
def huge_line(ws: Path) -> Path:
    """512 MiB in one line: 9,000 characters of text, then a sparse run of NUL bytes
    (past the binary sniff), so the file takes no disk space."""
    path = ws / "huge.txt"
    with path.open("wb") as fh:
        fh.write(b"x" * 9000)
        fh.truncate(512 << 20)
    return path


def test_read_file_on_a_512_mib_single_line_is_fast_and_small(ws: Path, huge_line: Path) -> None:
    got = _measure(ws, "read_file", {"path": "huge.txt"})
    assert not got["error"], got["content"]
    assert got["content"].startswith("1|xxxx")
    assert got["length"] <= 16000
    assert got["seconds"] < 2.0, got
    assert got["rss_growth_mib"] < 64, got


def test_read_file_paging_past_a_huge_line_is_stopped_by_its_deadline(
    ws: Path, huge_line: Path
) -> None:
    # Reaching line 2 means reading 512 MiB: far more than a 0.01 s budget allows.
    with pytest.raises(ToolError, match=r"reading huge.txt stopped after 0.01s before reaching"):
        files.read_file(Workspace(ws), "huge.txt", 2, max_chars=1000, time_budget=0.01)
    # Through the registry, whichever timer fires first answers the call, and the
    # worker thread stops by itself right after (the time includes waiting for it).
    got = _measure(ws, "read_file", {"path": "huge.txt", "offset": 2}, timeout=0.05)
    assert got["error"] and "0.0" in got["content"], got
    assert got["seconds"] < 1.0, got
    assert got["rss_growth_mib"] < 64, got


def test_grep_on_a_512_mib_single_line_is_bounded(ws: Path, huge_line: Path) -> None:
    got = _measure(ws, "grep", {"pattern": "needle", "path": "huge.txt"})
    # Searched to the end (not stopped by the 8 s budget) with no memory growth.
    assert got["content"] == "No matches for 'needle' (searched 'huge.txt').", got
    assert got["rss_growth_mib"] < 64, got


def test_grep_stops_inside_a_huge_file_at_its_deadline(ws: Path, huge_line: Path) -> None:
    found = files.grep(Workspace(ws), "needle", "huge.txt", time_budget=0.01)
    assert found == "[search stopped after 0.01s; narrow path or glob]"
    got = _measure(ws, "grep", {"pattern": "needle", "path": "huge.txt"}, timeout=0.05)
    assert "0.0" in got["content"], got
    assert got["seconds"] < 1.0, got


def test_listing_and_finding_stop_at_their_deadline(ws: Path) -> None:
    many = ws / "many"
    many.mkdir()
    for i in range(1100):  # the deadline is checked every 1024 entries
        (many / f"f{i:05d}").touch()
    wspace = Workspace(ws)
    with pytest.raises(ToolError, match=r"listing many stopped after 0s \(1024 entries read\)"):
        files.list_dir(wspace, "many", max_entries=10, time_budget=0)
    found = files.find_files(wspace, "*", "many", max_results=10, time_budget=0)
    assert found.endswith("[search stopped after 0s; narrow path or pattern]")
    listed = files.list_dir(wspace, "many", max_entries=3, time_budget=10)
    assert listed.splitlines() == [
        "f00000",
        "f00001",
        "f00002",
        "[... 1097 more entries not shown]",
    ]


class _Countdown(Deadline):
    """A deadline that passes at its ``n``-th check, whatever the clock says."""

    def __init__(self, seconds: float, n: int = 2) -> None:
        super().__init__(seconds)
        self.left = n

    def check(self) -> None:
        self.left -= 1
        if self.left <= 0:
            raise OutOfTime


def test_read_file_returns_what_it_has_when_the_deadline_passes(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "long.txt").write_text("short line\n" + "y" * 300_000 + "\nz\n")
    monkeypatch.setattr(files, "Deadline", _Countdown)  # passes while looking past line 2
    out = files.read_file(Workspace(ws), "long.txt", 2, max_chars=1000, time_budget=5)
    assert out.splitlines()[0].endswith("[... line 2 cut at 1000 characters]")
    assert out.splitlines()[1:] == ["[reading stopped after 5s; continue with offset=3]"]
    monkeypatch.undo()
    out = files.read_file(Workspace(ws), "long.txt", 2, max_chars=1000, time_budget=5)
    assert out.splitlines()[1:] == ["[more lines follow; continue with offset=3]"]
    assert files.read_file(Workspace(ws), "long.txt", 3, max_chars=1000, time_budget=5) == "3|z"
