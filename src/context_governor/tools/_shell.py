"""What the built-in ``exec`` tool does: one shell command, bounded in time and memory.

The command runs as ``/bin/sh -c`` in a new session, so it leads its own process
group; on timeout (or when the call is cancelled) the whole group is killed with
SIGKILL, which takes pipelines and background jobs along with the shell. Output
is read incrementally and only its head and tail are kept, so a command that
prints gigabytes costs a bounded amount of memory. POSIX only.

A process can leave that group: ``setsid`` (or a daemon's double fork) gives it a
session of its own, and once its parent exits it is not even our descendant any
more. To find those too, every command runs with a marker in its environment
(``CONTEXT_GOVERNOR_EXEC_<random>=1``, a variable of its own so that a command
run inside another keeps both marks), which every process it starts inherits
whatever session it moves to; on timeout, ``/proc/<pid>/environ`` is
scanned for processes carrying the marker and they are killed, repeatedly until a
scan finds none (a process may fork between a scan and its kill). This needs no
root and no cgroup, and leaves the agent's own process untouched. The
alternatives were weighed: killing by session or group id misses exactly the
processes that called ``setsid``; making the agent a child subreaper
(``PR_SET_CHILD_SUBREAPER``) would make it inherit and have to reap every orphan
of the whole application, and a subreaper helper process would cost an extra
interpreter per command; cgroups need root or a delegated systemd scope. Limits:
``/proc`` is Linux's (elsewhere only the group is killed), and a process that
re-executes itself with a scrubbed environment (``env -i``) loses the marker.
A command that finishes normally leaves its background jobs running, as a shell
would.

This is not a sandbox: the shell runs as the agent's user, with its environment,
and can read or write anything that user can. ``cwd`` is only where it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from asyncio.subprocess import DEVNULL, PIPE
from pathlib import Path

from ._registry import ToolError

__all__ = ["run_command"]

_SHELL = "/bin/sh"
_CHUNK = 65536
#: How long to wait for a killed group to be reaped before giving up on it.
_REAP_SECONDS = 5.0
#: Prefix of the environment variable that marks every process a command starts.
MARKER_PREFIX = "CONTEXT_GOVERNOR_EXEC_"
#: Scans of /proc before giving up on a command that keeps forking.
_KILL_ROUNDS = 50
_PROC = "/proc"


class _Capture:
    """The first and last ``keep`` bytes of a stream, and how many bytes it had in all."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    async def drain(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(_CHUNK):
            self.add(chunk)

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.keep:
                del self.tail[: len(self.tail) - self.keep]

    def text(self) -> str:
        omitted = self.total - len(self.head) - len(self.tail)
        if not omitted:  # contiguous: decode together so no character is split
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return f"{head}\n[... {omitted} bytes omitted ...]\n{tail}"


def _format_result(exit_code: int, out: _Capture, err: _Capture) -> str:
    """Exit status first (it survives any later truncation of the middle), then the streams."""
    status = f"exit code: {exit_code}"
    if exit_code < 0:
        status += f" (killed by signal {-exit_code})"
    return f"{status}\n{_format_streams(out, err)}"


def _format_streams(out: _Capture, err: _Capture) -> str:
    """``stdout:``/``stderr:`` sections for the streams that printed anything."""
    parts = [
        f"{label}:\n{capture.text().rstrip(chr(10))}"
        for label, capture in (("stdout", out), ("stderr", err))
        if capture.total
    ]
    return "\n".join(parts) if parts else "(no output)"


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pid, signal.SIGKILL)


def _marked_pids(marker: bytes, proc: str = _PROC) -> list[int]:
    """Processes whose environment holds the ``NAME=value`` entry ``marker``.

    Only our own processes are readable; zombies show an empty environment (they
    are dead already). Without ``/proc`` the answer is empty.
    """
    try:
        names = os.listdir(proc)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:  # another user's process, or gone
            continue
        if marker in environ.split(b"\0"):
            found.append(int(name))
    return found


def _kill_marked(marker: bytes) -> int:
    """SIGKILL every process carrying ``marker``, until none is left; how many were killed."""
    killed = 0
    for _ in range(_KILL_ROUNDS):
        pids = _marked_pids(marker)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


async def run_command(command: str, *, cwd: Path, timeout: float, keep_bytes: int) -> str:
    """Run ``command`` and return its exit code and output; raise ToolError on timeout.

    A command that leaves a background job holding stdout open is waited for
    until the job closes it or the timeout kills the group, as with
    ``subprocess.run``; redirect the job's output to avoid that.
    """
    marker = f"{MARKER_PREFIX}{secrets.token_hex(16)}"
    proc = await asyncio.create_subprocess_exec(
        _SHELL,
        "-c",
        command,
        cwd=cwd,
        stdin=DEVNULL,
        stdout=PIPE,
        stderr=PIPE,
        start_new_session=True,
        env={**os.environ, marker: "1"},
    )
    out, err = _Capture(keep_bytes), _Capture(keep_bytes)
    finished = False
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            await asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr), proc.wait())
        finished = True
    except TimeoutError:
        if not scope.expired():
            raise
    finally:
        if not finished:  # timed out, cancelled, or failed: leave nothing running
            _kill_group(proc.pid)
            _kill_marked(f"{marker}=1".encode())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), _REAP_SECONDS)
    if finished and proc.returncode is not None:
        return _format_result(proc.returncode, out, err)
    raise ToolError(
        f"command timed out after {timeout:g}s; it and every process it started were killed.\n"
        + _format_streams(out, err)
    )
