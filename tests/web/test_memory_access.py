"""Who may see and change one memory: its owner, teammates, outsiders and staff."""

from __future__ import annotations

import pytest

from memapp.stores.models import MemoryFile, Store
from tests.web.memory_pages import files_on_disk, root, text, url

pytestmark = pytest.mark.django_db


def memory_requests(store: Store, path: str) -> list[tuple[str, str, dict]]:
    edit = {"name": "Changed", "description": "Changed by someone else", "type": "user"}
    return [
        ("get", url("memory", store, path), {}),
        ("get", url("memory_edit", store, path), {}),
        ("post", url("memory_edit", store, path), edit),
        ("get", url("memory_forget", store, path), {}),
        ("post", url("memory_forget", store, path), {}),
    ]


def test_the_owner_reaches_every_page_of_her_private_memory(client, stores, alice):
    client.force_login(alice)
    for method, address, _ in memory_requests(stores.private, "user_role.md"):
        if method == "get":
            assert client.get(address).status_code == 200, address


@pytest.mark.parametrize("username", ["bob", "charlie", "sam"])
def test_a_private_memory_is_a_404_for_teammate_outsider_and_staff(
    client, stores, memory_base, bob, charlie, sam, username
):
    stores.private.project.members.add(bob)
    before = files_on_disk(memory_base)
    client.force_login({"bob": bob, "charlie": charlie, "sam": sam}[username])
    for store, path in ((stores.private, "user_role.md"), (stores.agent, "reference_style.md")):
        for method, address, data in memory_requests(store, path):
            assert getattr(client, method)(address, data).status_code == 404, (username, address)
    assert files_on_disk(memory_base) == before
    assert MemoryFile.objects.count() == 4


def test_a_team_memory_is_open_to_project_members_only(client, stores, bob, charlie, sam):
    team = stores.team
    stores.team.project.members.add(bob)
    client.force_login(bob)
    page = client.get(url("memory", team, "project_release.md"))
    assert page.status_code == 200
    assert "Release freeze 2026-03-05" in text(page)
    assert client.get(url("memory_edit", team, "project_release.md")).status_code == 200
    for user in (charlie, sam):
        client.force_login(user)
        for method, address, data in memory_requests(team, "project_release.md"):
            assert getattr(client, method)(address, data).status_code == 404, (user, address)
    assert (root(team) / "project_release.md").exists()


def test_a_memory_outside_the_store_is_a_404(client, stores, alice):
    client.force_login(alice)
    # The team memory is not part of the private store, though it lies in its directory.
    assert client.get(url("memory", stores.private, "team/project_release.md")).status_code == 404
    assert client.get(url("memory", stores.private, "../x.md")).status_code == 404
