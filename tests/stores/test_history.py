"""Every version of every memory, and the trash (docs/design.md §23): who wrote what through
which channel, what the mirror found on disk, what forgetting keeps and for how long."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from memapp.memdir.store_files import FileRejected
from memapp.stores.actions import (
    do_forget_memory,
    do_put_files,
    do_rebuild_index_entries,
    do_restore_from_trash,
    do_restore_version,
    do_save_memory,
)
from memapp.stores.history import prune_trash, timeline
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Blob, MemoryVersion, Store, TrashItem
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

INDEX = (
    "# Index\n- [Role](user_role.md) — who Alice is\n- [Real DB](feedback_tests.md) — no mocks\n"
)


@pytest.fixture
def store(tmp_path, alice) -> Store:
    root = tmp_path / "memory"
    write_memory(root, "user_role.md", "Role", "Alice is a backend engineer", "user")
    write_memory(root, "feedback_tests.md", "Real DB", "Tests hit a real database", "feedback")
    (root / "MEMORY.md").write_text(INDEX)
    store = Store.objects.create(kind="private", origin="managed", path=str(root), owner=alice)
    rescan_store(store)
    return store


def later(path: Path, seconds: int = 5) -> None:
    """Move a file's mtime on, so a rescan sees it changed whatever the clock's resolution."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 1_000_000_000))


def steps(store: Store, path: str) -> list[tuple[str, str, str]]:
    """The timeline oldest first, as (via, who, note), with the bytes' first line for edits."""
    return [
        (v.via, v.user.username if v.user else "", v.note) for v in reversed(timeline(store, path))
    ]


def content(version: MemoryVersion) -> str:
    return bytes(Blob.objects.get(sha256=version.sha256).data).decode()


def test_the_first_rescan_records_every_file_as_its_first_version(store):
    assert steps(store, "user_role.md") == [("disk", "", "first seen")]
    assert steps(store, "feedback_tests.md") == [("disk", "", "first seen")]
    assert steps(store, "MEMORY.md") == [("disk", "", "first seen")]  # a memory like any other
    version = timeline(store, "user_role.md").get()
    assert (
        version.sha256 == hashlib.sha256(Path(store.path, "user_role.md").read_bytes()).hexdigest()
    )


def test_identical_files_are_stored_once(store):
    root = Path(store.path)
    (root / "copy.md").write_bytes((root / "user_role.md").read_bytes())
    rescan_store(store)
    assert store.versions.exclude(path="MEMORY.md").count() == 3
    assert (
        Blob.objects.exclude(
            sha256__in=store.versions.filter(path="MEMORY.md").values("sha256")
        ).count()
        == 2
    )


def test_an_edit_in_memhub_is_one_version_with_who_and_via_what(store, alice):
    do_save_memory(
        store,
        alice,
        name="Role",
        description="Alice leads the backend team",
        memory_type="user",
        body="Since 2026-01.\n",
        path="user_role.md",
    )
    rescan_store(store)  # the mirror does not record it a second time
    assert steps(store, "user_role.md") == [("disk", "", "first seen"), ("ui", "alice", "")]
    assert "Alice leads the backend team" in content(timeline(store, "user_role.md").first())


def test_a_change_on_disk_is_found_by_the_next_rescan(store):
    path = Path(store.path, "user_role.md")
    path.write_text(path.read_text().replace("backend engineer", "staff engineer"))
    later(path)
    rescan_store(store)
    assert steps(store, "user_role.md") == [("disk", "", "first seen"), ("disk", "", "")]
    assert "staff engineer" in content(timeline(store, "user_role.md").first())


def test_an_agents_change_not_yet_rescanned_is_kept_before_memhub_overwrites_it(store, alice):
    path = Path(store.path, "user_role.md")
    path.write_text(path.read_text().replace("backend engineer", "written by the agent"))
    do_save_memory(
        store, alice, name="Role", description="Edited", memory_type="user", body="x\n",
        path="user_role.md",
    )  # fmt: skip
    versions = list(reversed(timeline(store, "user_role.md")))
    assert [(v.via, v.note) for v in versions] == [("disk", "first seen"), ("disk", ""), ("ui", "")]
    assert "written by the agent" in content(versions[1])


def test_forgetting_moves_the_memory_to_the_trash_with_its_index_line(store, alice):
    data = Path(store.path, "user_role.md").read_bytes()
    do_forget_memory(store, alice, "user_role.md")
    assert not Path(store.path, "user_role.md").exists()
    item = TrashItem.objects.get()
    assert (item.path, item.name, item.via, item.deleted_by) == (
        "user_role.md",
        "Role",
        "ui",
        alice,
    )
    assert item.index_line == "- [Role](user_role.md) — who Alice is"
    assert bytes(Blob.objects.get(sha256=item.sha256).data) == data
    assert steps(store, "user_role.md")[-1] == ("ui", "alice", "")
    assert timeline(store, "user_role.md").first().deleted


def test_restoring_from_the_trash_puts_back_the_file_and_its_index_line(store, alice):
    data = Path(store.path, "user_role.md").read_bytes()
    do_forget_memory(store, alice, "user_role.md")
    restored = do_restore_from_trash(TrashItem.objects.get(), alice)
    assert restored == "user_role.md"
    assert Path(store.path, "user_role.md").read_bytes() == data
    assert Path(store.path, "MEMORY.md").read_text() == (
        "# Index\n- [Real DB](feedback_tests.md) — no mocks\n"
        "- [Role](user_role.md) — who Alice is\n"
    )
    assert not TrashItem.objects.exists()
    assert store.files.filter(path="user_role.md").exists()
    assert steps(store, "user_role.md")[-1][2].startswith("restored from the trash")


def test_a_restore_never_overwrites_a_file_that_took_the_forgotten_ones_place(store, alice):
    do_forget_memory(store, alice, "user_role.md")
    write_memory(Path(store.path), "user_role.md", "New role", "Something else", "user")
    restored = do_restore_from_trash(TrashItem.objects.get(), alice)
    assert restored == "user_role-restored.md"
    assert "New role" in Path(store.path, "user_role.md").read_text()
    assert "Alice is a backend engineer" in Path(store.path, restored).read_text()
    assert "- [Role](user_role-restored.md) — Alice is a backend engineer" in (
        Path(store.path, "MEMORY.md").read_text()
    )


def test_a_file_deleted_on_disk_goes_to_the_trash_too(store):
    Path(store.path, "feedback_tests.md").unlink()
    rescan_store(store)
    item = TrashItem.objects.get()
    assert (item.path, item.via, item.deleted_by) == ("feedback_tests.md", "disk", None)
    assert steps(store, "feedback_tests.md")[-1] == ("disk", "", "deleted on disk")


def test_restoring_a_version_is_itself_a_new_version(store, alice):
    first = timeline(store, "user_role.md").get()
    do_save_memory(
        store, alice, name="Wrong", description="A wrong edit", memory_type="user",
        body="Oops.\n", path="user_role.md",
    )  # fmt: skip
    do_restore_version(store, alice, first)
    path = Path(store.path, "user_role.md")
    assert path.read_bytes() == bytes(Blob.objects.get(sha256=first.sha256).data)
    # Its index line comes back too: the one it had then, written by hand.
    assert first.index_line == "- [Role](user_role.md) — who Alice is"
    assert Path(store.path, "MEMORY.md").read_text() == INDEX
    assert [v for v, _, _ in steps(store, "user_role.md")] == ["disk", "ui", "ui"]
    assert steps(store, "user_role.md")[-1][2].startswith("restored the version of ")
    assert store.versions.filter(path="user_role.md").count() == 3
    assert Blob.objects.filter(sha256=first.sha256).count() == 1


def test_a_restore_refuses_when_the_file_changed_since_the_page_was_opened(store, alice):
    first = timeline(store, "user_role.md").get()
    seen = "sha256:" + first.sha256
    Path(store.path, "user_role.md").write_text("---\nname: Agent\n---\nchanged meanwhile\n")
    with pytest.raises(FileRejected, match="changed on the server"):
        do_restore_version(store, alice, first, base_checksum=seen)
    assert Path(store.path, "user_role.md").read_text().endswith("changed meanwhile\n")


def test_agent_sync_and_deletions_through_the_api_are_recorded_as_such(store, alice):
    do_put_files(
        store,
        alice,
        {"project_new.md": "---\nname: New\n---\nbody\n"},
        delete=("feedback_tests.md",),
        via="agent_sync",
    )
    assert steps(store, "project_new.md") == [("agent_sync", "alice", "")]
    assert TrashItem.objects.get().via == "agent_sync"


def test_pruning_empties_old_trash_with_its_history_and_keeps_the_rest(store, alice):
    do_forget_memory(store, alice, "user_role.md")
    do_forget_memory(store, alice, "feedback_tests.md")
    old = TrashItem.objects.get(path="user_role.md")
    TrashItem.objects.filter(pk=old.pk).update(deleted_at=timezone.now() - timedelta(days=31))
    assert prune_trash(30) == 1
    assert list(TrashItem.objects.values_list("path", flat=True)) == ["feedback_tests.md"]
    assert not store.versions.filter(path="user_role.md").exists()
    assert store.versions.filter(path="feedback_tests.md").count() == 2
    assert not Blob.objects.filter(sha256=old.sha256).exists()


def index_steps(store: Store) -> list[tuple[str, str, str]]:
    return steps(store, "MEMORY.md")


def index_text(version: MemoryVersion) -> str:
    return content(version) if version.sha256 else ""


def test_every_writer_of_memory_md_leaves_a_version_with_who_and_how(store, alice):
    root = Path(store.path)
    do_save_memory(
        store,
        alice,
        name="Role",
        description="Alice leads the backend team",
        memory_type="user",
        body="Body.\n",
        path="user_role.md",
    )
    do_forget_memory(store, alice, "feedback_tests.md")
    write_memory(root, "project_x.md", "X", "Project X", "project")
    rescan_store(store)
    do_rebuild_index_entries(store, alice)
    do_put_files(
        store,
        alice,
        {"reference_y.md": "---\nname: Y\n---\nY.\n"},
        via="agent_sync",
        index={"reference_y.md": "- [Y](reference_y.md) — the Y dashboard"},
    )
    (root / "MEMORY.md").write_text((root / "MEMORY.md").read_text() + "A note by hand.\n")
    later(root / "MEMORY.md")
    rescan_store(store)
    assert index_steps(store) == [
        ("disk", "", "first seen"),
        ("ui", "alice", "the line of user_role.md"),
        ("ui", "alice", "lines of forgotten memories"),
        ("ui", "alice", "rebuilt index entries"),
        ("agent_sync", "alice", ""),
        ("disk", "", ""),
    ]
    latest = timeline(store, "MEMORY.md").first()
    assert content(latest) == (root / "MEMORY.md").read_text()
    assert content(latest).endswith(
        "- [X](project_x.md) — Project X\n- [Y](reference_y.md) — the Y dashboard\n"
        "A note by hand.\n"
    )


def test_a_protocol_or_api_write_of_memory_md_itself_is_a_version(store, alice):
    do_put_files(store, alice, {"MEMORY.md": "# Index\n"}, via="protocol")
    assert index_steps(store)[-1] == ("protocol", "alice", "")
    assert content(timeline(store, "MEMORY.md").first()) == "# Index\n"


def test_restoring_a_version_of_memory_md_is_a_new_version_and_can_be_undone(store, alice):
    root = Path(store.path)
    do_save_memory(
        store,
        alice,
        name="Role",
        description="a wrong hook",
        memory_type="user",
        body="Body.\n",
        path="user_role.md",
    )
    wrong = (root / "MEMORY.md").read_text()
    first = timeline(store, "MEMORY.md").last()
    do_restore_version(store, alice, first, base_checksum=sha(wrong))
    assert (root / "MEMORY.md").read_text() == INDEX
    assert index_steps(store)[-1] == (
        "ui",
        "alice",
        f"restored the version of {first.created_at:%Y-%m-%d %H:%M:%S}",
    )
    assert not TrashItem.objects.filter(path="MEMORY.md").exists()
    # Undone like any memory: the version it replaced is restored in turn.
    replaced = timeline(store, "MEMORY.md")[1]
    assert content(replaced) == wrong
    do_restore_version(store, alice, replaced, base_checksum=sha(INDEX))
    assert (root / "MEMORY.md").read_text() == wrong
    with pytest.raises(FileRejected):  # the page was opened before that: refused
        do_restore_version(store, alice, first, base_checksum=sha(INDEX))
    assert (root / "MEMORY.md").read_text() == wrong


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_a_deleted_memory_md_is_a_deletion_in_its_history_and_restorable(store, alice):
    root = Path(store.path)
    (root / "MEMORY.md").unlink()
    rescan_store(store)
    assert index_steps(store)[-1] == ("disk", "", "deleted on disk")
    assert not TrashItem.objects.filter(path="MEMORY.md").exists()
    do_restore_version(store, alice, timeline(store, "MEMORY.md").last(), base_checksum="")
    assert (root / "MEMORY.md").read_text() == INDEX
