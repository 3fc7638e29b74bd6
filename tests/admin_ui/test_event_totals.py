"""The per-day event totals the dashboard reads (docs/design.md §12.2): kept with every event
written, equal to a recount, narrowed as the events are; and the pages that read events make the
same number of queries however many events there are."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memapp.stores.event_totals import rebuild_event_totals
from memapp.stores.events import flush_events, record_event, record_event_later
from memapp.stores.models import Event, EventTotal
from tests.admin_ui.conftest import client_for

pytestmark = pytest.mark.django_db

DASHBOARD = reverse("dashboard")


def some_events(acme, alice, bob, n: int) -> None:
    """`n` rounds of the kinds the dashboard counts, in every store and by every person."""
    for i in range(n):
        record_event("recall", acme.project, alice, candidates=4, selected=i % 3, selector="a")
        record_event_later("recall", acme.project, bob, candidates=4, selected=1, selector="b")
        record_event("sync_push", success=i % 2 == 0, files_uploaded=1, duration_ms=5)
        record_event("sync_pull", success=True, files_written=i, not_modified=i % 2 == 0)
        record_event("secret_skipped", acme.project, store=acme.team, file_count=2, rule_ids=[])
        record_event("extraction_run", store=acme.bob_private, user=bob, outcome="proposed")
        record_event("memory_written", store=acme.alice_private, user=alice, path="a.md", via="ui")
        record_event("proposal_decided", acme.project, alice, store=acme.team, decision="rejected")
    flush_events()


def snapshot() -> list[tuple]:
    return sorted(
        EventTotal.objects.values_list(
            "day", "kind", "project", "store", "user", "facet", "value", "count", "amount"
        )
    )


def test_the_totals_kept_as_events_are_written_equal_a_recount(acme, alice, bob):
    some_events(acme, alice, bob, 5)
    kept = snapshot()
    rebuild_event_totals()
    assert snapshot() == kept
    assert EventTotal.objects.aggregate(n=Sum("count"))["n"] == Event.objects.count() == 40


def test_each_person_counts_in_the_totals_what_they_see_of_the_events(
    acme, alice, bob, charlie, sam
):
    some_events(acme, alice, bob, 3)
    record_event("recall", None, charlie, candidates=1, selected=1, selector="a")
    for user in (alice, bob, charlie, sam):
        seen = EventTotal.objects.visible_to(user).aggregate(n=Sum("count"))["n"] or 0
        assert seen == Event.objects.visible_to(user).count() > 0, user


def test_an_event_written_after_the_dashboard_was_built_is_on_the_next_one(acme, alice, bob):
    some_events(acme, alice, bob, 2)
    admin = client_for(alice)
    before = admin.get(DASHBOARD).context
    record_event("recall", acme.project, alice, candidates=4, selected=2, selector="a")
    record_event("secret_skipped", acme.project, store=acme.team, file_count=3, rule_ids=[])
    record_event_later("sync_push", success=False, files_uploaded=0, duration_ms=1)
    flush_events()
    after = admin.get(DASHBOARD).context
    assert after["recall"].queries == before["recall"].queries + 1
    assert after["recall"].selected == before["recall"].selected + 2
    assert after["sync"].total("secret_blocks") == before["sync"].total("secret_blocks") + 3
    assert after["sync"].total("pushes_failed") == before["sync"].total("pushes_failed") + 1


def queries_of(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_the_pages_that_read_events_make_as_many_queries_for_many_events_as_for_few(
    acme, alice, bob
):
    pages = [DASHBOARD, reverse("events"), reverse("sync")]
    admin = client_for(alice)
    some_events(acme, alice, bob, 2)
    for url in pages:
        admin.get(url)  # a first visit creates the sync status row
    few = [queries_of(admin, url) for url in pages]
    some_events(acme, alice, bob, 40)
    assert [queries_of(admin, url) for url in pages] == few


def test_the_totals_follow_their_events_when_a_store_goes_or_projects_merge(acme, alice, bob):
    from memapp.stores.identity import do_merge_projects
    from memapp.stores.models import Project

    some_events(acme, alice, bob, 2)
    twin = Project.objects.create(key="-home-alice-payments")
    twin.members.add(alice)
    record_event("flag_changed", twin, alice, name="recall_max", scope="x", old=1, new=2)
    record_event("sync_pull", twin, None, success=True, files_written=1, not_modified=False)
    acme.bob_private.delete()
    do_merge_projects(twin, acme.project, alice)
    for user in (alice, bob):
        seen = EventTotal.objects.visible_to(user).aggregate(n=Sum("count"))["n"] or 0
        assert seen == Event.objects.visible_to(user).count(), user


@pytest.mark.django_db(transaction=True)
def test_the_migration_counts_the_events_already_kept(alice):
    from django.db.migrations.executor import MigrationExecutor

    before, after = (
        [("memapp", "0006_join_tokens_invitations_devices")],
        [("memapp", "0007_event_totals")],
    )
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("memapp", "Event")
    for selected in (0, 2, 2):
        old.objects.create(kind="recall", user_id=alice.pk, fields={"selected": selected})
    old.objects.create(kind="secret_skipped", fields={"file_count": 4, "rule_ids": []})
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    try:
        executor.migrate(after)
        rows = sorted(EventTotal.objects.values_list("kind", "value", "count", "amount"))
    finally:  # the later migrations back, for the tests after this one in the process
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert rows == [("recall", 0, 1, 0), ("recall", 2, 2, 4), ("secret_skipped", 0, 1, 4)]


def test_an_event_recorded_later_is_written_as_it_was_recorded(acme, bob):
    """Buffered, it keeps when it happened, its project (through its store) and its person."""
    before = timezone.now()
    record_event_later("recall", user=bob, store=acme.bob_private, candidates=2, selected=1)
    recorded = timezone.now()
    time.sleep(0.05)
    assert flush_events() == 1
    event = Event.objects.get(kind="recall")
    assert before <= event.created_at <= recorded
    assert (event.project, event.store, event.user) == (acme.project, acme.bob_private, bob)
    assert event.fields == {"candidates": 2, "selected": 1}


@pytest.mark.django_db(transaction=True)
def test_an_event_waiting_for_a_person_deleted_meanwhile_is_still_written(acme, bob):
    """Its reference to the person goes, as if written before the delete (SET_NULL)."""
    carol = get_user_model().objects.create_user("carol")
    record_event_later("recall", acme.project, carol, candidates=1, selected=0)
    record_event_later("recall", acme.project, bob, candidates=3, selected=1)
    carol.delete()
    assert flush_events() == 2
    written = sorted(Event.objects.values_list("user", "fields__candidates"), key=str)
    assert written == sorted([(None, 1), (bob.pk, 3)], key=str)
    assert EventTotal.objects.filter(kind="recall").aggregate(n=Sum("count"))["n"] == 2
