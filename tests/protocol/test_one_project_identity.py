"""Issue 22's sequence end to end (docs/design.md §1, §17): a project discovered on the admin's
host under Claude Code's directory name, a member's agent that knows it by its repo slug, the
slug set by staff on the project page, the member syncing. Real git remote, a temp Claude
config home, the real `memhub-agent` against a live server."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from memapp.memdir.paths import sanitize_path
from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Project, Store, TrashItem
from memapp.stores.tokens import do_create_api_token
from teamsync.models import HeldDeletion
from teamsync.service import do_sync_team
from tests.client.conftest import Machine, Server, git_checkout, topic
from tests.teamsync.gitutil import make_bare, tip_files
from tests.web.memory_pages import text

pytestmark = pytest.mark.django_db(transaction=True)

TEAM = {
    "project_code_owners.md": topic("Code owners", "who reviews what", "project"),
    "project_on_call.md": topic("On-call rota", "who is on call", "project"),
    "feedback_migrations.md": topic("Migrations", "one per change", "feedback"),
}
INDEX = "".join(f"- [{k}]({k}) — team\n" for k in TEAM)
BOBS = topic("Staging", "staging resets nightly", "project")


def _topics(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in root.glob("*.md") if p.name != "MEMORY.md"}


def test_discover_then_a_members_slug_then_staff_set_it_loses_nothing_and_shows_one_project(
    live_server, settings, tmp_path, monkeypatch, client, alice, bob
):
    settings.MEMHUB_DATA_DIR = tmp_path / "data"
    settings.MEMHUB_DISCOVER = False  # run by hand below, as the background clock would
    remote = make_bare(tmp_path / "team.git")
    settings.MEMHUB_TEAM_REMOTE = str(remote)

    # The admin's host: a checkout with no remote yet, and Claude Code's team memory of it.
    config = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    checkout = git_checkout(tmp_path / "ux-demo", remote=None)
    dirname = sanitize_path(str(checkout))
    team_dir = config / "projects" / dirname / "memory" / "team"
    team_dir.mkdir(parents=True)
    for key, body in TEAM.items():
        (team_dir / key).write_text(body)
    (team_dir / "MEMORY.md").write_text(INDEX)
    discover_local_stores(config)
    project = Project.objects.get(key=dirname)
    assert str(project) == str(checkout)
    project.members.add(bob)
    do_sync_team()
    assert set(tip_files(remote, dirname)) == {*TEAM, "MEMORY.md"}

    # Bob's agent knows the project by its slug; memhub does not yet.
    _, token = do_create_api_token(bob, "desktop")
    home = tmp_path / "bob" / "home"
    desktop = Machine(
        home, git_checkout(home / "work" / "payments", "git@github.com:acme/payments.git")
    )
    desktop.login(Server(live_server.url, token))
    (desktop.memory_dir / "team").mkdir(parents=True)
    (desktop.memory_dir / "team" / "project_staging.md").write_text(BOBS)
    (desktop.memory_dir / "team" / "MEMORY.md").write_text(
        "- [Staging](project_staging.md) — resets nightly\n"
    )
    refused = desktop.run("team", "sync")
    assert refused.returncode == 5 and refused.stdout == ""
    assert refused.stderr == (
        "memhub-agent: memhub has no project acme/payments that you can reach: if it is there "
        "under another name, staff can give it this repo slug on its project page; if you are "
        "not one of its members, staff can add you.\n"
    )
    assert "ask an admin" not in refused.stderr
    assert Project.objects.count() == 1

    # Staff set the slug on the project's page; the server's git sync moves the folder.
    client.force_login(alice)
    saved = client.post(
        reverse("project_identity", args=[project.pk]),
        {"slug": "acme/payments", "aliases": dirname},
        follow=True,
    )
    assert "Saved: this project is acme/payments." in text(saved)
    do_sync_team()
    discover_local_stores(config)  # discovery every minute: the directory name is an alias

    # Bob syncs: he gets the team's memories and shares his own.
    synced = desktop.run("team", "sync")
    # Both sides' MEMORY.md differ: merged line by line (docs/design.md §17), not replaced.
    assert synced.returncode == 0, synced.stderr
    assert synced.stderr == (
        "MEMORY.md: changed here and on the server; merged line by line (every entry of both "
        "kept)\n"
    )
    # pulled: the 3 topics and the index; pushed: Bob's topic and the merged index
    assert synced.stdout.startswith("team acme/payments: pulled 4, pushed 2 ")
    do_sync_team()

    everything = {**TEAM, "project_staging.md": BOBS}
    assert _topics(team_dir) == everything  # the admin's real team directory
    assert _topics(desktop.memory_dir / "team") == everything
    shared = tip_files(remote, "acme/payments")
    assert {k: v for k, v in shared.items() if k != "MEMORY.md"} == everything
    assert tip_files(remote, dirname) == {}  # moved, not copied
    for index in (
        (team_dir / "MEMORY.md").read_text(),
        (desktop.memory_dir / "team" / "MEMORY.md").read_text(),
        shared["MEMORY.md"],
    ):
        assert all(f"]({key})" in index for key in everything), index  # the team's and Bob's
    assert not TrashItem.objects.exists() and not HeldDeletion.objects.exists()
    assert list(Project.objects.values_list("key", flat=True)) == ["acme/payments"]
    assert Store.objects.filter(kind="team").count() == 1
    project.refresh_from_db()
    assert str(project) == "acme/payments"
    assert list(project.aliases.values_list("name", flat=True)) == [dirname]
