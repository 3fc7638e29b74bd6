"""How often recall returned each memory, and when last (docs/design.md §7).

Recall is a hot API path, so, like its events, the counts are buffered and written in bulk:
when 50 memories are waiting, 5 s after the first one, and at exit. Each write adds to the
stored count in the database (an upsert), so every worker's buffer counts, whichever flushes
first.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Iterable

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memapp.stores.models import RecallStat, Store

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
    """Write what is buffered now, in one statement per 500 memories; returns how many
    memories' counts were written."""
    with _lock:
        pending = dict(_pending)
        _pending.clear()
    # In key order: two workers flushing at once then lock the rows they share in the same
    # order, one waiting for the other, where PostgreSQL found a deadlock and failed a recall.
    rows = [(store, path, times, at) for (store, path), (times, at) in sorted(pending.items())]
    if not rows:
        return 0
    try:
        with transaction.atomic():
            _add_counts(rows)
    except IntegrityError:  # a store was deleted while its counts waited: they go with it
        there = set(
            Store.objects.filter(pk__in={row[0] for row in rows}).values_list("pk", flat=True)
        )
        rows = [row for row in rows if row[0] in there]
        _add_counts(rows)
    return len(rows)


def _add_counts(rows: list[tuple[int, str, int, object]]) -> None:
    """Each row's count added to its memory's stored one (or stored, the first time): an
    upsert, so every worker's counts add up whichever writes first (SQLite and PostgreSQL)."""
    quote = connection.ops.quote_name
    table = quote(RecallStat._meta.db_table)
    count, at = quote("count"), quote("last_recalled_at")
    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        values = ", ".join(["(%s, %s, %s, %s)"] * len(chunk))
        params = [
            value
            for store, path, times, when in chunk
            for value in (store, path, times, connection.ops.adapt_datetimefield_value(when))
        ]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} ({quote('store_id')}, {quote('path')}, {count}, {at}) "
                f"VALUES {values} ON CONFLICT ({quote('store_id')}, {quote('path')}) DO UPDATE "
                f"SET {count} = {table}.{count} + excluded.{count}, {at} = excluded.{at}",
                params,
            )


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
