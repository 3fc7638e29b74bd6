"""When team sync runs: the policy the background process applies every second, enqueueing a
sync task when one is due and none is waiting or running."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta

from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks.exceptions import TaskResultDoesNotExist

from memapp.stores.flags import get_flag
from teamsync.models import TeamSyncStatus
from teamsync.tasks import sync_team_task

__all__ = ["due", "enqueue_due_sync"]

PUSH_DEBOUNCE = timedelta(seconds=2)  # docs/design.md §17: push 2 s after the last change
SUPPRESSED_RETRY = timedelta(minutes=5)  # a push that cannot succeed is retried rarely
FAILED_RETRY = timedelta(seconds=30)  # after a failure that may pass (no network), not every tick
QUEUED_FOR_AT_MOST = timedelta(minutes=15)  # a task lost with its worker does not block forever


def due(status: TeamSyncStatus, now: datetime, interval: int) -> tuple[bool, bool]:
    """(run a sync now, include the push) at `now`."""
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


def _outstanding(status: TeamSyncStatus, now: datetime) -> bool:
    if not status.queued_task_id or status.queued_at is None:
        return False
    if now - status.queued_at > QUEUED_FOR_AT_MOST:
        return False
    with contextlib.suppress(TaskResultDoesNotExist):
        result = sync_team_task.get_result(status.queued_task_id)
        return result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING)
    return False


def enqueue_due_sync(now: datetime | None = None) -> str | None:
    """Enqueue a team sync when one is due; its task id, or None when nothing was enqueued."""
    now = now or timezone.now()
    status = TeamSyncStatus.get()
    if _outstanding(status, now):
        return None
    run, push = due(status, now, get_flag("sync_interval_seconds"))
    if not run:
        return None
    result = sync_team_task.enqueue(push=push)
    if result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING):
        TeamSyncStatus.objects.filter(pk=status.pk).update(queued_task_id=result.id, queued_at=now)
    return result.id
