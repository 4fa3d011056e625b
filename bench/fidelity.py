"""Fidelity: how much of the history reaches the model, message by message.

Cost and cached-prefix share say what a policy saves; these figures say what the model
loses for it. At every step of a replay, each message of the persisted history is
looked for in the governed request:

* **the agent's own messages** (assistant text and tool calls) and **user prompts** are
  *kept* when an equal message is in the request (equal: the same
  ``json.dumps(sort_keys=True)``). A user prompt also counts as kept when its text
  reaches the model whole inside another user message (a cut note folded into it, two
  prompts joined by the alternation rules): the prompt is still read;
* a **tool result** is *verbatim* when an equal message is in the request, *masked* when
  a tool result for the same call id is there with other content (a placeholder: the
  call and the fact that it succeeded are still visible), and *gone* otherwise.

Equal messages in the history are matched one for one (newest first), so a duplicate
is not kept twice by one message of the request. ``Fidelity`` sums a run up: the mean
over the steps of each share, its value at the last step, and the step at which each
kind of message was first lost. The figures are computed from the messages alone, so
any policy (ours, the seed's, a scripted one in a test) is measured the same way.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Message = dict[str, Any]

#: what ``Fidelity.share`` and ``Fidelity.first_lost`` know
KINDS = ("own", "user", "verbatim", "masked", "gone")


@dataclass(frozen=True, slots=True)
class StepFidelity:
    """One request against the history it governed: counts per kind of message."""

    own: int = 0
    own_kept: int = 0
    user: int = 0
    user_kept: int = 0
    results: int = 0
    verbatim: int = 0
    masked: int = 0

    @property
    def gone(self) -> int:
        return self.results - self.verbatim - self.masked

    def share(self, kind: str) -> float | None:
        """The share of ``kind`` (one of ``KINDS``); None when the history has no
        message it applies to (no assistant message yet, no tool result yet)."""
        whole, part = {
            "own": (self.own, self.own_kept),
            "user": (self.user, self.user_kept),
            "verbatim": (self.results, self.verbatim),
            "masked": (self.results, self.masked),
            "gone": (self.results, self.gone),
        }[kind]
        return part / whole if whole else None

    def lost(self, kind: str) -> bool:
        """Whether this request lost something of ``kind``: an agent message or a user
        prompt not kept, a result not verbatim (``verbatim``/``masked``) or gone."""
        if kind == "own":
            return self.own_kept < self.own
        if kind == "user":
            return self.user_kept < self.user
        if kind in ("verbatim", "masked"):
            return self.verbatim < self.results
        return self.gone > 0


def content_text(content: Any) -> str:
    """The text of a message's content: a string, or its text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def step_fidelity(
    history: Sequence[Message],
    history_texts: Sequence[str],
    output: Sequence[Message],
    output_texts: Sequence[str],
) -> StepFidelity:
    """Count what of ``history`` the request ``output`` carries. ``*_texts`` are the
    messages' ``json.dumps(sort_keys=True)`` (bench/cache.py's ``Meter.text``), given
    so that a replay serializes each message once."""
    available = Counter(output_texts)
    result_ids = {
        m.get("tool_call_id") for m in output if m.get("role") == "tool" and m.get("tool_call_id")
    }
    user_texts: list[str] | None = None  # built on the first prompt not found whole
    own = own_kept = user = user_kept = results = verbatim = masked = 0
    for message, text in zip(reversed(history), reversed(history_texts), strict=True):
        role = message.get("role")
        if role not in ("assistant", "user", "tool"):
            continue
        equal = available[text] > 0
        if equal:
            available[text] -= 1
        if role == "assistant":
            own += 1
            own_kept += equal
        elif role == "user":
            user += 1
            if not equal:
                if user_texts is None:
                    user_texts = [
                        content_text(m.get("content")) for m in output if m.get("role") == "user"
                    ]
                prompt = content_text(message.get("content"))
                equal = bool(prompt) and any(prompt in t for t in user_texts)
            user_kept += equal
        else:
            results += 1
            if equal:
                verbatim += 1
            elif message.get("tool_call_id") in result_ids:
                masked += 1
    return StepFidelity(own, own_kept, user, user_kept, results, verbatim, masked)


@dataclass(frozen=True, slots=True)
class Fidelity:
    """A run's fidelity: one ``StepFidelity`` per step, in order (step 1 first)."""

    steps: tuple[StepFidelity, ...]

    def share(self, kind: str) -> float:
        """Mean over the steps of the share of ``kind`` (steps where it applies)."""
        values = [v for s in self.steps if (v := s.share(kind)) is not None]
        return statistics.mean(values) if values else 1.0 if kind in ("own", "user") else 0.0

    def last(self, kind: str) -> float:
        value = self.steps[-1].share(kind) if self.steps else None
        return (1.0 if kind in ("own", "user", "verbatim") else 0.0) if value is None else value

    def first_lost(self, kind: str) -> int | None:
        """The first step (1-based) whose request lost something of ``kind``; None: never."""
        return next((n for n, s in enumerate(self.steps, 1) if s.lost(kind)), None)


def fidelity_of(steps: Sequence[StepFidelity | None]) -> Fidelity:
    return Fidelity(tuple(s for s in steps if s is not None))


def step_label(step: int | None) -> str:
    return "never" if step is None else str(step)
