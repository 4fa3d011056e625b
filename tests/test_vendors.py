"""One vendor, one module (issue 35, item 4): docs/architecture.md's recipe for a new
provider, walked.

Every module in ``providers.catalog.VENDORS`` declares what the recipe says (``RULES``,
``NOT_CHECKED``, ``POLICY`` and a ``VENDOR`` naming them with its sources, windows,
prices and aliases), the catalogue's tables are exactly what the modules declare, the
files the recipe names exist for every vendor, and no module of src/ outside the vendor
modules keeps a table keyed by providers' names (an AST scan, like the one for API
names in tests/test_wire_formats.py).
"""

from __future__ import annotations

import ast
import itertools
import re
import typing
from pathlib import Path
from types import ModuleType

import pytest

from context_governor.formats._base import APIS
from context_governor.profiles import PROFILES
from context_governor.providers import _catalog as catalog
from context_governor.providers import prices, windows
from context_governor.providers._rules import Rule
from context_governor.providers._vendor import Vendor
from context_governor.targets._cache_price import CachePrice
from context_governor.targets._policy import IdStyle, Policy
from context_governor.targets._target import Target

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "context_governor"
PAGE = ROOT / "docs" / "architecture.md"
RECIPE_START = "### Recipe: a new provider"

VENDORS = typing.cast(tuple[ModuleType, ...], catalog.VENDORS)


def _id(module: ModuleType) -> str:
    return module.__name__.rsplit(".", 1)[1].removeprefix("_")


@pytest.fixture(params=VENDORS, ids=_id)
def module(request: pytest.FixtureRequest) -> ModuleType:
    found: ModuleType = request.param
    return found


# --------------------------------------------------------------- each vendor module


def test_a_vendor_module_declares_what_the_recipe_says(module: ModuleType) -> None:
    vendor = module.VENDOR
    assert isinstance(vendor, Vendor)
    assert vendor.name == _id(module), "the module is named after its provider"
    assert vendor.title
    assert isinstance(module.RULES, tuple) and all(isinstance(r, Rule) for r in module.RULES)
    assert vendor.rules is module.RULES
    assert vendor.not_checked is module.NOT_CHECKED
    assert all(len(entry) == 2 and all(entry) for entry in module.NOT_CHECKED)
    assert isinstance(module.POLICY, Policy)
    if isinstance(vendor.policy, Policy):
        assert vendor.policy is module.POLICY
    else:
        assert vendor.policy is module.policy
        assert isinstance(vendor.policy(Target(vendor.name)), Policy)


def test_every_rule_has_its_sources_in_its_vendor_module(module: ModuleType) -> None:
    vendor: Vendor = module.VENDOR
    ids = [rule.id for rule in vendor.rules]
    assert len(ids) == len(set(ids))
    assert set(vendor.sources) == set(ids), "a source for each rule, and only for its rules"
    for urls in vendor.sources.values():
        assert urls and all(url.startswith("https://") for url in urls)


def test_windows_prices_and_names_are_well_formed(module: ModuleType) -> None:
    vendor: Vendor = module.VENDOR
    for prefix, window in vendor.windows.items():
        assert prefix == prefix.strip().lower() and isinstance(window, int) and window > 0
    for pattern, window in vendor.family_windows:
        re.compile(pattern)
        assert isinstance(window, int) and window > 0
    assert all(isinstance(price, CachePrice) for price in vendor.prices.values())
    for pattern, price in vendor.price_families:
        re.compile(pattern)
        assert price in vendor.prices.values(), "a family's price is in the table of prices"
    for name in (*vendor.aliases, *vendor.model_hints, *vendor.media_aliases):
        assert name == name.strip().lower() and name
    assert vendor.media in typing.get_args(typing.get_type_hints(Vendor)["media"])


def test_every_vendor_module_is_listed() -> None:
    """A module of providers/ with a VENDOR is in VENDORS (a vendor cannot be forgotten)."""
    declaring = sorted(
        path.stem.removeprefix("_")
        for path in (SRC / "providers").glob("*.py")
        if re.search(r"^VENDOR = ", path.read_text(encoding="utf-8"), re.MULTILINE)
    )
    assert declaring == sorted(_id(module) for module in VENDORS)


# --------------------------------------------------------------- the catalogue


def test_the_catalogue_is_built_from_the_vendor_modules() -> None:
    vendors: list[Vendor] = [module.VENDOR for module in VENDORS]
    names = tuple(vendor.name for vendor in vendors)
    assert len(set(names)) == len(names)
    assert names == catalog.PROVIDERS
    assert tuple(catalog.CATALOG) == names and tuple(PROFILES)[: len(names)] == names
    for vendor in vendors:
        entry = catalog.CATALOG[vendor.name]
        assert entry.title == vendor.title and entry.not_checked is vendor.not_checked
        assert [r.id for r in entry.rules] == [r.id for r in vendor.rules]
        assert all(r.source == vendor.sources[r.id] for r in entry.rules)
    assert dict(catalog.SOURCES) == {k: v for vnd in vendors for k, v in vnd.sources.items()}
    assert {k: w for vnd in vendors for k, w in vnd.windows.items()} == windows.KNOWN_WINDOWS
    assert [(p.pattern, w) for p, w in windows.FAMILY_WINDOWS] == [
        entry for vendor in vendors for entry in vendor.family_windows
    ]
    assert {k: p for vendor in vendors for k, p in vendor.prices.items()} == prices.PRICES
    aliases = [(alias, vendor.name) for vendor in vendors for alias in vendor.aliases]
    assert len({alias for alias, _ in aliases}) == len(aliases), "an alias names one vendor"
    assert dict(aliases) == catalog.ALIASES
    assert (
        tuple((hint, vendor.name) for vendor in vendors for hint in vendor.model_hints)
        == catalog.MODEL_HINTS
    )


def _expand(parsed: typing.Any) -> list[str]:
    """Every string a family pattern matches whole, with each repeat taken its fewest
    times and once more (the patterns are literals, classes, groups, ``?``)."""
    found = [""]
    for op, arg in parsed:
        kind = str(op)
        if kind == "LITERAL":
            options = [chr(arg)]
        elif kind == "IN":
            options = []
            for item, value in arg:
                assert str(item) in ("LITERAL", "RANGE"), item
                low, high = (value, value) if str(item) == "LITERAL" else value
                options += [chr(c) for c in range(low, high + 1)]
        elif kind in ("MAX_REPEAT", "MIN_REPEAT"):
            low, _, sub = arg
            inner = _expand(sub)
            options = [] if low else [""]
            options += ["".join(parts) for parts in itertools.product(inner, repeat=max(low, 1))]
        elif kind == "SUBPATTERN":
            options = _expand(arg[-1])
        elif kind == "BRANCH":
            options = [text for branch in arg[1] for text in _expand(branch)]
        else:
            raise AssertionError(f"a family pattern uses {kind}: teach _expand it")
        found = [start + option for start in found for option in options]
    return found


def test_no_model_name_matches_two_vendors_family_patterns() -> None:
    """FAMILY_WINDOWS' first match wins, and it is gathered vendor by vendor: that order
    is the right one only while no name matches the family patterns of two vendors."""
    from re import _parser

    patterns = [
        (module.VENDOR.name, pattern)
        for module in VENDORS
        for pattern, _ in module.VENDOR.family_windows
    ]
    for vendor, pattern in patterns:
        for name in _expand(_parser.parse(pattern)):
            others = [p for v, p in patterns if v != vendor and re.match(p, name)]
            assert not others, f"{name!r} ({vendor}: {pattern}) also matches {others}"


# --------------------------------------------------------------- the recipe


def _recipe() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    assert RECIPE_START in text
    section = text.split(RECIPE_START, 1)[1].split("\n#", 1)[0]
    return [line for line in section.splitlines() if line.startswith(("- ", "  "))]


def test_the_recipe_names_files_that_exist_for_every_vendor() -> None:
    named = [
        path for line in _recipe() for path in re.findall(r"`([\w/<>.-]+\.(?:py|md|txt))`", line)
    ]
    assert "providers/_<name>.py" in named and "providers/_catalog.py" in named
    for path in named:
        for found in [path.replace("<name>", _id(module)) for module in VENDORS]:
            where = ROOT / found if found.startswith(("tests/", "docs/")) else SRC / found
            assert where.exists(), found


# --------------------------------------------------------------- no other table


def _vendor_names() -> set[str]:
    names = set(catalog.PROVIDERS) | set(catalog.ALIASES) | set(catalog.MEDIA_RULES)
    return {name for name in names if name}


#: Vocabularies named after the providers whose tables are not tables of providers: the
#: API names (formats/_base.py; tests/test_wire_formats.py keeps them to the formats) and
#: the tool-call id styles a Policy names (stages/_provider_fixes.py's ID_RULES).
OTHER_VOCABULARIES: tuple[frozenset[str], ...] = (
    frozenset(APIS),
    frozenset(typing.get_args(IdStyle)),
)


def _keys(node: ast.AST) -> set[str]:
    """The string keys of a table literal: a dict's keys, a set's, list's or tuple's
    items, or the first item of each pair in a tuple or list of pairs."""
    if isinstance(node, ast.Dict):
        items: list[ast.AST | None] = list(node.keys)
    elif isinstance(node, ast.Set | ast.List | ast.Tuple):
        items = [
            e.elts[0] if isinstance(e, ast.Tuple | ast.List) and e.elts else e for e in node.elts
        ]
    else:
        return set()
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def test_no_module_outside_the_vendor_modules_keeps_a_table_of_providers() -> None:
    """A table keyed by providers' names (a dict, a set, a list of pairs...) lives in the
    vendor modules and is gathered by the catalogue; anywhere else it is a place a new
    provider would have to be added by hand."""
    names = _vendor_names()
    own = {Path(typing.cast(str, module.__file__)).resolve() for module in VENDORS}
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("demo/project/") or path.resolve() in own:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        annotations = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.Subscript)  # Literal["openai", "anthropic"] is a type
            for inner in ast.walk(node.slice)
        }
        for node in ast.walk(tree):
            keys = set() if id(node) in annotations else _keys(node)
            if len(keys & names) < 2 or any(keys <= other for other in OTHER_VOCABULARIES):
                continue
            found.append(f"{rel}:{getattr(node, 'lineno', '?')}: {sorted(keys & names)}")
    assert not found, "\n".join(found)


def test_the_scan_finds_a_table_of_providers() -> None:
    """The scan above is not blind: the tables it keeps out are the ones it would find."""
    names = _vendor_names()
    tables = (
        '{"anthropic": 1, "gemini": 2}',
        '{"openai", "groq"}',
        '(("claude", "anthropic"), ("kimi", "moonshot"), ("mistral", "mistral"))',
        '("bedrock", "google_genai")',
    )
    for text in tables:
        node = ast.parse(text, mode="eval").body
        assert len(_keys(node) & names) >= 2, text
    api_table = ast.parse('{"openai": 1, "anthropic": 2, "responses": 3}', mode="eval").body
    assert any(_keys(api_table) <= other for other in OTHER_VOCABULARIES)
