"""The mirror after a pull: the pull parses what it writes while the writes wait on the disk,
and the rescan after it neither reads those files again nor looks for their versions. The
rows, the store's stats and the history must be what a rescan reading every file leaves."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from django.forms.models import model_to_dict

from memapp.memdir import atomic, scan
from memapp.memdir.atomic import write_atomic_files
from memapp.stores import mirror
from memapp.stores.actions import do_restore_version
from memapp.stores.history import record_changes, sha256_hex, timeline
from memapp.stores.mirror import parse_written, rescan_store
from memapp.stores.models import Blob, MemoryVersion, Store
from teamsync.service import do_sync_team
from tests.conftest import write_memory
from tests.teamsync.gitutil import memory

pytestmark = pytest.mark.django_db

TEXTS = {
    "project_launch.md": memory("Launch", "We ship next Tuesday, see [[feedback_style]].\n"),
    "feedback_style.md": memory("Style", "Short sentences.\n", "feedback"),
    "notes/deep/reference_db.md": memory("DB", "The replica is read-only.\n", "reference"),
    "broken.md": "---\nname: Never closed\nbody\n",
    "plain.md": "No header at all.\n",
    "long.md": "---\nname: Long\n" + "".join(f"k{i}: v\n" for i in range(40)) + "---\nx\n",
}


def rows(store: Store) -> dict[str, dict]:
    return {f.path: model_to_dict(f, exclude=["id"]) for f in store.files.all()}


def full_rescan(store: Store) -> None:
    """Forget everything a rescan could take from before, and read every file again."""
    store.files.all().delete()
    scan._default_cache.clear()
    mirror._last_rescan.clear()
    store.index_stats = {}
    rescan_store(store)


def pulled(team_store: Store, dora, count: int = 24) -> dict[str, str]:
    """Dora pushes `TEXTS` and `count` memories more (enough to be written in parallel) and
    edits one memhub already has; memhub pulls them."""
    write_memory(Path(team_store.path), "user_role.md", "Role", "Alice is on call", "user")
    rescan_store(team_store)
    do_sync_team()
    dora.pull()
    texts = dict(TEXTS)
    texts |= {
        f"project_{n}.md": memory(f"P{n}", f"Item {n} is due tomorrow.\n") for n in range(count)
    }
    texts["user_role.md"] = memory("Role", "Alice is on call this week.\n", "user")
    for key, text in texts.items():
        dora.write(key, text)
    dora.write("MEMORY.md", "- [Launch](project_launch.md) — when\n")
    dora.sync()
    report = do_sync_team()
    assert report.written == len(texts) + 1 and not report.error
    return texts


def test_the_mirror_after_a_pull_is_what_a_full_rescan_leaves(team_store, dora, remote):
    texts = pulled(team_store, dora)
    team_store.refresh_from_db()
    after_pull = (rows(team_store), team_store.file_count, team_store.index_stats)
    versions = MemoryVersion.objects.count()
    full_rescan(team_store)
    team_store.refresh_from_db()
    assert (rows(team_store), team_store.file_count, team_store.index_stats) == after_pull
    assert MemoryVersion.objects.count() == versions  # the pull recorded every change itself
    assert set(texts) <= set(after_pull[0])
    assert after_pull[0]["project_launch.md"]["relative_dates"]
    assert after_pull[0]["broken.md"]["problem"]


def test_every_pulled_file_is_a_version_that_can_be_restored(team_store, alice, dora, remote):
    texts = pulled(team_store, dora)
    for key, text in texts.items():
        latest = timeline(team_store, key).first()
        assert latest.via == "team_sync"
        assert bytes(Blob.objects.get(sha256=latest.sha256).data) == text.encode()
    first = timeline(team_store, "user_role.md").last()
    do_restore_version(team_store, alice, first)
    assert "Alice is on call\n" in Path(team_store.path, "user_role.md").read_text()


@pytest.fixture
def store(tmp_path, alice) -> Store:
    root = tmp_path / "memory"
    for n in range(20):
        write_memory(root, f"m{n}.md", f"M{n}", "old", "project")
    store = Store.objects.create(kind="team", origin="managed", path=str(root), owner=alice)
    rescan_store(store)
    return store


def write_and_parse(store: Store) -> dict:
    """What a pull does: write new texts, parsed meanwhile, and record them."""
    contents = {f"m{n}.md": memory(f"M{n}", f"new {n}\n").encode() for n in range(20)}
    parsed = {}
    paths = {Path(store.path, key): data for key, data in contents.items()}
    stats = write_atomic_files(paths, lambda: parsed.update(parse_written(store, contents)))
    record_changes(store, contents, via="team_sync")
    return {key: (parsed[key], stats[Path(store.path, key)]) for key in parsed}


@pytest.mark.parametrize("how", ["replaced", "rewritten in place"])
def test_a_file_changed_after_its_write_is_read_from_disk(store, how):
    written = write_and_parse(store)
    target = Path(store.path, "m3.md")
    changed = memory("M3", "an agent wrote this meanwhile\n").encode()
    if how == "replaced":
        write_atomic_files({target: changed})
    else:
        with target.open("r+b") as file:
            file.write(changed)
            file.truncate()
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, written["m3.md"][1].st_mtime_ns))  # the write's mtime
    rescan_store(store, written)
    assert store.files.get(path="m3.md").sha256 == sha256_hex(changed)
    assert timeline(store, "m3.md").first().via == "disk"  # found on disk, not lost
    after = rows(store)
    full_rescan(store)
    assert rows(store) == after


def test_a_pull_whose_write_fails_records_no_version_and_the_next_one_does(
    team_store, dora, remote, monkeypatch
):
    """A pull whose write fails (a full disk) records no version, so the history never holds
    a version the store lacks; the next sync records each file once."""
    do_sync_team()
    dora.pull()
    texts = {f"project_{n}.md": memory(f"P{n}", f"Item {n} is due.\n") for n in range(20)}
    for key, text in texts.items():
        dora.write(key, text)
    dora.sync()
    replace = atomic._replace

    def disk_full_for_one(path, data, **kwargs):
        if Path(path).name == "project_7.md":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return replace(path, data, **kwargs)

    monkeypatch.setattr(atomic, "_replace", disk_full_for_one)
    with pytest.raises(OSError, match="No space left"):
        do_sync_team()
    assert not MemoryVersion.objects.filter(store=team_store, via="team_sync").exists()
    assert not Path(team_store.path, "project_7.md").exists()

    monkeypatch.setattr(atomic, "_replace", replace)
    assert not do_sync_team().error
    for key, text in texts.items():  # the files written before the failure: found on disk
        assert Path(team_store.path, key).read_text() == text
        (version,) = timeline(team_store, key)
        assert version.sha256 == sha256_hex(text.encode())
    assert timeline(team_store, "project_7.md").get().via == "team_sync"
