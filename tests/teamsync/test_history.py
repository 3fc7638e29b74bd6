"""Team sync keeps the history too: what a pull writes or deletes is a version by team sync
naming the teammate who made it, and a conflict settled either way loses neither side."""

from __future__ import annotations

from pathlib import Path

import pytest

from memapp.stores.actions import do_restore_from_trash
from memapp.stores.history import sha256_hex, timeline
from memapp.stores.models import Blob, Event, TrashItem
from teamsync.service import do_resolve_conflict, do_sync_team
from tests.teamsync.gitutil import memory
from tests.teamsync.test_service import conflict, save  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def text_of(version) -> str:
    return bytes(Blob.objects.get(sha256=version.sha256).data).decode()


def test_a_pulled_memory_is_a_version_naming_the_teammate_who_wrote_it(team_store, dora, remote):
    dora.write("reference_oncall.md", memory("On-call", "Dora carries the pager.\n", "reference"))
    dora.sync()
    do_sync_team()
    [version] = timeline(team_store, "reference_oncall.md")
    assert (version.via, version.user, version.note) == ("team_sync", None, "from dora")
    pull = Event.objects.filter(kind="sync_pull").get()
    assert pull.fields["authors"] == ["dora"]


def test_a_memory_a_teammate_deleted_waits_in_the_trash(team_store, alice, dora, remote):
    file = save(team_store, alice, "Deploy")
    do_sync_team()
    dora.pull()
    dora.delete(file.path)
    dora.sync()
    do_sync_team()
    assert not Path(team_store.path, file.path).exists()
    item = TrashItem.objects.get()
    assert (item.path, item.via) == (file.path, "team_sync")
    assert do_restore_from_trash(item, alice) == file.path
    assert "Ship on Tuesdays." in Path(team_store.path, file.path).read_text()


@pytest.mark.parametrize("choice", ["ours", "theirs", "delete"])
def test_settling_a_conflict_keeps_both_sides_in_the_history(
    conflict,  # noqa: F811 (the fixture)
    team_store,
    bob,
    choice,
):
    do_resolve_conflict(conflict, bob, choice)
    versions = list(timeline(team_store, conflict.key))
    assert versions[0].note == f"resolved a team sync conflict: kept {choice}"
    assert versions[0].user == bob
    texts = [text_of(v) for v in versions if v.sha256]
    assert conflict.ours in texts
    assert conflict.theirs in texts
    if choice == "theirs":
        assert text_of(versions[0]) == conflict.theirs
    elif choice == "ours":
        assert text_of(versions[0]) == conflict.ours
        assert versions[1].note == "their side of a team sync conflict, not kept"
    else:
        assert TrashItem.objects.get(path=conflict.key).sha256 == sha256_hex(conflict.ours.encode())


def test_a_pulled_index_is_a_version_naming_the_teammate_who_wrote_it(team_store, dora, remote):
    dora.write("reference_oncall.md", memory("On-call", "Dora carries the pager.\n", "reference"))
    dora.write("MEMORY.md", "- [On-call](reference_oncall.md) — who carries the pager\n")
    dora.sync()
    do_sync_team()
    latest = timeline(team_store, "MEMORY.md").first()
    assert (latest.via, latest.user, latest.note) == ("team_sync", None, "from dora")
    assert text_of(latest) == "- [On-call](reference_oncall.md) — who carries the pager\n"
