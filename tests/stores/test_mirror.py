import hashlib
import os
from pathlib import Path

import pytest

from memapp.stores.mirror import rescan_store
from memapp.stores.models import MemoryFile, Store
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(tmp_path, alice):
    root = tmp_path / "memory"
    write_memory(root, "user_role.md", "Role", "Alice is a backend engineer", "user")
    write_memory(
        root,
        "feedback_tests.md",
        "Real DB",
        "Tests hit a real database",
        "feedback",
        "Use a real database.\n\n**Why:** mocks hid a bug.\n\n"
        "See [[user_role]] and [[ci-setup]].\n",
    )
    (root / "MEMORY.md").write_text("- [Role](user_role.md) — who Alice is\n")
    write_memory(root / "team", "project_x.md", "X", "team file", "project")
    return Store.objects.create(
        kind="private", origin="managed", path=str(root), owner=alice, exclude=["team", "logs"]
    )


def test_a_first_scan_mirrors_every_topic_file_but_excluded_stores(store):
    assert rescan_store(store) == (2, 0, 0, 0)
    feedback = store.files.get(path="feedback_tests.md")
    data = Path(store.path, "feedback_tests.md").read_bytes()
    assert (feedback.name, feedback.description, feedback.type) == (
        "Real DB",
        "Tests hit a real database",
        "feedback",
    )
    assert feedback.sha256 == hashlib.sha256(data).hexdigest()
    assert feedback.size == len(data)
    assert feedback.links == ["user_role", "ci-setup"]
    assert feedback.dangling_links == ["ci-setup"]
    assert feedback.missing_sections == ["How to apply"]
    assert feedback.in_index is False
    assert store.files.get(path="user_role.md").in_index is True
    store.refresh_from_db()
    assert store.file_count == 2
    assert store.index_stats["lines"] == 1 and store.index_stats["unindexed"] == 1


def test_a_rescan_reads_only_what_changed(store):
    rescan_store(store)
    role = Path(store.path, "user_role.md")
    role.write_text(role.read_text().replace("backend", "frontend"))
    os.utime(role, ns=(role.stat().st_atime_ns, role.stat().st_mtime_ns + 5_000_000_000))
    Path(store.path, "feedback_tests.md").unlink()
    write_memory(Path(store.path), "reference_docs.md", "Docs", "Docs live in docs/", "reference")
    assert rescan_store(store) == (1, 1, 1, 0)
    assert store.files.get(path="user_role.md").description == "Alice is a frontend engineer"
    assert sorted(store.files.values_list("path", flat=True)) == [
        "reference_docs.md",
        "user_role.md",
    ]
    assert rescan_store(store) == (0, 0, 0, 2)


def test_a_rewrite_that_kept_its_mtime_and_size_is_read_again(store):
    """As `cp -p`, rsync or a client carrying mtimes leave it: only the ctime tells."""
    rescan_store(store)
    role = Path(store.path, "user_role.md")
    before = role.stat()
    role.write_text(role.read_text().replace("backend", "payroll"))
    os.utime(role, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert role.stat().st_size == before.st_size
    assert rescan_store(store) == (0, 1, 0, 1)
    assert store.files.get(path="user_role.md").description == "Alice is a payroll engineer"


def test_a_rescan_of_many_changed_files_costs_a_few_queries(store, django_assert_max_num_queries):
    root = Path(store.path)
    for i in range(80):
        write_memory(root, f"reference_{i}.md", f"R{i}", "Before", "reference", "[[Role]]\n")
    (root / "MEMORY.md").write_text("- [R0](reference_0.md) — the first\n")
    rescan_store(store)
    for i in range(80):
        write_memory(root, f"reference_{i}.md", f"R{i}", "After", "reference", "[[Gone]]\n")
        path = root / f"reference_{i}.md"
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    with django_assert_max_num_queries(15):
        assert rescan_store(store) == (0, 80, 0, 2)
    changed = store.files.filter(path__startswith="reference_")
    assert set(changed.values_list("description", flat=True)) == {"After"}
    assert all(file.dangling_links == ["Gone"] for file in changed)
    assert list(changed.filter(in_index=True).values_list("path", flat=True)) == ["reference_0.md"]


def test_index_edits_behind_memhubs_back_update_the_in_index_flags(store):
    rescan_store(store)
    index = Path(store.path, "MEMORY.md")
    index.write_text(index.read_text() + "- [Real DB](feedback_tests.md) — no mocks\n")
    rescan_store(store)
    assert store.files.get(path="feedback_tests.md").in_index is True


def test_malformed_files_are_mirrored_with_their_problem_and_never_crash(store):
    root = Path(store.path)
    (root / "broken.md").write_text("---\n- a list\n- not a mapping\n---\nbody\n")
    (root / "latin1.md").write_bytes(b"---\nname: caf\xe9\n---\nbody\n")
    (root / "binary.md").write_bytes(b"\x00\x01\x02" * 100)
    (root / "empty.md").write_bytes(b"")
    late = b"---\n- a list\n---\n" + b"line\n" * 40 + b"caf\xe9\n"  # past the scan's lines
    (root / "both.md").write_bytes(late)
    (root / "huge.md").write_bytes(b"---\nname: Huge\n---\n" + b"x" * (10 * 1024 * 1024))
    rescan_store(store)
    problems = dict(store.files.values_list("path", "problem"))
    assert problems["broken.md"] != ""
    assert problems["latin1.md"] == "invalid UTF-8"
    assert problems["binary.md"] == "binary file"
    assert problems["empty.md"] == ""
    assert problems["both.md"] == "invalid UTF-8; frontmatter is not a mapping (it is a list)"
    huge = store.files.get(path="huge.md")
    assert huge.name == "Huge" and huge.size == 10 * 1024 * 1024 + 19
    assert len(huge.body) == 256 * 1024
    assert store.files.get(path="binary.md").body == ""


def _stats_with_old_atimes(root: Path) -> dict[Path, tuple[int, int]]:
    """(atime, mtime) of every file and folder, each atime set an hour before its mtime first:
    a read would refresh it (relatime), so an unchanged atime shows nothing read it."""
    stats = {}
    for path in [root, *root.rglob("*")]:
        st = path.stat()
        os.utime(path, ns=(st.st_mtime_ns - 3600 * 10**9, st.st_mtime_ns))
        stats[path] = (st.st_mtime_ns - 3600 * 10**9, st.st_mtime_ns)
    return stats


def test_a_rescan_leaves_bytes_mtimes_and_atimes_alone(store):
    root = Path(store.path)
    for rescan in range(2):  # the first reads every file and the index, the second the changed
        if rescan:
            write_memory(root, "user_role.md", "Role", "Alice leads the backend team", "user")
            (root / "MEMORY.md").write_text("- [Role](user_role.md) — who Alice leads\n")
        content = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
        before = _stats_with_old_atimes(root)
        result = rescan_store(store)
        after = {path: (path.stat().st_atime_ns, path.stat().st_mtime_ns) for path in before}
        assert after == before
        assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == content
        # The second reads the other file again too: setting its atime changed its ctime.
        assert result.added == (2 if not rescan else 0) and result.changed == 2 * rescan
    assert store.files.get(path="user_role.md").description == "Alice leads the backend team"


def test_a_missing_directory_mirrors_nothing(store):
    rescan_store(store)
    for path in sorted(Path(store.path).rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    Path(store.path).rmdir()
    assert rescan_store(store).removed == 2
    assert not MemoryFile.objects.exists()
