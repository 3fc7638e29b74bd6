"""Membership is checked at every door (docs/design.md §21): bob, a member of alice's project,
reaches its team store, its files, history, trash, conflicts, logs and consolidation, and the
proposals he started on it, on the web and through the API; once staff take him out of the
project, the same requests are a 404 (nothing written, nothing pushed) and what he still sees
(his sessions, search, events, the dashboard) holds nothing of the team store."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from django.urls import reverse

from memapp.lifecycle.models import Proposal, ProposalChange, Session
from memapp.stores.actions import do_forget_memory
from memapp.stores.events import record_event
from memapp.stores.members import do_remove_member
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event, MemoryVersion, Store
from memapp.stores.projects import no_project_message, resolve_store
from teamsync.models import TeamConflict
from tests.api.conftest import api_client
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

RELEASE = "project_release.md"


@pytest.fixture
def team(stores, alice, bob, sam) -> SimpleNamespace:
    """Alice's project with bob as a member: a team memory to forget, one in the Trash, a
    conflict, a daily log, and a proposal bob started on the team store."""
    store: Store = stores.team
    project = store.project
    project.repo_slug = "acme/app"
    project.save(update_fields=["repo_slug"])
    project.members.add(alice, bob)
    write_memory(Path(store.path), "project_oncall.md", "On-call", "Who is on call", "project")
    do_forget_memory(store, alice, "project_oncall.md")
    logs = Path(store.path) / "logs" / "2026" / "11"
    logs.mkdir(parents=True)
    (logs / "2026-11-20.md").write_text("- 10:00 decided to freeze releases\n")
    conflict = TeamConflict.objects.create(
        store=store, key=RELEASE, kind="edit", base="a\n", ours="b\n", theirs="c\n"
    )
    private = resolve_store(bob, "acme/app", "private")
    session = Session.objects.create(owner=bob, project=project, store=private, session_id="s-bob")
    proposal = Proposal.objects.create(kind="extraction", store=store, owner=bob)
    proposal.sessions.add(session)
    change = ProposalChange.objects.create(
        proposal=proposal,
        action="create",
        key="project_freeze.md",
        name="Freeze",
        description="Releases freeze on Fridays",
        type="project",
        body="No deploys on Fridays.\n",
        status="conflict",
        current_text="",
    )
    record_event("memory_written", store=store, user=alice, path=RELEASE, via="ui", created=False)
    return SimpleNamespace(
        store=store,
        project=project,
        version=MemoryVersion.objects.filter(store=store, path=RELEASE).latest("pk"),
        trash=store.trash.get(),
        conflict=conflict,
        session=session,
        proposal=proposal,
        change=change,
        sam=sam,
    )


def remove_bob(team, bob) -> None:
    assert do_remove_member(team.project, bob, by=team.sam)


def web_doors(team) -> dict[str, str]:
    """Every page of the web UI that shows or changes the team store or a proposal on it."""
    s, m = team.store.pk, RELEASE
    return {
        "store": reverse("store", args=[s]),
        "store_health": reverse("store_health", args=[s]),
        "consolidation_panel": reverse("consolidation_panel", args=[s]),
        "daily_logs": reverse("daily_logs", args=[s]),
        "memory_create": reverse("memory_create", args=[s]),
        "memory": reverse("memory", args=[s, m]),
        "memory_edit": reverse("memory_edit", args=[s, m]),
        "memory_forget": reverse("memory_forget", args=[s, m]),
        "memory_history": reverse("memory_history", args=[s, m]),
        "memory_version": reverse("memory_version", args=[s, m, team.version.pk]),
        "trash": reverse("trash", args=[s]),
        "store_export": reverse("store_export", args=[s]),
        "store_import": reverse("store_import", args=[s]),
        "sync_conflict": reverse("sync_conflict", args=[team.conflict.pk]),
        "proposal": reverse("proposal", args=[team.proposal.pk]),
    }


def web_writes(team) -> dict[str, tuple[str, dict]]:
    """Every form that writes to the team store or decides a proposal on it."""
    s, m = team.store.pk, RELEASE
    return {
        "store_rescan": (reverse("store_rescan", args=[s]), {}),
        "rebuild_index": (reverse("rebuild_index", args=[s]), {}),
        "consolidate_now": (reverse("consolidate_now", args=[s]), {}),
        "memory_forget": (reverse("memory_forget", args=[s, m]), {"confirm": "yes"}),
        "memory_edit": (
            reverse("memory_edit", args=[s, m]),
            {"name": "X", "description": "X", "type": "project", "body": "X"},
        ),
        "memory_create": (
            reverse("memory_create", args=[s]),
            {"name": "X", "description": "X", "type": "project", "body": "X"},
        ),
        "version_restore": (reverse("memory_version_restore", args=[s, m, team.version.pk]), {}),
        "trash_restore": (reverse("trash_restore", args=[s, team.trash.pk]), {}),
        "store_bulk": (reverse("store_bulk", args=[s]), {"action": "forget", "paths": [m]}),
        "sync_conflict": (
            reverse("sync_conflict", args=[team.conflict.pk]),
            {"choice": "ours", "confirm": "yes"},
        ),
        "proposal_approve": (
            reverse("proposal", args=[team.proposal.pk]),
            {"decision": "approve", "changes": [team.change.pk]},
        ),
        "proposal_reject": (
            reverse("proposal", args=[team.proposal.pk]),
            {"decision": "reject", "sure": "yes"},
        ),
        "change_rebase": (reverse("change_rebase", args=[team.change.pk]), {}),
    }


WEB_DOORS = [
    "store",
    "store_health",
    "consolidation_panel",
    "daily_logs",
    "memory_create",
    "memory",
    "memory_edit",
    "memory_forget",
    "memory_history",
    "memory_version",
    "trash",
    "store_export",
    "store_import",
    "sync_conflict",
    "proposal",
]
WEB_WRITES = [
    "store_rescan",
    "rebuild_index",
    "consolidate_now",
    "memory_forget",
    "memory_edit",
    "memory_create",
    "version_restore",
    "trash_restore",
    "store_bulk",
    "sync_conflict",
    "proposal_approve",
    "proposal_reject",
    "change_rebase",
]


def team_state(team) -> tuple:
    """What a write would change: the team folder's files, the Trash, the proposal."""
    root = Path(team.store.path)
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    team.proposal.refresh_from_db()
    team.conflict.refresh_from_db()
    return (
        files,
        list(team.store.trash.values_list("pk", flat=True)),
        team.proposal.status,
        team.conflict.resolved_at,
    )


@pytest.mark.parametrize("door", WEB_DOORS)
def test_a_removed_member_no_longer_opens_a_team_page(client, team, bob, door):
    url = web_doors(team)[door]
    client.force_login(bob)
    assert client.get(url).status_code == 200
    remove_bob(team, bob)
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("door", WEB_WRITES)
def test_a_removed_member_writes_nothing_through_a_team_form(client, team, bob, door):
    url, data = web_writes(team)[door]
    client.force_login(bob)
    remove_bob(team, bob)
    before = team_state(team)
    assert client.post(url, data).status_code == 404
    assert team_state(team) == before
    assert not MemoryVersion.objects.filter(store=team.store, user=bob).exists()
    team.project.members.add(bob)  # the same request from a member goes through
    assert client.post(url, data).status_code in (200, 302)


def test_a_removed_member_no_longer_finds_the_team_in_lists_and_search(client, team, bob):
    client.force_login(bob)
    release = reverse("memory", args=[team.store.pk, RELEASE])
    lists = {
        "home": (reverse("home"), f'/stores/{team.store.pk}/"'),
        "proposals": (reverse("proposals"), reverse("proposal", args=[team.proposal.pk])),
        "session": (
            reverse("session", args=[team.session.pk]),
            reverse("proposal", args=[team.proposal.pk]),
        ),
        "search": (reverse("search") + "?q=Release", release),
        "past_context": (reverse("past_context") + "?q=freeze", release),
        "events": (reverse("events"), RELEASE),
        "sync": (reverse("sync"), RELEASE),
    }
    for name, (url, shown) in lists.items():
        assert shown in client.get(url).content.decode(), name
    remove_bob(team, bob)
    for name, (url, shown) in lists.items():
        response = client.get(url)
        assert response.status_code == 200, name
        assert shown not in response.content.decode(), name
    # His own session stays his: a private store is its owner's whatever the membership.
    assert client.get(reverse("session", args=[team.session.pk])).status_code == 200


def test_team_events_and_figures_are_for_members_only_staff_included(client, team, sam):
    """Sam is staff but no member: the team store's events (paths, authors) and the
    dashboard's figures of it are not his to see."""
    client.force_login(sam)
    events = client.get(reverse("events")).content.decode()
    assert RELEASE not in events
    assert f'<option value="{team.project.pk}">' not in events  # not even in the filter
    assert not Event.objects.visible_to(sam).filter(store=team.store).exists()
    dashboard = client.get(reverse("dashboard")).content.decode()
    assert "Release freeze" not in dashboard
    team.project.members.add(sam)
    assert RELEASE in client.get(reverse("events")).content.decode()
    assert Event.objects.visible_to(sam).filter(store=team.store).exists()


# -- the API ---------------------------------------------------------------------------------------


def api_doors(team) -> dict[str, tuple[str, str, dict | None]]:
    """Every API call that reads or changes the team store or a proposal on it."""
    s = team.store.pk
    return {
        "files": ("get", f"/api/v1/stores/{s}/files/", None),
        "file": ("get", f"/api/v1/stores/{s}/files/{RELEASE}", None),
        "batch": ("post", f"/api/v1/stores/{s}/batch", {"delete": [RELEASE]}),
        "remember": (
            "post",
            "/api/v1/remember",
            {"store": s, "name": "X", "description": "X", "type": "project", "body": "X"},
        ),
        "forget": ("post", "/api/v1/forget", {"store": s, "path": RELEASE}),
        "team_memory": ("get", "/api/claude_code/team_memory?repo=acme%2Fapp", None),
        "team_memory_put": (
            "put",
            "/api/claude_code/team_memory?repo=acme%2Fapp",
            {"entries": {"project_new.md": "---\nname: New\n---\nNew.\n"}},
        ),
        "proposal_approve": ("post", f"/api/v1/proposals/{team.proposal.pk}/approve", {}),
        "proposal_reject": ("post", f"/api/v1/proposals/{team.proposal.pk}/reject", None),
    }


API_DOORS = [
    "files",
    "file",
    "batch",
    "remember",
    "forget",
    "team_memory",
    "team_memory_put",
    "proposal_approve",
    "proposal_reject",
]
# Calls that write when they are let through: asked only after the removal.
API_WRITES = {
    "batch",
    "remember",
    "team_memory_put",
    "forget",
    "proposal_approve",
    "proposal_reject",
}


@pytest.mark.parametrize("door", API_DOORS)
def test_a_removed_member_gets_404_from_the_api(team, bob, door):
    method, url, body = api_doors(team)[door]
    api = api_client(bob)
    if door not in API_WRITES:
        assert getattr(api, method)(url, body, format="json").status_code == 200
    remove_bob(team, bob)
    before = team_state(team)
    assert getattr(api, method)(url, body, format="json").status_code == 404
    assert team_state(team) == before
    if door in API_WRITES:  # the same request from a member goes through
        team.project.members.add(bob)
        assert getattr(api, method)(url, body, format="json").status_code in (200, 201, 204)


def test_a_removed_member_no_longer_lists_the_team_through_the_api(team, bob):
    api = api_client(bob)
    lists = {
        "stores": ("/api/v1/stores/", f'"id": {team.store.pk},'),
        "proposals": ("/api/v1/proposals", f'"id": {team.proposal.pk},'),
        "search": ("/api/v1/search?q=freeze", RELEASE),
    }

    def shown(url: str) -> str:
        response = api.get(url)
        assert response.status_code == 200, url
        return response.content.decode().replace('":', '": ').replace(",", ", ")

    for name, (url, part) in lists.items():
        assert part.rstrip(",") in shown(url), name
    agent_calls = {
        "recall": ("/api/v1/recall", {"project": "acme/app", "query": "release freeze"}),
        "prompt": ("/api/v1/prompt", {"project": "acme/app"}),
        "session_start": ("/api/v1/session-start", {"project": "acme/app"}),
    }
    for name, (url, body) in agent_calls.items():
        assert RELEASE in api.post(url, body, format="json").content.decode(), name
    remove_bob(team, bob)
    for name, (url, part) in lists.items():
        assert part.rstrip(",") not in shown(url), name
    for name, (url, body) in agent_calls.items():
        answer = api.post(url, body, format="json")
        assert answer.status_code == 200, name
        assert RELEASE not in answer.content.decode(), name


def test_a_non_member_recalling_gets_no_store_in_the_project(team, charlie):
    """Charlie belongs to nothing: his recall, prompt and writes are answered as for a project
    that does not exist (so they tell nothing of which do), and create nothing."""
    api = api_client(charlie)
    for project in ("acme/app", "acme/nothing-here"):
        recall = {"project": project, "query": "release freeze"}
        answer = api.post("/api/v1/recall", recall, format="json").json()
        assert answer["memories"] == []
        assert answer["fallback_reason"] == no_project_message(project)
        prompt = api.get(f"/api/v1/prompt?project={project}")
        line = {"project": project, "text": "a line", "date": "2026-11-30"}
        logged = api.post("/api/v1/logs", line, format="json")
        for refused in (prompt, logged):
            assert refused.status_code == 404
            assert refused.json()["error"] == {
                "code": "no_project",
                "message": no_project_message(project),
                "details": {},
            }
    assert not Store.objects.filter(owner=charlie).exists()


def test_a_non_members_sessions_do_not_move_the_team_gates(team, charlie):
    from memapp.lifecycle.gates import sessions_since

    Session.objects.create(owner=charlie, project=team.project, session_id="s-charlie")
    assert "s-bob" in sessions_since(team.store, None)
    assert "s-charlie" not in sessions_since(team.store, None)


def test_a_removed_member_shares_nothing_with_the_team(client, team, bob):
    private = Store.objects.get(owner=bob, kind=Store.Kind.PRIVATE)
    write_memory(Path(private.path), "project_mine.md", "Mine", "Bob's own note", "project")
    rescan_store(private)
    client.force_login(bob)
    remove_bob(team, bob)
    before = team_state(team)
    response = client.post(
        reverse("memory_share", args=[private.pk, "project_mine.md"]), {"confirm": "yes"}
    )
    assert response.status_code == 302
    assert team_state(team) == before
