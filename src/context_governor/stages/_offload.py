"""The offload store: a cleared tool output kept in a file that its placeholder names.

A placeholder is part of the prompt, so the file name must be the same in every
process that governs the same history (or the cached prefix breaks), and it must
never lead the model to someone else's output. Hence:

- **Names from content.** ``<id>-<digest>.txt``: the sanitized ``tool_call_id``
  (for people reading the directory) and the SHA-256 of the id and the output
  (128 bits shown). Ids are only unique inside one conversation; two
  conversations reusing ``call_1``, or two different outputs under one id, get
  two names. The same output under the same id always gets the same name.
- **Create, never overwrite.** The output is written to a fresh temporary file
  (``O_CREAT | O_EXCL | O_NOFOLLOW``) and published with ``link()``, which fails
  when anything already has the name, so a reader never sees half a file and a
  link planted at the name is never written through.
- **Trust only what we would have written.** When the name is taken, it is used
  only if it is a regular file (opened with ``O_NOFOLLOW``, non-blocking so a
  FIFO cannot hang us), owned by this user, holding exactly the output. Anything
  else (a symlink, a FIFO, a foreign or different file) raises
  :class:`OffloadRefused`: the caller then clears the output without naming a
  file, and says so in the report.
- **A private directory.** It is created ``0o700``; an existing one must not be
  a symbolic link, must belong to this user and must not be writable by others
  (otherwise another user could swap a file after it was checked).

POSIX only (``O_NOFOLLOW``, ``dir_fd``).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import stat
from pathlib import Path

from ..messages import Message, text_parts

__all__ = [
    "OffloadRefused",
    "offload",
    "offload_name",
    "output_text",
    "publish_bytes",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_ID_CHARS = 48
_DIGEST_HEX = 32
_READ_CHUNK = 1 << 20
#: Files already compared with their output, by (directory, name): a Governor governs
#: the same history on every step and need not re-read every offloaded file each time.
_VERIFIED: dict[tuple[str, str], tuple[int, ...]] = {}
_VERIFIED_MAX = 4096
#: link() is not available on every filesystem (FAT, some network mounts).
_NO_LINK = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS}


class OffloadRefused(OSError):
    """The store, or what stands at an output's name in it, is not ours to trust."""


def output_text(message: Message) -> str:
    """The text of a tool result as it is stored: a string, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in text_parts(content) if isinstance(p, dict))


def _encoded(text: str) -> bytes:
    # Lone surrogates (invalid Unicode from a broken decoder) are stored as U+FFFD.
    return text.encode("utf-8", errors="replace")


def offload_name(call_id: str, data: bytes) -> str:
    """The file name of ``data`` under ``call_id``: deterministic, collision-resistant."""
    digest = hashlib.sha256()
    digest.update(call_id.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(data)
    return f"{_UNSAFE.sub('_', call_id)[:_ID_CHARS]}-{digest.hexdigest()[:_DIGEST_HEX]}.txt"


def offload(directory: Path, message: Message) -> str:
    """Store a cleared output in ``directory`` (once); return the path the placeholder names.

    Raises OSError (OffloadRefused among them) when it cannot be stored safely.
    """
    data = _encoded(output_text(message))
    name = offload_name(str(message.get("tool_call_id") or "result"), data)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    publish_bytes(directory, name, data)
    return str(directory / name)


def publish_bytes(directory: Path, name: str, data: bytes) -> None:
    """Store ``data`` as ``directory/name`` once, with the same checks as every offload
    (a file already there with other content is refused, never overwritten). Raises
    OSError when it cannot be stored safely."""
    dir_fd = _open_store(directory)
    try:
        if not _holds(dir_fd, name, data, directory):
            _publish(dir_fd, name, data, directory)
    finally:
        os.close(dir_fd)


def _open_store(directory: Path) -> int:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise OffloadRefused(
                errno.ENOTDIR, "the offload directory is a symbolic link or not a directory"
            ) from None
        raise
    info = os.fstat(fd)
    problem = None
    if info.st_uid != os.geteuid():
        problem = "belongs to another user"
    elif info.st_mode & stat.S_IWOTH:
        problem = "is writable by other users"
    if problem is not None:
        os.close(fd)
        raise OffloadRefused(errno.EPERM, f"the offload directory {problem}")
    return fd


def _holds(dir_fd: int, name: str, data: bytes, directory: Path) -> bool:
    """True if ``name`` is our file holding ``data``; False if absent; else OffloadRefused."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OffloadRefused(
                errno.EEXIST, f"a symbolic link stands at {directory / name}; not followed"
            ) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise OffloadRefused(errno.EEXIST, f"{directory / name} is not a file of ours")
        key, seen = (str(directory), name), _identity(info)
        if _VERIFIED.get(key) == seen:
            return True  # compared before, and not changed since (ctime moves on any write)
        if info.st_size != len(data) or not _same_bytes(fd, data):
            raise OffloadRefused(
                errno.EEXIST, f"{directory / name} exists with other content; not trusted"
            )
        if len(_VERIFIED) >= _VERIFIED_MAX:
            _VERIFIED.clear()
        _VERIFIED[key] = seen
    finally:
        os.close(fd)
    return True


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """What changes when a file is replaced or written to."""
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _same_bytes(fd: int, data: bytes) -> bool:
    view = memoryview(data)
    position = 0
    while position < len(data):
        chunk = os.read(fd, min(_READ_CHUNK, len(data) - position))
        if not chunk or chunk != view[position : position + len(chunk)]:
            return False
        position += len(chunk)
    return os.read(fd, 1) == b""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _create(dir_fd: int, name: str, data: bytes) -> None:
    """Create ``name`` exclusively (never through a link) and write ``data`` to it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(name, flags, 0o600, dir_fd=dir_fd)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


def _publish(dir_fd: int, name: str, data: bytes, directory: Path) -> None:
    """Write to a temporary name, then link it to ``name``: all or nothing, no overwrite."""
    temporary = f".tmp-{secrets.token_hex(8)}"
    _create(dir_fd, temporary, data)
    try:
        os.link(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        # Another process stored it first (or something was planted): check, never replace.
        if not _holds(dir_fd, name, data, directory):
            raise
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        with contextlib.suppress(FileExistsError):
            _create(dir_fd, name, data)  # no hard links here: exclusive create instead
        _holds(dir_fd, name, data, directory)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=dir_fd)
