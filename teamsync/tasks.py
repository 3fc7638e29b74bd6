"""Team sync as a background task (run by the task worker `manage.py serve` starts)."""

from __future__ import annotations

from django_tasks import task

from teamsync.models import TeamSyncStatus
from teamsync.service import do_sync_team

__all__ = ["sync_team_task"]


@task()
def sync_team_task(push: bool = True) -> dict:
    """One full team sync (pull, and push unless `push` is false); the summary is its result."""
    try:
        report = do_sync_team(push=push)
    finally:
        TeamSyncStatus.objects.filter(pk=TeamSyncStatus.get().pk).update(
            queued_task_id="", queued_at=None
        )
    return {
        "committed": report.committed,
        "written": report.written,
        "deleted": report.deleted,
        "conflicts": len(report.conflicts),
        "pushed": report.pushed,
        "error": report.error,
        "duration_ms": report.duration_ms,
    }
