"""What counts as a finding: the classes `make fuzz` checks on every input.

- ``crash``: an exception other than the documented InputError / ConfigError;
- ``slow``: more than SLOW_SECONDS of CPU for one govern() of an input under 1 MB;
- ``mutation``: govern() changed the caller's messages or tools;
- ``not-idempotent``: governing the output again changes it (or fails);
  provider profiles only, like the two classes after it: the nanobot profile
  reproduces the seed output for output, and the seed is not idempotent;
- ``unreported-violation``: the profile's own validator flags the output and the
  report does not list that violation;
- ``newest-user-lost``: the text of the newest user message is in no output message
  (provider profiles; the nanobot profile reproduces the seed, which may drop it).
"""

from __future__ import annotations

import hashlib
import operator
import signal
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from context_governor import ConfigError, InputError, govern, validate
from context_governor.profiles import PROFILES

from .generate import Case

SLOW_SECONDS = 2.0
#: CPU seconds after which one check is stopped and reported as ``slow``/``hang`` (a
#: hang would otherwise stall the whole campaign). CPU time, not wall-clock: a campaign
#: run niced on a busy machine must not report a hang because it was waiting its turn.
HANG_SECONDS = 60
#: Wall-clock backstop for a check that blocks without spending CPU (a lock never freed).
STALL_SECONDS = 1800


class Hang(BaseException):
    """Raised into govern() by the watchdog (a BaseException: no ``except Exception``
    in the code under test can swallow it)."""


@contextmanager
def watchdog(cpu_seconds: float, wall_seconds: float | None = None) -> Iterator[None]:
    """Interrupt the block after ``cpu_seconds`` of this process's CPU time, or after
    ``wall_seconds`` of wall-clock time (default: STALL_SECONDS), whichever comes first
    (Unix main thread; elsewhere a no-op)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise Hang

    timers = (
        (signal.ITIMER_PROF, signal.SIGPROF, cpu_seconds),
        (
            signal.ITIMER_REAL,
            signal.SIGALRM,
            STALL_SECONDS if wall_seconds is None else wall_seconds,
        ),
    )
    previous = [signal.signal(sig, interrupt) for _, sig, _ in timers]
    for which, _, seconds in timers:
        signal.setitimer(which, seconds)
    try:
        yield
    finally:
        for (which, sig, _), handler in zip(timers, previous, strict=True):
            signal.setitimer(which, 0)
            signal.signal(sig, handler)


SMALL_INPUT = 1_000_000  # bytes-ish: characters of strings plus one per value


@dataclass(frozen=True)
class Finding:
    kind: str
    signature: str  # what makes two findings the same defect (for de-duplication)
    detail: str


def fingerprint(value: Any) -> tuple[list[Any], int]:
    """A comparable picture of ``value`` (iterative: any depth; a container met again
    is written as a back-reference, so cycles end) and its size in characters."""
    out: list[Any] = []
    size = 0
    seen: dict[int, int] = {}
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        size += 1
        if isinstance(item, str):
            size += len(item)
            out.append(
                (
                    "s",
                    len(item),
                    hashlib.blake2b(item.encode("utf-8", "surrogatepass")).hexdigest()[:16],
                )
            )
        elif isinstance(item, dict | list | tuple):
            if id(item) in seen:
                out.append(("ref", seen[id(item)]))
                continue
            seen[id(item)] = len(seen)
            if isinstance(item, dict):
                out.append(("d", len(item), tuple(repr(k) for k in item)))
                pending.extend(reversed(list(item.values())))
            else:
                out.append((type(item).__name__, len(item)))
                pending.extend(reversed(item))
        elif isinstance(item, float):
            out.append(("f", repr(item)))  # nan == nan here
        elif isinstance(item, bool | int) or item is None:
            out.append((type(item).__name__, item))
        else:
            out.append(("o", type(item).__name__))
    return out, size


class Snapshot:
    """The caller's data as it was, to tell whether govern() changed it: every container
    met (dict, list, tuple; a shared or cyclic one once), its size, and the objects it
    held (a dict's keys and values). ``unchanged()`` lists them again and compares by
    identity, so any value replaced, added, removed or reordered anywhere is seen (even
    a replacement by an equal value), and no string is hashed or copied: a few list
    operations per container, not a pass over every character as a fingerprint does."""

    def __init__(self, value: Any) -> None:
        containers: list[Any] = []
        seen: set[int] = set()
        pending: list[Any] = [value] if isinstance(value, _CONTAINERS) else []
        pop, push, more, add = pending.pop, pending.append, pending.extend, seen.add
        while pending:
            item = pop()
            if id(item) in seen:
                continue
            add(id(item))
            containers.append(item)
            children = item.values() if isinstance(item, dict) else item
            if len(children) == 1:  # the common link of a deep chain: no list to build
                (only,) = children
                if isinstance(only, _CONTAINERS):
                    push(only)
            else:
                more([v for v in children if isinstance(v, _CONTAINERS)])
        self.containers = containers
        self.picture = _held(containers)

    def unchanged(self) -> bool:
        sizes, refs = _held(self.containers)
        old_sizes, old_refs = self.picture
        return sizes == old_sizes and all(map(operator.is_, refs, old_refs))


def _held(containers: list[Any]) -> tuple[list[int], list[Any]]:
    """The size of each container and, flat, every object each holds."""
    sizes: list[int] = []
    refs: list[Any] = []
    size, more = sizes.append, refs.extend
    for item in containers:
        size(len(item))
        if isinstance(item, dict):
            more(item)
            more(item.values())
        else:
            more(item)
    return sizes, refs


_CONTAINERS = (dict, list, tuple)


def _where(exc: BaseException) -> str:
    """The innermost frame of our package that raised ``exc``: file:function."""
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if "context_governor" in f.filename
    ]
    if not frames:
        return "?"
    last = frames[-1]
    return f"{last.filename.rsplit('context_governor/', 1)[-1]}:{last.name}"


def _crash(exc: BaseException, during: str) -> Finding:
    short = str(exc).splitlines()[0][:200] if str(exc) else ""
    return Finding(
        "crash",
        f"{during}:{type(exc).__name__}@{_where(exc)}",
        f"{type(exc).__name__}: {short}\n" + "".join(traceback.format_exception(exc)[-6:]),
    )


def _texts(message: Any) -> list[str]:
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        # the text of text parts only: a stray "text" key on an image part is not content
        # the model reads (101:22561: a text-only target omits the image, key and all)
        return [
            p["text"]
            for p in content
            if isinstance(p, dict)
            and isinstance(p.get("text"), str)
            and p.get("type", "text") == "text"
        ]
    return []


def _clean(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8").replace("?", "\ufffd")


def _newest_user_lost(messages: list[Any], output: list[Any]) -> str | None:
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return None
    wanted = [t for t in _texts(users[-1]) if t.strip()]
    have = [_clean(t) for m in output for t in _texts(m)]
    for text in wanted:
        needle = _clean(text)
        if not any(needle in t for t in have):
            return f"newest user text ({len(text)} chars) {text[:60]!r} is not in the output"
    return None


def check(case: Case) -> list[Finding]:
    """Every finding on ``case`` (empty: the input passed every class); a check that
    takes more than HANG_SECONDS of CPU is stopped and reported as ``slow``/``hang``."""
    try:
        with watchdog(HANG_SECONDS):
            return _check(case)
    except Hang as exc:
        return [Finding("slow", "hang", f"no answer after {HANG_SECONDS}s of CPU: {_where(exc)}")]


def _check(case: Case) -> list[Finding]:
    before = Snapshot([case.messages, case.tools])
    kwargs = case.kwargs()
    started = time.process_time()
    try:
        result = govern(case.messages, **kwargs)
    except (InputError, ConfigError):
        result = None
    except Exception as exc:  # the class we look for
        return [_crash(exc, "govern")]
    spent = time.process_time() - started
    findings: list[Finding] = []
    if spent > SLOW_SECONDS:
        size = fingerprint([case.messages, case.tools])[1]  # rare: only for a slow input
        if size < SMALL_INPUT:
            findings.append(Finding("slow", "govern", f"{spent:.2f}s CPU for {size} chars"))
    if not before.unchanged():
        findings.append(Finding("mutation", "govern", "the input changed"))
    if result is None:
        return findings
    output = result.messages
    profile = PROFILES[kwargs["profile"]]
    if profile.provider is None:
        return findings  # the nanobot profile reproduces the seed, defects included
    try:
        again = govern(output, **kwargs)
    except Exception as exc:
        findings.append(
            Finding(
                "not-idempotent",
                f"raises:{type(exc).__name__}@{_where(exc)}",
                f"governing the output raised {exc!r}",
            )
        )
    else:
        # govern() returns its input list itself when it changes nothing
        if (
            again.messages is not output
            and fingerprint(again.messages)[0] != fingerprint(output)[0]
        ):
            stages = sorted({f"{a.stage}/{a.kind}" for a in again.report.actions})
            findings.append(
                Finding(
                    "not-idempotent",
                    ",".join(stages) or "silent",
                    f"second pass: {again.report.actions[:3]}",
                )
            )
    try:
        flagged = validate(output, provider=profile.provider, model=kwargs.get("model"))
    except Exception as exc:
        findings.append(_crash(exc, "validate"))
    else:
        reported = {(v["rule"], v["index"]) for v in result.report.violations}
        missing = [v for v in flagged if (v.rule, v.index) not in reported]
        if missing:
            findings.append(Finding("unreported-violation", missing[0].rule, str(missing[0])))
    lost = _newest_user_lost(case.messages, output)
    if lost:
        findings.append(Finding("newest-user-lost", profile.name, lost))
    return findings
