"""What the built-in ``exec`` tool does: one shell command, bounded in time and memory.

The command runs as ``/bin/sh -c`` in a new session, so it leads its own process
group; on timeout (or when the call is cancelled) the whole group is killed with
SIGKILL, which takes pipelines and background jobs along with the shell. Output
is read incrementally and only its head and tail are kept, so a command that
prints gigabytes costs a bounded amount of memory. POSIX only.

This is not a sandbox: the shell runs as the agent's user, with its environment,
and can read or write anything that user can. ``cwd`` is only where it starts.
A process that starts its own session (``setsid``) also escapes the group kill.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from asyncio.subprocess import DEVNULL, PIPE
from pathlib import Path

from .registry import ToolError

__all__ = ["run_command"]

_SHELL = "/bin/sh"
_CHUNK = 65536
#: How long to wait for a killed group to be reaped before giving up on it.
_REAP_SECONDS = 5.0


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


def format_result(exit_code: int, out: _Capture, err: _Capture) -> str:
    """Exit status first (it survives any later truncation of the middle), then the streams."""
    status = f"exit code: {exit_code}"
    if exit_code < 0:
        status += f" (killed by signal {-exit_code})"
    return f"{status}\n{format_streams(out, err)}"


def format_streams(out: _Capture, err: _Capture) -> str:
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


async def run_command(command: str, *, cwd: Path, timeout: float, keep_bytes: int) -> str:
    """Run ``command`` and return its exit code and output; raise ToolError on timeout.

    A command that leaves a background job holding stdout open is waited for
    until the job closes it or the timeout kills the group, as with
    ``subprocess.run``; redirect the job's output to avoid that.
    """
    proc = await asyncio.create_subprocess_exec(
        _SHELL,
        "-c",
        command,
        cwd=cwd,
        stdin=DEVNULL,
        stdout=PIPE,
        stderr=PIPE,
        start_new_session=True,
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
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), _REAP_SECONDS)
    if finished and proc.returncode is not None:
        return format_result(proc.returncode, out, err)
    raise ToolError(
        f"command timed out after {timeout:g}s; its process group was killed.\n"
        + format_streams(out, err)
    )
