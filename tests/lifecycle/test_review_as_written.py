"""Proposals are written as reviewed (docs/design.md §14.6–§14.7): after ticking, unticking and
editing, "Update preview" (no JavaScript) shows the index, its meters, file names, stores and
checks exactly as approving then writes them; a reviewer can change a change's type and store;
a member removed mid-review cannot approve; relative-date fixes never pin a recurring phrase
and are ticked for a person only when the phrase names one day."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.urls import reverse

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.proposals import (
    AccessLost,
    do_apply_proposal,
    do_propose_changes,
)
from memapp.lifecycle.store_proposals import do_apply_store_proposal
from memapp.memdir.extraction import ProposedChange
from memapp.stores.mirror import rescan_store
from memapp.stores.projects import resolve_store
from tests.admin_ui.conftest import client_for, text
from tests.api.conftest import api_client
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT, consolidate_now

pytestmark = pytest.mark.django_db

INDEX = (
    "- [Alpha](alpha.md) — a\n- [Beta](beta.md) — b\n- [Gamma](gamma.md) — c\n"
    "- [Delta](delta.md) — d\n"
)
EPSILON_LINE = "- [Epsilon](epsilon.md) — All about epsilon\n"
WHY_HOW = "Zeta first.\n\n**Why:** the outage.\n**How to apply:** every deploy.\n"


@pytest.fixture
def store(alice):
    store = resolve_store(alice, PROJECT, "private")
    root = Path(store.path)
    for name in ("alpha", "beta", "gamma", "delta"):
        write_memory(root, f"{name}.md", name.title(), f"All about {name}", "user", f"{name}\n")
    (root / "MEMORY.md").write_text(INDEX)
    rescan_store(store)
    return store


def consolidation(store, user, *changes: ProposedChange, index: str | None = None) -> Proposal:
    """A consolidation proposal as a run leaves it: the index change keeps the index it read."""
    if index is not None:
        changes = (*changes, ProposedChange("update", store.kind, "MEMORY.md", body=index))
    proposal = do_propose_changes("consolidation", store, user, changes)
    ProposalChange.objects.filter(proposal=proposal, key="MEMORY.md").update(
        base_text=(Path(store.path) / "MEMORY.md").read_text()
    )
    return proposal


@pytest.fixture
def proposal(store, alice) -> Proposal:
    return consolidation(
        store,
        alice,
        ProposedChange("update", "private", "alpha.md", "Alpha", "All about alpha", "user", "α\n"),
        ProposedChange(
            "create", "private", "epsilon.md", "Epsilon", "All about epsilon", "feedback", "E.\n"
        ),
        index=INDEX + EPSILON_LINE,
    )


def ids(proposal) -> dict[str, int]:
    return {c.key: c.pk for c in proposal.changes.all()}


def index_after(response) -> str:
    """MEMORY.md as the review says approving writes it."""
    found = re.search(r'<pre id="index-after">(.*?)</pre>', response.content.decode(), re.S)
    return html.unescape(found.group(1))


def card(response, pk: int) -> str:
    return card_text(response.content.decode(), pk)


def card_text(page: str, pk: int) -> str:
    """The review's card of one change, as HTML."""
    return page.split(f'id="change-{pk}"', 1)[1].split("</section>", 1)[0]


def meter(response, which: str) -> str:
    page = response.content.decode()
    section = page.split(f'id="{which}-lines"', 1)[1]
    return re.search(r'<span class="value">(\d+ / \d+)', section).group(1)


def test_unticking_a_change_takes_it_out_of_the_index_the_review_shows_and_approving_writes(
    alice, store, proposal
):
    client, url, pk = client_for(alice), reverse("proposal", args=[proposal.pk]), ids(proposal)
    shown = client.get(url)
    assert meter(shown, "after") == "5 / 200" and EPSILON_LINE in index_after(shown)

    ticked = {"changes": [str(pk["alpha.md"]), str(pk["MEMORY.md"])]}
    preview = client.post(url, {**ticked, "decision": "preview"})
    assert preview.status_code == 200
    assert meter(preview, "after") == "4 / 200"
    assert "epsilon.md" not in index_after(preview)
    assert f'name="changes" value="{pk["epsilon.md"]}" checked' not in preview.content.decode()
    assert Proposal.objects.get().status == "pending"  # a preview writes nothing

    assert client.post(url, {**ticked, "decision": "approve"}).status_code == 302
    assert (Path(store.path) / "MEMORY.md").read_text() == index_after(preview)
    assert not (Path(store.path) / "epsilon.md").exists()


def test_an_edit_renames_the_file_rewrites_its_index_line_and_takes_the_checks_again(
    alice, store, proposal
):
    client, url, pk = client_for(alice), reverse("proposal", args=[proposal.pk]), ids(proposal)
    epsilon = pk["epsilon.md"]
    assert "missing Why and How to apply" in card(client.get(url), epsilon)
    form = {
        "changes": list(map(str, pk.values())),
        f"name-{epsilon}": "Zeta rule",
        f"description-{epsilon}": "Zeta is how we deploy",
        f"type-{epsilon}": "project",
        f"body-{epsilon}": WHY_HOW,
    }
    preview = client.post(url, {**form, "decision": "preview"})
    shown = card(preview, epsilon)
    assert "project_zeta_rule.md" in shown and "epsilon.md" not in shown.split("</header>")[0]
    assert "missing Why" not in shown
    after = index_after(preview)
    assert after == INDEX + "- [Zeta rule](project_zeta_rule.md) — Zeta is how we deploy\n"
    index_diff = card(preview, pk["MEMORY.md"]).split('<details class="edit">')[0]
    assert "project_zeta_rule.md" in index_diff and "epsilon.md" not in index_diff

    assert client.post(url, {**form, "decision": "approve"}).status_code == 302
    root = Path(store.path)
    assert (root / "MEMORY.md").read_text() == after
    written = (root / "project_zeta_rule.md").read_text()
    assert "name: Zeta rule" in written and "type: project" in written and WHY_HOW in written
    assert not (root / "epsilon.md").exists()
    change = ProposalChange.objects.get(pk=epsilon)
    assert change.key == "project_zeta_rule.md" and change.checks == []


def test_a_new_memory_sent_to_the_team_store_is_written_there_and_leaves_the_private_index(
    alice, store, proposal
):
    team = resolve_store(alice, PROJECT, "team")
    client, url, pk = client_for(alice), reverse("proposal", args=[proposal.pk]), ids(proposal)
    form = {"changes": list(map(str, pk.values())), f"scope-{pk['epsilon.md']}": "team"}
    preview = client.post(url, {**form, "decision": "preview"})
    assert "goes to your team store" in card(preview, pk["epsilon.md"])
    assert index_after(preview) == INDEX

    assert client.post(url, {**form, "decision": "approve"}).status_code == 302
    assert (Path(store.path) / "MEMORY.md").read_text() == INDEX
    assert not (Path(store.path) / "epsilon.md").exists()
    written = Path(team.path) / "feedback_epsilon.md"
    assert "name: Epsilon" in written.read_text()
    assert "feedback_epsilon.md" in (Path(team.path) / "MEMORY.md").read_text()
    assert ProposalChange.objects.get(pk=pk["epsilon.md"]).scope == "team"


def test_a_user_memory_cannot_be_sent_to_the_team_store(alice, store):
    resolve_store(alice, PROJECT, "team")
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [ProposedChange("create", "private", "user_role.md", "Role", "Alice leads", "user", "L\n")],
    )
    pk = proposal.changes.get().pk
    url = reverse("proposal", args=[proposal.pk])
    page = text(
        client_for(alice).post(url, {"changes": [pk], f"scope-{pk}": "team", "decision": "approve"})
    )
    assert "A user memory is always private" in page
    assert Proposal.objects.get().status == "pending"
    assert not (Path(store.path) / "user_role.md").exists()


def test_an_extraction_preview_shows_the_edit_as_approving_writes_it(alice, store):
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [ProposedChange("create", "private", "feedback_x.md", "X", "Do x", "feedback", "x\n")],
    )
    pk = proposal.changes.get().pk
    client, url = client_for(alice), reverse("proposal", args=[proposal.pk])
    assert "missing Why and How to apply" in text(client.get(url))
    form = {
        "changes": [pk],
        f"name-{pk}": "Deploy order",
        f"description-{pk}": "Zeta first",
        f"type-{pk}": "project",
        f"body-{pk}": WHY_HOW,
    }
    preview = client.post(url, {**form, "decision": "preview"})
    shown = card(preview, pk)
    assert 'data-key="project_deploy_order.md"' in preview.content.decode()
    assert "missing Why" not in shown and "Checks passed" in shown
    client.post(url, {**form, "decision": "approve"})
    root = Path(store.path)
    assert "type: project" in (root / "project_deploy_order.md").read_text()
    assert (
        "- [Deploy order](project_deploy_order.md) — Zeta first" in (root / "MEMORY.md").read_text()
    )


@pytest.mark.parametrize("kind", ["extraction", "consolidation"])
def test_a_member_removed_mid_review_cannot_approve(alice, bob, kind):
    resolve_store(alice, PROJECT, "private")
    team = resolve_store(alice, PROJECT, "team")
    team.project.members.add(bob)
    change = ProposedChange("create", "team", "project_x.md", "X", "Team x", "project", WHY_HOW)
    proposal = do_propose_changes(kind, team, bob, [change])
    url = reverse("proposal", args=[proposal.pk])
    assert client_for(bob).get(url).status_code == 200  # the review is open

    team.project.members.remove(bob)
    with pytest.raises(AccessLost):
        (do_apply_proposal if kind == "extraction" else do_apply_store_proposal)(proposal, bob)
    pk = proposal.changes.get().pk
    response = client_for(bob).post(url, {"changes": [pk], "decision": "approve"}, follow=True)
    assert response.status_code in (200, 404)  # told so, or the page is gone for them
    if response.status_code == 200:
        assert "you no longer have access to the project acme/widgets" in text(response)
    api = api_client(bob).post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert api.status_code == 404
    assert not (Path(team.path) / "project_x.md").exists()
    assert Proposal.objects.get().status == "pending"
    assert ProposalChange.objects.get().status == "pending"


def test_the_api_shows_the_index_as_approving_writes_it(alice, store):
    proposal = consolidation(
        store,
        alice,
        ProposedChange("update", "private", "alpha.md", "Alpha", "All about alpha", "user", "α\n"),
        index=INDEX + EPSILON_LINE,  # a line for a file nothing creates
    )
    api = api_client(alice)
    [shown] = api.get("/api/v1/proposals").json()["proposals"]
    body = next(c["body"] for c in shown["changes"] if c["file"] == "MEMORY.md")
    assert body == INDEX
    assert {c["scope"] for c in shown["changes"]} == {"private"}
    approved = api.post(f"/api/v1/proposals/{proposal.pk}/approve", {}, format="json")
    assert approved.status_code == 200
    assert (Path(store.path) / "MEMORY.md").read_text() == body


@pytest.mark.django_db(transaction=True)
def test_offline_consolidation_leaves_habits_and_ticks_only_a_date_that_names_one_day(
    alice, settings
):
    settings.ANTHROPIC_API_KEY = ""
    store = resolve_store(alice, PROJECT, "private")
    root = Path(store.path)
    bodies = {
        "project_oncall.md": "On-call coverage is thin at the end of the week.\n",
        "project_deploys.md": "Deploys go out every Friday, so nothing merges Friday afternoon.\n",
        "project_launch.md": "Launch is next month.\n",
        "project_freeze.md": "The freeze starts tomorrow.\n",
    }
    for key, body in bodies.items():
        write_memory(root, key, key[8:-3], "x", "project", body + WHY_HOW)
    lines = [f"- [{key[8:-3]}]({key}) — x" for key in bodies]
    (root / "MEMORY.md").write_text("\n".join(lines) + "\n")
    consolidate_now(store, alice)
    proposal = Proposal.objects.get(kind="consolidation")
    changes = {c.key: c for c in proposal.changes.all()}
    dated = set(changes) - {"MEMORY.md"}
    assert dated == {"project_launch.md", "project_freeze.md"}  # habits are never pinned
    page = client_for(alice).get(reverse("proposal", args=[proposal.pk])).content.decode()
    assert f'value="{changes["project_freeze.md"].pk}" checked' in page
    assert f'value="{changes["project_launch.md"].pk}" checked' not in page
    assert "names no one day" in card_text(page, changes["project_launch.md"].pk)
    found = proposal.consolidation_runs.get().findings["consolidation"]["unresolved"]
    assert ["project_oncall.md", "end of the week"] in found


@pytest.mark.django_db(transaction=True)
def test_a_model_that_pins_a_recurring_phrase_is_never_ticked_for_you(alice, model):
    store = resolve_store(alice, PROJECT, "private")
    root = Path(store.path)
    body = "On-call coverage is thin at the end of the week.\n" + WHY_HOW
    write_memory(root, "project_oncall.md", "On-call", "Thin on-call", "project", body)
    write_memory(root, "project_freeze.md", "Freeze", "The freeze", "project", "Freeze tomorrow.\n")
    lines = "- [On-call](project_oncall.md) — thin\n- [Freeze](project_freeze.md) — freeze\n"
    (root / "MEMORY.md").write_text(lines)
    rescan_store(store)
    pinned = body.replace("at the end of the week", "at Friday 2026-11-27")
    model.propose(
        [
            {
                "action": "update",
                "scope": "private",
                "file": "project_oncall.md",
                "name": "On-call",
                "description": "Thin on-call",
                "type": "project",
                "body": pinned,
                "reason": "absolute dates",
            },
            {
                "action": "update",
                "scope": "private",
                "file": "project_freeze.md",
                "name": "Freeze",
                "description": "The freeze",
                "type": "project",
                "body": "Freeze 2026-03-06.\n",
                "reason": "absolute dates",
            },
        ]
    )
    consolidate_now(store, alice)
    proposal = Proposal.objects.get(kind="consolidation")
    changes = {c.key: c for c in proposal.changes.all()}
    page = client_for(alice).get(reverse("proposal", args=[proposal.pk])).content.decode()
    assert f'value="{changes["project_oncall.md"].pk}" checked' not in page
    assert "“end of the week”, which recurs" in card_text(page, changes["project_oncall.md"].pk)
    assert f'value="{changes["project_freeze.md"].pk}" checked' in page


def test_an_extraction_sent_to_the_team_store_is_written_there(alice, store):
    team = resolve_store(alice, PROJECT, "team")
    proposal = do_propose_changes(
        "extraction",
        store,
        alice,
        [ProposedChange("create", "private", "feedback_x.md", "X", "Do x", "feedback", WHY_HOW)],
    )
    pk = proposal.changes.get().pk
    client, url = client_for(alice), reverse("proposal", args=[proposal.pk])
    form = {"changes": [pk], f"scope-{pk}": "team"}
    assert "goes to your team store" in card(client.post(url, {**form, "decision": "preview"}), pk)
    client.post(url, {**form, "decision": "approve"})
    assert (Path(team.path) / "feedback_x.md").exists()
    assert not (Path(store.path) / "feedback_x.md").exists()
    assert "written to the team store" in text(client.get(url))


def test_a_store_the_project_does_not_have_is_refused_with_the_reason(alice, store, proposal):
    client, url, pk = client_for(alice), reverse("proposal", args=[proposal.pk]), ids(proposal)
    form = {"changes": list(map(str, pk.values())), f"scope-{pk['epsilon.md']}": "team"}
    preview = text(client.post(url, {**form, "decision": "preview"}))
    assert "you have no team store in the project acme/widgets" in preview
    approve = text(client.post(url, {**form, "decision": "approve"}))
    assert "Nothing was written: epsilon.md: you have no team store" in approve
    assert Proposal.objects.get().status == "pending"
    assert (Path(store.path) / "MEMORY.md").read_text() == INDEX


def test_a_refused_approval_shows_the_review_with_the_edits_kept(alice, store, proposal):
    client, url, pk = client_for(alice), reverse("proposal", args=[proposal.pk]), ids(proposal)
    form = {f"name-{pk['epsilon.md']}": "Zeta rule", f"type-{pk['epsilon.md']}": "project"}
    page = client.post(url, {**form, "decision": "approve"})  # nothing ticked
    assert "Tick the changes to approve." in text(page)
    assert 'data-key="project_zeta_rule.md"' in page.content.decode()


def test_an_unticked_delete_keeps_its_memory_and_its_index_line(alice, store):
    without_beta = INDEX.replace("- [Beta](beta.md) — b\n", "")
    proposal = consolidation(
        store,
        alice,
        ProposedChange("delete", "private", "beta.md", reason="merged into alpha.md"),
        index=without_beta,
    )
    client, url, pk = client_for(alice), reverse("proposal", args=[proposal.pk]), ids(proposal)
    assert index_after(client.get(url)) == without_beta
    form = {"changes": [str(pk["MEMORY.md"])]}
    preview = client.post(url, {**form, "decision": "preview"})
    assert index_after(preview) == INDEX
    assert client.post(url, {**form, "decision": "approve"}).status_code == 302
    assert (Path(store.path) / "MEMORY.md").read_text() == INDEX
    assert (Path(store.path) / "beta.md").exists()
