"""Public API discipline (issue 28, item 7): the package exports exactly the names
docs/api.md documents, every public module says what it exports in ``__all__``, and
the exception tree drawn in errors.py is the real one."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

import context_governor
from context_governor import errors

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "context_governor"
API_PAGE = ROOT / "docs" / "api.md"
#: Rewritten by issue 28's item 1 (one request path); they get their ``__all__`` then.
LATER = ("formats/", "proxy/_governing.py")


# --------------------------------------------------------------- the package's names


def documented_names() -> list[str]:
    """The names in the table of docs/api.md's "The package's names" section."""
    text = API_PAGE.read_text(encoding="utf-8")
    section = text.split("## The package's names", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", section, flags=re.MULTILINE)


def test_the_package_exports_exactly_the_documented_names() -> None:
    documented = documented_names()
    assert len(documented) == len(set(documented)), "a name is documented twice"
    assert sorted(documented) == sorted(context_governor.__all__)
    assert len(context_governor.__all__) == len(set(context_governor.__all__))
    for name in documented:
        assert getattr(context_governor, name) is not None, name


def test_dir_of_the_package_is_its_all() -> None:
    assert dir(context_governor) == sorted([*context_governor.__all__, "__version__"])


# --------------------------------------------------------------- __all__ everywhere


def public_modules() -> list[Path]:
    """Every module a user may import: no ``_`` in its path, its data files aside."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        parts = rel.split("/")
        if rel.startswith("demo/project/") or rel.startswith(LATER):
            continue
        if rel == "__main__.py" or any(p.startswith("_") and p != "__init__.py" for p in parts):
            continue
        found.append(path)
    return found


def _bound_names(tree: ast.Module) -> set[str]:
    """Names bound at the top level of a module (in any branch of an if/try)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == "__all__":
            assert isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None
            value = ast.literal_eval(node.value)
            assert isinstance(value, list) and all(isinstance(v, str) for v in value)
            return value
    return None


def test_public_modules_are_found() -> None:
    names = {p.relative_to(PACKAGE).as_posix() for p in public_modules()}
    assert {"__init__.py", "errors.py", "pipeline.py", "tools/__init__.py"} <= names
    assert not any(n.startswith(("demo/project/", "formats/")) for n in names)
    assert "proxy/_governing.py" not in names and "governor/__init__.py" in names


@pytest.mark.parametrize(
    "path", public_modules(), ids=lambda p: p.relative_to(PACKAGE).as_posix()
)
def test_every_public_module_says_what_it_exports(path: Path) -> None:
    """``__all__`` lists names the module binds, and every function or class the
    module defines without a leading underscore: public names are declared."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported = _declared_all(tree)
    assert exported is not None, "no __all__"
    assert len(exported) == len(set(exported)), "a name is listed twice"
    assert set(exported) <= _bound_names(tree), "__all__ names what the module lacks"
    defined = {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
    }
    assert defined <= set(exported), (
        f"public but not in __all__ (export them, or prefix them with _): "
        f"{sorted(defined - set(exported))}"
    )


# --------------------------------------------------------------- the exception tree

_LINE = re.compile(
    r"^(?P<indent>[ │├└─]*)(?P<name>\w+)(?: \((?P<extra>[\w, ]+)\))?\s*(?P<module>[\w.]*)$"
)
Drawn = dict[str, tuple[str, tuple[str, ...]]]


def drawn_trees() -> list[Drawn]:
    """errors.py's drawings (the indented blocks after a ``::``), each as class name ->
    (module, base names in order). A name in parentheses is another base; for a root,
    its base."""
    doc = (errors.__doc__ or "") + "\n"
    blocks = re.findall(r"::\n\n((?:    .*\n)+)", doc)
    trees: list[Drawn] = []
    for block in blocks:
        drawn: Drawn = {}
        stack: list[str] = []
        for raw in block.splitlines():
            match = _LINE.match(raw[4:].rstrip())
            assert match, f"cannot read {raw!r}"
            depth = len(match["indent"]) // 4
            name = match["name"]
            del stack[depth:]
            extra = tuple(e.strip() for e in (match["extra"] or "").split(",") if e.strip())
            if not match["module"]:  # a builtin drawn as a root: Exception, OSError, ...
                assert depth == 0 and isinstance(getattr(builtins, name, None), type), name
            else:
                drawn[name] = (match["module"], (*stack[-1:], *extra))
            stack.append(name)
        trees.append(drawn)
    return trees


def _exception_classes() -> dict[str, str]:
    """Every class the package defines whose bases are exceptions, found in the source
    (so a new one in any module is found): class name -> module."""
    builtin = {
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    classes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if rel.parts[:2] == ("demo", "project"):
            continue
        module = ".".join(p for p in rel.parts if p != "__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")
                         for b in node.bases]  # fmt: skip
                classes.append((node.name, bases, module))
    found: dict[str, str] = {}
    grew = True
    while grew:
        grew = False
        for name, bases, module in classes:
            if name not in found and any(b in builtin or b in found for b in bases):
                found[name] = module
                grew = True
    return found


def test_the_drawn_exception_tree_is_the_real_one() -> None:
    public, internal = drawn_trees()
    assert not set(public) & set(internal), "each class drawn once"
    drawn = public | internal
    real = _exception_classes()
    assert sorted(drawn) == sorted(real), "every exception class of the package is drawn"
    for name, (module, bases) in drawn.items():
        assert module == real[name], name
        cls = getattr(importlib.import_module(f"context_governor.{module}"), name)
        assert cls.__module__ == f"context_governor.{module}", name
        assert tuple(b.__name__ for b in cls.__bases__) == bases, name
        # The first drawing is everything a caller catches with one clause; the other,
        # everything else.
        assert issubclass(cls, errors.ContextGovernorError) == (name in public), name
