"""Token counters: the seed's exact counter and our own exact, never-failing one.

Counting is the hot path of governance (it runs before every model call over the
whole history), so encodings are loaded once per process (encodings.py) and counts
are cached by the text they were computed from. When no encoding can be loaded,
counters fall back to a documented estimate: ``len(text) // 4`` (characters per token
of English prose and code under cl100k; it over-counts CJK less than it under-counts
it, so the snip safety buffer matters more there). Work per text is bounded
(runs.py).

The counters ``exact_counter`` makes build their encoding on their first count, not
when they are made: a Governor's construction costs no build, and its first call can
be decided on byte bounds (bounds.py) while a thread builds it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ..errors import ConfigError, InputError
from ..messages import Message
from ._encodings import Encoding, count_ordinary, counting_encoding, encoding_for_model, shared_name
from ._media import MediaRule
from ._payload import carried_tokens, lightened, may_carry, may_hold_media, media_summary
from ._runs import bounded_tokens, rules_fingerprint

__all__ = [
    "CLAUDE_BYTES_PER_TOKEN",
    "CLAUDE_FACTOR",
    "PER_MESSAGE_OVERHEAD",
    "SEED_EXACT_CHARS",
    "ExactCounter",
    "Known",
    "KnownCounts",
    "Pending",
    "SeedCounter",
    "TokenCounter",
    "claude_counter",
    "claude_estimate",
    "counted_payload",
    "custom_counter",
    "digest",
    "exact_counter",
    "json_text",
    "media_note",
    "pending",
    "seed_counter",
    "seed_message_payload",
    "uncounted",
]

PER_MESSAGE_OVERHEAD = 4


class TokenCounter(Protocol):
    """What the pipeline needs from a counter.

    ``prompt_tokens`` is the whole request; ``message_tokens`` is one message's
    share, used to decide what to cut.
    """

    @property
    def name(self) -> str: ...

    def message_tokens(self, message: Message) -> int: ...

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int: ...


#: ``json.dumps(value, ensure_ascii=False)`` without making an encoder per call (a long
#: history has one call list per assistant message).
_JSON = json.JSONEncoder(ensure_ascii=False)


def json_text(value: Any) -> str:
    """JSON text of ``value``; too deep or cyclic input becomes an InputError (a
    ValueError, which govern() turns into one that names the place)."""
    try:
        return _JSON.encode(value)
    except RecursionError:
        raise InputError("", "nested too deeply to serialize as JSON") from None


def seed_message_payload(message: Message) -> str:
    """The text the seed counts for one message (docs/pipeline.md, the seed's token counter)."""
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                text = part.get("text", "")
                if text:
                    parts.append(text)
            else:
                parts.append(json_text(part))
    elif content is not None:
        parts.append(json_text(content))
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str) and value:
            parts.append(value)
    if message.get("tool_calls"):
        parts.append(json_text(message["tool_calls"]))
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(reasoning)
    return "\n".join(parts)


def counted_payload(message: Message) -> str:
    """The text our counters tokenize for one message: the seed's payload
    (seed_message_payload) of the message with its media and ciphertext replaced by short
    descriptors (counting/_payload.py); byte for byte the seed's payload for a message that
    has neither. What those cost is counted by rule (ExactCounter.rule_tokens)."""
    light, carried = lightened(message)
    return seed_message_payload(light if carried else message)


def media_note(messages: Sequence[Message], rule: MediaRule, model: str | None) -> str | None:
    """One line for the report when media of ``messages`` (the request sent) had to be
    counted at its rule's upper bound (a URL or file id whose size the request does not
    show, an unreadable header): how many parts of each kind, their tokens, which were
    bounded. None when every media part was counted from its own header (or none)."""
    return media_summary([lightened(m)[1] for m in messages if may_hold_media(m)], rule, model)


def _seed_prompt_parts(message: Message) -> list[str]:
    """What the seed's whole-prompt estimate counts of one message (non-text parts are not)."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                text = part.get("text", "")
                if text:
                    parts.append(text)
    if message.get("tool_calls"):
        parts.append(json_text(message["tool_calls"]))
    for key in ("reasoning_content", "name", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str) and value:
            parts.append(value)
    return parts


#: Up to this many characters the seed counter counts exactly whatever the text (see
#: SeedCounter); 1 MB of one repeated character costs tiktoken about 0.4 s.
SEED_EXACT_CHARS = 250_000


class SeedCounter:
    """Nanobot 0.2.2's estimator, reproduced with its quirks (for the ``nanobot`` profile).

    Exact, as the seed's, for any text up to SEED_EXACT_CHARS (250,000) characters:
    the profile's contract is the seed's output, and tiktoken needs about 0.1 s for a
    run of one character that long. A longer text is counted with bounded_count: still
    exact unless it holds a run of RUN_LIMIT characters of one kind, then an upper
    bound around the run. (At 1,000,000 a 950 kB run, counted as a message, the system
    part and the whole prompt, took 2.4 s of CPU in one govern(): the fuzzer's 101:66235.)

    Plain ``encode()`` raises on special-token text such as ``<|endoftext|>``: a
    message estimate then falls back to ``len // 4 + 4`` and a whole-prompt
    estimate becomes 0 ("fits"). Those are the seed's defects, kept on purpose.
    """

    def __init__(self, encoding: Encoding | None) -> None:
        self._enc = encoding
        self._special: tuple[str, ...] = tuple(getattr(encoding, "special_tokens_set", ()))
        self._ordinary = count_ordinary(encoding) if encoding is not None else _estimate

    def _count(self, text: str) -> int:
        """What the seed's ``len(encode(text))`` gives: ValueError on special-token text
        wherever it is in ``text`` (as the seed's encode), else bounded_count."""
        assert self._enc is not None
        if any(special in text for special in self._special):
            raise ValueError("special-token text")
        if len(text) <= SEED_EXACT_CHARS:
            return self._ordinary(text)  # no special-token text here: encode() would not raise
        return bounded_tokens(self._ordinary, text)

    @property
    def name(self) -> str:
        return "seed:" + (self._enc.name.removesuffix("_offline") if self._enc else "chars/4")

    def message_tokens(self, message: Message) -> int:
        payload = seed_message_payload(message)
        if not payload:
            return PER_MESSAGE_OVERHEAD
        try:
            if self._enc is None:
                raise LookupError("no encoding")
            return max(4, self._count(payload) + PER_MESSAGE_OVERHEAD)
        except Exception:
            return max(4, len(payload) // 4 + PER_MESSAGE_OVERHEAD)

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        try:
            if self._enc is None:
                raise LookupError("no encoding")
            parts: list[str] = []
            for message in messages:
                parts.extend(_seed_prompt_parts(message))
            tool_tokens = 0
            if tools:
                rendered = json_text(tools)
                if parts:
                    rendered = "\n" + rendered
                tool_tokens = self._count(rendered)
            text_tokens = self._count("\n".join(parts)) if parts else 0
            return text_tokens + tool_tokens + PER_MESSAGE_OVERHEAD * len(messages)
        except Exception:
            return 0


class ExactCounter:
    """Our counter: the seed's per-message payload, but exact and total.

    - special-token text is counted as ordinary text (it is, on the wire);
    - the whole prompt is the sum of its messages plus the tool definitions, so
      that what snip adds up is what the budget check sees;
    - work is linear in the text (bounded_count): counts are exact for any text
      without a run of RUN_LIMIT (1,000) characters of one kind (letters, symbols,
      white space, newlines/slashes); the part of a text around such a run is
      counted as its UTF-8 length, an upper bound, so budgets err on the safe side;
    - counts are memoised by a 128-bit digest of the payload (not the payload
      itself, which would keep a second copy of every message alive), so an
      unchanged message is never tokenized twice in a process. The profiles build
      one counter per process and encoding, so the memo is shared by every call and
      every request (a proxy governing a conversation's next request counts only
      its new messages); it keeps the ``cache_size`` most recently used counts
      (least recently used out first: a full memo does not forget the live
      conversations' counts all at once).
    """

    def __init__(
        self,
        encoding: Encoding | None,
        *,
        cache_size: int = 65536,
        count: Callable[[str], int] | None = None,
        name: str | None = None,
        load: Callable[[], Encoding | None] | None = None,
        media: MediaRule = "openai",
        model: str | None = None,
    ) -> None:
        #: how media parts are billed (counting/_media.py), and for which model
        self.media: MediaRule = media
        self.model = model
        self._cache: OrderedDict[bytes, int] = OrderedDict()
        self._cache_size = cache_size
        self._custom = count
        self._name = name
        #: builds the encoding on first use (exact_counter's counters); None once it ran
        self._load = load
        self._load_lock = threading.Lock()
        self._encoding: Encoding | None = None
        self._count: Callable[[str], int] = self._count_loading
        self._ordinary: Callable[[str], int] = _estimate
        self._bounded = count is None and (load is not None or encoding is not None)
        if load is None:
            self._use(encoding)

    def _use(self, encoding: Encoding | None) -> None:
        """Count with ``encoding`` from now on (``_count`` is set last: a thread that
        reads it sees the other fields set)."""
        self._encoding = encoding
        self._ordinary = count_ordinary(encoding) if encoding is not None else _estimate
        if self._custom is not None:
            self._count = self._custom
        else:
            self._count = self._count_exact if encoding is not None else _estimate

    def _ready(self) -> None:
        """Build the encoding if it is not built yet (once, whichever thread asks first;
        the others wait for it)."""
        if self._load is None:
            return
        with self._load_lock:
            load = self._load
            if load is not None:
                self._use(load())
                self._load = None

    def _count_loading(self, text: str) -> int:
        """The first count of a lazy counter: build the encoding, then count with it."""
        self._ready()
        return self._count(text)

    @property
    def _enc(self) -> Encoding | None:
        """The encoding counted with (built now if it was not yet); None: chars/4."""
        self._ready()
        return self._encoding

    @property
    def loaded(self) -> bool:
        """Whether the encoding is built (a lazy counter builds it on its first count)."""
        return self._load is None

    @property
    def bpe_exact(self) -> bool:
        """Counts with a byte-level BPE encoding (no estimate, no custom count): its counts
        never exceed the UTF-8 bytes of the text (see message_bound). Builds the encoding."""
        return self._enc is not None and self._count == self._count_exact

    @property
    def byte_bounded(self) -> bool:
        """Whether no count exceeds the UTF-8 bytes of its text, known without building the
        encoding: a counter with an encoding (given, or built on first count) and no custom
        count. It holds whatever the build gives: byte-level BPE never yields more tokens
        than bytes, and the chars/4 estimate a failed build falls back to gives fewer
        (len(text) // 4 <= len(text) <= UTF-8 bytes). A counter made without an encoding
        (``ExactCounter(None)``) is an estimate from the start and says no."""
        return self._bounded

    @property
    def name(self) -> str:
        if self._name is not None:
            return self._name
        enc = self._enc
        return enc.name.removesuffix("_offline") if enc else "estimate:chars/4"

    def _count_exact(self, text: str) -> int:
        """Exact for text without a run of RUN_LIMIT characters of one kind, an upper
        bound otherwise (bounded_count); never hands the BPE a piece over MAX_PIECE."""
        return bounded_tokens(self._ordinary, text)

    @property
    def store_rules(self) -> str | None:
        """The counting rules' fingerprint (encoding and COUNT_RULES_VERSION) under which
        this counter's counts may be persisted (counting/store.py), or None when they must not
        be: a custom ``count`` hook, or the chars/4 estimate a failed build falls back to.
        Builds the encoding (which encoding a build gives is only known then)."""
        if not self.bpe_exact:
            return None
        return rules_fingerprint(self.name)

    def shared_encoding(self) -> tuple[str, Callable[[str], int]] | None:
        """(name, count) when this counter counts exactly with the process's shared
        encoding ``counting_encoding(name)``, as ``count``: then another process that
        builds that encoding counts every text as this counter does (pool.py).
        None for a ``count`` hook, the chars/4 estimate or an encoding given by hand.
        Builds the encoding."""
        encoding = self._enc
        if encoding is None or self._custom is not None or self._count != self._count_exact:
            return None
        name = shared_name(encoding)
        return None if name is None else (name, self._count)

    def share_memo(self, other: ExactCounter) -> None:
        """Memoise into ``other``'s memo from now on (counters that count text alike and
        differ only in how they count media, e.g. one per Claude model)."""
        self._cache = other._cache
        self._cache_size = other._cache_size

    def memo(self, key: bytes) -> int | None:
        """The memoised count of the text whose digest (``digest``) is ``key``, or None."""
        return self._cache.get(key)

    def remember(self, counts: Iterable[tuple[bytes, int]]) -> None:
        """Memoise counts by the digests of their texts (counts read from a store made
        under this counter's ``store_rules``); the least recently used go if it is full."""
        cache = self._cache
        cache.update(counts)
        excess = len(cache) - self._cache_size
        if excess > 0:
            with contextlib.suppress(KeyError):  # emptied by another thread
                for _ in range(excess):
                    cache.popitem(last=False)

    def text_tokens(self, text: str) -> int:
        key = digest(text)
        cached = self._cache.get(key)
        if cached is not None:
            with contextlib.suppress(KeyError):  # another thread may have evicted it
                self._cache.move_to_end(key)
            return cached
        cached = self._count(text)
        cache = self._cache
        cache[key] = cached
        if len(cache) > self._cache_size:
            with contextlib.suppress(KeyError):  # emptied by another thread
                while len(cache) > self._cache_size:
                    cache.popitem(last=False)
        return cached

    def message_tokens(self, message: Message) -> int:
        payload = seed_message_payload(message)
        if not payload:
            return PER_MESSAGE_OVERHEAD
        light, carried = lightened(message)
        if not carried:
            return max(4, self.text_tokens(payload) + PER_MESSAGE_OVERHEAD)
        ruled = carried_tokens(carried, self.media, self.model)
        text = self.text_tokens(seed_message_payload(light))
        return max(4, text + PER_MESSAGE_OVERHEAD + ruled)

    def rule_tokens(self, message: Message) -> int:
        """What ``message`` costs beyond its tokenized text: its media by this counter's
        provider rule, its reasoning ciphertext by length (counting/_payload.py); 0 without."""
        carried = lightened(message)[1]
        return carried_tokens(carried, self.media, self.model) if carried else 0

    def tools_tokens(self, tools: Sequence[Any] | None) -> int:
        return self.text_tokens(json_text(tools)) if tools else 0

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        return sum(self.message_tokens(m) for m in messages) + self.tools_tokens(tools)


class Pending:
    """The texts of some messages whose counts a counter's memo lacks, kept flat: no
    container per message (a first call on a long history asks for a hundred thousand
    of them, and every container made costs the garbage collector a walk of the heap).

    ``keys[i]`` is a text's digest and ``texts[i]`` the text, each text once, in the
    order first met; ``messages[j]`` is counted as text ``at[j]`` (every such message, in
    order); ``index`` maps a digest to its position in ``keys``."""

    __slots__ = ("at", "index", "keys", "messages", "texts")

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.texts: list[str] = []
        self.messages: list[Message] = []
        self.at: list[int] = []
        self.index: dict[bytes, int] = {}

    def owners(self) -> list[Message]:
        """Per text, the first message counted as it."""
        first: list[Message | None] = [None] * len(self.keys)
        for message, i in zip(self.messages, self.at, strict=True):
            if first[i] is None:
                first[i] = message
        return [m for m in first if m is not None]


def pending(
    counter: ExactCounter,
    messages: Iterable[Message],
    known: Known,
    into: Pending | None = None,
) -> Pending:
    """The texts of ``messages`` (not in ``known``) whose counts ``counter``'s memo lacks
    (see Pending; added to ``into`` when given). The memo's counts go into ``known`` (by
    message identity, as KnownCounts takes them) on the way. What a count store asks for
    and what worker processes count (counting/store.py, counting/pool.py)."""
    out = Pending() if into is None else into
    keys, texts, found, at, index = out.keys, out.texts, out.messages, out.at, out.index
    memo = counter.memo
    for message in messages:
        if id(message) in known:
            continue
        try:
            if may_carry(message) and lightened(message)[1]:
                continue  # counted by the call itself: media and ciphertext by rule
            payload = seed_message_payload(message)
        except Exception:  # e.g. nested too deeply: the run reports it
            continue
        if not payload:
            continue  # counted without tokenizing
        key = digest(payload)
        i = index.get(key)
        if i is None:
            count = memo(key)
            if count is not None:
                known[id(message)] = count + PER_MESSAGE_OVERHEAD
                known.kept.append(message)
                continue
            i = index[key] = len(keys)
            keys.append(key)
            texts.append(payload)
        found.append(message)
        at.append(i)
    return out


def uncounted(
    counter: ExactCounter,
    messages: Iterable[Message],
    known: Known,
) -> dict[bytes, tuple[str, list[Message]]]:
    """``pending`` as a dict: each text the memo lacks, by digest, with the messages
    counted as it."""
    found = pending(counter, messages, known)
    wanted: dict[bytes, tuple[str, list[Message]]] = {
        key: (text, []) for key, text in zip(found.keys, found.texts, strict=True)
    }
    for message, i in zip(found.messages, found.at, strict=True):
        wanted[found.keys[i]][1].append(message)
    return wanted


def digest(text: str) -> bytes:
    """The 128-bit blake2b digest a text's count is memoised (and stored) under: the
    same in every process."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Known(dict[int, int]):
    """Message counts by identity (``id(message) -> count``), what KnownCounts answers from.

    Every message added is kept alive (``kept``), so while these counts are held no other
    object can have its id: a live message whose id is here is the message counted. No
    container is made per message (a tuple of each message and its count kept a long
    history's first call walking the heap in the garbage collector)."""

    __slots__ = ("kept",)

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[Message] = []

    def add(self, message: Message, count: int) -> None:
        self[id(message)] = count
        self.kept.append(message)

    def add_all(
        self, messages: Sequence[Message], counts: Iterable[int], strict: bool = False
    ) -> None:
        """``add`` each of ``messages`` with its count (as far as both go, unless
        ``strict``: then both must go as far, ValueError otherwise)."""
        self.update(zip(map(id, messages), counts, strict=strict))
        self.kept += messages

    def merge(self, other: Known) -> None:
        self.update(other)
        self.kept += other.kept


class KnownCounts:
    """A counter that answers from counts already known (by object identity) and asks
    the real, additive one otherwise. Every count it hands out equals the real counter's.

    One govern() call asks for the same message's count many times (each stage, the
    budget checks, the report); messages are never mutated while governed, so one count
    per message object is enough. A Governor also seeds it with the counts of the
    history it governed last time. ``known`` may also be a dict of ``id -> (message,
    count)``, as it was before ``Known``: it is read into one."""

    def __init__(
        self,
        inner: TokenCounter,
        known: Known | dict[int, tuple[Message, int]] | None = None,
        tools: tuple[Sequence[Any] | None, int] | None = None,
    ) -> None:
        self.inner = inner
        if not isinstance(known, Known):
            pairs = list((known or {}).values())
            known = Known()
            known.add_all([m for m, _ in pairs], [c for _, c in pairs])
        self.known = known
        #: tools known not to change (a Governor's own copy) and their count
        self.tools = tools
        #: the replay's placeholder counts by the message each stands for, kept by a
        #: Governor from one run to the next (None: made again each run)
        self.placeholders: Known | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    def message_tokens(self, message: Message) -> int:
        known = self.known
        count = known.get(id(message))
        if count is not None:
            return count
        count = self.inner.message_tokens(message)
        known[id(message)] = count
        known.kept.append(message)
        return count

    def made_tokens(self, message: Message) -> int:
        """``message_tokens`` of a message made only to be weighed once (Context.made_tokens):
        the same count, not kept by identity."""
        count = self.known.get(id(message))
        return self.inner.message_tokens(message) if count is None else count

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        if self.tools is not None and tools is self.tools[0]:
            tools_tokens = self.tools[1]
        else:
            tools_tokens = self.inner.prompt_tokens([], tools)
        return sum(self.message_tokens(m) for m in messages) + tools_tokens


def _estimate(text: str) -> int:
    return len(text) // 4


#: The Claude estimate (docs/windows.md): cl100k tokens times this, and at least one
#: token per this many UTF-8 bytes. Anthropic publishes no offline tokenizer for its
#: current models; it says cl100k undercounts them by 15-20% on typical text and more
#: on code and non-English text, so the estimate errs high by design.
CLAUDE_FACTOR = 1.3
CLAUDE_BYTES_PER_TOKEN = 3.0


def claude_estimate(text: str) -> int:
    """Tokens of ``text`` for a Claude model (or another model behind the Messages API),
    erring high: max(ceil(1.3 x cl100k), ceil(UTF-8 bytes / 3))."""
    encoding = counting_encoding("cl100k_base")
    base = _estimate(text) if encoding is None else bounded_tokens(count_ordinary(encoding), text)
    size = len(text.encode("utf-8", "surrogatepass"))
    return max(math.ceil(base * CLAUDE_FACTOR), math.ceil(size / CLAUDE_BYTES_PER_TOKEN))


@functools.lru_cache(maxsize=1)
def _claude_base() -> ExactCounter:
    return ExactCounter(None, count=claude_estimate, name="estimate:claude", media="anthropic")


@functools.lru_cache(maxsize=32)
def claude_counter(model: str | None = None) -> ExactCounter:
    """The counter of Messages API bodies when no ``count_tokens`` hook is given: one per
    process and model, sharing one per-text memo, so it serves every request (as the
    profiles' counters do). Media is counted by Anthropic's rule for ``model`` (its image
    tier: a model we cannot place is counted at the larger)."""
    base = _claude_base()
    if model is None:
        return base
    counter = ExactCounter(
        None, count=claude_estimate, name="estimate:claude", media="anthropic", model=model
    )
    counter.share_memo(base)
    return counter


def seed_counter() -> SeedCounter:
    return SeedCounter(counting_encoding("cl100k_base"))


def exact_counter(model: str | None, media: MediaRule = "openai") -> ExactCounter:
    """The best counter we can build offline for ``model``.

    Falls back to cl100k_base when the model's encoding cannot be loaded; the
    counter's ``name`` says which encoding is really used. The encoding is built on
    the counter's first count, not here: resolving settings (a Governor's construction)
    costs nothing, and a first call decided on byte bounds leaves the build to a
    background thread (governor.py). ``media`` is the provider's rule for images,
    documents and audio (counting/_media.py).
    """
    wanted = encoding_for_model(model)

    def load() -> Encoding | None:
        return counting_encoding(wanted) or counting_encoding("cl100k_base")

    return ExactCounter(None, load=load, media=media, model=model)


def custom_counter(
    count: Callable[[str], int],
    name: str | None = None,
    media: MediaRule = "openai",
    model: str | None = None,
) -> ExactCounter:
    """A counter built on a provider's own text counter (``count(text) -> tokens``).

    Messages are counted the same way as by the exact counter (their text plus 4
    tokens; the request adds its tool definitions), so budgets, the cache policy and
    a Governor work unchanged. ``count`` must be deterministic.
    """
    label = name or f"custom:{getattr(count, '__name__', type(count).__name__)}"

    def checked(text: str) -> int:
        value = count(text)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"count_tokens must return a non-negative int, got {value!r}")
        return value

    return ExactCounter(None, count=checked, name=label, media=media, model=model)
