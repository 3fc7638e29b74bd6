"""The session-start pull on its own (no server): sync's rules and state, only the server's
side taken, nothing written that the answer does not vouch for, and no key outside the private
memory dir (docs/design.md §4, §18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.client.pull import pull_changes
from memapp.client.sync_state import load_base, state_identity, state_path
from memapp.memdir.store_files import checksum

SERVER = "http://memhub.example"
STORE = 7


def sums(files: dict[str, str]) -> dict[str, str]:
    return {key: checksum(text.encode()) for key, text in files.items()}


@pytest.fixture
def memory(tmp_path) -> Path:
    path = tmp_path / "memory"
    path.mkdir()
    return path


@pytest.fixture
def state(tmp_path) -> Path:
    return tmp_path / "state"


def pull(memory: Path, state: Path, server_files: dict[str, str], **options) -> list[str]:
    return pull_changes(SERVER, STORE, memory, state, sums(server_files), server_files, **options)


def test_a_first_pull_takes_the_servers_files_and_remembers_them_for_sync(memory, state):
    files = {"MEMORY.md": "- [A](a.md) — a\n", "a.md": "A\n", "notes/b.md": "B\n"}

    changed = pull(memory, state, files)

    assert sorted(changed) == sorted(files)
    assert {key: (memory / key).read_text() for key in files} == files
    path = state_path(state, SERVER, STORE, memory)
    assert load_base(path, state_identity(SERVER, STORE, memory)) == sums(files)


def test_only_files_unchanged_here_since_the_last_sync_are_replaced(memory, state):
    pull(memory, state, {"a.md": "A\n", "b.md": "B\n"})
    (memory / "b.md").write_text("B, edited here\n")

    changed = pull(memory, state, {"a.md": "A, edited there\n", "b.md": "B, edited there\n"})

    assert changed == ["a.md"]
    assert (memory / "a.md").read_text() == "A, edited there\n"
    assert (memory / "b.md").read_text() == "B, edited here\n"  # for sync to settle


def test_a_file_deleted_on_the_server_goes_only_if_unchanged_here(memory, state):
    pull(memory, state, {"a.md": "A\n", "b.md": "B\n"})
    (memory / "b.md").write_text("B, edited here\n")

    changed = pull(memory, state, {})

    assert changed == ["a.md"]
    assert not (memory / "a.md").exists()
    assert (memory / "b.md").exists()


def test_nothing_is_uploaded_or_deleted_for_a_file_only_here(memory, state):
    (memory / "mine.md").write_text("Mine\n")

    assert pull(memory, state, {}) == []
    assert (memory / "mine.md").read_text() == "Mine\n"


@pytest.mark.parametrize(
    "key", ["../outside.md", "/etc/evil.md", "team/shared.md", "logs/2026/01/01.md", "notes.txt"]
)
def test_a_key_that_is_not_the_private_stores_is_never_written(memory, state, key):
    assert pull(memory, state, {key: "x\n"}) == []
    assert list(memory.parent.rglob("*.md")) == []


def test_text_that_does_not_match_its_checksum_is_not_written(memory, state):
    checksums = {"a.md": checksum(b"what the server listed\n")}

    changed = pull_changes(SERVER, STORE, memory, state, checksums, {"a.md": "something else\n"})

    assert changed == [] and not (memory / "a.md").exists()


def test_a_file_too_big_for_the_answer_is_left_for_sync(memory, state):
    checksums = {"big.md": checksum(b"big\n")}

    assert pull_changes(SERVER, STORE, memory, state, checksums, {}) == []


def test_nothing_is_written_without_time_to_write_it(memory, state):
    assert pull(memory, state, {"a.md": "A\n"}, time_left=lambda: 0.01) == []
    assert list(memory.iterdir()) == []
