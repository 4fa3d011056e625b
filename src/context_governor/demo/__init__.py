"""``context-governor demo``: an offline agent session that shows every pipeline stage at work."""

from ._session import (
    CACHE_STAGES,
    DEMO_STAGES,
    SEED_STAGES,
    DemoSummary,
    run_demo,
    trim_like_a_store,
    turns,
    write_project,
)

__all__ = [
    "CACHE_STAGES",
    "DEMO_STAGES",
    "SEED_STAGES",
    "DemoSummary",
    "run_demo",
    "trim_like_a_store",
    "turns",
    "write_project",
]
