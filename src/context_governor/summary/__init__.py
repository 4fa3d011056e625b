"""Summary compaction: where the cache policy cuts turns, one stored summary instead.

See docs/summaries.md. ``Summaries`` is the option (CompactionPolicy(summary=...));
the stores and the built-in model summarizer are here too.
"""

from ._settings import Summaries, public
from ._store import MemoryStore, RedisStore, SqliteStore, SummaryStore, open_store
from ._summarizer import (
    SUMMARY_PROMPT,
    Summarizer,
    SummarizerError,
    call_summarizer,
    model_summarizer,
    transcript,
)

__all__ = [
    "SUMMARY_PROMPT",
    "MemoryStore",
    "RedisStore",
    "SqliteStore",
    "Summaries",
    "Summarizer",
    "SummarizerError",
    "SummaryStore",
    "call_summarizer",
    "model_summarizer",
    "open_store",
    "public",
    "transcript",
]
