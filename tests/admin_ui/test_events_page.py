"""The events page: every kind appears after the action that causes it; filters and pages; events
about a private store reach its owner alone; no secret and no private content in any event."""

from __future__ import annotations

import datetime
import html
import json
import re
import secrets
import string
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from memapp.lifecycle.gemini_inbox import gemini_inbox_task
from memapp.stores.discovery import discover_local_stores
from memapp.stores.events import EVENT_FIELDS, UnknownEventError, flush_events, record_event
from memapp.stores.flags import set_flag
from memapp.stores.models import Event, Project
from teamsync.models import TeamConflict
from teamsync.service import do_sync_team, folder_for, team_clone
from tests.admin_ui.conftest import client_for, text
from tests.api.conftest import api_client
from tests.lifecycle.test_gemini_inbox import gemini  # noqa: F401 (a fixture)
from tests.teamsync.gitutil import Member, memory

pytestmark = pytest.mark.django_db

EVENTS = reverse("events")


def kinds_on(response) -> list[str]:
    return re.findall(r'<tr class="kind-([a-z_]+)">', response.content.decode())


def github_token() -> str:
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))


def remember(client, scope: str, name: str, body: str = "Body.\n") -> str:
    response = client.post(
        "/api/v1/remember",
        {
            "project": "acme/app",
            "scope": scope,
            "name": name,
            "description": f"{name} in one line",
            "type": "project",
            "body": body,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["key"]


# -- every kind, from its cause -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_every_event_kind_appears_after_the_action_that_causes_it(
    alice,
    bob,
    acme,
    memory_base,
    tmp_path,
    gemini,  # noqa: F811 (the fixture imported above)
):
    alice_api = api_client(alice)
    admin = client_for(alice)
    assert gemini_inbox_task.call() == {"proposed": 1}  # gemini_inbox_patch
    discover_local_stores(memory_base)  # stores_discovered
    admin.post(reverse("flag", kwargs={"name": "recall_max"}), {"scope": "", "value": "4"})
    key = remember(alice_api, "team", "Release freeze")  # memory_written (+ a commit)
    alice_api.post("/api/v1/prompt", {"project": "acme/app"}, format="json")  # index_loaded
    alice_api.post("/api/v1/recall", {"project": "acme/app", "query": "freeze"}, format="json")
    flush_events()
    forget = {"project": "acme/app", "scope": "team", "path": key}
    assert alice_api.post("/api/v1/forget", forget, format="json").status_code == 204
    team = Path(acme.team.path)
    (team / "reference_ci.md").write_text(f"CI token: {github_token()}\n")  # secret_skipped
    do_sync_team()  # sync_pull, sync_push
    dora = Member(tmp_path / "elsewhere", "dora", Path(team_clone().remote), folder_for(acme.team))
    dora.pull()
    dora.write("reference_pager.md", memory("Pager", "Dora carries the pager.\n", "reference"))
    dora.sync()
    do_sync_team()  # team_sync_changed
    set_flag("team_max_entries", 1)
    (team / "project_a.md").write_text("A.\n")
    (team / "project_b.md").write_text("B.\n")
    do_sync_team()  # entries_capped
    set_flag("team_max_entries", 500)
    hook = Path(team_clone().remote) / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    (team / "project_c.md").write_text("C.\n")
    do_sync_team()  # push_suppressed: the remote's hook declines every push
    conflict = TeamConflict.objects.create(
        store=acme.team, key="project_d.md", kind="edit", base="D.\n", ours="D1.\n", theirs="D2.\n"
    )
    url = reverse("sync_conflict", kwargs={"conflict_id": conflict.pk})
    assert admin.post(url, {"choice": "theirs", "confirm": "yes"}).status_code == 302  # conflict
    from memapp.lifecycle.tasks import request_consolidation
    from tests.conftest import background_tick
    from tests.transcripts import Transcript

    session = Transcript()
    session.turn("remember that we deploy on Fridays", "Noted.")
    body = {"project": "acme/app", "entries": session.entries}
    alice_api.post(f"/api/v1/sessions/{session.session_id}/entries", body, format="json")
    background_tick()  # extraction_run
    proposals = alice_api.get("/api/v1/proposals").json()["proposals"]
    approve = f"/api/v1/proposals/{proposals[0]['id']}/approve"
    assert alice_api.post(approve, {}, format="json").status_code == 200  # proposal_decided
    remove = reverse("member_remove", kwargs={"project_id": acme.project.pk, "user_id": bob.pk})
    assert admin.post(remove, {"sure": "yes"}).status_code == 302  # member_removed
    members = reverse("project_members", kwargs={"project_id": acme.project.pk})
    assert admin.post(members, {"user": bob.pk}).status_code == 302  # member_added
    request_consolidation(acme.alice_private, trigger="manual", requested_by=alice)
    background_tick()  # consolidation_run
    for key in ("project_x.md", "project_y.md"):
        (team / key).write_text(f"{key}\n")
    do_sync_team()
    for key in ("project_x.md", "project_y.md", "project_a.md"):
        (team / key).unlink()
    do_sync_team()  # deletions_held: three files gone from the store behind memhub's back
    identity = reverse("project_identity", kwargs={"project_id": acme.project.pk})
    assert admin.post(identity, {"slug": "acme/payments"}).status_code == 302  # project_renamed
    do_sync_team()  # folder_moved
    twin = Project.objects.create(key="-home-alice-payments")
    merge = reverse("project_merge", kwargs={"project_id": acme.project.pk})
    assert admin.post(merge, {"source": twin.pk, "confirm": "on"}).status_code == 302  # merged
    # Agent snapshots are not built yet, so nothing records this kind; it is shown all the same.
    record_event("snapshot_decision", user=alice, agent_type="reviewer", decision="none")

    for kind in EVENT_FIELDS:
        response = admin.get(EVENTS, {"kind": kind})
        assert kind in kinds_on(response), f"no {kind} event on the events page"
        assert set(kinds_on(response)) == {kind}


def test_each_row_shows_time_project_user_and_fields(alice, acme):
    event = record_event(
        "sync_push",
        project=acme.project,
        user=alice,
        success=True,
        files_uploaded=3,
        conflict=False,
        conflict_retries=0,
        duration_ms=120,
        batches=1,
        error=None,
    )
    page = text(client_for(alice).get(EVENTS))
    row = (
        f"{timezone.localtime(event.created_at):%Y-%m-%d %H:%M:%S} Team sync push acme/app alice "
        "Team sync pushed 3 changes Details success yes files uploaded 3 conflict no "
        "conflict retries 0 duration ms 120 batches 1"
    )
    assert row in page


# -- who sees what --------------------------------------------------------------------------------


@pytest.fixture
def mixed(alice, bob, acme):
    """Events about alice's private store, the team store, the project, and the site."""
    alice_api = api_client(alice)
    remember(alice_api, "private", "Private plan")
    remember(alice_api, "team", "Team plan")
    alice_api.post("/api/v1/recall", {"project": "acme/app", "query": "plan"}, format="json")
    alice_api.post("/api/v1/prompt", {"project": "acme/app"}, format="json")
    flush_events()
    set_flag("recall_max", 3, project=acme.project, user=alice)
    record_event("sync_pull", success=True, files_written=0, not_modified=True, duration_ms=5)
    return acme


def seen(user) -> list[tuple[str, str | None]]:
    """(kind, store kind) of every event row `user` gets on the events page."""
    page = client_for(user).get(EVENTS).content.decode()
    rows = re.findall(r'<tr class="kind-([a-z_]+)">(.*?)</tr>', page, re.S)
    result = []
    for kind, row in rows:
        badge = re.search(r'<span class="badge (private|team|agent)">', row)
        result.append((kind, badge.group(1) if badge else None))
    return sorted(result, key=lambda r: (r[0], r[1] or ""))


def test_the_owner_sees_her_private_stores_events(alice, mixed):
    assert seen(alice) == [
        ("flag_changed", None),
        ("index_loaded", "private"),
        ("index_loaded", "team"),
        ("memory_written", "private"),
        ("memory_written", "team"),
        ("recall", None),
        ("sync_pull", None),
    ]


def test_a_teammate_sees_team_and_project_events_but_not_her_private_ones(bob, mixed):
    assert seen(bob) == [
        ("flag_changed", None),
        ("index_loaded", "team"),
        ("memory_written", "team"),
        ("sync_pull", None),
    ]
    assert "Private plan" not in client_for(bob).get(EVENTS).content.decode()


def test_staff_see_no_team_events_of_a_project_they_are_not_in(sam, mixed):
    assert seen(sam) == [
        ("recall", None),  # counts only: how recall is used is the admins' business
        ("sync_pull", None),
    ]


def test_staff_do_not_see_someone_elses_private_events(sam, mixed):
    mixed.project.members.add(sam)
    assert seen(sam) == [
        ("flag_changed", None),
        ("index_loaded", "team"),
        ("memory_written", "team"),
        ("recall", None),
        ("sync_pull", None),
    ]


def test_an_outsider_sees_only_site_wide_events(charlie, mixed):
    assert seen(charlie) == [("sync_pull", None)]


def test_a_deleted_private_store_does_not_make_its_events_public(alice, bob, sam, mixed):
    mixed.alice_private.delete()
    mixed.project.members.add(sam)
    assert ("memory_written", None) in seen(alice)
    for other in (bob, sam):
        assert [kind for kind, _ in seen(other)].count("memory_written") == 1  # the team one


def test_anonymous_visitors_are_sent_to_log_in(client):
    response = client.get(EVENTS)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


# -- nothing secret ------------------------------------------------------------------------------


def test_events_refuse_fields_outside_their_whitelist():
    with pytest.raises(UnknownEventError):
        record_event("memory_written", path="a.md", via="api", created=True, content="the body")
    with pytest.raises(UnknownEventError):
        record_event("secret_skipped", file_count=1, rule_ids=["github-pat"], secret="ghp_x")
    with pytest.raises(UnknownEventError):
        record_event("recall", candidates=1, selected=1, ages=[0], selector="offline", query="q")
    assert not Event.objects.exists()


def test_no_event_holds_a_secret_or_a_private_memorys_content(alice, acme):
    alice_api = api_client(alice)
    remember(alice_api, "private", "Diagnosis", "PRIVATE-BODY-TEXT about my health.\n")
    alice_api.post(
        "/api/v1/recall", {"project": "acme/app", "query": "diagnosis health"}, format="json"
    )
    flush_events()
    token = github_token()
    Path(acme.team.path, "reference_ci.md").write_text(f"The CI token is {token}\n")
    do_sync_team()
    stored = json.dumps(list(Event.objects.values_list("fields", flat=True)))
    assert "PRIVATE-BODY-TEXT" not in stored and token not in stored
    assert "health" not in stored  # not even the query
    skipped = Event.objects.get(kind="secret_skipped")
    assert skipped.fields == {"file_count": 1, "rule_ids": ["github-pat"]}
    page = client_for(alice).get(EVENTS).content.decode()
    assert "PRIVATE-BODY-TEXT" not in page and token not in page


# -- filters and pages ----------------------------------------------------------------------------


@pytest.fixture
def history(alice, bob, acme):
    """Flag changes by alice and bob over ten days, one a day, newest today."""
    now = timezone.now()
    for day in range(10):
        user = alice if day % 2 else bob
        event = record_event(
            "flag_changed",
            project=acme.project,
            user=user,
            name="recall_max",
            scope="acme/app",
            old=5,
            new=day + 1,
            note=f"day {day}",
        )
        Event.objects.filter(pk=event.pk).update(created_at=now - datetime.timedelta(days=day))
    record_event("sync_pull", success=True, files_written=1, not_modified=False, duration_ms=9)
    return now


def test_it_filters_by_kind_project_and_user(alice, bob, history, acme):
    admin = client_for(alice)
    assert kinds_on(admin.get(EVENTS, {"kind": "sync_pull"})) == ["sync_pull"]
    assert len(kinds_on(admin.get(EVENTS, {"project": acme.project.pk}))) == 10
    by_bob = text(admin.get(EVENTS, {"user": bob.pk}))
    assert by_bob.count("Setting recall_max") == 5 and "day 1 " not in by_bob and "day 0" in by_bob


def test_it_filters_by_time_range(alice, history):
    today = timezone.localdate(history)
    admin = client_for(alice)
    since = today - datetime.timedelta(days=2)
    assert len(kinds_on(admin.get(EVENTS, {"since": since.isoformat()}))) == 4  # 3 + sync_pull
    until = today - datetime.timedelta(days=8)
    page = text(admin.get(EVENTS, {"until": until.isoformat()}))
    assert "day 8" in page and "day 9" in page and "day 7" not in page
    both = {"since": until.isoformat(), "until": until.isoformat()}
    assert len(kinds_on(admin.get(EVENTS, both))) == 1


def test_a_backwards_time_range_is_explained(alice, history):
    response = client_for(alice).get(EVENTS, {"since": "2026-03-05", "until": "2026-03-01"})
    assert "The start date is after the end date." in text(response)


def test_it_pages_through_many_events_keeping_the_filters(alice, acme):
    for i in range(60):
        record_event("sync_pull", success=True, files_written=i, not_modified=False, duration_ms=1)
    record_event("memory_forgotten", store=acme.alice_private, user=alice, path="x.md", via="ui")
    admin = client_for(alice)
    first = admin.get(EVENTS, {"kind": "sync_pull"})
    assert len(kinds_on(first)) == 50
    assert "← Newer" not in text(first) and "Older →" in text(first)
    older = re.search(r'href="\?(kind=sync_pull&amp;older=[0-9-]+)"', first.content.decode())
    second = admin.get(f"{EVENTS}?{html.unescape(older[1])}")
    assert kinds_on(second) == ["sync_pull"] * 10
    assert "Older →" not in text(second)
    newer = re.search(r'href="\?(kind=sync_pull&amp;newer=[0-9-]+)"', second.content.decode())
    back = admin.get(f"{EVENTS}?{html.unescape(newer[1])}")
    assert text(back) == text(first)  # the newest fifty again, with no newer page


def test_htmx_gets_only_the_list(alice, history):
    response = client_for(alice).get(EVENTS, {"kind": "sync_pull"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert "<html" not in html and kinds_on(response) == ["sync_pull"]


def test_a_page_that_finds_nothing_visible_in_its_windows_offers_older_ones(
    alice, bob, acme, monkeypatch
):
    from memapp.web import keyset

    monkeypatch.setattr(keyset, "WINDOW", 3)  # five windows of three events per page
    for name in ("old-1.md", "old-2.md"):
        record_event("memory_written", store=acme.bob_private, user=bob, path=name, via="ui")
    for i in range(20):
        record_event("memory_written", store=acme.alice_private, user=alice, path=f"{i}.md")
    first = client_for(bob).get(EVENTS)
    assert kinds_on(first) == [] and "Older →" in text(first)
    older = re.search(r'href="\?(older=[0-9-]+)"', first.content.decode())
    second = client_for(bob).get(f"{EVENTS}?{older[1]}")
    assert kinds_on(second) == ["memory_written"] * 2 and "old-1.md" in text(second)
    assert "Older →" not in text(second)
