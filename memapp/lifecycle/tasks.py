"""The lifecycle's background tasks (run by the task worker `manage.py serve` starts), and how
their runs are queued: an extraction run one per store at a time, with one trailing run, and a
consolidation run one per store, asked for by the sweep or a person (docs/design.md §14.4,
§14.7)."""

from __future__ import annotations

import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import task

from memapp.lifecycle import consolidation, extraction
from memapp.lifecycle.consolidation import ACTIVE, run_consolidation
from memapp.lifecycle.extraction import run_extraction
from memapp.lifecycle.gates import check_gates
from memapp.lifecycle.models import ConsolidationRun, ExtractionRun, SessionSummary
from memapp.lifecycle.sessions import prune_sessions
from memapp.lifecycle.summaries import run_summary, summary_is_due
from memapp.stores.flags import get_flags
from memapp.stores.models import Store

__all__ = [
    "consolidate_store_task",
    "consolidation_sweep_task",
    "enqueue_due_consolidations",
    "prune_sessions_task",
    "request_consolidation",
    "request_extraction",
    "request_summary",
    "run_extraction_task",
    "run_summary_task",
]


@task()
def run_extraction_task(run_id: int) -> dict:
    """One extraction run, then the trailing run that waited for it; the run's summary."""
    summary = run_extraction(run_id)
    if summary["store"] is not None:
        _start_next(summary["store"])
    return summary


@task()
def run_summary_task(session_pk: int) -> dict:
    """Bring one session's summary up to date (docs/design.md §14.10)."""
    return run_summary(session_pk)


@task()
def prune_sessions_task() -> int:
    """Delete sessions idle for MEMHUB_TRANSCRIPT_RETENTION_DAYS (0 keeps them); how many."""
    return prune_sessions(settings.MEMHUB_TRANSCRIPT_RETENTION_DAYS)


def request_summary(session) -> str:
    """After an upload: `off` (flag), `waiting` (not due), `queued` (a task enqueued) or
    `coalesced` (one already waits, and will read these entries too)."""
    if not get_flags(session.project)["session_summary"]:
        return "off"
    summary = SessionSummary.objects.filter(session=session).first()
    if not summary_is_due(session, summary):
        return "waiting"
    if summary is None:
        summary, _ = SessionSummary.objects.get_or_create(session=session)
    if not SessionSummary.objects.filter(pk=summary.pk, queued=False).update(queued=True):
        return "coalesced"
    run_summary_task.enqueue(session.pk)
    return "queued"


def _enqueue(run: ExtractionRun) -> None:
    result = run_extraction_task.enqueue(run.pk)
    ExtractionRun.objects.filter(pk=run.pk, task_id="").update(task_id=result.id)


def request_extraction(store: Store, owner) -> str:
    """Ask for a run of `store`: `queued` (a new run, enqueued), `trailing` (one is busy: a
    trailing run waits for it) or `coalesced` (a run already waits)."""
    # A run waiting (and not lost) reads these entries when it runs: said without the store's
    # lock, which every upload of a long session asked for while one waited.
    fresh = timezone.now() - extraction.STALE_RUN
    queued = ExtractionRun.objects.filter(
        store=store, status=ExtractionRun.Status.QUEUED, created_at__gte=fresh
    )
    if queued.exists():
        return "coalesced"
    with transaction.atomic():
        Store.objects.select_for_update().filter(pk=store.pk).exists()  # one request at a time
        ExtractionRun.objects.expire_lost(store.pk, extraction.STALE_RUN)
        active = ExtractionRun.objects.filter(
            store=store, status__in=[ExtractionRun.Status.QUEUED, ExtractionRun.Status.RUNNING]
        )
        if active.filter(status=ExtractionRun.Status.QUEUED).exists():
            return "coalesced"
        busy = active.exists()
        run = ExtractionRun.objects.create(store=store, owner=owner, trailing=busy)
    if busy:
        return "trailing"
    _enqueue(run)
    return "queued"


def _start_next(store_id: int) -> None:
    """After a run: enqueue the trailing run waiting for this store, if any."""
    with transaction.atomic():
        Store.objects.select_for_update().filter(pk=store_id).exists()
        waiting = (
            ExtractionRun.objects.filter(store_id=store_id, status=ExtractionRun.Status.QUEUED)
            .order_by("created_at", "pk")
            .first()
        )
    if waiting is not None and not waiting.task_id:
        _enqueue(waiting)


def request_consolidation(
    store: Store,
    *,
    trigger: str,
    requested_by=None,
    consolidate: bool = True,
    distill: bool = True,
) -> tuple[str, ConsolidationRun]:
    """Queue a run of `store`: (`queued`, the new run), or (`busy`, the run already queued or
    running, which serves this request too)."""
    with transaction.atomic():
        Store.objects.select_for_update().filter(pk=store.pk).exists()  # one request at a time
        ConsolidationRun.objects.expire_lost(store.pk, consolidation.STALE_RUN)
        active = ConsolidationRun.objects.filter(store=store, status__in=ACTIVE).first()
        if active is not None:
            return "busy", active
        run = ConsolidationRun.objects.create(
            store=store,
            trigger=trigger,
            requested_by=requested_by,
            consolidate=consolidate,
            distill=distill,
        )
    result = consolidate_store_task.enqueue(run.pk)
    ConsolidationRun.objects.filter(pk=run.pk, task_id="").update(task_id=result.id)
    return "queued", run


def enqueue_due_consolidations(now: datetime.datetime | None = None) -> list[int]:
    """Check every store's gates and queue a run for each that is due; the new runs' ids."""
    queued = []
    for verdict in check_gates(now):
        if not verdict.due:
            continue
        status, run = request_consolidation(
            verdict.store,
            trigger=ConsolidationRun.Trigger.SCHEDULE,
            consolidate=verdict.consolidate,
            distill=verdict.distill,
        )
        if status == "queued":
            queued.append(run.pk)
    return queued


@task()
def consolidate_store_task(run_id: int) -> dict:
    """One consolidation run; its summary."""
    return run_consolidation(run_id)


@task()
def consolidation_sweep_task() -> list[int]:
    """The gates of every store; the runs it queued."""
    return enqueue_due_consolidations()
