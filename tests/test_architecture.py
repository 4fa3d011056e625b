"""The import graph keeps the architecture docs/architecture.md draws (issue 28, item 3).

Every import in src/ counts: at the top of a module, inside a function, under
``TYPE_CHECKING``. The layers are read from the page, so the page and the code cannot
drift: each name it lists exists, every module and package of the root is in exactly
one layer, and no import reaches a higher layer. Across the whole package: no import
circle, no private name (``_x``) imported from another module or read off one, and no
private module imported from outside its own package.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = "context_governor"
PAGE = ROOT / "docs" / "architecture.md"

@dataclass(frozen=True, slots=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module (a package's __init__ is the package)
    name: str | None  # the name imported from it (None: the module itself)
    line: int


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name, its data files aside."""
    found = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        if rel.as_posix().startswith(f"{PACKAGE}/demo/project/"):
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found[".".join(parts)] = path
    return found


MODULES = modules()


def _package_of(module: str) -> str:
    path = MODULES[module]
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def imports_of(module: str) -> Iterator[Import]:
    """The package's own modules that ``module`` imports, wherever the import is."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = _package_of(module)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield Import(module, alias.name, None, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:  # ``from package import module``
                    yield Import(module, sub, None, node.lineno)
                else:
                    yield Import(module, target, alias.name, node.lineno)


IMPORTS = [found for module in MODULES for found in imports_of(module)]


def unit(module: str) -> str:
    """The root module or package ``module`` belongs to (``context_governor`` for the
    package's own ``__init__``): what the layers are made of."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def layers() -> list[list[str]]:
    """The page's layers, bottom first: the names in backquotes before the dash of each
    numbered line of its "Layers" section."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    found = []
    for line in section.splitlines():
        item = re.match(r"^\d+\. (.+?) — ", line)
        if item:
            found.append(re.findall(r"`([\w.]+)`", item[1]))
    return found


LAYERS = layers()
LEVEL = {name: n for n, names in enumerate(LAYERS) for name in names}


def test_the_page_lists_the_layers() -> None:
    assert len(LAYERS) >= 8
    assert LAYERS[0][:2] == ["errors", "messages"] and LAYERS[-1][0] == "cli"


def test_every_name_the_page_lists_exists() -> None:
    named = [name for names in LAYERS for name in names]
    assert len(named) == len(set(named)), "a name is in two layers"
    for name in named:
        if name == PACKAGE:
            continue
        path = SRC / PACKAGE / name
        assert (path / "__init__.py").is_file() or path.with_suffix(".py").is_file(), name


def test_every_module_and_package_of_the_root_is_in_a_layer() -> None:
    units = {unit(module) for module in MODULES}
    assert units - set(LEVEL) == set(), "not on docs/architecture.md"
    assert set(LEVEL) - units == set(), "on docs/architecture.md, not in the package"


def test_the_root_keeps_the_public_api_and_the_core() -> None:
    root = sorted(p.name for p in (SRC / PACKAGE).glob("*.py"))
    assert len(root) <= 12, root


def test_no_import_reaches_a_higher_layer() -> None:
    upward = sorted(
        f"{i.source} (line {i.line}) imports {i.target}: "
        f"{unit(i.source)} is below {unit(i.target)}"
        for i in IMPORTS
        if LEVEL[unit(i.source)] < LEVEL[unit(i.target)]
    )
    assert not upward, "\n".join(upward)


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle() -> None:
    edges: dict[str, set[str]] = {module: set() for module in MODULES}
    for i in IMPORTS:
        if i.source != i.target:
            edges[i.source].add(i.target)
    circles = _circles(edges)
    assert not circles, "\n".join(" <-> ".join(c) for c in circles)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_private_name_crosses_a_module() -> None:
    crossing = sorted(
        f"{i.source} (line {i.line}) imports {i.name} from {i.target}"
        for i in IMPORTS
        if i.name is not None
        and _private(i.name)
        and i.source != i.target
    )
    assert not crossing, "\n".join(crossing)


def _module_names(module: str, tree: ast.Module) -> dict[str, str]:
    """The local names ``module`` binds to the package's modules (``import a.b as c``,
    ``from a import b``, ``from . import b as c``), with the module each stands for."""
    package = _package_of(module)
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    bound[alias.asname or alias.name] = f"{target}.{alias.name}"
    return bound


def test_no_private_name_is_read_off_another_module() -> None:
    """``module._name`` where ``module`` is one of the package's modules, imported."""
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = _module_names(module, tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _private(node.attr)
            ):
                found.append(f"{module} (line {node.lineno}) reads {node.value.id}.{node.attr}")
    assert not found, "\n".join(sorted(found))


def test_no_private_module_is_imported_from_outside_its_package() -> None:
    outside = sorted(
        f"{i.source} (line {i.line}) imports {i.target}"
        for i in IMPORTS
        if any(_private(part) for part in i.target.split(".")[1:])
        and not (i.source + ".").startswith(i.target.rpartition(".")[0] + ".")
    )
    assert not outside, "\n".join(outside)
