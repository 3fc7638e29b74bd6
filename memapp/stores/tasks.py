"""The stores app's background tasks (run by the task worker `manage.py serve` starts)."""

from __future__ import annotations

from django.conf import settings
from django_tasks import task

from memapp.stores.events import prune_events
from memapp.stores.history import prune_trash

__all__ = ["prune_events_task", "prune_trash_task"]


@task()
def prune_events_task() -> int:
    """Delete events older than MEMHUB_EVENT_RETENTION_DAYS (0 keeps them); how many went."""
    return prune_events(settings.MEMHUB_EVENT_RETENTION_DAYS)


@task()
def prune_trash_task() -> int:
    """Empty trash items older than MEMHUB_TRASH_DAYS, with their history; how many went."""
    return prune_trash(settings.MEMHUB_TRASH_DAYS)
