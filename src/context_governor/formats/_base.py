"""What every request module shares: the API names, the result type, what
govern_request passes each one, and the counting and report helpers of the edges.

A leaf of ``formats/``: the request modules (``chat_request.py``,
``anthropic_request.py``, ``responses_request.py``, ``gemini_request.py``) import it;
it imports none of them, nor ``registry.py``, the table of wire formats that names them.

The API names are one table (``APIS``), used by the library, the CLI, the proxy and
the docs alike: "openai" (Chat Completions), "anthropic" (Anthropic Messages),
"responses" (OpenAI Responses), "gemini" (Google Gen AI ``generateContent``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..counting import TokenCounter
from ..counting.store import CountLink
from ..errors import ConfigError
from ..messages import Message
from ..pipeline import Settings, resolve_settings
from ..policies import Compaction, CompactionPolicy
from ..profiles import Profile
from ..report import Action, Note, Report

#: A request body's wire format, as ``govern_request(api=...)`` names it.
Api = Literal["anthropic", "openai", "responses", "gemini"]
APIS: tuple[Api, ...] = ("anthropic", "openai", "responses", "gemini")
#: The profile (the target's rules) of a body of each API when none is given.
DEFAULT_PROFILES: dict[Api, str] = {
    "anthropic": "anthropic", "openai": "openai", "responses": "openai", "gemini": "gemini",
}  # fmt: skip
#: What precedes the newest compaction block or item: sent as it came, or left out.
Compacted = Literal["keep", "drop"]
COMPACTED: tuple[Compacted, ...] = ("keep", "drop")


def check_api(api: Any, caller: str) -> Api:
    """``api`` as one of APIS; ConfigError naming them when it is missing or unknown
    (there is no default: none of the four is more likely than another)."""
    known = ", ".join(repr(name) for name in APIS)
    if api is None:
        raise ConfigError(
            f"{caller}() needs api=, the format of the body: one of {known} (docs/formats.md)"
        )
    if isinstance(api, str) and api in APIS:
        return api
    raise ConfigError(f"unknown api {api!r}; known: {known}")


@dataclass(frozen=True, slots=True)
class RequestResult:
    """The governed request body (same format as the input) and the report.

    ``body`` is the input body itself when nothing changed; otherwise a new dict
    whose unchanged parts are the input's own objects (treat it as read-only).
    ``messages`` is the governed chat-completions view the report's message
    indices count.
    """

    body: dict[str, Any]
    report: Report
    messages: list[Message]
    #: what the request continues server-side and governance could not see (Responses:
    #: "previous_response_id=resp_1", "conversation=conv_1", item references); empty if none
    ungoverned: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Options:
    """govern_request's settings, as every request function takes them: govern()'s,
    the output reserve for a body that names none, and (Messages) breakpoint placing."""

    context_window: int | None = None
    #: the output reserve when the body names none (None: govern()'s default, 4096)
    max_output: int | None = None
    max_tool_result_chars: int | None = None
    compaction: str | Compaction | None = None
    count_tokens: Callable[[str], int] | None = None
    count_store: CountLink | None = None
    #: Messages only: mark where the stable prefix ends with ``cache_control``
    cache_breakpoints: bool = True
    #: what precedes the newest compaction block or item, which the provider does not
    #: read: "keep" sends it as it came, "drop" leaves it out (docs/native-compaction.md)
    compacted: Compacted = "keep"

    def settings(
        self,
        *,
        profile: str | Profile,
        tools: list[dict[str, Any]] | None,
        model: str | None,
        max_output: int | None,
        prefill: bool = False,
    ) -> Settings:
        """The pipeline's settings for a body: its tools, model, reserve (else this
        default) and prefill, with these options."""
        return resolve_settings(
            profile=profile,
            tools=tools,
            model=model,
            context_window=self.context_window,
            max_output=self.max_output if max_output is None else max_output,
            max_tool_result_chars=self.max_tool_result_chars,
            prefill=prefill,
            compaction=self.compaction,
            count_tokens=self.count_tokens,
            count_store=self.count_store,
        )


def check_compacted(value: Any) -> Compacted:
    """``compacted`` as one of COMPACTED; ConfigError naming them otherwise."""
    if isinstance(value, str) and value in COMPACTED:
        return value
    raise ConfigError(f"compacted must be 'keep' or 'drop', got {value!r}")


@dataclass(frozen=True, slots=True)
class ServerEdit:
    """One thing the client asked the provider's server to do to the context (an entry
    of ``context_management``, or an on-demand compaction request) and what governance
    does beside it: ``aside`` steps aside (legality and the hard window limit only), or
    runs as usual; ``why`` is the report's reason."""

    kind: str
    aside: bool
    why: str


def step_aside(settings: Settings, edits: Sequence[ServerEdit]) -> Settings:
    """``settings`` with the cache policy's trigger at the whole budget when an edit asks
    governance to step aside: it then changes the history only where the request would
    not fit the window (the seed policy has no trigger and runs as it always does)."""
    policy = settings.compaction
    if not any(e.aside for e in edits) or not isinstance(policy, CompactionPolicy):
        return settings
    return replace(settings, compaction=replace(policy, trigger=1.0))


def server_note(edits: Sequence[ServerEdit]) -> Note:
    """The report's note of what governance did beside the server's context edits."""
    said = "; ".join(
        f"{e.kind}: governance "
        + ("steps aside (legality and the hard window limit only)" if e.aside else "runs as usual")
        + f", {e.why}"
        for e in edits
    )
    return Note(f"server-side context management asked for: {said}", "server")


#: A request function: a body of one API governed under a profile, a model override
#: and the options; what ``request.GOVERN`` maps each API to.
Governs = Callable[[Any, str | Profile, str | None, Options], RequestResult]


#: What in a carried text may be media or ciphertext (counting/_payload.py counts them by
#: rule); a text without any is counted as text, as it always was.
_CARRIED_MARKERS = ("signature", "encrypted_content", '"data"', "data:", "image", "inline")


def _json_lines(text: str) -> list[Any] | None:
    """The values of a carried text (one JSON document per line, as the edges write it),
    each as a content part; None when a line is not JSON."""
    values: list[Any] = []
    for line in text.split("\n"):
        try:
            values.append({"carried": json.loads(line)})
        except (ValueError, RecursionError):
            return None
    return values


class CarryCounter:
    """The profile's counter plus what the edge carries opaquely: unknown fields and
    messages of unknown roles are counted (as JSON text) with the message they travel
    with, unknown top-level fields with the request. Media and reasoning ciphertext in
    what is carried are counted by rule, as in a message (counting/_payload.py).

    ``unread``, given by an edge, maps a message to the view of it the provider reads
    (None: all of it): e.g. an Anthropic model that strips earlier turns' thinking."""

    def __init__(
        self,
        inner: TokenCounter,
        fixed_text: str,
        key: str,
        unread: Callable[[Message], Message | None] | None = None,
    ) -> None:
        self.inner = inner
        self.key = key  # the edge's private key for what a message carries
        self.unread = unread
        self.fixed = self._text(fixed_text)
        # Stages count a message several times per call: remember each count by identity
        # (the entry holds the message, so its id cannot be reused while it lives).
        self._known: dict[int, tuple[Message, int]] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    def _text(self, text: str) -> int:
        if not text:
            return 0
        if any(marker in text for marker in _CARRIED_MARKERS):
            values = _json_lines(text)
            if values is not None:  # counted as values: media and ciphertext by rule
                return self.inner.message_tokens({"role": "user", "content": values})
        return self.inner.message_tokens({"role": "user", "content": text})

    def message_tokens(self, message: Message) -> int:
        known = self._known.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        view = self.unread(message) if self.unread is not None else None
        tokens = self.inner.message_tokens(message if view is None else view)
        extra = getattr(message.get(self.key), "extra", "")
        if isinstance(extra, str) and extra:
            tokens += self._text(extra)
        self._known[id(message)] = (message, tokens)
        return tokens

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        return (
            sum(self.message_tokens(m) for m in messages)
            + self.inner.prompt_tokens([], tools)
            + self.fixed
        )


def record_lost(report: Report, lost: Sequence[str], turn: str) -> None:
    """One action per unknown field the encoder could not keep (the edges' ``lost``)."""
    report.actions.extend(
        Action(
            "encode",
            "drop",
            -1,
            f"{place} left out: native messages written as one {turn} held different "
            "values of it, and one field holds one value (the later one was kept)",
        )
        for place in lost
    )
