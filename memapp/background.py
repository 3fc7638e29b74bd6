"""The background process `manage.py serve` starts beside the HTTP server and the task worker.

It runs the live mirror (:mod:`memapp.stores.live`: discovery at start, then the watcher and its
fallback rescans) and a clock that enqueues the periodic tasks when they are due: team sync (by
team sync's own policy), the daily pruning of events, of session transcripts and of the trash,
and each minute the check of every store's consolidation gates (which queues the stores that
are due) and of Gemini CLI's `/memory inbox` (its patches become proposals). The tasks
themselves run in the task worker (`manage.py db_worker`, or RQ workers on other machines),
never here.

Run one background process per deployment: two clocks would each enqueue the daily tasks.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from memapp.lifecycle.gemini_inbox import gemini_inbox_task
from memapp.lifecycle.tasks import consolidation_sweep_task, prune_sessions_task
from memapp.memdir.paths import memory_base
from memapp.stores.live import LiveMirror
from memapp.stores.tasks import prune_events_task, prune_trash_task
from teamsync.scheduling import enqueue_due_sync

__all__ = ["Clock", "run_background"]

log = logging.getLogger(__name__)

PRUNE_EVERY = timedelta(days=1)
SWEEP_EVERY = timedelta(minutes=1)  # consolidation gates; each store scans sessions <= 1/10 min
TICK_S = 1.0


class Clock:
    """Enqueues periodic tasks; :meth:`tick` is one look at what is due."""

    def __init__(self) -> None:
        self.pruned_at: datetime | None = None
        self.swept_at: datetime | None = None

    def tick(self, now: datetime | None = None) -> list[str]:
        """Enqueue what is due at `now`; the names of what was enqueued."""
        now = now or timezone.now()
        enqueued = []
        if enqueue_due_sync(now):
            enqueued.append("team sync")
        if self.pruned_at is None or now - self.pruned_at >= PRUNE_EVERY:
            self.pruned_at = now
            prune_events_task.enqueue()
            prune_sessions_task.enqueue()
            prune_trash_task.enqueue()
            enqueued += ["prune events", "prune sessions", "prune trash"]
        if self.swept_at is None or now - self.swept_at >= SWEEP_EVERY:
            self.swept_at = now
            consolidation_sweep_task.enqueue()
            gemini_inbox_task.enqueue()
            enqueued += ["consolidation gates", "gemini inbox"]
        return enqueued

    def run(self, stop: threading.Event) -> None:
        """Tick every second until `stop` is set; a failing tick is logged, never fatal."""
        while not stop.is_set():
            close_old_connections()
            try:
                self.tick()
            except Exception:
                log.exception("the background clock failed; trying again in a second")
            stop.wait(TICK_S)


def run_background(stop: threading.Event) -> None:
    """The clock in a thread and, when discovery is on, the live mirror in this one."""
    clock = threading.Thread(target=Clock().run, args=(stop,), name="clock", daemon=True)
    clock.start()
    if settings.MEMHUB_DISCOVER:
        live = LiveMirror(memory_base(), rescan_every=settings.MEMHUB_RESCAN_SECONDS)
        live.watch(stop)  # discovers at start, then follows the changes
    else:
        stop.wait()
    clock.join()
