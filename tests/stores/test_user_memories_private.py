""" "user" memories are private (issue 24): a memory about a person never goes into team memory
without that person's explicit tick — not proposed by extraction, not shared, not imported —
and a protocol PUT of one is refused naming the rule; the lint flags those already there."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from memapp.memdir.extraction import USER_PRIVATE_REASON, Target, validate_changes
from memapp.memdir.lint import memory_warnings
from memapp.memdir.store_files import FileRejected
from memapp.stores.actions import do_import_files, do_share_memories
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Project
from memapp.stores.projects import resolve_store
from tests.admin_ui.conftest import client_for, text
from tests.api.conftest import api_client
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

PROJECT = "acme/widgets"
ROLE = "---\nname: Role\ndescription: Alice leads the backend team\ntype: user\n---\nLead.\n"
DEPLOYS = "---\nname: Deploys\ndescription: Deploys go out on Tuesdays\ntype: project\n---\nTue.\n"


@pytest.fixture
def stores(alice):
    project = Project.objects.create(key=PROJECT, repo_slug=PROJECT)
    project.members.add(alice)
    private = resolve_store(alice, PROJECT, "private")
    team = resolve_store(alice, PROJECT, "team")
    write_memory(Path(private.path), "user_role.md", "Role", "Alice leads the backend team", "user")
    rescan_store(private)
    return private, team


def test_extraction_never_proposes_a_user_memory_into_team_memory(tmp_path):
    targets = {"private": Target(tmp_path / "p"), "team": Target(tmp_path / "t")}
    change = {
        "action": "create",
        "file": "user_role.md",
        "name": "Role",
        "description": "Alice leads the backend team",
        "type": "user",
        "body": "Lead.",
        "reason": "she said so",
    }
    kept, dropped = validate_changes(
        [{**change, "scope": "team"}, {**change, "scope": "private"}], targets
    )
    assert [(c.scope, c.file) for c in kept] == [("private", "user_role.md")]
    assert [(d.index, d.reason) for d in dropped] == [(0, USER_PRIVATE_REASON)]


def test_sharing_a_user_memory_needs_the_persons_tick(alice, stores):
    private, team = stores
    with pytest.raises(FileRejected) as refused:
        do_share_memories(private, alice, ["user_role.md"])
    assert refused.value.code == "user_memory_private"
    assert not (Path(team.path) / "user_role.md").exists()
    assert do_share_memories(private, alice, ["user_role.md"], allow_user=True) == {
        "user_role.md": "user_role.md"
    }


def test_the_memory_page_asks_for_the_tick(alice, stores):
    private, team = stores
    client = client_for(alice)
    url = reverse("memory", kwargs={"store_id": private.pk, "path": "user_role.md"})
    assert "It is about me, and I mean to share it" in text(client.get(url))
    share = reverse("memory_share", kwargs={"store_id": private.pk, "path": "user_role.md"})
    page = text(client.post(share, {"confirm": "yes"}, follow=True))
    assert "Not shared: user_role.md: user memories are about a person and stay private" in page
    client.post(share, {"allow_user": "yes", "confirm": "yes"})
    assert (Path(team.path) / "user_role.md").is_file()


def test_importing_user_memories_into_a_team_store_needs_the_tick(alice, stores):
    _, team = stores
    files = {"user_role.md": ROLE, "project_deploys.md": DEPLOYS}
    with pytest.raises(FileRejected, match="stay private"):
        do_import_files(team, alice, files, {}, replace=False)
    assert not (Path(team.path) / "project_deploys.md").exists()  # nothing at all
    do_import_files(team, alice, files, {}, replace=False, allow_user=True)
    assert (Path(team.path) / "user_role.md").is_file()


def test_a_protocol_put_of_a_user_memory_is_refused_naming_the_rule(alice, stores):
    _, team = stores
    url = "/api/claude_code/team_memory?repo=acme%2Fwidgets"
    body = {"entries": {"user_role.md": ROLE, "project_deploys.md": DEPLOYS}}
    refused = api_client(alice).put(url, body, format="json")
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "team_memory_user_memory"
    assert error["details"]["entries"] == [{"key": "user_role.md", "rule": "user_memory_private"}]
    assert not (Path(team.path) / "project_deploys.md").exists()


def test_an_api_write_of_a_user_memory_into_team_memory_is_refused(alice, stores):
    """The files API, its batch and `remember` have no box to tick (nor the MCP server's
    writes, which go through the files' write path as the API's do)."""
    _, team = stores
    api = api_client(alice)
    refused = api.put(
        f"/api/v1/stores/{team.pk}/files/user_role.md", {"content": ROLE}, format="json"
    )
    assert refused.status_code == 422
    assert refused.json()["error"]["code"] == "user_memory_private"
    batch = {"files": {"user_role.md": ROLE, "project_deploys.md": DEPLOYS}}
    assert api.post(f"/api/v1/stores/{team.pk}/batch", batch, format="json").status_code == 422
    assert list(Path(team.path).iterdir()) == []
    remembered = api.post(
        "/api/v1/remember",
        {"store": team.pk, "type": "user", "name": "Role", "description": "Alice leads"},
        format="json",
    )
    assert remembered.status_code == 422
    assert remembered.json()["error"]["code"] == "user_memory_private"
    assert list(Path(team.path).iterdir()) == []
    fine = api.put(
        f"/api/v1/stores/{team.pk}/files/project_deploys.md", {"content": DEPLOYS}, format="json"
    )
    assert fine.status_code == 201


def test_the_lint_flags_user_memories_already_in_team_memory(alice, stores):
    _, team = stores
    assert memory_warnings("user", "Lead.", "Alice leads", team=True)[0].startswith(
        "User memories are private"
    )
    assert memory_warnings("user", "Lead.", "Alice leads") == []
    (Path(team.path) / "user_role.md").write_text(ROLE)
    rescan_store(team)
    page = text(client_for(alice).get(reverse("store_health", kwargs={"store_id": team.pk})))
    assert "User memories in team memory (1)" in page
