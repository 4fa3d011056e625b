"""The demo's sample project is data: files under context_governor/demo/project/, read
through importlib.resources exactly as shipped (issue 28, item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_governor.demo import write_project
from context_governor.demo._project import (
    DEMO_FILES,
    PROJECT_FILES,
    project_file,
    project_files,
)

PROJECT = Path(__file__).resolve().parent.parent / "src" / "context_governor" / "demo" / "project"


def test_every_file_of_the_directory_is_listed_once() -> None:
    on_disk = {
        p.relative_to(PROJECT).as_posix()
        for p in PROJECT.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert len(set(PROJECT_FILES)) == len(PROJECT_FILES)
    assert set(PROJECT_FILES) == on_disk
    assert set(DEMO_FILES) <= set(PROJECT_FILES)


def test_files_are_read_byte_for_byte() -> None:
    files = project_files()
    assert list(files) == list(PROJECT_FILES)
    for name, text in files.items():
        assert text.encode("utf-8") == (PROJECT / name).read_bytes(), name
        assert "\r" not in text, name  # no newline translation can hide in them


def test_project_files_gives_a_fresh_dict() -> None:
    first = project_files()
    first["README.md"] = "changed"
    assert project_files()["README.md"] != "changed"


def test_an_unknown_name_is_refused() -> None:
    with pytest.raises(KeyError):
        project_file("../_project.py")


def test_the_demo_writes_its_files_as_shipped(tmp_path: Path) -> None:
    write_project(tmp_path)
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == set(DEMO_FILES)
    for name in DEMO_FILES:
        assert (tmp_path / name).read_bytes() == (PROJECT / name).read_bytes()
