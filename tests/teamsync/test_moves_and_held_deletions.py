"""Re-keying and renames are moves, never deletions; a sync that would delete many files stops
and asks on the Team sync page (docs/design.md §17). Real git: a bare remote, memhub's clone,
a teammate's machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from memapp.stores.identity import do_set_project_slug
from memapp.stores.models import Event, Project, TrashItem
from memapp.stores.projects import resolve_store
from teamsync.models import BlockedFile, HeldDeletion, StoreSyncState
from teamsync.service import do_sync_team
from tests.teamsync.gitutil import Member, git, memory, tip_files
from tests.teamsync.test_service import every_object
from tests.web.memory_pages import text

pytestmark = pytest.mark.django_db

TEAM = {
    "code_owners.md": memory("Code owners", "Ana reviews the API.\n"),
    "on_call.md": memory("On-call rota", "Bob, then Cai.\n"),
    "deploys.md": memory("Deploys", "Ship on Tuesdays.\n"),
    "MEMORY.md": "- [Code owners](code_owners.md) — who reviews\n"
    "- [On-call rota](on_call.md) — who is on call\n"
    "- [Deploys](deploys.md) — when we ship\n",
}


@pytest.fixture
def discovered(alice, bob, remote):
    """A project memhub first knew by Claude Code's directory name, its team memory synced."""
    project = Project.objects.create(key="-tmp-ux-demo")
    project.members.add(alice, bob)
    store = resolve_store(alice, "-tmp-ux-demo", "team")
    for key, body in TEAM.items():
        (Path(store.path) / key).write_text(body)
    do_sync_team()
    assert set(tip_files(remote, "-tmp-ux-demo")) == set(TEAM)
    return store


def _store_files(store) -> dict[str, str]:
    return {p.name: p.read_text() for p in Path(store.path).glob("*.md")}


def test_a_new_slug_moves_the_team_folder_in_one_commit_and_deletes_nothing(
    discovered, alice, remote
):
    do_set_project_slug(discovered.project, "acme/payments", alice)
    report = do_sync_team()

    assert report.deleted == 0 and report.error is None
    assert _store_files(discovered) == TEAM
    assert tip_files(remote, "acme/payments") == TEAM
    assert tip_files(remote, "-tmp-ux-demo") == {}
    log = git(remote, "log", "-1", "-M", "--name-status", "--format=%s", "main")
    assert log.splitlines()[0] == "Move -tmp-ux-demo to acme/payments"
    moved = [line.split("\t")[0] for line in log.splitlines()[1:] if line]
    assert moved and all(kind.startswith("R100") for kind in moved)  # renames, no D or A
    assert not TrashItem.objects.exists()
    assert StoreSyncState.objects.get(store=discovered).folder == "acme/payments"
    [event] = Event.objects.filter(kind="folder_moved")
    assert (event.fields["old"], event.fields["new"]) == ("-tmp-ux-demo", "acme/payments")
    do_sync_team()  # and it stays so
    assert _store_files(discovered) == TEAM


def test_a_teammate_editing_under_the_old_name_lands_in_the_moved_file(
    discovered, alice, remote, tmp_path
):
    dora = Member(tmp_path / "elsewhere", "dora", remote, folder="-tmp-ux-demo")
    dora.pull()
    dora.write("deploys.md", memory("Deploys", "Ship on Wednesdays.\n"))
    dora.sync()  # pushed under the old name, before memhub knew the new one
    do_set_project_slug(discovered.project, "acme/payments", alice)
    report = do_sync_team()  # memhub moves first, then merges dora's edit into the moved file
    assert report.deleted == 0
    assert _store_files(discovered)["deploys.md"] == memory("Deploys", "Ship on Wednesdays.\n")
    assert tip_files(remote, "acme/payments")["deploys.md"].endswith("Ship on Wednesdays.\n")


def test_a_rename_onto_a_folder_holding_other_versions_is_refused_and_the_store_waits(
    client, discovered, alice, remote, tmp_path
):
    other = Member(tmp_path / "elsewhere", "eve", remote, folder="acme/payments")
    other.write("on_call.md", memory("On-call rota", "Eve, always.\n"))
    other.sync()
    do_set_project_slug(discovered.project, "acme/payments", alice)
    report = do_sync_team()

    assert report.deleted == 0 and report.written == 0
    assert _store_files(discovered) == TEAM  # nothing written over, nothing deleted
    assert set(tip_files(remote, "-tmp-ux-demo")) == set(TEAM)
    state = StoreSyncState.objects.get(store=discovered)
    assert state.move_error == (
        "Team sync cannot move -tmp-ux-demo to acme/payments: acme/payments in the shared "
        "repository already holds other versions of on_call.md. Nothing of this store is "
        "synced until its old name is set back or those files are moved."
    )
    client.force_login(alice)
    assert state.move_error in text(client.get(reverse("sync")))
    do_set_project_slug(discovered.project, "acme/ux-demo", alice)  # a free name: it moves
    do_sync_team()
    assert tip_files(remote, "acme/ux-demo") == TEAM
    assert StoreSyncState.objects.get(store=discovered).move_error == ""


@pytest.fixture
def emptied(discovered, remote, tmp_path):
    """A teammate deletes two of the three memories (and their index lines) in the shared
    repository; memhub's next sync would delete them from the store."""
    dora = Member(tmp_path / "elsewhere", "dora", remote, folder="-tmp-ux-demo")
    dora.pull()
    dora.delete("code_owners.md")
    dora.delete("on_call.md")
    dora.write("MEMORY.md", "- [Deploys](deploys.md) — when we ship\n")
    dora.sync()
    do_sync_team()
    return discovered


def test_a_sync_that_would_delete_over_a_quarter_of_a_store_asks_first(client, emptied, alice):
    assert _store_files(emptied) == {**TEAM, "MEMORY.md": _store_files(emptied)["MEMORY.md"]}
    assert "code_owners.md" in _store_files(emptied)["MEMORY.md"]  # entries kept with files
    held = HeldDeletion.objects.get()
    assert (held.keys, held.total) == (["code_owners.md", "on_call.md"], 3)
    assert not TrashItem.objects.exists()
    client.force_login(alice)
    page = text(client.get(reverse("sync")))
    assert "Delete 2 of 3 memories from -tmp-ux-demo?" in page
    assert "code_owners.md" in page and "on_call.md" in page
    do_sync_team()  # asking again changes nothing meanwhile
    assert HeldDeletion.objects.count() == 1 and "on_call.md" in _store_files(emptied)


def test_keeping_held_files_puts_them_back_in_the_shared_repository(client, emptied, alice, remote):
    held = HeldDeletion.objects.get()
    client.force_login(alice)
    response = client.post(reverse("sync_held", args=[held.pk]), {"choice": "keep"}, follow=True)
    assert "Kept 2 files in -tmp-ux-demo: the next sync shares them again." in text(response)
    do_sync_team()
    shared = tip_files(remote, "-tmp-ux-demo")
    assert shared["code_owners.md"] == TEAM["code_owners.md"]
    assert shared["on_call.md"] == TEAM["on_call.md"]
    assert "(code_owners.md)" in shared["MEMORY.md"] and "(on_call.md)" in shared["MEMORY.md"]
    assert {k: v for k, v in _store_files(emptied).items() if k != "MEMORY.md"} == {
        k: v for k, v in TEAM.items() if k != "MEMORY.md"
    }
    again = client.post(reverse("sync_held", args=[held.pk]), {"choice": "delete"}, follow=True)
    assert "Already answered: kept." in text(again)  # the second tab changes nothing
    assert "on_call.md" in _store_files(emptied)


def test_keeping_held_files_passes_the_push_gate_first(client, emptied, alice, remote):
    """A held file is out of sync, so an agent's edit to it meanwhile was never gated: "Keep
    them" must not push it (nor an index line holding a secret) into the shared repository."""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"
    root = Path(emptied.path)
    on_call = root / "on_call.md"
    on_call.write_text(on_call.read_text() + f"Pager token: {token}\n")
    index = root / "MEMORY.md"
    index.write_text(index.read_text().replace("who reviews", f"who reviews, with {token}"))
    do_sync_team()  # both held or kept back: nothing of them goes
    held = HeldDeletion.objects.get()
    client.force_login(alice)
    client.post(reverse("sync_held", args=[held.pk]), {"choice": "keep"})
    do_sync_team()

    assert token not in every_object(remote)
    shared = tip_files(remote, "-tmp-ux-demo")
    assert set(shared) == {"code_owners.md", "deploys.md", "MEMORY.md"}  # the clean one is kept
    blocked = dict(BlockedFile.objects.values_list("key", "reason"))
    assert blocked == {"on_call.md": "secret", "MEMORY.md": "secret"}
    # Fixed, they are shared as any new file.
    on_call.write_text(TEAM["on_call.md"])
    index.write_text(index.read_text().replace(f", with {token}", ""))
    do_sync_team()
    shared = tip_files(remote, "-tmp-ux-demo")
    assert shared["on_call.md"] == TEAM["on_call.md"]
    assert "(on_call.md)" in shared["MEMORY.md"] and "(code_owners.md)" in shared["MEMORY.md"]
    assert not BlockedFile.objects.exists()


def test_confirming_held_deletions_moves_the_files_to_the_trash(client, emptied, alice, remote):
    held = HeldDeletion.objects.get()
    client.force_login(alice)
    client.post(reverse("sync_held", args=[held.pk]), {"choice": "delete"})
    do_sync_team()
    assert set(_store_files(emptied)) == {"deploys.md", "MEMORY.md"}
    assert "code_owners.md" not in _store_files(emptied)["MEMORY.md"]
    assert sorted(TrashItem.objects.values_list("path", flat=True)) == [
        "code_owners.md",
        "on_call.md",
    ]
    assert set(tip_files(remote, "-tmp-ux-demo")) == {"deploys.md", "MEMORY.md"}


def test_one_deletion_by_a_teammate_goes_through_as_before(discovered, remote, tmp_path):
    dora = Member(tmp_path / "elsewhere", "dora", remote, folder="-tmp-ux-demo")
    dora.pull()
    dora.delete("deploys.md")
    dora.sync()
    report = do_sync_team()
    assert report.deleted == 1 and not HeldDeletion.objects.exists()


def test_only_members_answer_held_deletions(client, emptied, charlie):
    held = HeldDeletion.objects.get()
    client.force_login(charlie)
    response = client.post(reverse("sync_held", args=[held.pk]), {"choice": "delete"})
    assert response.status_code == 404
    assert HeldDeletion.objects.get().decided_at is None


# --- files gone from the store's own directory ---------------------------------------------------


@pytest.fixture
def wiped(discovered, remote):
    """The store's directory loses three of its memories behind memhub's back."""
    for key in ("code_owners.md", "on_call.md", "deploys.md"):
        (Path(discovered.path) / key).unlink()
    do_sync_team()
    return discovered


def test_files_gone_from_the_store_are_not_deleted_for_everyone_without_asking(
    client, wiped, alice, remote
):
    assert set(tip_files(remote, "-tmp-ux-demo")) == set(TEAM)
    held = HeldDeletion.objects.get()
    assert (held.outgoing, held.keys, held.total) == (
        True,
        ["code_owners.md", "deploys.md", "on_call.md"],
        3,
    )
    client.force_login(alice)
    page = text(client.get(reverse("sync")))
    assert "Delete 3 of 3 memories of -tmp-ux-demo from the shared repository?" in page
    response = client.post(reverse("sync_held", args=[held.pk]), {"choice": "keep"}, follow=True)
    assert "Kept 3 files in -tmp-ux-demo" in text(response)
    assert _store_files(wiped) == TEAM  # written back from the shared repository
    do_sync_team()
    assert tip_files(remote, "-tmp-ux-demo") == TEAM


def test_confirmed_outgoing_deletions_reach_the_shared_repository(client, wiped, alice, remote):
    held = HeldDeletion.objects.get()
    client.force_login(alice)
    client.post(reverse("sync_held", args=[held.pk]), {"choice": "delete"})
    do_sync_team()
    assert tip_files(remote, "-tmp-ux-demo") == {}  # the index had only their entries
    deleted_by = git(remote, "log", "--diff-filter=D", "--format=%an", "main", "--", "*on_call.md")
    assert deleted_by.split() == ["alice"]  # who confirmed it
