"""Telling people what team sync did (docs/design.md §12, §22): Home and Events name the
memories a pull moved to the Trash or brought, with undo while the Trash holds them, and the
files kept back (on the memory's own page too); routine events are folded and written as
sentences."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from memapp.stores.events import record_event
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event
from teamsync.models import BlockedFile
from teamsync.service import do_sync_team
from tests.memdir.test_secret_rules import fake_tokens
from tests.teamsync.gitutil import memory
from tests.teamsync.test_service import save

pytestmark = pytest.mark.django_db

SENTENCE = "Team sync moved 2 memories to the Trash in acme/app: Code owners and On-call rota"


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


@pytest.fixture
def trashed(team_store, alice, dora, remote):
    """Dora deleted two of the team's ten memories; memhub's next pull moves them to the Trash
    (two of ten is no mass deletion: nothing is held for a person, docs/design.md §17)."""
    owners = save(team_store, alice, "Code owners")
    rota = save(team_store, alice, "On-call rota")
    for name in ("Deploys", "Pager", "Runbooks", "Oncall", "Staging", "Releases", "Tracing"):
        save(team_store, alice, name)
    do_sync_team()
    dora.pull()
    dora.delete(owners.path)
    dora.delete(rota.path)
    dora.write("reference_pager.md", memory("Pager", "Dora carries the pager.\n", "reference"))
    dora.sync()
    do_sync_team()
    return owners, rota


def test_a_pull_records_the_memories_it_trashed_and_brought_by_name(trashed):
    owners, rota = trashed
    event = Event.objects.get(kind="team_sync_changed")
    assert event.fields["trashed"] == sorted([owners.path, rota.path])
    assert event.fields["written"] == ["reference_pager.md"]
    assert event.fields["names"] == {
        owners.path: "Code owners",
        rota.path: "On-call rota",
        "reference_pager.md": "Pager",
    }
    assert event.fields["authors"] == ["dora"]


@pytest.mark.parametrize("page", ["home", "events"])
def test_home_and_events_name_them_and_undo_brings_one_back(
    client, trashed, alice, page, team_store
):
    owners, _ = trashed
    client.force_login(alice)
    shown = text(client.get(reverse(page)))
    assert SENTENCE in shown
    assert "brought 1 change from dora: Pager" in shown
    assert "Restore Code owners" in shown and "Restore On-call rota" in shown
    item = team_store.trash.get(path=owners.path)
    client.post(reverse("trash_restore", args=[team_store.pk, item.pk]))
    assert Path(team_store.path, owners.path).is_file()
    shown = text(client.get(reverse(page)))
    assert "Restore Code owners" not in shown  # nothing left to undo for it
    assert "Restore On-call rota" not in shown  # one left: a plain "Undo"
    assert (
        'aria-label="Undo: restore On-call rota from the Trash"'
        in client.get(reverse(page)).content.decode()
    )


def test_a_non_member_is_told_nothing(client, trashed, charlie):
    client.force_login(charlie)
    for page in ("home", "events"):
        assert "Code owners" not in text(client.get(reverse(page)))


def test_files_kept_back_are_named_until_they_are_fixed(client, team_store, alice, remote):
    token = fake_tokens(1)["github-pat"]
    path = Path(team_store.path) / "reference_tokens.md"
    path.write_text(memory("CI", f"The CI token is {token}\n", "reference"))
    do_sync_team()
    client.force_login(alice)
    told = (
        "Team sync kept 1 file back in acme/app: what looks like a secret (github-pat). "
        "Still kept back: reference_tokens.md"
    )
    for page in ("home", "events"):
        shown = text(client.get(reverse(page)))
        assert told in shown and token not in shown
    path.write_text(memory("CI", "The CI token lives in the vault.\n", "reference"))
    do_sync_team()
    assert "Still kept back" not in text(client.get(reverse("events")))


def test_the_memory_page_says_why_a_file_is_kept_back_and_what_to_do(
    client, team_store, alice, remote
):
    token = fake_tokens(1)["github-pat"]
    path = Path(team_store.path) / "reference_tokens.md"
    path.write_text(memory("CI", f"The CI token is {token}\n", "reference"))
    rescan_store(team_store)
    page = reverse("memory", kwargs={"store_id": team_store.pk, "path": "reference_tokens.md"})
    client.force_login(alice)
    assert "Kept back from the team" not in text(client.get(page))
    do_sync_team()
    [hit] = BlockedFile.objects.get(key="reference_tokens.md").hits
    shown = text(client.get(page))
    assert (
        "Kept back from the team Team sync does not push this file to the shared repository, "
        "and memhub gives it to no agent (recall, the files API, MCP). Why: contains a secret: "
        f"{hit['label']} ( github-pat ), line {hit['line']}. Edit it to fix that, or forget "
        "it; see Team sync ."
    ) in shown
    path.write_text(memory("CI", "The CI token lives in the vault.\n", "reference"))
    do_sync_team()
    assert "Kept back from the team" not in text(client.get(page))


def test_routine_events_are_folded_into_one_sentence(client, alice, team_store):
    for _ in range(3):
        record_event("stores_discovered", found=4, removed=0, duration_ms=3)
    for _ in range(2):
        record_event("sync_pull", success=True, files_written=0, not_modified=True, duration_ms=5)
    record_event("flag_changed", name="team_memory", scope="acme/app", old=True, new=False)
    client.force_login(alice)
    shown = text(client.get(reverse("events")))
    assert "Setting team_memory for acme/app set to no, was yes" in shown
    assert "Team sync pulled, nothing new (2 times)" in shown
    assert "Discovery found 4 memory directories (3 times)" in shown
    assert "True" not in shown and "False" not in shown
    assert "stores_discovered" not in shown and "sync_pull" not in shown
