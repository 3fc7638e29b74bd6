from pathlib import Path

import pytest

from memapp.memdir.store_files import FileRejected, checksum
from memapp.stores.actions import (
    EditConflict,
    do_forget_memory,
    do_put_files,
    do_rebuild_index_entries,
    do_rename_memory,
    do_save_memory,
)
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event, Store
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

INDEX = "# Index\n\n- [Role](user_role.md) — who Alice is\r\n* odd line kept as is  \n"


@pytest.fixture
def store(tmp_path, alice):
    root = tmp_path / "memory"
    write_memory(root, "user_role.md", "Role", "Alice is a backend engineer", "user")
    (root / "MEMORY.md").write_text(INDEX, newline="")
    store = Store.objects.create(kind="private", origin="managed", path=str(root), owner=alice)
    rescan_store(store)
    return store


def test_creating_a_memory_writes_the_file_its_index_line_and_the_mirror(store, alice):
    file = do_save_memory(
        store,
        alice,
        name="Deploys: Friday #freeze",
        description="No deploys on Fridays",
        memory_type="project",
        body="Freeze from 2026-03-05.\n",
    )
    root = Path(store.path)
    assert file.path == "project_deploys_friday_freeze.md"
    assert (root / file.path).read_text() == (
        "---\nname: 'Deploys: Friday #freeze'\ndescription: No deploys on Fridays\n"
        "type: project\n---\nFreeze from 2026-03-05.\n"
    )
    assert (root / "MEMORY.md").read_bytes().decode() == INDEX + (
        "- [Deploys: Friday #freeze](project_deploys_friday_freeze.md) — No deploys on Fridays\n"
    )
    assert file.name == "Deploys: Friday #freeze" and file.in_index
    event = Event.objects.get(kind="memory_written")
    assert event.fields == {"path": file.path, "via": "ui", "created": True}
    assert event.store == store and event.user == alice


def test_new_memories_follow_the_directorys_metadata_form(store, alice):
    root = Path(store.path)
    for name in ("a", "b"):
        (root / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: d\nmetadata:\n  type: user\n---\nx\n"
        )
    file = do_save_memory(
        store,
        alice,
        name="Ci setup",
        description="CI runs on push",
        memory_type="reference",
        body="x\n",
    )
    assert file.path == "ci-setup.md"
    assert "metadata:\n  type: reference\n" in (root / "ci-setup.md").read_text()


def test_updating_keeps_other_index_lines_byte_for_byte(store, alice):
    file = store.files.get(path="user_role.md")
    do_save_memory(
        store,
        alice,
        name="Role",
        description="Alice leads the backend team",
        memory_type="user",
        body="Lead.\n",
        path="user_role.md",
        base_sha256=file.checksum,
    )
    index = Path(store.path, "MEMORY.md").read_bytes()
    assert index == (
        b"# Index\n\n- [Role](user_role.md) \xe2\x80\x94 Alice leads the backend team\r\n"
        b"* odd line kept as is  \n"
    )
    assert store.files.get(path="user_role.md").description == "Alice leads the backend team"


def test_a_stale_edit_raises_a_conflict_and_writes_nothing(store, alice):
    path = Path(store.path, "user_role.md")
    opened_with = checksum(path.read_bytes())
    path.write_text(path.read_text() + "Changed by an agent.\n")
    on_disk = path.read_bytes()
    with pytest.raises(EditConflict) as caught:
        do_save_memory(
            store,
            alice,
            name="Role",
            description="mine",
            memory_type="user",
            body="mine\n",
            path="user_role.md",
            base_sha256=opened_with,
        )
    assert path.read_bytes() == on_disk
    assert caught.value.disk_text.endswith("Changed by an agent.\n")
    assert caught.value.disk_sha256 == checksum(on_disk)
    assert Path(store.path, "MEMORY.md").read_bytes().decode() == INDEX


def test_forgetting_removes_the_file_and_its_index_line(store, alice):
    do_forget_memory(store, alice, "user_role.md")
    assert not Path(store.path, "user_role.md").exists()
    assert Path(store.path, "MEMORY.md").read_text() == "# Index\n\n* odd line kept as is  \n"
    assert not store.files.exists()
    assert Event.objects.get(kind="memory_forgotten").fields == {
        "path": "user_role.md",
        "via": "ui",
    }


def test_a_case_only_rename_moves_the_file_and_its_index_line(store, alice):
    text = Path(store.path, "user_role.md").read_text()
    do_rename_memory(store, alice, "user_role.md", "User_Role.md")
    assert sorted(p.name for p in Path(store.path).iterdir()) == ["MEMORY.md", "User_Role.md"]
    assert Path(store.path, "User_Role.md").read_text() == text
    assert "(User_Role.md)" in Path(store.path, "MEMORY.md").read_text()


def test_a_rename_to_a_look_alike_of_another_file_is_refused(store, alice):
    write_memory(Path(store.path), "notes.md", "Notes", "Some notes", "project")
    rescan_store(store)
    with pytest.raises(FileRejected, match="lookalike-duplicate"):
        do_rename_memory(store, alice, "user_role.md", "Notes.md")
    assert Path(store.path, "user_role.md").exists()
    assert not Path(store.path, "Notes.md").exists()


@pytest.mark.parametrize("key", ["../escape.md", "/etc/passwd", "a/../../b.md", "%2e%2e%2fx.md"])
def test_keys_that_leave_the_store_are_refused(store, alice, key):
    with pytest.raises(FileRejected, match="escape|outside|absolute|traversal|\\.\\."):
        do_forget_memory(store, alice, key)
    with pytest.raises(FileRejected, match="escape|outside|absolute|traversal|\\.\\."):
        do_save_memory(store, alice, name="x", description="x", memory_type=None, body="", path=key)
    assert Path(store.path, "user_role.md").exists()


def test_rebuilding_the_index_adds_only_missing_lines(store, alice):
    root = Path(store.path)
    write_memory(root, "feedback_x.md", "X rule", "Always x", "feedback")
    write_memory(root, "notes/reference_y.md", "Y", "Where y lives", "reference")
    rescan_store(store)
    assert do_rebuild_index_entries(store, alice) == ["feedback_x.md", "notes/reference_y.md"]
    assert (root / "MEMORY.md").read_bytes().decode() == INDEX + (
        "- [X rule](feedback_x.md) — Always x\n- [Y](notes/reference_y.md) — Where y lives\n"
    )
    assert do_rebuild_index_entries(store, alice) == []


def test_a_write_whose_index_line_names_another_file_writes_nothing(store, alice):
    """Found after the files were written, the bad line left them there without their lines
    (and a 500 for whoever asked)."""
    with pytest.raises(FileRejected) as refused:
        do_put_files(
            store,
            alice,
            {"a.md": "a\n", "b.md": "b\n"},
            index={"a.md": "- [A](a.md) — fine", "b.md": "- [B](other.md) — not b.md"},
        )
    assert refused.value.code == "invalid_index_line"
    assert str(refused.value).startswith("b.md: its MEMORY.md line is refused")
    assert not (Path(store.path) / "a.md").exists()
    assert (Path(store.path) / "MEMORY.md").read_bytes() == INDEX.encode()
