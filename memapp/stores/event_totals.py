"""Per-day event totals (docs/design.md §12.2): written with the events, pruned with them, and
rebuilt from them (the migration that introduced them, the scale benchmark's bulk inserts).

A row counts the events of one day, kind, project, store and person that fall in one `facet`
and `value` (what the dashboard tells apart); adding to it is an upsert, atomic on both
databases, so concurrent writers never lose a count.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable

from django.db import connection
from django.utils import timezone

from memapp.stores.models import Event, EventTotal

Dims = tuple[datetime.date, str, int | None, int | None, int | None, str, int]


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def facet_of(kind: str, fields: dict) -> tuple[str, int, int]:
    """(facet, value, amount) of one event: the distinctions the dashboard draws, as its
    queries over events drew them (a field's absence counts as its queries counted it)."""
    if kind == "recall":
        selected = _int(fields.get("selected"))
        value = -1 if selected is None else selected  # -1: no `selected` (not an empty answer)
        return str(fields.get("selector") or "")[:64], value, selected or 0
    if kind == "sync_push":
        return ("ok" if fields.get("success") is True else "failed"), 0, 0
    if kind == "sync_pull":
        return ("changed" if fields.get("not_modified") is False else "unchanged"), 0, 0
    if kind == "conflict":
        return ("open" if "resolution" not in fields else "resolved"), 0, 0
    if kind == "secret_skipped":
        return "", 0, _int(fields.get("file_count")) or 0
    if kind == "entries_capped":
        return "", 0, _int(fields.get("dropped_count")) or 0
    if kind in ("extraction_run", "consolidation_run"):
        return str(fields.get("outcome") or "")[:64], 0, 0
    if kind == "proposal_decided":
        return ("rejected" if fields.get("decision") == "rejected" else "approved"), 0, 0
    return "", 0, 0


def _tally(rows: Iterable[tuple]) -> dict[Dims, list[int]]:
    """Sum (kind, created_at, project_id, store_id, user_id, fields) rows by their dimensions."""
    sums: dict[Dims, list[int]] = {}
    for kind, created_at, project_id, store_id, user_id, fields in rows:
        facet, value, amount = facet_of(kind, fields or {})
        day = timezone.localdate(created_at)
        entry = sums.setdefault((day, kind, project_id, store_id, user_id, facet, value), [0, 0])
        entry[0] += 1
        entry[1] += amount
    return sums


def _key(dims: Dims) -> str:
    day, kind, project_id, store_id, user_id, facet, value = dims
    ids = "|".join("" if pk is None else str(pk) for pk in (project_id, store_id, user_id))
    return f"{day.isoformat()}|{kind}|{ids}|{value}|{facet}"


def _add(sums: dict[Dims, list[int]]) -> None:
    """Add `sums` to the totals: one upsert per 500 rows (`ON CONFLICT … DO UPDATE`, SQLite and
    PostgreSQL alike), inside the caller's transaction. Rows are written in key order, so two
    transactions adding to the same totals lock them in the same order (in any other order
    PostgreSQL can deadlock them, and a request fails)."""
    if not sums:
        return
    quote = connection.ops.quote_name
    table = quote(EventTotal._meta.db_table)
    columns = ["key", "day", "kind", "project_id", "store_id", "user_id", "facet", "value"]
    columns += ["count", "amount"]
    items = sorted(
        ((_key(dims), dims, total) for dims, total in sums.items()), key=lambda row: row[0]
    )
    for start in range(0, len(items), 500):
        chunk = items[start : start + 500]
        values = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * len(chunk))
        params: list = []
        for key, dims, (count, amount) in chunk:
            params += [key, dims[0].isoformat(), *dims[1:], count, amount]
        sql = (
            f"INSERT INTO {table} ({', '.join(quote(c) for c in columns)}) VALUES {values} "
            f"ON CONFLICT ({quote('key')}) DO UPDATE SET "
            f"{quote('count')} = {table}.{quote('count')} + excluded.{quote('count')}, "
            f"{quote('amount')} = {table}.{quote('amount')} + excluded.{quote('amount')}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def add_to_totals(events: Iterable[Event]) -> None:
    """Count `events` (just written, in the same transaction) in their days' totals."""
    add_rows_to_totals(
        (e.kind, e.created_at, e.project_id, e.store_id, e.user_id, e.fields) for e in events
    )


def add_rows_to_totals(rows: Iterable[tuple]) -> None:
    """`add_to_totals` for events given as (kind, created_at, project_id, store_id, user_id,
    fields)."""
    _add(_tally(rows))


def count_into_totals(events) -> None:
    """Add the events of the queryset `events` to the totals (a historical model's will do)."""
    columns = ("kind", "created_at", "project_id", "store_id", "user_id", "fields")
    _add(_tally(events.values_list(*columns).order_by().iterator(chunk_size=5000)))


def rebuild_event_totals() -> None:
    """Count every event kept again (inside the caller's transaction)."""
    EventTotal.objects.all().delete()
    count_into_totals(Event.objects.all())


def prune_totals(cutoff: datetime.datetime) -> None:
    """After events older than `cutoff` went: drop the totals of the days before its day and
    count that day's remaining events again (inside the caller's transaction)."""
    day = timezone.localdate(cutoff)
    start, end = (
        timezone.make_aware(datetime.datetime.combine(d, datetime.time.min))
        for d in (day, day + datetime.timedelta(days=1))
    )
    EventTotal.objects.filter(day__lte=day).delete()
    count_into_totals(Event.objects.filter(created_at__gte=start, created_at__lt=end))
