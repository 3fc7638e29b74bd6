"""Team work inside memhub: staff manage members, everyone changes their own password, a
private memory is shared with the team through the secret filter."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from memapp.stores.history import timeline
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event
from tests.conftest import PASSWORD, write_memory
from tests.memdir.test_secret_rules import fake_tokens
from tests.web.memory_pages import root, text, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(stores, alice):
    project = stores.team.project
    project.members.add(alice)
    return project


# -- members ---------------------------------------------------------------------------------------


def test_staff_add_and_remove_members(client, project, sam, bob):
    client.force_login(sam)
    members = reverse("project_members", args=[project.pk])
    assert project.key in text(client.get(reverse("projects")))
    response = client.post(members, {"user": bob.pk}, follow=True)
    assert f"bob is now a member of {project}." in text(response)
    assert project.members.filter(pk=bob.pk).exists()
    remove = reverse("member_remove", args=[project.pk, bob.pk])
    assert "Remove bob from" in text(client.post(remove))  # it asks first
    assert project.members.filter(pk=bob.pk).exists()
    response = client.post(remove, {"sure": "yes"}, follow=True)
    assert "bob is no longer a member" in text(response)
    assert not project.members.filter(pk=bob.pk).exists()
    assert [e.kind for e in Event.objects.order_by("pk")][-2:] == ["member_added", "member_removed"]


def test_a_new_member_sees_the_team_store_and_a_removed_one_no_longer(client, project, sam, bob):
    team = reverse("store", args=[project.stores.get(kind="team").pk])
    client.force_login(bob)
    assert client.get(team).status_code == 404
    project.members.add(bob)
    assert client.get(team).status_code == 200
    client.force_login(sam)
    client.post(reverse("member_remove", args=[project.pk, bob.pk]), {"sure": "yes"})
    client.force_login(bob)
    assert client.get(team).status_code == 404


def test_only_staff_manage_members(client, project, alice, bob):
    client.force_login(bob)
    assert client.get(reverse("projects")).status_code == 404
    assert (
        client.post(reverse("project_members", args=[project.pk]), {"user": bob.pk}).status_code
        == 404
    )
    assert not project.members.filter(pk=bob.pk).exists()


# -- password --------------------------------------------------------------------------------------


def test_everyone_changes_their_own_password(client, bob):
    client.force_login(bob)
    assert 'href="/profile/password/"' in client.get(reverse("home")).content.decode()
    response = client.post(
        reverse("password_change"),
        {"old_password": "wrong", "new_password1": "x", "new_password2": "x"},
    )
    assert "Your old password was entered incorrectly" in text(response)
    new = "a much longer passphrase 42"
    response = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": new, "new_password2": new},
        follow=True,
    )
    assert "Password changed" in text(response)
    bob.refresh_from_db()
    assert bob.check_password(new)
    assert client.get(reverse("home")).status_code == 200  # still logged in


# -- share with the team ---------------------------------------------------------------------------


def test_a_private_memory_is_shared_with_the_team_with_its_index_line(
    client, project, stores, alice
):
    client.force_login(alice)
    page = client.get(url("memory", stores.private, "feedback_tests.md")).content.decode()
    assert "Share with the team" in page
    share = url("memory_share", stores.private, "feedback_tests.md")
    preview = text(client.post(share))  # it asks first, showing what teammates will read
    assert "Share “Real DB” with the team?" in preview
    assert "What teammates will see" in preview and "Body." in preview
    assert not (root(stores.team) / "feedback_tests.md").exists()
    response = client.post(share, {"confirm": "yes"}, follow=True)
    assert "Shared with the team as feedback_tests.md." in text(response)
    team_root = root(stores.team)
    assert (team_root / "feedback_tests.md").read_bytes() == (
        root(stores.private) / "feedback_tests.md"
    ).read_bytes()
    assert "- [Real DB](feedback_tests.md) — no mocks" in (team_root / "MEMORY.md").read_text()
    [version] = timeline(stores.team, "feedback_tests.md")
    assert (version.user, version.note) == (alice, "shared from alice's private memory")
    # Sharing again changes nothing; a different memory of that name is never overwritten.
    client.post(share, {"confirm": "yes"})
    assert len(timeline(stores.team, "feedback_tests.md")) == 1
    write_memory(team_root, "user_role.md", "Someone else", "A teammate's memory", "user")
    share_role = url("memory_share", stores.private, "user_role.md")
    preview = text(client.post(share_role, {"allow_user": "yes"}))
    assert "so the copy is user_role-shared.md" in preview
    response = client.post(share_role, {"allow_user": "yes", "confirm": "yes"}, follow=True)
    assert "Shared with the team as user_role-shared.md." in text(response)
    assert "Someone else" in (team_root / "user_role.md").read_text()


def test_a_memory_with_a_secret_is_never_shared(client, project, stores, alice):
    token = next(iter(fake_tokens(1).values()))
    body = f"The CI token:\n{token}\n"
    write_memory(root(stores.private), "reference_ci.md", "CI", "CI access", "reference", body)
    rescan_store(stores.private)
    client.force_login(alice)
    share = url("memory_share", stores.private, "reference_ci.md")
    response = client.post(share, {"confirm": "yes"}, follow=True)
    [message] = [m.message for m in response.context["messages"]]
    assert message.startswith("Not shared: refused: reference_ci.md (") and ", line 7)" in message
    assert token not in message
    assert not (root(stores.team) / "reference_ci.md").exists()


def test_team_and_agent_memories_offer_no_share(client, project, stores, alice):
    client.force_login(alice)
    team_page = client.get(url("memory", stores.team, "project_release.md")).content.decode()
    assert "Share with the team" not in team_page
    assert client.post(url("memory_share", stores.team, "project_release.md")).status_code == 302
    assert not Path(stores.team.path, "project_release-shared.md").exists()


def test_what_the_validators_say_of_a_new_password_is_under_that_field(client, bob):
    client.force_login(bob)
    response = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": "short", "new_password2": "short"},
    )
    form = response.context["form"]
    assert "This password is too short" in " ".join(form.errors["new_password1"])
    assert "new_password2" not in form.errors
    page = response.content.decode()
    first, again = page.index('id="id_new_password1"'), page.index('id="id_new_password2"')
    assert first < page.index("This password is too short") < again
