"""Proposals (docs/design.md §14.6): the one approve path every kind uses writes through the
stores' write functions; a file changed since the proposal is a conflict with both versions
kept; edits before approving; reject; owner only, through the API too."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from django.urls import reverse

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.proposals import (
    ProposalClosed,
    change_diff,
    do_apply_proposal,
    do_propose_changes,
    do_rebase_change,
    do_reject_proposal,
    pending_count,
)
from memapp.memdir.extraction import ProposedChange
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event
from memapp.stores.projects import resolve_store
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT
from tests.memdir.test_secret_rules import fake_tokens

pytestmark = pytest.mark.django_db

BODY = "Deploys happen on Fridays.\n\n**Why:** ops said so.\n**How to apply:** plan for it.\n"


@pytest.fixture
def store(alice):
    store = resolve_store(alice, PROJECT, "private")
    write_memory(
        Path(store.path),
        "feedback_tests.md",
        "Real DB",
        "Integration tests hit a real database",
        "feedback",
        "Use the real database.\n",
    )
    (Path(store.path) / "MEMORY.md").write_text("- [Real DB](feedback_tests.md) — no mocks\n")
    rescan_store(store)
    return store


def proposed(**fields) -> ProposedChange:
    values = {
        "action": "create",
        "scope": "private",
        "file": "project_deploys.md",
        "name": "Deploy day",
        "description": "We deploy on Fridays",
        "type": "project",
        "body": BODY,
        "reason": "asked",
    }
    return ProposedChange(**{**values, **fields})


@pytest.fixture
def proposal(store, alice) -> Proposal:
    return do_propose_changes(
        "extraction",
        store,
        alice,
        [
            proposed(),
            proposed(
                action="update",
                file="feedback_tests.md",
                name="Real DB",
                description="Integration tests hit a real database, never mocks",
                type="feedback",
                body="Never mock the database.\n",
            ),
        ],
    )


def text(store, key: str) -> str:
    return (Path(store.path) / key).read_text()


def test_an_empty_list_makes_no_proposal(store, alice):
    assert do_propose_changes("consolidation", store, alice, []) is None
    assert not Proposal.objects.exists()


def test_approving_writes_every_change_through_the_write_path(proposal, store, alice):
    result = do_apply_proposal(proposal, alice)
    assert result.applied == ["project_deploys.md", "feedback_tests.md"]
    assert "name: Deploy day" in text(store, "project_deploys.md")
    assert "Never mock the database." in text(store, "feedback_tests.md")
    index = text(store, "MEMORY.md")
    assert "- [Deploy day](project_deploys.md) — We deploy on Fridays" in index
    assert store.files.filter(path="project_deploys.md").exists()  # mirrored
    proposal.refresh_from_db()
    assert proposal.status == "applied"
    written = Event.objects.filter(kind="memory_written").values_list("fields", flat=True)
    assert {f["via"] for f in written} == {"proposal"}
    decided = Event.objects.get(kind="proposal_decided")
    assert decided.fields == {
        "proposal_kind": "extraction",
        "decision": "approved",
        "applied": 2,
        "conflicts": 0,
        "refused": 0,
        "skipped": 0,
    }
    assert pending_count(alice) == 0


def test_approving_selected_changes_skips_the_others(proposal, store, alice):
    create = proposal.changes.get(action="create")
    result = do_apply_proposal(proposal, alice, [create.pk])
    assert result.applied == ["project_deploys.md"]
    assert result.skipped == ["feedback_tests.md"]
    assert "Use the real database." in text(store, "feedback_tests.md")


def test_edits_before_approving_are_what_is_written(proposal, store, alice):
    create = proposal.changes.get(action="create")
    edits = {create.pk: {"name": "Release day", "description": "Releases go out on Fridays\n"}}
    do_apply_proposal(proposal, alice, [create.pk], edits)
    assert not (Path(store.path) / "project_deploys.md").exists()  # the name chose the file
    assert "name: Release day" in text(store, "project_release_day.md")
    assert "description: Releases go out on Fridays" in text(store, "project_release_day.md")
    assert "[Release day](project_release_day.md) — Releases go out on Fridays" in text(
        store, "MEMORY.md"
    )
    create.refresh_from_db()
    assert create.edited and create.key == "project_release_day.md"


def test_a_file_changed_since_the_proposal_is_a_conflict_with_both_versions(proposal, store, alice):
    (Path(store.path) / "feedback_tests.md").write_text("Someone else's edit.\n")
    result = do_apply_proposal(proposal, alice)
    assert result.conflicts == ["feedback_tests.md"]
    assert result.applied == []  # whole or not at all
    assert not (Path(store.path) / "project_deploys.md").exists()
    assert "another change of this approval" in proposal.changes.get(action="create").message
    assert text(store, "feedback_tests.md") == "Someone else's edit.\n"  # never overwritten
    update = proposal.changes.get(action="update")
    assert update.status == "conflict"
    assert update.current_text == "Someone else's edit.\n"
    assert "Never mock the database." in update.body
    proposal.refresh_from_db()
    assert proposal.status == "pending"  # the conflict waits for a decision
    diff = change_diff(update)
    left = "\n".join(r.left or "" for r in diff.file.rows)
    assert "Someone else's edit." in left


def test_a_conflict_taken_up_again_compares_with_the_current_version(proposal, store, alice):
    (Path(store.path) / "feedback_tests.md").write_text("Someone else's edit.\n")
    do_apply_proposal(proposal, alice)
    update = proposal.changes.get(action="update")
    do_rebase_change(update)
    assert update.status == "pending"
    current = (Path(store.path) / "feedback_tests.md").read_bytes()
    assert update.base_checksum == "sha256:" + hashlib.sha256(current).hexdigest()
    do_apply_proposal(Proposal.objects.get(pk=proposal.pk), alice, [update.pk])
    assert "Never mock the database." in text(store, "feedback_tests.md")
    assert Proposal.objects.get(pk=proposal.pk).status == "applied"


def test_a_create_whose_file_appeared_meanwhile_is_a_conflict(proposal, store, alice):
    (Path(store.path) / "project_deploys.md").write_text("Written by the agent itself.\n")
    result = do_apply_proposal(proposal, alice)
    assert result.conflicts == ["project_deploys.md"]
    assert text(store, "project_deploys.md") == "Written by the agent itself.\n"


def test_a_delete_goes_through_forget(store, alice):
    proposal = do_propose_changes(
        "consolidation", store, alice, [proposed(action="delete", file="feedback_tests.md")]
    )
    do_apply_proposal(proposal, alice)
    assert not (Path(store.path) / "feedback_tests.md").exists()
    assert "feedback_tests.md" not in text(store, "MEMORY.md")
    assert Event.objects.get(kind="memory_forgotten").fields["via"] == "proposal"


def test_an_edit_that_adds_a_secret_is_refused_and_nothing_written(proposal, store, alice):
    create = proposal.changes.get(action="create")
    token = fake_tokens(4)["slack-bot-token"]
    result = do_apply_proposal(proposal, alice, [create.pk], {create.pk: {"body": token}})
    assert result.refused == ["project_deploys.md"]
    assert not (Path(store.path) / "project_deploys.md").exists()
    create.refresh_from_db()
    assert create.status == "pending" and "secret" in create.message  # open, to fix or leave
    assert token not in create.message and token not in create.body


def test_a_case_only_rename_proposed_by_an_agent_is_approved_whole(alice_api, store):
    """What the MCP memory tool's rename proposes in review mode: create the new key, delete
    the old one."""
    old = text(store, "feedback_tests.md")
    proposal = do_propose_changes(
        "extraction",
        store,
        store.owner,
        [
            proposed(
                file="Feedback_Tests.md",
                name="Real DB",
                description="Integration tests hit a real database",
                type="feedback",
                body="Use the real database.\n",
            ),
            proposed(action="delete", file="feedback_tests.md"),
        ],
    )
    response = alice_api.post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert response.json()["applied"] == ["Feedback_Tests.md", "feedback_tests.md"]
    assert response.json()["refused"] == []
    assert sorted(p.name for p in Path(store.path).glob("*.md")) == [
        "Feedback_Tests.md",
        "MEMORY.md",
    ]
    assert text(store, "Feedback_Tests.md") == old


def test_a_refused_change_stops_the_whole_approval_and_says_why(alice_api, client, store, alice):
    token = fake_tokens(4)["slack-bot-token"]
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [proposed(body=token), proposed(action="delete", file="feedback_tests.md")],
    )
    response = alice_api.post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert response.json()["applied"] == [] and response.json()["refused"] == ["project_deploys.md"]
    assert "Use the real database." in text(store, "feedback_tests.md")  # not deleted
    assert not (Path(store.path) / "project_deploys.md").exists()
    delete = proposal.changes.get(action="delete")
    assert delete.status == "pending" and "applied whole or not at all" in delete.message
    assert Proposal.objects.get(pk=proposal.pk).status == "pending"
    # The refused change stays open: approving again writes nothing either (the delete alone
    # would lose the memory), and it says why.
    create = proposal.changes.get(action="create")
    assert create.status == "pending" and "Slack" in create.message
    again = alice_api.post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert again.json()["applied"] == [] and again.json()["refused"] == ["project_deploys.md"]
    assert "Use the real database." in text(store, "feedback_tests.md")
    client.force_login(alice)
    page = client.get(reverse("proposal", kwargs={"proposal_id": proposal.pk})).content.decode()
    assert "<dt>Last tried</dt>" in page and "<dt>Decided</dt>" not in page  # still open


def test_a_held_back_approval_keeps_the_persons_edits(store, alice):
    token = fake_tokens(4)["slack-bot-token"]
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [proposed(body=token), proposed(file="project_freeze.md", name="Freeze")],
    )
    freeze = proposal.changes.get(key="project_freeze.md")
    edits = {freeze.pk: {"body": "The freeze starts 2026-12-14.\n"}}
    result = do_apply_proposal(proposal, alice, None, edits)
    assert result.applied == [] and result.refused == ["project_deploys.md"]
    freeze.refresh_from_db()
    assert freeze.status == "pending" and freeze.body == "The freeze starts 2026-12-14.\n"


def test_two_new_files_of_one_approval_that_look_alike_are_both_held(store, alice):
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [proposed(file="project_a.md", name="A"), proposed(file="Project_A.md", name="A too")],
    )
    result = do_apply_proposal(proposal, alice)
    assert result.applied == [] and result.refused == ["Project_A.md"]
    assert not (Path(store.path) / "project_a.md").exists()
    assert not (Path(store.path) / "Project_A.md").exists()


def test_rejecting_writes_nothing_and_closes_the_proposal(proposal, store, alice):
    do_reject_proposal(proposal, alice)
    assert not (Path(store.path) / "project_deploys.md").exists()
    assert set(proposal.changes.values_list("status", flat=True)) == {"rejected"}
    assert proposal.status == "rejected"
    with pytest.raises(ProposalClosed):
        do_apply_proposal(proposal, alice)


def test_checks_are_stored_with_each_change(store, alice):
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [proposed(body="We deploy next Friday.\n", description="Integration tests hit a real DB")],
    )
    codes = [check["code"] for check in proposal.changes.get().checks]
    assert codes == ["relative_dates", "why_how", "duplicate"]


# --- the API: owner only ------------------------------------------------------------------


def test_the_api_lists_approves_and_rejects_the_owners_proposals(alice_api, proposal, store):
    listed = alice_api.get("/api/v1/proposals?status=pending").json()["proposals"]
    assert [p["id"] for p in listed] == [proposal.pk]
    assert [c["file"] for c in listed[0]["changes"]] == ["project_deploys.md", "feedback_tests.md"]
    create = proposal.changes.get(action="create").pk
    response = alice_api.post(
        f"/api/v1/proposals/{proposal.pk}/approve", {"changes": [create]}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["applied"] == ["project_deploys.md"]
    assert response.json()["proposal"]["status"] == "applied"
    again = alice_api.post(f"/api/v1/proposals/{proposal.pk}/reject", format="json")
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "proposal_closed"


def test_bob_never_sees_or_decides_alices_proposals(bob_api, proposal, store):
    assert bob_api.get("/api/v1/proposals").json() == {"proposals": []}
    for action in ("approve", "reject"):
        response = bob_api.post(f"/api/v1/proposals/{proposal.pk}/{action}", {}, format="json")
        assert response.status_code == 404
    assert not (Path(store.path) / "project_deploys.md").exists()
    assert Proposal.objects.get().status == "pending"


def test_approving_a_change_of_another_proposal_is_refused(alice_api, proposal, store, alice):
    other = do_propose_changes("extraction", store, alice, [proposed(file="project_other.md")])
    stranger = other.changes.get().pk
    response = alice_api.post(
        f"/api/v1/proposals/{proposal.pk}/approve", {"changes": [stranger]}, format="json"
    )
    assert response.status_code == 400
    assert ProposalChange.objects.filter(status="applied").count() == 0


def test_an_approved_team_change_passes_the_gate_and_is_committed_for_team_sync(alice):
    from teamsync.models import StoreSyncState

    resolve_store(alice, PROJECT, "private")
    team = resolve_store(alice, PROJECT, "team")
    proposal = do_propose_changes(
        "extraction", team, alice, [proposed(scope="team", file="project_freeze.md")]
    )
    result = do_apply_proposal(proposal, alice)
    assert result.applied == ["project_freeze.md"]
    # The change listener committed it to the team clone; the next sync pushes it.
    assert "project_freeze.md" in StoreSyncState.objects.get(store=team).base
