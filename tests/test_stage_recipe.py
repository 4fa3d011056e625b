"""docs/architecture.md's recipe for a new stage, walked: a stage is its module in
stages/, its place in a profile, and its tests, and nothing else names it.

Every stage of every built-in profile is defined in a module of ``stages/`` and, where a
provider profile runs it, is either walked by the Governor's fast path (``probe.WALKED``) or declares what it leaves alone
(``leaves_alone_if``/``leaves_alone_when``): then the fast path needs no line for it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from context_governor.governor._probe import WALKED
from context_governor.profiles import PROFILES
from context_governor.stages._base import check_for
from context_governor.stages._repair import repair_messages

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
RECIPE_START = "### Recipe: a new stage"


def _function(stage: Any) -> Any:
    return getattr(stage, "func", stage)  # a functools.partial names its function


def _stages() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for profile in PROFILES.values():
        for stage in (*profile.prepare, *profile.stages, *profile.fallback, *profile.finish):
            function = _function(stage)
            found[f"{function.__module__}.{function.__name__}"] = function
    return found


def test_every_stage_is_defined_in_a_module_of_stages() -> None:
    for qualified in _stages():
        assert qualified.startswith("context_governor.stages."), qualified


def test_the_provider_profiles_stages_are_walked_or_declared() -> None:
    for name, profile in PROFILES.items():
        if profile.provider is None:
            continue  # the seed's profile: the fast path never answers for it
        assert profile.prepare == (repair_messages,), name
        for stage in (*profile.stages, *profile.finish):
            assert stage in WALKED or check_for(stage) is not None, (name, stage)


def test_the_recipe_names_the_files_this_test_holds() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert RECIPE_START in text
    section = text.split(RECIPE_START, 1)[1].split("\n#", 1)[0]
    named = re.findall(r"^- `([\w/<>.-]+\.py)`", section, flags=re.MULTILINE)
    assert named == ["stages/_<name>.py", "profiles.py", "tests/test_<name>.py"]
    assert (ROOT / "src" / "context_governor" / "profiles.py").exists()
