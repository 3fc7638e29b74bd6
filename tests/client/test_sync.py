"""`memhub-agent sync` between two machines of alice's and a real memhub server."""

from __future__ import annotations

import json
import secrets
import string
import unicodedata
from pathlib import Path

import pytest

from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project, Store
from memapp.stores.projects import resolve_store
from tests.client.conftest import SLUG, topic

pytestmark = pytest.mark.django_db(transaction=True)

SUMMARY = (
    "uploaded {}, downloaded {}, deleted {} local / {} remote, conflicts {}, skipped {} (secrets)"
)


def fake_github_token() -> str:
    """A GitHub personal access token's shape (random, so it passes the entropy check)."""
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))


def summary(*counts: int) -> str:
    return SUMMARY.format(*counts)


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    return machine_a


@pytest.fixture
def b(machine_b, server):
    machine_b.login(server)
    return machine_b


def private_store() -> Store:
    return Store.objects.get(kind=Store.Kind.PRIVATE, project__key=SLUG)


def server_keys() -> list[str]:
    """The files of alice's private store, as they are on the server's disk."""
    root = Path(private_store().path)
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*.md"))


def test_it_syncs_up_from_one_machine_and_down_to_another(a, b, alice):
    a.write("MEMORY.md", "- [Real DB](feedback_db.md) — no mocks\n")
    a.write("feedback_db.md", topic("Real DB", "Tests hit a real database"))
    a.write("notes/project_freeze.md", topic("Freeze", "Release freeze 2026-03-05", "project"))

    result = a.sync()

    assert result.stdout.strip() == summary(3, 0, 0, 0, 0, 0)
    store = private_store()
    assert store.owner == alice
    assert server_keys() == [
        "MEMORY.md",
        "feedback_db.md",
        "notes/project_freeze.md",
    ]

    result = b.sync()

    assert result.stdout.strip() == summary(0, 3, 0, 0, 0, 0)
    assert b.files() == a.files()
    assert b.memory_dir != a.memory_dir  # two checkouts, one project by its repo slug
    assert b.sync().stdout.strip() == summary(0, 0, 0, 0, 0, 0)
    assert a.sync().stdout.strip() == summary(0, 0, 0, 0, 0, 0)


def test_edits_on_both_sides_reach_the_other(a, b):
    a.write("one.md", topic("One", "first"))
    a.write("two.md", topic("Two", "second"))
    a.sync()
    b.sync()

    a.write("one.md", topic("One", "first, edited on A"))
    b.write("two.md", topic("Two", "second, edited on B"))
    b.write("three.md", topic("Three", "new on B"))

    assert a.sync().stdout.strip() == summary(1, 0, 0, 0, 0, 0)
    assert b.sync().stdout.strip() == summary(2, 1, 0, 0, 0, 0)
    assert a.sync().stdout.strip() == summary(0, 2, 0, 0, 0, 0)

    assert a.files() == b.files()
    assert "edited on A" in b.read("one.md")
    assert "edited on B" in a.read("two.md")


def test_downloads_write_only_changed_files(a, b):
    a.write("one.md", topic("One", "first"))
    a.write("two.md", topic("Two", "second"))
    a.sync()
    b.sync()
    untouched = (b.memory_dir / "two.md").stat().st_mtime_ns

    a.write("one.md", topic("One", "edited"))
    a.sync()
    b.sync()

    assert (b.memory_dir / "two.md").stat().st_mtime_ns == untouched


def test_deletions_propagate_both_ways(a, b):
    for name in ("keep", "gone-on-a", "gone-on-b"):
        a.write(f"{name}.md", topic(name, name))
    a.sync()
    b.sync()

    (a.memory_dir / "gone-on-a.md").unlink()
    assert a.sync().stdout.strip() == summary(0, 0, 0, 1, 0, 0)
    assert b.sync().stdout.strip() == summary(0, 0, 1, 0, 0, 0)
    assert sorted(b.files()) == ["gone-on-b.md", "keep.md"]

    (b.memory_dir / "gone-on-b.md").unlink()
    b.sync()
    assert a.sync().stdout.strip() == summary(0, 0, 1, 0, 0, 0)

    assert sorted(a.files()) == sorted(b.files()) == ["keep.md"]
    assert server_keys() == ["keep.md"]


def test_a_memory_dir_moved_away_deletes_nothing_on_the_server(a, b):
    """A memory dir moved, emptied or not mounted is no reason to empty the store on every
    machine: the sync deletes nothing there and says what to do."""
    for name in ("one", "two", "three"):
        a.write(f"{name}.md", topic(name, name))
    a.sync()
    a.memory_dir.rename(a.memory_dir.with_name("moved"))

    result = a.sync(status=1)

    assert result.stdout.strip() == summary(0, 0, 0, 0, 0, 0)
    assert "3 of the 3 files synced before were not deleted on the server" in result.stderr
    assert f"since {a.memory_dir} is missing" in result.stderr
    assert "memhub-agent sync --delete-missing" in result.stderr
    assert server_keys() == ["one.md", "three.md", "two.md"]
    b.sync()
    assert sorted(b.files()) == ["one.md", "three.md", "two.md"]


def test_many_files_gone_are_deleted_on_the_server_only_when_asked(a):
    for number in range(6):
        a.write(f"n{number}.md", topic(f"n{number}", "text"))
    a.sync()
    for number in range(4):
        (a.memory_dir / f"n{number}.md").unlink()

    held = a.sync(status=1)
    assert "4 of the 6 files synced before were not deleted on the server" in held.stderr
    assert "would delete remote" not in a.sync("--dry-run", status=1).stdout
    assert len(server_keys()) == 6

    assert a.sync("--delete-missing").stdout.strip() == summary(0, 0, 0, 4, 0, 0)
    assert server_keys() == ["n4.md", "n5.md"]


def test_a_conflict_keeps_both_versions(a, b):
    a.write("feedback_db.md", topic("Real DB", "original"))
    a.sync()
    b.sync()
    a.write("feedback_db.md", topic("Real DB", "edited on A"))
    a.sync()
    b.write("feedback_db.md", topic("Real DB", "edited on B"))

    result = b.sync(status=1)  # a conflict: exit status 1

    assert result.stdout.strip() == summary(1, 0, 0, 0, 1, 0)
    copies = [key for key in b.files() if key.startswith("feedback_db.remote-")]
    assert len(copies) == 1
    assert "conflict: feedback_db.md" in result.stderr
    assert copies[0] in result.stderr
    assert "edited on B" in b.read("feedback_db.md")  # the local version stays under its name
    assert "edited on A" in b.read(copies[0])  # the server's version is next to it

    a.sync()
    # The copy is for the person on B to reconcile: it stays there, never uploaded as a memory.
    assert "edited on B" in a.read("feedback_db.md")
    assert sorted(a.files()) == ["feedback_db.md"]
    assert server_keys() == ["feedback_db.md"]
    assert b.sync().stdout.strip() == summary(0, 0, 0, 0, 0, 0)


def test_a_file_deleted_here_but_changed_on_the_server_comes_back(a, b):
    a.write("one.md", topic("One", "original"))
    a.sync()
    b.sync()
    a.write("one.md", topic("One", "edited on A"))
    a.sync()
    (b.memory_dir / "one.md").unlink()

    result = b.sync(status=1)  # a conflict: exit status 1

    assert result.stdout.strip() == summary(0, 1, 0, 0, 1, 0)
    assert "edited on A" in b.read("one.md")


def test_a_file_changed_here_but_deleted_on_the_server_is_uploaded_again(a, b):
    a.write("one.md", topic("One", "original"))
    a.sync()
    b.sync()
    (a.memory_dir / "one.md").unlink()
    a.sync()
    b.write("one.md", topic("One", "edited on B"))

    result = b.sync(status=1)  # a conflict: exit status 1

    assert result.stdout.strip() == summary(1, 0, 0, 0, 1, 0)
    a.sync()
    assert "edited on B" in a.read("one.md")


def test_a_planted_secret_is_skipped_and_reported_while_the_rest_syncs(a, b):
    token = fake_github_token()
    a.write("reference_ci.md", topic("CI", "CI access", "reference", f"Token: {token}\n"))
    a.write("feedback_db.md", topic("Real DB", "Tests hit a real database"))

    result = a.sync(status=1)  # a file skipped: exit status 1

    assert result.stdout.strip() == summary(1, 0, 0, 0, 0, 1)
    assert "reference_ci.md" in result.stderr
    assert "github-pat" in result.stderr
    assert "line 6" in result.stderr
    assert token not in result.stdout + result.stderr
    assert server_keys() == ["feedback_db.md"]
    b.sync()
    assert sorted(b.files()) == ["feedback_db.md"]

    a.write("reference_ci.md", topic("CI", "CI access", "reference", "Token: in the vault\n"))
    assert a.sync().stdout.strip() == summary(1, 0, 0, 0, 0, 0)


def test_team_stays_out_of_the_private_store_and_logs_go_as_logs(a):
    a.write("user_role.md", topic("Role", "backend engineer", "user"))
    a.write("team/project_release.md", topic("Release", "freeze", "project"))
    a.write("logs/2026/03/2026-03-05.md", "- did things\n")
    a.write("notes.txt", "not a memory\n")

    assert a.sync().stdout.splitlines() == [
        summary(1, 0, 0, 0, 0, 0),
        "daily logs: sent 1 entries, received 0, across 1 days",
    ]
    assert server_keys() == ["logs/2026/03/2026-03-05.md", "user_role.md"]
    assert not private_store().files.filter(path__startswith="logs/").exists()


def test_a_first_dry_run_creates_nothing_on_the_server(a):
    a.write("MEMORY.md", "- [One](one.md) — first\n")
    a.write("one.md", topic("One", "first"))

    result = a.run("sync", "--dry-run")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "would upload MEMORY.md",
        "would upload one.md",
        f"dry run: 2 changes for {a.memory_dir}",
        "the server has no store for this project yet: a sync creates it",
    ]
    assert not Store.objects.exists()
    assert not Project.objects.exists()
    assert not (a.config_dir / "sync").exists()

    assert a.sync().stdout.strip() == summary(2, 0, 0, 0, 0, 0)
    assert server_keys() == ["MEMORY.md", "one.md"]


def test_a_dry_run_changes_nothing(a, b):
    a.write("one.md", topic("One", "first"))
    a.sync()
    b.write("two.md", topic("Two", "second"))

    result = b.run("sync", "--dry-run")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "would download one.md",
        "would upload two.md",
        f"dry run: 2 changes for {b.memory_dir}",
    ]
    assert server_keys() == ["one.md"]
    assert sorted(b.files()) == ["two.md"]
    assert not (b.config_dir / "sync").exists()


def test_a_dry_run_skips_a_secret_as_the_sync_then_does(a):
    a.write("one.md", topic("One", "first"))
    a.sync()
    token = fake_github_token()
    a.write("reference_ci.md", topic("CI", "CI access", "reference", f"Token: {token}\n"))
    a.write("two.md", topic("Two", "second"))

    dry = a.run("sync", "--dry-run")

    assert dry.returncode == 1, dry.stderr
    assert dry.stdout.splitlines() == [
        "would upload two.md",
        f"dry run: 1 changes for {a.memory_dir}",
    ]
    skipped = dry.stderr.splitlines()
    assert len(skipped) == 1
    assert skipped[0].startswith("skipped reference_ci.md: ")
    assert "(github-pat) on line 6" in skipped[0]
    assert token not in dry.stdout + dry.stderr
    assert server_keys() == ["one.md"]

    real = a.sync(status=1)

    assert real.stdout.strip() == summary(1, 0, 0, 0, 0, 1)
    assert real.stderr.splitlines() == skipped
    assert server_keys() == ["one.md", "two.md"]


def test_a_first_dry_run_skips_a_secret_too(a):
    a.write("reference_ci.md", topic("CI", "CI access", "reference", f"{fake_github_token()}\n"))

    dry = a.run("sync", "--dry-run")

    assert dry.stdout.splitlines() == [
        f"dry run: 0 changes for {a.memory_dir}",
        "the server has no store for this project yet: a sync creates it",
    ]
    assert "(github-pat) on line 6" in dry.stderr
    assert not Store.objects.exists()
    assert a.sync(status=1).stderr == dry.stderr


def test_state_and_login_files_are_private(a):
    a.write("one.md", topic("One", "first"))
    a.sync()

    states = list((a.config_dir / "sync").glob("*.json"))
    assert len(states) == 1
    assert states[0].stat().st_mode & 0o777 == 0o600
    assert (a.config_dir / "sync").stat().st_mode & 0o777 == 0o700
    state = json.loads(states[0].read_text())
    assert state["memory_dir"] == str(a.memory_dir)
    assert list(state["files"]) == ["one.md"]


def test_sync_without_a_login_says_how_to_log_in(machine_a):
    result = machine_a.run("sync")

    assert result.returncode == 3  # authentication
    assert "memhub-agent login" in result.stderr


def test_a_project_without_a_slug_is_keyed_by_its_directory_name(tmp_path, server):
    from tests.client.conftest import Machine, git_checkout

    home = tmp_path / "c" / "home"
    machine = Machine(home, git_checkout(home / "scratch", remote=None))
    machine.login(server)
    machine.write("one.md", topic("One", "first"))

    machine.sync()

    store = Store.objects.get(kind=Store.Kind.PRIVATE)
    assert store.project.key == machine.memory_dir.parent.name
    assert store.project.key.endswith("-scratch")


def test_two_edited_indexes_merge_line_by_line(a, b):
    a.write("MEMORY.md", "- [One](one.md) — first\n")
    a.write("one.md", topic("One", "first"))
    a.sync()
    b.sync()
    a.write("MEMORY.md", "- [One](one.md) — first\n- [Two](two.md) — from A\n")
    a.write("two.md", topic("Two", "from A"))
    a.sync()
    b.write("MEMORY.md", "- [One](one.md) — first\n- [Three](three.md) — from B\n")
    b.write("three.md", topic("Three", "from B"))

    result = b.sync(status=1)  # a conflict: exit status 1

    assert result.stdout.strip() == summary(2, 1, 0, 0, 1, 0)
    assert "MEMORY.md" in result.stderr and "merged" in result.stderr
    assert b.read("MEMORY.md") == (
        "- [One](one.md) — first\n- [Three](three.md) — from B\n- [Two](two.md) — from A\n"
    )
    assert not [key for key in b.files() if ".remote-" in key]
    a.sync()
    assert a.files() == b.files()


def test_a_memorys_age_travels_with_it_both_ways(a, b):
    """Claude Code reads a memory's age from its file's mtime (and memhub's pages and recall
    from the server's): a sync writes the file, but not a new age."""
    import os
    import time

    from memapp.stores.mirror import rescan_store

    month_ago = time.time() - 30 * 86400
    path = a.write("feedback_db.md", topic("Real DB", "Tests hit a real database"))
    os.utime(path, (month_ago, month_ago))
    a.sync()
    on_server = Path(private_store().path) / "feedback_db.md"
    assert abs(on_server.stat().st_mtime - month_ago) < 1
    assert abs(private_store().files.get(path="feedback_db.md").mtime_ms / 1000 - month_ago) < 1

    forty_days_ago = time.time() - 40 * 86400
    (Path(private_store().path) / "project_freeze.md").write_text(
        topic("Freeze", "Release freeze 2026-03-05", "project")
    )
    os.utime(Path(private_store().path) / "project_freeze.md", (forty_days_ago, forty_days_ago))
    rescan_store(private_store())
    b.sync()
    assert abs((b.memory_dir / "project_freeze.md").stat().st_mtime - forty_days_ago) < 1
    assert abs((b.memory_dir / "feedback_db.md").stat().st_mtime - month_ago) < 1


def test_the_session_start_pull_keeps_a_memorys_age_too(a, b):
    """The SessionStart hook's pull writes what changed on the server: with its age."""
    import os
    import time

    from memapp.stores.mirror import rescan_store
    from tests.client.test_hooks import payload

    a.write("feedback_db.md", topic("Real DB", "Tests hit a real database"))
    a.sync()
    b.sync()
    root = Path(private_store().path)
    (root / "project_freeze.md").write_text(topic("Freeze", "Release freeze 2026-03-05", "project"))
    weeks_ago = time.time() - 21 * 86400
    os.utime(root / "project_freeze.md", (weeks_ago, weeks_ago))
    rescan_store(private_store())

    result = b.hook("session-start", payload(b, "session-start"))

    assert result.returncode == 0, result.stderr
    assert abs((b.memory_dir / "project_freeze.md").stat().st_mtime - weeks_ago) < 1


NFC = unicodedata.normalize("NFC", "zzé.md")
NFD = unicodedata.normalize("NFD", "zzé.md")


def test_two_local_names_the_server_stores_as_one_are_both_kept(a):
    """`zzé.md` in NFC and in NFD are one key on the server: sending both once kept one text
    there, and the next sync deleted the other here as gone from the server."""
    a.write(NFC, topic("Composed", "the NFC file"))
    a.write(NFD, topic("Decomposed", "the NFD file"))

    for _ in range(2):
        result = a.sync(status=1)
        assert result.stdout.strip() == summary(0, 0, 0, 0, 0, 0)
        assert f"error: unsafe memory key '{NFD}' (decomposed)" in result.stderr
        assert f"[lookalike-duplicate]; the other is '{NFC}'" in result.stderr

    assert a.files() == {
        NFC: topic("Composed", "the NFC file"),
        NFD: topic("Decomposed", "the NFD file"),
    }
    assert server_keys() == []


def test_a_name_spelt_in_nfd_here_syncs_as_the_servers_nfc_key(a, b):
    """A Mac may name a file in NFD; the server stores it in NFC. It stays one file, under its
    own name here: a second sync deleted it as gone from the server."""
    a.write(NFD, topic("CV", "first"))

    assert a.sync().stdout.strip() == summary(1, 0, 0, 0, 0, 0)
    assert server_keys() == [NFC]
    assert a.sync().stdout.strip() == summary(0, 0, 0, 0, 0, 0)
    assert a.files() == {NFD: topic("CV", "first")}

    assert b.sync().stdout.strip() == summary(0, 1, 0, 0, 0, 0)
    b.write(NFC, topic("CV", "edited on b"))
    assert b.sync().stdout.strip() == summary(1, 0, 0, 0, 0, 0)
    assert a.sync().stdout.strip() == summary(0, 1, 0, 0, 0, 0)
    assert a.files() == {NFD: topic("CV", "edited on b")}


def test_the_session_start_pull_writes_a_change_into_the_nfd_file(a, b):
    from tests.client.test_hooks import payload

    a.write(NFD, topic("CV", "first"))
    a.sync()
    b.sync()
    b.write(NFC, topic("CV", "edited on b"))
    b.sync()

    result = a.hook("session-start", payload(a, "session-start"))

    assert result.returncode == 0, result.stderr
    assert a.files() == {NFD: topic("CV", "edited on b")}


def test_a_file_the_server_keeps_in_nfd_is_the_one_named_in_nfc_here(a, alice):
    """A server file named in NFD (stored before memhub composed names): a machine that names
    it in NFC syncs it as that file (both texts kept), not as a second one the server refuses
    as a look-alike on every sync."""
    store = resolve_store(alice, SLUG, "private")
    root = Path(store.path)
    (root / NFD).write_text(topic("CV", "on the server"))
    rescan_store(store)
    a.write(NFC, topic("CV", "edited on a"))

    for _ in range(2):
        result = a.run("sync")
        assert "lookalike" not in result.stderr and "refused" not in result.stderr
    assert server_keys() == [NFD]
    assert a.files()[NFC] == topic("CV", "edited on a")
    assert topic("CV", "on the server") in a.files().values()  # a conflict copy here
