"""The live mirror: changes under the memory base reach the mirror without a click.

The planning rules are tested on event sets; the watcher itself runs for real (inotify through
watchfiles) in a thread against a temporary memory base, with a real database connection."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memapp.stores import live
from memapp.stores.discovery import discover_local_stores
from memapp.stores.live import LiveMirror, Plan
from memapp.stores.models import MemoryFile, Store
from tests.conftest import write_memory

ADDED = 1


def store_at(base: Path, rel: str) -> Store:
    return Store.objects.get(path=str(base / rel))


# -- what a set of changes calls for --------------------------------------------------------


@pytest.fixture
def mirror(memory_base, alice) -> LiveMirror:
    discover_local_stores(memory_base)
    return LiveMirror(memory_base)


def changed(base: Path, *rels: str) -> list[tuple[int, str]]:
    return [(ADDED, str(base / rel)) for rel in rels]


def test_a_change_in_a_store_rescans_that_store_only(mirror, memory_base):
    private = store_at(memory_base, "projects/-home-alice-app/memory")
    team = store_at(memory_base, "projects/-home-alice-app/memory/team")
    plan = mirror.plan(
        changed(
            memory_base,
            "projects/-home-alice-app/memory/user_role.md",
            "projects/-home-alice-app/memory/deep/er/note.md",
            "projects/-home-alice-app/memory/team/project_release.md",
        )
    )
    assert plan == Plan(discover=False, stores={private.pk, team.pk})


@pytest.mark.django_db(transaction=True)
def test_an_agents_write_to_a_team_store_has_team_sync_judge_it_at_once(mirror, memory_base):
    """Team sync judges a team file (keeps a secret back from every teammate's agent) when it
    commits it: a file an agent wrote asks for a sync at once, not at the next pull."""
    from teamsync.models import TeamSyncStatus

    def requested():  # a change to sync, as a write through memhub is (2 s debounce)
        return TeamSyncStatus.get().dirty_at is not None

    TeamSyncStatus.objects.update(dirty_at=None)  # what the fixture's discovery found
    memory = memory_base / "projects/-home-alice-app/memory"
    write_memory(memory, "user_pager.md", "Pager", "Alice's pager", "user")
    mirror.apply(mirror.plan(changed(memory_base, "projects/-home-alice-app/memory/user_pager.md")))
    assert not requested()  # a private store's change is no team sync's business

    write_memory(memory / "team", "reference_ci.md", "CI", "The runner", "reference")
    rel = "projects/-home-alice-app/memory/team/reference_ci.md"
    mirror.apply(mirror.plan(changed(memory_base, rel)))
    assert requested()
    assert MemoryFile.objects.filter(path="reference_ci.md").exists()

    # The same when discovery finds it (a new folder, the periodic catch-up, an overflow).
    TeamSyncStatus.objects.update(dirty_at=None)
    write_memory(memory / "team" / "sub", "reference_ci.md", "CI", "The runner", "reference")
    mirror.catch_up()
    assert requested()


def test_a_burst_of_writes_to_one_store_is_one_rescan(mirror, memory_base):
    rels = [f"projects/-home-alice-app/memory/note_{i}.md" for i in range(1000)]
    plan = mirror.plan(changed(memory_base, *rels))
    assert not plan.discover and len(plan.stores) == 1


def test_a_new_project_memory_or_agent_memory_calls_for_discovery(mirror, memory_base):
    assert mirror.plan(changed(memory_base, "projects/-home-alice-new/memory")).discover
    assert mirror.plan(changed(memory_base, "projects/-home-alice-new/memory/a.md")).discover
    assert mirror.plan(changed(memory_base, "agent-memory/planner/notes.md")).discover


def test_a_team_directory_or_a_new_mount_calls_for_discovery(mirror, memory_base, tmp_path):
    mount_index = "projects/-home-alice-app/memory/team/backend/MEMORY.md"
    assert mirror.plan(changed(memory_base, mount_index)).discover
    (memory_base / "projects/-home-alice-app/memory/team/MEMORY.md").unlink()
    for path in (memory_base / "projects/-home-alice-app/memory/team").iterdir():
        path.unlink()
    (memory_base / "projects/-home-alice-app/memory/team").rmdir()
    discover_local_stores(memory_base)
    mirror.refresh()  # no team store now: a team/ directory appearing is a new store
    assert mirror.plan(changed(memory_base, "projects/-home-alice-app/memory/team/x.md")).discover


def test_transcripts_logs_and_the_rest_of_the_base_call_for_nothing(mirror, memory_base):
    plan = mirror.plan(
        changed(
            memory_base,
            "projects/-home-alice-app/0b9f2c1e.jsonl",
            "projects/-home-alice-app/memory/logs/2026/11/2026-11-24.md",
            "settings.json",
            "todos/x.json",
        )
    )
    assert not plan


def test_a_store_directory_that_goes_away_calls_for_discovery(mirror, memory_base):
    assert mirror.plan(changed(memory_base, "agent-memory/code-reviewer")).discover


def test_a_flood_of_changes_means_rescanning_everything(mirror, memory_base, monkeypatch):
    monkeypatch.setattr(live, "FLOOD", 100)
    rels = [f"projects/-home-alice-app/memory/n{i}.md" for i in range(101)]
    assert mirror.plan(changed(memory_base, *rels)) == Plan(discover=True)


def test_the_watch_filter_skips_what_is_not_memory(mirror, memory_base):
    keep = mirror._relevant
    assert keep(ADDED, str(memory_base / "projects/-p/memory/a.md"))
    assert keep(ADDED, str(memory_base / "projects/-p"))
    assert keep(ADDED, str(memory_base / "agent-memory/x/a.md"))
    assert not keep(ADDED, str(memory_base / "projects/-p/session.jsonl"))
    assert not keep(ADDED, str(memory_base / "shell-snapshots/snap.sh"))


# -- the watcher, for real -----------------------------------------------------------------


@pytest.fixture
def watching(transactional_db, alice, tmp_path, monkeypatch) -> Iterator[LiveMirror]:
    """A live mirror watching `tmp_path/claude` (which does not exist yet) in a thread."""
    monkeypatch.setattr(live, "WAIT_FOR_BASE_S", 0.2)
    monkeypatch.setattr(live, "RETRY_WATCH_S", 0.2)
    mirror = LiveMirror(tmp_path / "claude", rescan_every=3600)
    stop = threading.Event()
    thread = threading.Thread(target=mirror.watch, args=(stop,), daemon=True)
    thread.start()
    time.sleep(0.3)
    yield mirror
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()


def eventually(check: Callable[[], object], seconds: float = 30.0) -> float:
    """Wait until `check()` is true; how long it took. (Generous: a loaded CI machine is slow;
    the benchmark, not this test, measures how fast the mirror follows.)"""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > seconds:
            raise AssertionError(f"not true after {seconds} s")
        time.sleep(0.05)
    return time.monotonic() - start


def files_of(path: Path) -> set[str]:
    return set(MemoryFile.objects.filter(store__path=str(path)).values_list("path", flat=True))


def test_a_project_started_after_memhub_shows_up_by_itself(watching, tmp_path):
    base = tmp_path / "claude"
    memory = base / "projects" / "-home-alice-late" / "memory"
    write_memory(memory, "user_role.md", "Role", "Alice is a backend engineer", "user")
    eventually(lambda: files_of(memory) == {"user_role.md"})
    assert Store.objects.get(path=str(memory)).owner.username == "alice"


def test_writes_edits_and_deletes_reach_the_mirror(watching, tmp_path):
    memory = tmp_path / "claude" / "projects" / "-p" / "memory"
    note = write_memory(memory, "note.md", "Note", "first", "project")
    eventually(lambda: files_of(memory) == {"note.md"})
    write_memory(memory, "note.md", "Note", "second description", "project")
    os.utime(note, (time.time() + 5, time.time() + 5))
    eventually(
        lambda: MemoryFile.objects.filter(
            store__path=str(memory), description="second description"
        ).exists()
    )
    write_memory(memory, "sub/deeper.md", "Deeper", "in a folder made now", "user")
    eventually(lambda: files_of(memory) == {"note.md", "sub/deeper.md"})
    note.unlink()
    eventually(lambda: files_of(memory) == {"sub/deeper.md"})


def test_a_symlink_loop_does_not_stop_the_watcher(watching, tmp_path):
    memory = tmp_path / "claude" / "projects" / "-p" / "memory"
    write_memory(memory, "a.md", "A", "before the loop", "user")
    eventually(lambda: files_of(memory) == {"a.md"})
    (memory / "loop").symlink_to(memory)
    (tmp_path / "claude" / "projects" / "self").symlink_to(tmp_path / "claude" / "projects")
    write_memory(memory, "b.md", "B", "after the loop", "user")
    eventually(lambda: files_of(memory) == {"a.md", "b.md"})


def test_a_burst_of_a_thousand_writes_is_a_few_rescans(watching, tmp_path, monkeypatch):
    memory = tmp_path / "claude" / "projects" / "-p" / "memory"
    write_memory(memory, "first.md", "First", "the store exists", "user")
    eventually(lambda: files_of(memory) == {"first.md"})
    rescans = []
    real = live.rescan_store
    monkeypatch.setattr(live, "rescan_store", lambda store: rescans.append(1) or real(store))
    for i in range(1000):
        write_memory(memory, f"n{i:04}.md", f"N{i}", "burst", "project")
    eventually(lambda: len(files_of(memory)) == 1001, seconds=60)
    assert len(rescans) <= 10


def test_files_written_as_their_directory_appears_are_all_mirrored(watching, tmp_path):
    """inotify watches a new directory only once it saw it appear: files written in between
    send no event, so the live mirror catches up again a moment later."""
    memory = tmp_path / "claude" / "projects" / "-fast" / "memory"
    for i in range(50):
        write_memory(memory, f"n{i:02}.md", f"N{i}", "written at once", "project")
    eventually(lambda: len(files_of(memory)) == 50)
