"""A project's identity on its page (docs/design.md §1): staff set its repo slug and aliases,
and merge two projects that turn out to be one without losing a line."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from memapp.lifecycle.models import Session
from memapp.stores.actions import do_put_files
from memapp.stores.models import Event, MemoryVersion, Project, Store
from memapp.stores.projects import find_project, resolve_store
from tests.web.memory_pages import text

pytestmark = pytest.mark.django_db

CODE_OWNERS = "---\nname: Code owners\ndescription: who reviews what\ntype: project\n---\nAna.\n"
ON_CALL = "---\nname: On-call rota\ndescription: who is on call\ntype: project\n---\nBob.\n"
ON_CALL_2 = "---\nname: On-call rota\ndescription: who is on call\ntype: project\n---\nCai.\n"


@pytest.fixture
def discovered(stores, alice) -> Project:
    """The project discovery found on the host, keyed by Claude Code's directory name."""
    team = Path(stores.team.path)
    (team / "code_owners.md").write_text(CODE_OWNERS)
    (team / "on_call.md").write_text(ON_CALL)
    (team / "MEMORY.md").write_text(
        "- [Code owners](code_owners.md) — who reviews what\n"
        "- [On-call rota](on_call.md) — who is on call\n"
    )
    return stores.team.project


def _page(client, project: Project) -> str:
    return text(client.get(reverse("project_members", args=[project.pk])))


def test_staff_set_the_slug_on_the_project_page_and_the_old_key_stays_an_alias(
    client, discovered, sam
):
    client.force_login(sam)
    old = discovered.key
    page = _page(client, discovered)
    assert "This project has no repo slug yet" in page
    response = client.post(
        reverse("project_identity", args=[discovered.pk]),
        {"slug": "acme/payments", "aliases": old},
        follow=True,
    )
    assert "Saved: this project is acme/payments. Team sync moves its team folder" in text(response)
    discovered.refresh_from_db()
    assert (discovered.key, discovered.repo_slug, str(discovered)) == ("acme/payments",) * 3
    assert find_project(old) == discovered == find_project("acme/payments")
    assert Project.objects.count() == 1
    assert "Agents find this project by its repo slug acme/payments" in _page(client, discovered)
    event = Event.objects.get(kind="project_renamed")
    assert (event.fields["old"], event.fields["new"], event.user) == (old, "acme/payments", sam)


def test_the_old_key_stays_an_alias_even_when_the_form_lists_none(client, discovered, sam):
    client.force_login(sam)
    old = discovered.key
    url = reverse("project_identity", args=[discovered.pk])
    assert client.post(url, {"slug": "acme/payments", "aliases": ""}).status_code == 302
    assert find_project(old) == discovered
    response = client.post(url, {"slug": "", "aliases": f"{old}\n-home-bob-payments"})
    assert response.status_code == 302  # no slug given: the slug stays, the aliases are set
    discovered.refresh_from_db()
    assert discovered.key == "acme/payments"
    assert sorted(discovered.aliases.values_list("name", flat=True)) == sorted(
        [old, "-home-bob-payments"]
    )


@pytest.mark.parametrize("slug", ["payments", "acme/payments/extra", "../x", "acme/..", "a b/c"])
def test_a_slug_that_is_not_owner_repo_is_refused_with_a_reason(client, discovered, sam, slug):
    client.force_login(sam)
    old = discovered.key
    response = client.post(
        reverse("project_identity", args=[discovered.pk]), {"slug": slug, "aliases": ""}
    )
    assert response.status_code == 400
    page = text(response)
    assert "write it as owner/repo (e.g. acme/payments)" in page
    discovered.refresh_from_db()
    assert (discovered.key, discovered.repo_slug) == (old, "")


def test_an_alias_that_names_another_project_is_refused(client, discovered, sam):
    other = Project.objects.create(key="acme/billing", repo_slug="acme/billing")
    client.force_login(sam)
    response = client.post(
        reverse("project_identity", args=[discovered.pk]),
        {"slug": "acme/payments", "aliases": "acme/billing"},
    )
    assert response.status_code == 400
    assert "acme/billing already names the project acme/billing: an alias points at one" in text(
        response
    )
    discovered.refresh_from_db()
    assert discovered.repo_slug == ""  # nothing of the form was saved
    assert find_project("acme/billing") == other


def test_a_slug_another_project_has_asks_for_a_merge(client, discovered, sam):
    Project.objects.create(key="acme/payments", repo_slug="acme/payments")
    client.force_login(sam)
    response = client.post(
        reverse("project_identity", args=[discovered.pk]), {"slug": "acme/payments"}
    )
    assert response.status_code == 400
    assert "acme/payments is already the project acme/payments: merge the two projects" in text(
        response
    )


def test_merging_moves_stores_members_history_and_sessions_without_losing_a_line(
    client, discovered, alice, bob, sam
):
    """The member's agent made `acme/payments` (a managed team store) before anyone knew it
    was the project discovered on the host: merged, every file and line is in one store."""
    other = Project.objects.create(key="acme/payments", repo_slug="acme/payments")
    other.members.add(bob)
    team = resolve_store(bob, "acme/payments", "team")
    do_put_files(
        team,
        bob,
        {
            "on_call.md": ON_CALL_2,
            "deploys.md": CODE_OWNERS.replace("Code owners", "Deploys"),
            "MEMORY.md": "- [On-call rota](on_call.md) — who is on call\n"
            "- [Deploys](deploys.md) — who reviews what\n",
        },
    )
    session = Session.objects.create(owner=bob, project=other, session_id="s1")
    bob_private = resolve_store(bob, "acme/payments", "private")
    client.force_login(sam)
    response = client.post(
        reverse("project_merge", args=[other.pk]),
        {"source": discovered.pk, "confirm": "on"},
        follow=True,
    )
    assert f"Merged {discovered.key} into acme/payments" in text(response)
    assert Project.objects.count() == 1
    other.refresh_from_db()
    assert set(other.members.all()) == {alice, bob}
    keeper = other.stores.get(kind="team")
    assert keeper.origin == Store.Origin.DISCOVERED  # the directory the host's agent writes to
    files = {p.name: p.read_text() for p in Path(keeper.path).glob("*.md")}
    assert files["code_owners.md"] == CODE_OWNERS
    assert files["on_call.md"] == ON_CALL
    assert files["on_call-from-" + str(other.pk) + ".md"] == ON_CALL_2
    assert "Deploys" in files["deploys.md"]
    index = files["MEMORY.md"].splitlines()
    assert "- [Code owners](code_owners.md) — who reviews what" in index
    assert f"- [On-call rota](on_call-from-{other.pk}.md) — who is on call" in index
    assert "- [Deploys](deploys.md) — who reviews what" in index
    assert MemoryVersion.objects.filter(store=keeper, path="deploys.md").count() >= 2
    assert not Store.objects.filter(pk=team.pk).exists()
    session.refresh_from_db()
    bob_private.refresh_from_db()
    assert session.project == other and bob_private.project == other
    assert find_project(discovered.key) == other
    assert Event.objects.filter(kind="projects_merged").count() == 1


def test_merging_needs_the_box_ticked_and_staff(client, discovered, bob, sam):
    other = Project.objects.create(key="acme/payments", repo_slug="acme/payments")
    client.force_login(sam)
    response = client.post(reverse("project_merge", args=[other.pk]), {"source": discovered.pk})
    assert response.status_code == 400
    assert Project.objects.count() == 2
    client.force_login(bob)
    for name in ("project_merge", "project_identity"):
        response = client.post(
            reverse(name, args=[other.pk]),
            {"source": discovered.pk, "confirm": "on", "slug": "acme/x"},
        )
        assert response.status_code == 404
    assert Project.objects.count() == 2
