"""Old events are pruned after MEMHUB_EVENT_RETENTION_DAYS: by command, and daily by the worker."""

from __future__ import annotations

import datetime
import io
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from memapp.stores.event_totals import rebuild_event_totals
from memapp.stores.events import prune_events, record_event
from memapp.stores.models import Event
from tests.conftest import background_tick

pytestmark = pytest.mark.django_db


def event_aged(days: float) -> Event:
    event = record_event("sync_pull", success=True, files_written=0, not_modified=True)
    created = timezone.now() - datetime.timedelta(days=days)
    Event.objects.filter(pk=event.pk).update(created_at=created)
    rebuild_event_totals()  # moved behind the totals' back: count again, as the migration does
    return event


def left() -> list[int]:
    return sorted(Event.objects.values_list("pk", flat=True))


def test_it_deletes_events_older_than_the_retention_period():
    _old, edge, recent = event_aged(31), event_aged(29.9), event_aged(1)
    assert prune_events(30) == 1
    assert left() == sorted([edge.pk, recent.pk])


def test_zero_days_keeps_everything():
    event_aged(400)
    assert prune_events(0) == 0 and Event.objects.count() == 1


def test_the_command_uses_the_setting(settings):
    settings.MEMHUB_EVENT_RETENTION_DAYS = 10
    kept = event_aged(5)
    event_aged(11)
    out = io.StringIO()
    call_command("prune_events", stdout=out)
    assert out.getvalue().strip() == "Deleted 1 event older than 10 days."
    assert left() == [kept.pk]


def test_the_command_takes_another_period(settings):
    settings.MEMHUB_EVENT_RETENTION_DAYS = 90
    event_aged(5)
    out = io.StringIO()
    call_command("prune_events", "--days", "2", stdout=out)
    assert "Deleted 1 event older than 2 days." in out.getvalue()
    with pytest.raises(CommandError, match="0 or more"):
        call_command("prune_events", "--days", "-1")


def test_the_command_keeps_everything_when_retention_is_zero(settings):
    settings.MEMHUB_EVENT_RETENTION_DAYS = 0
    event_aged(1000)
    out = io.StringIO()
    call_command("prune_events", stdout=out)
    assert "events are kept" in out.getvalue() and Event.objects.count() == 1


@pytest.mark.django_db(transaction=True)  # the task worker commits
def test_the_background_clock_prunes_when_it_starts(settings, alice):
    settings.MEMHUB_EVENT_RETENTION_DAYS = 7
    old = event_aged(8)
    background_tick()
    assert not Event.objects.filter(pk=old.pk).exists()


def test_a_bad_retention_setting_fails_at_start(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "MEMHUB_DATA_DIR": str(tmp_path),
        "MEMHUB_EVENT_RETENTION_DAYS": "a month",
    }
    result = subprocess.run(
        [sys.executable, "-c", "import memapp.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "MEMHUB_EVENT_RETENTION_DAYS='a month' is not an integer" in result.stderr


def test_the_totals_go_with_the_events_they_counted():
    from django.db.models import Sum

    from memapp.stores.models import EventTotal

    event_aged(40), event_aged(29.9), event_aged(1)
    assert prune_events(30) == 1
    kept = sorted(EventTotal.objects.values_list("day", "kind", "facet", "count"))
    assert EventTotal.objects.aggregate(n=Sum("count"))["n"] == 2
    rebuild_event_totals()
    assert sorted(EventTotal.objects.values_list("day", "kind", "facet", "count")) == kept
