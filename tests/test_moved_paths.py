"""The module paths before the layout change still import, for one release, each
with a DeprecationWarning, and give the module at its new path (the same object)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from context_governor.moved import MOVED


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_is_the_new_module_with_a_warning(old: str, new: str) -> None:
    # a fresh interpreter: this one may have imported the old path already
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module('context_governor.{old}')\n"
        f"new = importlib.import_module('context_governor.{new}')\n"
        "assert old is new, (old, new)\n"
        "assert new.__spec__.name == new.__name__ == 'context_governor.{new}'\n"
        "assert [w.category for w in seen] == [DeprecationWarning], seen\n"
        f"assert 'context_governor.{new}' in str(seen[0].message)\n"
    ).replace("{new}", new)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_old_path_is_a_file_any_more() -> None:
    """A real module at an old path would win over the alias (and mean the move was
    undone): none exists."""
    for old, new in MOVED.items():
        spec = None
        for finder in sys.meta_path:
            if type(finder).__name__ == "_Finder":
                continue
            find = getattr(finder, "find_spec", None)
            parent = (
                importlib.import_module("context_governor." + old.rpartition(".")[0])
                if "." in old
                else importlib.import_module("context_governor")
            )
            spec = find("context_governor." + old, parent.__path__) if find else None
            if spec is not None:
                break
        assert spec is None, f"context_governor.{old} exists as a file; it moved to {new}"
