"""Token counting: encodings, counters, bounds, and counting off the caller's path.

The package's names are the counters' API; its modules, from the bottom:

* ``encodings``: the tokenizers, loaded offline once per process (tiktoken, rs-bpe);
* ``runs``: bounded counting (linear work whatever the text) and the rules' version;
* ``chunks``: a large text counted in content-defined chunks, each chunk's count memoised
  per encoding, so a request encodes each text once (``count_ordinary`` of a shared
  encoding counts so);
* ``counters``: the seed's counter, our exact one, custom and Claude counters, the memo;
* ``bounds``: upper bounds on a message's tokens found without tokenizing;
* ``background``: the worker thread that counts after a Governor's step;
* ``pool``: worker processes (``_worker``) for first calls on big histories;
* ``store``: counts kept between processes (SQLite, Redis).
"""

from __future__ import annotations

from ._background import (
    BackgroundCounts,
    Job,
    background_cpu_ns,
    count_in_background,
    in_background,
)
from ._bounds import (
    message_bound,
    tools_bound,
)
from ._chunks import CHUNK_MIN_TEXT, ChunkedCount, chunk_cuts
from ._counters import (
    CLAUDE_BYTES_PER_TOKEN,
    CLAUDE_FACTOR,
    PER_MESSAGE_OVERHEAD,
    SEED_EXACT_CHARS,
    ExactCounter,
    Known,
    KnownCounts,
    SeedCounter,
    TokenCounter,
    claude_counter,
    claude_estimate,
    custom_counter,
    digest,
    exact_counter,
    json_text,
    media_note,
    seed_counter,
    seed_message_payload,
    uncounted,
)
from ._encodings import (
    BULK_CHARS,
    FAST_ENV,
    FAST_PROBE,
    FAST_PROBE_IDS,
    O200K_PATTERN,
    O200K_SHA256,
    O200K_SPECIAL,
    Encoding,
    FastEncoding,
    build_hooks,
    bulk_counting,
    chunked_count,
    clean_surrogates,
    count_ordinary,
    counting_encoding,
    encoding_for_model,
    every_model_family,
    load_encoding,
    set_bulk_loading,
    shared_name,
    warm_up,
    warm_up_in_background,
)
from ._media import MediaRule, is_media_part, media_count, media_rule_for
from ._runs import (
    COUNT_RULES_VERSION,
    MAX_PIECE,
    RUN_LIMIT,
    bounded_count,
    bounded_segments,
    bounded_tokens,
    rules_fingerprint,
)

__all__ = [
    "BULK_CHARS",
    "CHUNK_MIN_TEXT",
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
    "ChunkedCount",
    "Encoding",
    "ExactCounter",
    "FastEncoding",
    "Job",
    "Known",
    "KnownCounts",
    "MediaRule",
    "SeedCounter",
    "TokenCounter",
    "background_cpu_ns",
    "bounded_count",
    "bounded_segments",
    "bounded_tokens",
    "build_hooks",
    "bulk_counting",
    "chunk_cuts",
    "chunked_count",
    "claude_counter",
    "claude_estimate",
    "clean_surrogates",
    "count_in_background",
    "count_ordinary",
    "counting_encoding",
    "custom_counter",
    "digest",
    "encoding_for_model",
    "every_model_family",
    "exact_counter",
    "in_background",
    "is_media_part",
    "json_text",
    "load_encoding",
    "media_count",
    "media_note",
    "media_rule_for",
    "message_bound",
    "rules_fingerprint",
    "seed_counter",
    "seed_message_payload",
    "set_bulk_loading",
    "shared_name",
    "tools_bound",
    "uncounted",
    "warm_up",
    "warm_up_in_background",
]
