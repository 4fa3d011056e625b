"""The offload store (stages/_offload.py): no collisions, deterministic names, no planted links.

Most tests go through govern() with CompactionPolicy(offload_dir=...), as a caller
would: the placeholder the model reads must name a file holding exactly the
output it replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from context_governor import CompactionPolicy, govern

Message = dict[str, Any]
WINDOW = 24_000


def _history(tag: str, steps: int = 40) -> list[Message]:
    """A coding session whose call ids are call_0000, call_0001... (as many agents number
    them), with outputs that differ from one ``tag`` to another."""
    history: list[Message] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the parser."},
    ]
    for step in range(steps):
        if step and step % 10 == 0:
            history.append({"role": "assistant", "content": f"Progress report {step}."})
            history.append({"role": "user", "content": f"Keep going, step {step}."})
        call_id = f"call_{step:04d}"
        call = {"id": call_id, "type": "function", "function": {"name": "exec", "arguments": "{}"}}
        body = " ".join(f"{tag}-{step}-{i}" for i in range(100))
        history += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "name": "exec", "content": body},
        ]
    history.append({"role": "user", "content": "Summarize."})
    return history


def _offloaded(messages: list[Message]) -> dict[str, Path]:
    """tool_call_id -> the file its placeholder names."""
    out = {}
    for m in messages:
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, str) and "in the file " in content:
            out[m["tool_call_id"]] = Path(content.split("in the file ")[1].split(";")[0])
    return out


def _govern(history: list[Message], store: Path) -> Any:
    policy = CompactionPolicy(offload_dir=store)
    return govern(history, context_window=WINDOW, max_output=1000, compaction=policy)


def _contents(history: list[Message]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in history if m.get("role") == "tool"}


def test_two_conversations_with_the_same_ids_never_share_a_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    first, second = _history("alpha"), _history("beta")
    files_first = _offloaded(_govern(first, store).messages)
    files_second = _offloaded(_govern(second, store).messages)
    assert files_first and set(files_first) == set(files_second)  # the same ids were cleared
    for call_id, path in files_first.items():
        assert path.read_text(encoding="utf-8") == _contents(first)[call_id]
    for call_id, path in files_second.items():
        assert path != files_first[call_id]
        assert path.read_text(encoding="utf-8") == _contents(second)[call_id]


def test_two_outputs_under_one_id_in_one_conversation_get_two_files(tmp_path: Path) -> None:
    """A retried call re-recorded under the same id with a different output."""
    history = _history("alpha")
    changed = [
        {**m, "content": m["content"] + " (second run)"}
        if m.get("tool_call_id") == "call_0001"
        else m
        for m in history
    ]
    store = tmp_path / "store"
    a = _offloaded(_govern(history, store).messages)["call_0001"]
    b = _offloaded(_govern(changed, store).messages)["call_0001"]
    assert a != b
    assert a.read_text(encoding="utf-8") == _contents(history)["call_0001"]
    assert b.read_text(encoding="utf-8") == _contents(changed)["call_0001"]


def test_names_are_the_same_in_any_process_and_files_are_written_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    history = _history("alpha")
    result = _govern(history, store)
    listing = {p: p.stat().st_mtime_ns for p in store.iterdir()}
    script = (
        "import json, sys\n"
        "from context_governor import CompactionPolicy, govern\n"
        "h, store, window = json.load(sys.stdin), sys.argv[1], int(sys.argv[2])\n"
        "r = govern(h, context_window=window, max_output=1000,\n"
        "           compaction=CompactionPolicy(offload_dir=store))\n"
        "print(json.dumps(r.messages))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(store), str(WINDOW)],
        input=json.dumps(history),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert json.loads(proc.stdout) == result.messages  # placeholders are cache-stable
    assert {p: p.stat().st_mtime_ns for p in store.iterdir()} == listing  # nothing rewritten
    assert all(not p.name.startswith(".") for p in listing)  # no temporary file left behind
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in listing)
    assert store.stat().st_mode & 0o777 == 0o700


def _predicted(history: list[Message], call_id: str, tmp_path: Path) -> str:
    """The name the store gives this output (learned from a scratch store)."""
    scratch = tmp_path / "scratch"
    return _offloaded(_govern(history, scratch).messages)[call_id].name


def _check_refused(result: Any, store: Path, call_id: str) -> None:
    """The output was cleared without naming a file, and the report says why."""
    placeholder = next(m for m in result.messages if m.get("tool_call_id") == call_id)
    assert "in the file" not in placeholder["content"]
    assert any(n.startswith(f"offload to {store} failed") for n in result.report.notes)


def test_a_symlink_planted_at_the_predicted_name_is_not_followed(tmp_path: Path) -> None:
    history = _history("alpha")
    name = _predicted(history, "call_0000", tmp_path)
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("the attacker's text, or a file of the user's to overwrite")
    (store / name).symlink_to(victim)
    result = _govern(history, store)
    assert victim.read_text() == "the attacker's text, or a file of the user's to overwrite"
    assert (store / name).is_symlink()
    _check_refused(result, store, "call_0000")
    # The other outputs are still offloaded, each to a file of its own.
    others = _offloaded(result.messages)
    assert others and all(p.read_text() == _contents(history)[c] for c, p in others.items())


def test_a_dangling_symlink_at_the_name_is_not_written_through(tmp_path: Path) -> None:
    history = _history("alpha")
    name = _predicted(history, "call_0000", tmp_path)
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    target = tmp_path / "created-through-the-link.txt"
    (store / name).symlink_to(target)
    result = _govern(history, store)
    assert not target.exists()
    _check_refused(result, store, "call_0000")


@pytest.mark.parametrize("planted", ["other text", "", "fifo"])
def test_a_foreign_file_at_the_name_is_neither_trusted_nor_replaced(
    tmp_path: Path, planted: str
) -> None:
    history = _history("alpha")
    name = _predicted(history, "call_0000", tmp_path)
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    if planted == "fifo":
        os.mkfifo(store / name)  # opening it for reading must not hang
    else:
        (store / name).write_text(planted)
    result = _govern(history, store)
    _check_refused(result, store, "call_0000")
    if planted != "fifo":
        assert (store / name).read_text() == planted


@pytest.mark.parametrize("kind", ["symlink", "world-writable"])
def test_an_unsafe_store_directory_is_refused(tmp_path: Path, kind: str) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    store = tmp_path / "store"
    if kind == "symlink":
        store.symlink_to(real)
    else:
        store.mkdir()
        store.chmod(0o777)
    result = _govern(_history("alpha"), store)
    assert not _offloaded(result.messages)
    assert any(n.startswith(f"offload to {store} failed") for n in result.report.notes)
    assert list(real.iterdir()) == []


def test_a_stored_file_changed_later_is_not_trusted_again(tmp_path: Path) -> None:
    """Checked files are remembered between calls, but a write to one (same size even)
    makes it a stranger again."""
    store = tmp_path / "store"
    history = _history("alpha")
    first = _offloaded(_govern(history, store).messages)
    assert _offloaded(_govern(history, store).messages) == first  # remembered: still fine
    path = first["call_0000"]
    original = path.read_text(encoding="utf-8")
    path.write_text("X" + original[1:], encoding="utf-8")
    result = _govern(history, store)
    _check_refused(result, store, "call_0000")
    assert path.read_text(encoding="utf-8") == "X" + original[1:]  # and not overwritten
