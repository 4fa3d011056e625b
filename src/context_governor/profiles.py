"""Profiles: which stages run, in which order, with which counter.

A profile is data. ``nanobot`` is the seed exactly (Nanobot 0.2.2's runner
pipeline followed by its provider's role-alternation pass); ``openai`` is the
same pipeline with the seed's defects fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial

from .counting import MediaRule, TokenCounter, exact_counter, media_rule_for, seed_counter
from .errors import ConfigError
from .providers import CATALOG, PROVIDERS
from .stages import (
    Stage,
    apply_tool_result_budget,
    backfill_seed,
    backfill_strict,
    cap_tool_results,
    compact,
    drop_orphans_seed,
    drop_orphans_strict,
    enforce_alternation,
    enforce_alternation_seed,
    microcompact,
    provider_fixes,
    repair_messages,
    shrink,
    snip,
)

__all__ = [
    "NANOBOT",
    "OPENAI",
    "PROFILES",
    "PROVIDER_STAGES",
    "STRICT_STAGES",
    "Profile",
    "get_profile",
]


@dataclass(frozen=True)
class Profile:
    """How one target is governed.

    ``prepare`` repairs input and never falls back; ``stages`` are the seed's
    governance steps, replaced by ``fallback`` (the minimal repair) if one
    raises; ``provider`` stages run on the final list, as in Nanobot's provider layer.
    """

    name: str
    description: str
    prepare: tuple[Stage, ...]
    stages: tuple[Stage, ...]
    fallback: tuple[Stage, ...]
    finish: tuple[Stage, ...]
    counter: Callable[[str | None], TokenCounter]
    provider: str | None = None
    #: The seed reads a non-int max_tokens as "not given" (4096); we reject it.
    lenient_max_output: bool = False
    #: The seed reads context_window=0 as "no window" (no snipping); we reject it.
    zero_window_is_none: bool = False


def _seed_counter(model: str | None) -> TokenCounter:
    return _cached_seed_counter()


@lru_cache(maxsize=1)
def _cached_seed_counter() -> TokenCounter:
    return seed_counter()


@lru_cache(maxsize=64)
def _cached_exact_counter(model: str | None, media: MediaRule = "openai") -> TokenCounter:
    return exact_counter(model, media)


def _exact_counter_for(media: MediaRule) -> Callable[[str | None], TokenCounter]:
    """The profile's counter for a provider whose media follows ``media``: one counter per
    process, model and rule (the default rule's under the one-argument key, so every
    caller of ``_cached_exact_counter(model)`` shares it)."""
    if media == "openai":
        return _cached_exact_counter
    return partial(_cached_exact_counter, media=media)


NANOBOT = Profile(
    name="nanobot",
    description="Nanobot 0.2.2's pipeline exactly, defects included (for comparison and migration)",
    prepare=(),
    stages=(
        drop_orphans_seed,
        backfill_seed,
        microcompact,
        apply_tool_result_budget,
        partial(snip, systems_first=True, keep_last_turn=False),
        drop_orphans_seed,
        backfill_seed,
    ),
    fallback=(drop_orphans_seed, backfill_seed),
    finish=(enforce_alternation_seed,),
    counter=_seed_counter,
    lenient_max_output=True,
    zero_window_is_none=True,
)

#: The provider profiles' stages: the seed's with its defects fixed, then the provider's
#: repairs (governor/_probe.py knows what each of them leaves alone).
STRICT_STAGES: tuple[Stage, ...] = (
    drop_orphans_strict,
    backfill_strict,
    provider_fixes.regroup_tool_results,
    # before the compaction: it sees the results as they are sent (a result's shrunk
    # form is a function of its content and call: the same on every request)
    shrink,
    compact.clear_stage,
    cap_tool_results,
    compact.fit_stage,
    drop_orphans_strict,
    backfill_strict,
)
PROVIDER_STAGES: tuple[Stage, ...] = (
    provider_fixes.flatten_tools,
    provider_fixes.systems,
    enforce_alternation,
    provider_fixes.opening,
    provider_fixes.bridge_user_after_tool,
    # before the split: it pairs each call with its result by id, which needs unique ids
    # (with a repeated id it would leave the message whole and split it on a second pass)
    provider_fixes.rekey_ids,
    provider_fixes.split_parallel_calls,
    provider_fixes.names,
    provider_fixes.reasoning,
    provider_fixes.allowed_keys,
    provider_fixes.empty_content,
    provider_fixes.thought_signatures,
    provider_fixes.cache_control,
    provider_fixes.prefill,
)


def _provider_profile(name: str) -> Profile:
    entry = CATALOG[name]
    return Profile(
        name=name,
        description=f"the seed pipeline with its defects fixed, then {entry.title}'s rules",
        prepare=(repair_messages,),
        stages=STRICT_STAGES,
        fallback=(drop_orphans_strict, backfill_strict, provider_fixes.regroup_tool_results),
        finish=PROVIDER_STAGES,
        counter=_exact_counter_for(media_rule_for(name)),
        provider=name,
    )


PROFILES: dict[str, Profile] = {name: _provider_profile(name) for name in PROVIDERS}
PROFILES[NANOBOT.name] = NANOBOT
OPENAI = PROFILES["openai"]


def get_profile(name: str | Profile) -> Profile:
    if isinstance(name, Profile):
        return name
    if not isinstance(name, str):
        raise ConfigError(f"profile must be a profile name or a Profile, got {type(name).__name__}")
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise ConfigError(f"unknown profile {name!r}; known profiles: {known}") from None
