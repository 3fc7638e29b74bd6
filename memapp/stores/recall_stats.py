"""How often recall returned each memory, and when last (docs/design.md §7).

Recall is a hot API path, so, like its events, the counts are buffered and written in bulk:
when 50 memories are waiting, 5 s after the first one, and at exit. Each write adds to the
stored count (`F() + n`), so every worker's buffer counts, whichever flushes first.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from memapp.stores.models import RecallStat

FLUSH_COUNT = 50
FLUSH_SECONDS = 5.0
_pending: dict[tuple[int, str], tuple[int, object]] = {}  # (store, path) -> (times, last at)
_lock = threading.Lock()
_since = 0.0


def count_recalled(memories: Iterable[tuple[int, str]]) -> None:
    """Count one recall of each `(store id, path)`; written to the database soon after."""
    global _since
    now = timezone.now()
    with _lock:
        if not _pending:
            _since = time.monotonic()
        for key in memories:
            times, _ = _pending.get(key, (0, now))
            _pending[key] = (times + 1, now)
        due = len(_pending) >= FLUSH_COUNT or time.monotonic() - _since >= FLUSH_SECONDS
    if due:
        flush_recall_counts()


def flush_recall_counts() -> int:
    """Write what is buffered now; returns how many memories' counts were written."""
    with _lock:
        pending = dict(_pending)
        _pending.clear()
    for (store_id, path), (times, at) in pending.items():
        updated = RecallStat.objects.filter(store_id=store_id, path=path).update(
            count=F("count") + times, last_recalled_at=at
        )
        if updated:
            continue
        try:
            with transaction.atomic():
                RecallStat.objects.create(
                    store_id=store_id, path=path, count=times, last_recalled_at=at
                )
        except IntegrityError:  # another worker created it meanwhile: add to it
            RecallStat.objects.filter(store_id=store_id, path=path).update(
                count=F("count") + times, last_recalled_at=at
            )
    return len(pending)


def discard_recall_counts() -> None:
    """Drop what is buffered (tests: the rows it refers to go with the test)."""
    with _lock:
        _pending.clear()


def _flush_at_exit() -> None:
    try:
        flush_recall_counts()
    except Exception:  # the database may be gone already; losing counts beats a traceback
        logging.getLogger(__name__).exception("could not write buffered recall counts at exit")


atexit.register(_flush_at_exit)
