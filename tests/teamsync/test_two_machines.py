"""Two members, two machines, one team repository: alice's memhub is this test process, bea's
runs as `manage.py` subprocesses with a data dir, a database and a ~/.claude of her own. What
one member's Claude Code (or memhub UI) writes to the team directory appears in the other's
`~/.claude/projects/<p>/memory/team/` after a push and a pull."""

from __future__ import annotations

import pytest

from memapp.stores.actions import do_save_memory
from memapp.stores.discovery import discover_local_stores
from memapp.stores.models import Project, Store
from teamsync.service import do_sync_team
from tests.conftest import write_memory
from tests.teamsync.gitutil import MARKERS, git, history, tip_files
from tests.teamsync.instance import Instance

pytestmark = pytest.mark.django_db

RELEASE_BODY = (
    "Release freeze starts 2026-03-05.\n\n"
    "**Why:** the March launch.\n**How to apply:** no merges to main after it.\n"
)


def _index_lines(team) -> list[str]:
    return (team / "MEMORY.md").read_text().splitlines()


def _alice_machine(tmp_path, project_dir: str):
    base = tmp_path / "alice-claude"
    team = base / "projects" / project_dir / "memory" / "team"
    write_memory(team, "project_release.md", "Release", "Freeze on 2026-03-05", "project",
                 RELEASE_BODY)  # fmt: skip
    (team / "MEMORY.md").write_text("- [Release](project_release.md) — freeze date\n")
    discover_local_stores(base)
    return team, Store.objects.get(kind=Store.Kind.TEAM)


def _bea_machine(tmp_path, remote, project_dir: str) -> tuple[Instance, object]:
    bea = Instance(tmp_path / "bea-data", tmp_path / "bea-claude", remote, admin="bea")
    team = bea.team_dir(project_dir)
    write_memory(team, "reference_oncall.md", "On-call", "Who carries the pager", "reference",
                 "Bea carries the pager in March.\n")  # fmt: skip
    (team / "MEMORY.md").write_text("- [On-call](reference_oncall.md) — who carries the pager\n")
    bea.start()
    return bea, team


def test_two_members_on_two_machines_share_their_team_memory(tmp_path, alice, remote):
    project_dir = "-home-dev-app"  # both keep the checkout at /home/dev/app
    team1, store1 = _alice_machine(tmp_path, project_dir)
    assert do_sync_team().pushed
    bea, team2 = _bea_machine(tmp_path, remote, project_dir)

    # bea's first push brings alice's memory down and sends hers up.
    out = bea.run("teamsync", "push").stdout
    assert "pushed yes" in out
    assert (team2 / "project_release.md").read_text() == (team1 / "project_release.md").read_text()
    do_sync_team()
    assert (team1 / "reference_oncall.md").read_text() == (
        team2 / "reference_oncall.md"
    ).read_text()
    # Both indexes were new on each side: their entries are unioned, each once.
    both = [
        "- [On-call](reference_oncall.md) — who carries the pager",
        "- [Release](project_release.md) — freeze date",
    ]
    assert sorted(_index_lines(team1)) == both
    assert _index_lines(team2) == _index_lines(team1)

    # alice writes through memhub's UI; bea's Claude Code finds it after a pull.
    file = do_save_memory(
        store1,
        alice,
        name="Staging database",
        description="Staging is reset every Monday",
        memory_type="project",
        body="Staging is reset every Monday at 06:00 UTC.\n",
    )
    do_sync_team()
    assert "written 2" in bea.run("teamsync", "pull").stdout
    assert (team2 / file.path).read_text() == (team1 / file.path).read_text()
    assert "- [Staging database](project_staging_database.md)" in (team2 / "MEMORY.md").read_text()

    # bea's agent edits a memory in place; alice's store and mirror follow.
    edited = (team2 / "project_release.md").read_text().replace("2026-03-05", "2026-03-12")
    (team2 / "project_release.md").write_text(edited)
    assert "pushed yes" in bea.run("teamsync", "push").stdout
    report = do_sync_team()
    assert report.written == 1
    assert (team1 / "project_release.md").read_text() == edited
    assert "2026-03-12" in store1.files.get(path="project_release.md").body

    # Each change is in the shared history under its author; no conflict, no marker.
    folder = project_dir

    def by(path: str) -> list[str]:
        return git(remote, "log", "--format=%an", "main", "--", f"{folder}/{path}").split()

    assert by("reference_oncall.md") == ["bea"]
    assert by("project_release.md") == ["bea", "alice"]
    assert by("project_staging_database.md") == ["alice"]
    assert not any(marker in history(remote) for marker in MARKERS)
    assert set(tip_files(remote, folder)) == {
        "MEMORY.md",
        "project_release.md",
        "project_staging_database.md",
        "reference_oncall.md",
    }


def test_projects_linked_by_repo_slug_meet_in_the_owner_repo_folder(tmp_path, alice, remote):
    team1, store1 = _alice_machine(tmp_path, "-home-alice-src-app")
    Project.objects.filter(pk=store1.project_id).update(repo_slug="acme/app")
    do_sync_team()
    bea, team2 = _bea_machine(tmp_path, remote, "-Users-bea-code-app")
    bea.run(
        "shell",
        "-c",
        "from memapp.stores.models import Project; "
        "Project.objects.filter(key='-Users-bea-code-app').update(repo_slug='acme/app')",
    )
    bea.run("teamsync", "push")
    do_sync_team()
    assert set(tip_files(remote, "acme/app")) == {
        "MEMORY.md",
        "project_release.md",
        "reference_oncall.md",
    }
    assert (team2 / "project_release.md").exists() and (team1 / "reference_oncall.md").exists()
    assert git(remote, "ls-tree", "--name-only", "main").split() == [".gitattributes", "acme"]
