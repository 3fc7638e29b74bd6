"""`manage.py teamsync pull|push|run`: team sync by hand, or the background worker loop."""

from __future__ import annotations

import signal
import time
from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections
from django.utils import timezone

from memapp.stores.events import prune_events
from memapp.stores.flags import get_flag
from teamsync.models import TeamSyncStatus
from teamsync.service import SyncReport, sync_team, team_remote_display

PUSH_DEBOUNCE = timedelta(seconds=2)  # docs/design.md §17: push 2 s after the last change
SUPPRESSED_RETRY = timedelta(minutes=5)  # a push that cannot succeed is retried rarely
FAILED_RETRY = timedelta(seconds=30)  # after a failure that may pass (no network), not every tick
PRUNE_EVERY = timedelta(days=1)  # old events are pruned at most daily


def due(status: TeamSyncStatus, now, interval: int) -> tuple[bool, bool]:
    """(run a sync now, include the push) for the worker's current tick."""
    requested = status.requested_at is not None
    pull_due = status.last_pull_at is None or now - status.last_pull_at >= timedelta(
        seconds=interval
    )
    push_due = status.dirty_at is not None and now - status.dirty_at >= PUSH_DEBOUNCE
    if status.suppressed_reason:
        retry = status.last_pull_at is None or now - status.last_pull_at >= SUPPRESSED_RETRY
        push_due = push_due and retry
        return requested or pull_due or push_due, requested or retry
    if status.last_error:
        pause_over = status.last_pull_at is None or now - status.last_pull_at >= FAILED_RETRY
        push_due = push_due and pause_over
    return requested or pull_due or push_due, True


class Command(BaseCommand):
    help = "Team sync: 'pull', 'push', or 'run' (the background worker loop)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["pull", "push", "run"])
        parser.add_argument("--tick", type=float, default=1.0, help="worker loop period (s)")
        parser.add_argument("--once", action="store_true", help="run: one tick, then exit")

    def handle(self, *args, action, tick, once, **options):
        if action == "run":
            return self._run(tick, once)
        self.stdout.write(f"Team sync with {team_remote_display()} …")
        report = sync_team(push=action == "push")
        self._summary(report)
        if report.error:
            raise SystemExit(1)

    def _summary(self, report: SyncReport) -> None:
        line = (
            f"committed {report.committed}, written {report.written}, deleted {report.deleted}, "
            f"conflicts {len(report.conflicts)}, pushed {'yes' if report.pushed else 'no'} "
            f"({report.duration_ms} ms)"
        )
        self.stdout.write(line)
        if report.error:
            kind = "suppressed" if report.suppressed else "failed"
            self.stderr.write(f"sync {kind}: {report.error}")

    def _run(self, tick: float, once: bool) -> None:
        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        self.stdout.write(f"Team sync worker started (remote {team_remote_display()}).")
        pruned_at = None
        while not stopping:
            close_old_connections()
            if pruned_at is None or timezone.now() - pruned_at >= PRUNE_EVERY:
                pruned_at = timezone.now()
                try:
                    prune_events(settings.MEMHUB_EVENT_RETENTION_DAYS)
                except Exception as exc:  # keep the worker alive; tomorrow's prune retries
                    self.stderr.write(f"pruning events failed: {type(exc).__name__}: {exc}")
            status = TeamSyncStatus.get()
            run, push = due(status, timezone.now(), get_flag("sync_interval_seconds"))
            if run:
                try:
                    self._summary(sync_team(push=push))
                except Exception as exc:  # keep the worker alive; the next tick retries
                    self.stderr.write(f"sync failed: {type(exc).__name__}: {exc}")
            if once:
                return
            time.sleep(tick)
        self.stdout.write("Team sync worker stopped.")
