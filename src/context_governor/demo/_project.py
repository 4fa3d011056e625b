"""``shortlink``, a small Flask + SQLite URL shortener: the invented project of the
bundled example session (examples/make_coding_session.py edits an in-memory copy as
its agent works) and the sample workspace of ``context-governor demo``.

Its files are package data under ``project/`` (read through ``importlib.resources``,
so the demo works from an installed wheel); the demo writes the files named in
DEMO_FILES.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

#: Every file of the project, in the order the example session's workspace lists them.
PROJECT_FILES: tuple[str, ...] = (
    ".gitignore",
    "pyproject.toml",
    "README.md",
    "CHANGELOG.md",
    ".github/workflows/ci.yml",
    "src/shortlink/__init__.py",
    "src/shortlink/config.py",
    "src/shortlink/schema.sql",
    "src/shortlink/db.py",
    "src/shortlink/timeutil.py",
    "src/shortlink/slugs.py",
    "src/shortlink/validators.py",
    "src/shortlink/ratelimit.py",
    "src/shortlink/models.py",
    "src/shortlink/routes.py",
    "src/shortlink/cli.py",
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/test_create.py",
    "tests/test_validators.py",
    "tests/test_slugs.py",
    "tests/test_redirect.py",
    "tests/test_expiry.py",
    "tests/test_stats.py",
    "tests/test_ratelimit.py",
    "tests/test_cli.py",
    "AGENTS.md",
)

#: The files the demo's workspace holds (its scripted session was written for them).
DEMO_FILES: tuple[str, ...] = (
    "README.md",
    "AGENTS.md",
    "pyproject.toml",
    "src/shortlink/__init__.py",
    "src/shortlink/config.py",
    "src/shortlink/schema.sql",
    "src/shortlink/db.py",
    "src/shortlink/timeutil.py",
    "src/shortlink/slugs.py",
    "src/shortlink/validators.py",
    "src/shortlink/ratelimit.py",
    "src/shortlink/models.py",
    "src/shortlink/routes.py",
    "src/shortlink/cli.py",
    "tests/conftest.py",
    "tests/test_expiry.py",
    "tests/test_ratelimit.py",
)


def project_root() -> Traversable:
    """The project's directory in the installed package."""
    return resources.files(__package__).joinpath("project")


def project_file(name: str) -> str:
    """One file's text, exactly as shipped (read as bytes: no newline translation)."""
    if name not in PROJECT_FILES:
        raise KeyError(name)
    return project_root().joinpath(*name.split("/")).read_bytes().decode("utf-8")


@cache
def _project_files() -> tuple[tuple[str, str], ...]:
    return tuple((name, project_file(name)) for name in PROJECT_FILES)


def project_files() -> dict[str, str]:
    """Every file of the project, path -> text, in PROJECT_FILES order (a fresh dict)."""
    return dict(_project_files())
