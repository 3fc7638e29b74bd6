"""The dashboard's figures: memory ages per store, index caps, recall and sync over time, and
only what the viewer may see."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from memapp.stores.event_totals import rebuild_event_totals
from memapp.stores.events import flush_events, record_event
from memapp.stores.flags import set_flag
from memapp.stores.mirror import rescan_store
from memapp.stores.models import Event
from memapp.web.dashboard_data import age_buckets
from tests.admin_ui.conftest import client_for, text
from tests.api.conftest import api_client
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

DASHBOARD = reverse("dashboard")
DAY = 86_400


def aged(store, filename: str, days: float, description: str = "a note") -> None:
    path = write_memory(Path(store.path), filename, filename, description, "project")
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))


def at(event: Event, days_ago: int) -> None:
    created = timezone.now() - datetime.timedelta(days=days_ago)
    Event.objects.filter(pk=event.pk).update(created_at=created)
    rebuild_event_totals()  # moved behind the totals' back: count again, as the migration does


@pytest.fixture
def filled(alice, acme):
    """alice's private store: four memories of four ages and a 150-line index; the team store:
    two fresh memories."""
    for name, days in [("a.md", 0.2), ("b.md", 5), ("c.md", 20), ("d.md", 40)]:
        aged(acme.alice_private, name, days)
    Path(acme.alice_private.path, "MEMORY.md").write_text("- [x](a.md) — hook\n" * 150)
    aged(acme.team, "t1.md", 0.1)
    aged(acme.team, "t2.md", 1.5)
    rescan_store(acme.alice_private)
    rescan_store(acme.team)
    return acme


def test_the_age_buckets_end_with_stale():
    assert age_buckets(30) == [
        (2, "today or yesterday"),
        (8, "2–7 days"),
        (30, "8–29 days"),
        (0, "stale (older than 30 days)"),
    ]
    assert [label for _, label in age_buckets(5)] == [
        "today or yesterday",
        "2–4 days",
        "stale (older than 5 days)",
    ]


def test_it_shows_how_old_each_stores_memories_are(alice, filled):
    response = client_for(alice).get(DASHBOARD)
    rows = {row.store.kind: row for row, _ in response.context["age_rows"]}
    assert rows["private"].counts == [1, 1, 1, 1]
    assert (rows["private"].stale, rows["private"].stale_pct) == (1, 25)
    assert rows["team"].counts == [2, 0, 0, 0]
    assert response.context["memory_total"] == 6 and response.context["stale_total"] == 1
    page = text(response)
    assert "4 memories 1 stale (25%)" in page
    assert "6 memories 1 stale (over 30 days)" in page


def test_it_shows_index_cap_usage_against_the_caps_in_force(alice, filled):
    response = client_for(alice).get(DASHBOARD)
    [(row, lines_chart, _)] = response.context["caps"]
    assert (row.store, row.lines, row.max_lines) == (filled.alice_private, 150, 200)
    assert 'class="chart meter ok"' in lines_chart
    set_flag("index_max_lines", 100, project=filled.project)
    [(row, lines_chart, _)] = client_for(alice).get(DASHBOARD).context["caps"]
    assert (row.lines, row.max_lines) == (150, 100)
    assert 'class="chart meter over"' in lines_chart
    assert "150 / 100" in text(client_for(alice).get(DASHBOARD))


def test_it_shows_recall_activity_from_recall_events(alice, filled):
    alice_api = api_client(alice)
    write_memory(
        Path(filled.alice_private.path),
        "feedback_db.md",
        "Real database",
        "Integration tests must hit a real database, not mocks",
        "feedback",
    )
    rescan_store(filled.alice_private)
    for query in ("integration tests real database", "quarterly budget spreadsheet"):
        body = {"project": "acme/app", "query": query}
        assert alice_api.post("/api/v1/recall", body, format="json").status_code == 200
    flush_events()
    recall = client_for(alice).get(DASHBOARD).context["recall"]
    assert (recall.queries, recall.selected, recall.empty_answers) == (2, 1, 1)
    assert recall.selectors == [("offline", 2)]
    assert recall.per_query == [(0, 1), (1, 1)]
    assert (recall.answered[-1], recall.empty[-1]) == (1, 1)  # both today
    page = text(client_for(alice).get(DASHBOARD))
    assert "2 recall queries 0.5 memories per answer 50% empty answers" in page


def sync_events(project) -> None:
    def push(days_ago, success=True):
        at(
            record_event(
                "sync_push",
                success=success,
                files_uploaded=1,
                conflict=False,
                conflict_retries=0,
                duration_ms=10,
                batches=1,
                error=None,
            ),
            days_ago,
        )

    push(0)
    push(0)
    push(3, success=False)
    at(record_event("sync_pull", success=True, files_written=2, not_modified=False), 1)
    at(record_event("sync_pull", success=True, files_written=0, not_modified=True), 1)
    team = project.stores.get(kind="team")
    at(record_event("conflict", store=team, path="a.md", reason="edit"), 2)
    record_event("conflict", store=team, path="a.md", reason="edit", resolution="ours")
    at(record_event("secret_skipped", store=team, file_count=3, rule_ids=["github-pat"]), 0)
    at(record_event("sync_push", success=True, files_uploaded=1), 45)  # outside 30 days


def test_it_shows_sync_history_per_day(alice, acme):
    sync_events(acme.project)
    sync = client_for(alice).get(DASHBOARD, {"days": 7}).context["sync"]
    assert len(sync.days) == 7 and sync.days[-1] == timezone.localdate()
    assert sync.pushes_ok == [0, 0, 0, 0, 0, 0, 2]
    assert sync.pushes_failed == [0, 0, 0, 1, 0, 0, 0]
    assert sync.pulls_changed == [0, 0, 0, 0, 0, 1, 0]
    assert sync.pulls_unchanged == [0, 0, 0, 0, 0, 1, 0]
    assert sync.conflicts == [0, 0, 0, 0, 1, 0, 0]  # found, not resolved
    assert sync.secret_blocks == [0, 0, 0, 0, 0, 0, 3]
    totals = {
        title: total for title, total, _ in client_for(alice).get(DASHBOARD).context["sync_charts"]
    }
    assert totals == {"Pushes": 3, "Pulls": 2, "Conflicts": 1, "Files blocked for secrets": 3}
    assert client_for(alice).get(DASHBOARD, {"days": 90}).context["sync"].total("pushes_ok") == 3


def test_the_window_and_project_are_chosen_in_the_query(alice, acme):
    response = client_for(alice).get(DASHBOARD, {"days": "365", "project": "x"})
    assert response.context["window"] == 30 and response.context["project"] is None
    response = client_for(alice).get(DASHBOARD, {"days": "7", "project": acme.project.pk})
    assert response.context["window"] == 7 and response.context["project"] == acme.project


# -- only what the viewer may see ---------------------------------------------------------------


def test_a_teammate_sees_the_team_store_but_not_alices_private_one(alice, bob, filled):
    alice_api = api_client(alice)
    alice_api.post("/api/v1/recall", {"project": "acme/app", "query": "a note"}, format="json")
    flush_events()
    response = client_for(bob).get(DASHBOARD)
    stores = [row.store for row, _ in response.context["age_rows"]]
    assert filled.alice_private not in stores and filled.team in stores
    assert [row.store for row, *_ in response.context["caps"]] == []
    assert response.context["recall"].queries == 0  # alice's recalls are hers
    assert response.context["memory_total"] == 2


def test_staff_see_recall_counts_but_not_private_stores(alice, sam, filled):
    api_client(alice).post(
        "/api/v1/recall", {"project": "acme/app", "query": "a note"}, format="json"
    )
    flush_events()
    response = client_for(sam).get(DASHBOARD)
    assert response.context["age_rows"] == [] and response.context["memory_total"] == 0
    assert response.context["recall"].queries == 1


def test_an_outsider_sees_no_project_figures(alice, charlie, acme):
    sync_events(acme.project)
    response = client_for(charlie).get(DASHBOARD)
    sync = response.context["sync"]
    assert sync.total("conflicts") == 0 and sync.total("secret_blocks") == 0
    assert sync.total("pushes_ok") == 2  # site-wide pushes are everyone's business
    response = client_for(charlie).get(DASHBOARD, {"project": acme.project.pk})
    assert response.context["project"] is None


def test_anonymous_visitors_are_sent_to_log_in(client):
    response = client.get(DASHBOARD)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def run_event(store, user, outcome: str, days_ago: int = 0) -> None:
    event = record_event(
        "extraction_run",
        store=store,
        user=user,
        outcome=outcome,
        trigger="turns",
        sessions=1,
        messages=4,
        proposed=1 if outcome == "proposed" else 0,
        dropped=0,
        selector="offline",
        duration_ms=12,
        error="Overloaded" if outcome == "failed" else None,
    )
    at(event, days_ago)


def decision_event(store, user, decision: str) -> None:
    record_event(
        "proposal_decided",
        store=store,
        user=user,
        proposal_kind="extraction",
        decision=decision,
        applied=1 if decision != "rejected" else 0,
        conflicts=0,
        refused=0,
        skipped=0,
    )


def test_it_shows_extraction_runs_proposals_and_the_approval_rate(alice, bob, acme):
    for outcome, days in [("proposed", 0), ("proposed", 1), ("nothing", 1), ("failed", 2)]:
        run_event(acme.alice_private, alice, outcome, days)
    run_event(acme.bob_private, bob, "proposed")
    for decision in ("approved", "auto", "rejected"):
        decision_event(acme.alice_private, alice, decision)
    response = client_for(alice).get(DASHBOARD, {"days": 7})
    page = text(response)
    assert "4 runs, 2 with proposals; 67% of decided proposals approved." in page
    html = response.content.decode()
    assert "Extraction runs per day" in html and "Proposals decided per day" in html
    assert "1 run, 1 with proposals; no proposal decided yet." in text(
        client_for(bob).get(DASHBOARD, {"days": 7})
    )


def test_the_dashboard_lists_memories_never_recalled_oldest_first(alice, bob, filled):
    from memapp.stores.recall_stats import count_recalled, flush_recall_counts

    count_recalled([(filled.alice_private.pk, "c.md")])
    flush_recall_counts()
    page = text(client_for(alice).get(DASHBOARD))
    assert "Never recalled (5)" in page
    listed = page.split("Never recalled (5)")[1]
    assert listed.index("d.md") < listed.index("b.md") < listed.index("t2.md")
    assert "c.md ·" not in listed
    # bob sees the team's memories only, never alice's private ones.
    page = text(client_for(bob).get(DASHBOARD))
    assert "Never recalled (2)" in page and "d.md" not in page


def test_with_no_memories_the_dashboard_does_not_claim_they_were_all_recalled(charlie):
    page = text(client_for(charlie).get(DASHBOARD))
    assert "Never recalled (0) No memories yet: nothing to recall." in page
    assert "Every memory has been recalled" not in page
