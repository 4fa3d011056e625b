"""The module paths the package had before its layout change, kept for one release.

``import context_governor.tokens`` (and the other names in :data:`MOVED`) still works:
it gives the module at its new path, with a DeprecationWarning that names it. The old
paths are not files any more (the root keeps the public API and the core); one import
hook answers for all of them, so the layout stays what docs/architecture.md draws. A
documented path whose module became internal (``_name.py``) is here too: it still
imports, and its warning says the module is internal now.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED", "install"]

_PACKAGE = "context_governor"

#: Old module path (under the package) -> new one. Removed in the next release.
MOVED: dict[str, str] = {
    "tokens": "counting",
    "count_pool": "counting.pool",
    "count_store": "counting.store",
    "windows": "providers.windows",
    "prices": "providers.prices",
    "render": "report",
    "late": "governor._late",
    "probe": "governor._probe",
    "inputs": "messages.inputs",
    "legacy": "messages.legacy",
    "roles": "messages.roles",
    "providers.policy": "targets._policy",
    "providers.target": "targets._target",
    "targets.windows": "providers.windows",
    "targets.prices": "providers.prices",
    "providers.fixes": "stages._provider_fixes",
    # the paths that replaced those above, now internal modules (issue 35, item 5)
    "governor.late": "governor._late",
    "governor.probe": "governor._probe",
    "targets.policy": "targets._policy",
    "targets.target": "targets._target",
    "stages.provider_fixes": "stages._provider_fixes",
}


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module at its new one (the same object: one module,
    one set of globals, whichever name imported it first)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        internal = any(part.startswith("_") for part in self.new.split("."))
        where = f"is internal now ({self.new})" if internal else f"moved to {self.new}"
        warnings.warn(
            f"{self.old} {where}; the old path is deprecated and will be "
            "removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the import system gave the module the alias's spec: give it back its own
        module.__spec__ = self.spec
        sys.modules[self.old] = module


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        prefix = _PACKAGE + "."
        if not fullname.startswith(prefix):
            return None
        new = MOVED.get(fullname[len(prefix) :])
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(fullname, prefix + new))


def install() -> None:
    """Put the finder on sys.meta_path (after the normal finders: a real module wins)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
