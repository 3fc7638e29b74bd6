"""The gates of consolidation, cheapest first (docs/design.md §14.2): the flag, the hours since
the last run (a local agent's run counts: the lock's mtime), the session scan at most every 10
minutes, the sessions seen since (uploaded, or the agent's transcripts on this host), new
daily-log entries, and "Consolidate now" skipping the time and session gates. The background
clock's sweep queues exactly the stores that are due."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import pytest
from django.utils import timezone

from memapp.lifecycle.gates import SCAN_EVERY, check_gates
from memapp.lifecycle.models import ConsolidationRun, ConsolidationState, Session
from memapp.lifecycle.tasks import request_consolidation
from memapp.memdir.consolidate_lock import LOCK_NAME
from memapp.memdir.daily_logs import append_to_log
from memapp.stores.discovery import discover_local_stores
from memapp.stores.flags import set_flag
from memapp.stores.models import Store
from memapp.stores.projects import resolve_store
from tests.conftest import background_tick, write_memory
from tests.lifecycle.conftest import PROJECT, run_worker

pytestmark = pytest.mark.django_db

NOW = timezone.now()


@pytest.fixture
def store(alice):
    store = resolve_store(alice, PROJECT, "private")
    write_memory(Path(store.path), "user_role.md", "Role", "Alice is a backend engineer", "user")
    return store


def sessions(store, count: int, when=None) -> None:
    for i in range(count):
        Session.objects.create(
            owner=store.owner,
            project=store.project,
            store=store,
            session_id=f"s-{store.pk}-{i}",
            last_entry_at=when or NOW - datetime.timedelta(hours=1),
        )


def last_run(store, hours_ago: float) -> None:
    lock = Path(store.path) / LOCK_NAME
    lock.write_text("")
    stamp = (NOW - datetime.timedelta(hours=hours_ago)).timestamp()
    os.utime(lock, (stamp, stamp))


def gate(store, now=NOW) -> str:
    (verdict,) = check_gates(now, [store])
    return verdict.gate


def test_a_store_with_enough_sessions_and_no_run_for_a_day_is_due(store):
    sessions(store, 5)
    last_run(store, 25)
    (verdict,) = check_gates(NOW, [store])
    assert (verdict.gate, verdict.consolidate, verdict.distill, verdict.sessions) == (
        "due",
        True,
        False,
        5,
    )


def test_the_flag_off_says_no_first(store, alice):
    sessions(store, 5)
    set_flag("consolidation", False, user=alice)
    assert gate(store) == "flag_off"


def test_fewer_hours_than_the_flag_since_the_last_run_is_too_soon(store, alice):
    sessions(store, 9)
    last_run(store, 23)
    assert gate(store) == "too_soon"
    set_flag("consolidation_min_hours", 12, project=store.project, user=alice)
    assert gate(store) == "due"


def test_memhubs_own_last_run_counts_when_the_lock_is_gone(store):
    sessions(store, 9)
    ConsolidationState.objects.create(store=store, last_run_at=NOW - datetime.timedelta(hours=2))
    assert gate(store) == "too_soon"


def test_sessions_before_the_last_run_do_not_count(store, alice):
    last_run(store, 30)
    sessions(store, 3, when=NOW - datetime.timedelta(hours=40))
    Session.objects.filter(session_id__endswith="-0").update(last_entry_at=NOW)
    assert gate(store) == "few_sessions"
    assert ConsolidationState.objects.get(store=store).sessions_seen == 1
    set_flag("consolidation_min_sessions", 1, user=alice)
    ConsolidationState.objects.filter(store=store).update(scanned_at=None)
    assert gate(store) == "due"


def test_the_session_scan_runs_at_most_every_ten_minutes(store):
    sessions(store, 2)
    assert gate(store) == "few_sessions"
    sessions_more = [f"late-{i}" for i in range(5)]
    for session_id in sessions_more:
        Session.objects.create(
            owner=store.owner, project=store.project, store=store, session_id=session_id
        )
    assert gate(store, NOW + datetime.timedelta(minutes=9)) == "scan_throttled"
    assert gate(store, NOW + SCAN_EVERY + datetime.timedelta(seconds=1)) == "due"


def test_new_daily_log_entries_call_for_a_distillation_without_sessions(store):
    append_to_log(store.path, "logs/2026/03/2026-03-05.md", ["- 09:00 [project] Freeze soon"])
    (verdict,) = check_gates(NOW, [store])
    assert (verdict.gate, verdict.consolidate, verdict.distill) == ("due", False, True)
    ConsolidationState.objects.filter(store=store).update(
        scanned_at=None, log_cursor={"logs/2026/03/2026-03-05.md": 1}
    )
    assert gate(store) == "few_sessions"


def test_the_agents_own_transcripts_on_this_host_count_as_sessions(alice, memory_base):
    discover_local_stores(memory_base)
    private = Store.objects.get(kind="private")
    folder = memory_base / "projects" / "-home-alice-app"
    for i in range(5):
        (folder / f"session-{i}.jsonl").write_text('{"type": "user"}\n')
    (folder / "notes.txt").write_text("not a transcript")
    assert gate(private) == "due"


def test_a_missing_directory_is_no_store_to_consolidate(store):
    sessions(store, 5)
    Path(store.path, "user_role.md").unlink()
    Path(store.path).rmdir()
    assert gate(store) == "no_directory"


@pytest.mark.django_db(transaction=True)
def test_consolidate_now_skips_the_time_and_session_gates(store, alice):
    last_run(store, 0.5)
    assert gate(store) == "too_soon"
    request_consolidation(store, trigger="manual", requested_by=alice)
    run_worker()
    assert ConsolidationRun.objects.get().gate == "passed"


@pytest.mark.django_db(transaction=True)
def test_the_background_clock_queues_the_stores_that_are_due(alice, store):
    waiting = resolve_store(alice, "acme/other", "private")
    sessions(store, 5)
    background_tick()  # the sweep runs and queues its runs in the same worker batch
    run_worker()
    assert list(ConsolidationRun.objects.values_list("store", "trigger", "gate")) == [
        (store.pk, "schedule", "passed")
    ]
    assert ConsolidationState.objects.get(store=waiting).gate == "few_sessions"
