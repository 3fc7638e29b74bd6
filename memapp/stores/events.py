"""Recording events (docs/design.md §12) through one function.

Each kind has a closed set of fields, the ones the client reports. An unknown kind or field is
a programming error and raises, so nothing unplanned (a secret, a memory's content) can slip
into the event log through a typo or a careless `**locals()`.
"""

from __future__ import annotations

import atexit
import json
import logging
import threading
import time
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from memapp.stores.bulk import insert_rows
from memapp.stores.event_totals import add_rows_to_totals, add_to_totals, prune_totals
from memapp.stores.models import Event

# Each kind's fields, in the order a person reads them (the events page shows them so).
EVENT_FIELDS: dict[str, tuple[str, ...]] = {
    "sync_pull": ("success", "files_written", "not_modified", "duration_ms", "error", "authors"),
    "sync_push": (
        "success",
        "files_uploaded",
        "conflict",
        "conflict_retries",
        "duration_ms",
        "batches",
        "error",
    ),
    "push_suppressed": ("reason", "status"),
    "secret_skipped": ("file_count", "rule_ids"),
    "entries_capped": ("total_entries", "dropped_count", "max_entries"),
    "team_sync_changed": ("written", "trashed", "names", "authors"),
    "index_loaded": ("file_count", "line_count", "truncated_by_lines", "truncated_by_bytes"),
    "recall": ("candidates", "selected", "ages", "selector", "error"),
    "flag_changed": ("name", "scope", "old", "new", "note"),
    "snapshot_decision": ("agent_type", "scope", "decision", "updated_at"),
    "memory_written": ("path", "via", "created"),
    "memory_forgotten": ("path", "via"),
    "conflict": ("path", "reason", "resolution"),
    "stores_discovered": ("found", "removed", "duration_ms"),
    "extraction_run": (
        "outcome",
        "trigger",
        "sessions",
        "messages",
        "proposed",
        "dropped",
        "selector",
        "duration_ms",
        "error",
    ),
    "gemini_inbox_patch": ("source", "outcome", "reason", "files"),
    "proposal_decided": ("proposal_kind", "decision", "applied", "conflicts", "refused", "skipped"),
    "consolidation_run": (
        "trigger",
        "gate",
        "outcome",
        "kinds",
        "sessions",
        "log_entries",
        "proposed",
        "dropped",
        "selector",
        "index_lines_before",
        "index_bytes_before",
        "index_lines_after",
        "index_bytes_after",
        "stale",
        "lock_holder",
        "duration_ms",
        "error",
    ),
    "member_added": ("member",),
    "member_removed": ("member",),
    "project_renamed": ("old", "new", "aliases"),
    "projects_merged": ("merged", "into"),
    "folder_moved": ("old", "new", "error"),
    "deletions_held": ("file_count", "paths"),
}


def ordered_fields(event: Event) -> list[tuple[str, object]]:
    """The event's fields in its kind's order (a database may keep JSON keys in any order),
    any field the kind no longer lists last."""
    order = EVENT_FIELDS.get(event.kind, ())
    known = [(key, event.fields[key]) for key in order if key in event.fields]
    return known + [(k, v) for k, v in event.fields.items() if k not in order]


class UnknownEventError(ValueError):
    """An event kind or field that docs/design.md §12 does not define."""


def record_event(kind: str, project=None, user=None, *, store=None, **fields) -> Event:
    """Store one event; `store` marks events about a private store as visible only to its owner."""
    event = _event(kind, project, user, store, fields)
    with transaction.atomic():
        event.save()
        add_to_totals([event])
    return event


def _event(kind: str, project, user, store, fields: dict) -> Event:
    """An unsaved event, after checking its kind and fields."""
    _check(kind, fields)
    if project is None and store is not None:
        project = store.project
    return Event(kind=kind, project=project, store=store, user=user, fields=fields)


def _check(kind: str, fields: dict) -> None:
    allowed = EVENT_FIELDS.get(kind)
    if allowed is None:
        raise UnknownEventError(f"unknown event kind {kind!r}")
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise UnknownEventError(f"event {kind!r} has no field(s) {', '.join(unknown)}")
    json.dumps(fields)  # fail here, not inside the database driver, on unserialisable values


# Events of hot API paths (recall, index loaded) are buffered and written in bulk, so a busy
# agent's requests are not each a database write. The buffer is flushed when it is full, when it
# is older than FLUSH_SECONDS (checked on the next event), and at process exit. It holds each
# event's columns (`_ATTNAMES`), written by `insert_rows` without a model instance per event
# (about 1 % of a recall's instructions).
FLUSH_EVENTS = 50
FLUSH_SECONDS = 5.0
_ATTNAMES = ("kind", "created_at", "project_id", "store_id", "user_id", "fields")
_buffer: list[tuple] = []
_buffer_lock = threading.Lock()
_buffer_since = 0.0


def record_event_later(kind: str, project=None, user=None, *, store=None, **fields) -> None:
    """Like `record_event`, but written in bulk soon after; for per-request bookkeeping."""
    global _buffer_since
    _check(kind, fields)
    if project is None and store is not None:
        project_id = store.project_id
    else:
        project_id = None if project is None else project.pk
    store_id = None if store is None else store.pk
    user_id = None if user is None else user.pk
    event = (kind, timezone.now(), project_id, store_id, user_id, fields)
    with _buffer_lock:
        if not _buffer:
            _buffer_since = time.monotonic()
        _buffer.append(event)
        due = len(_buffer) >= FLUSH_EVENTS or time.monotonic() - _buffer_since >= FLUSH_SECONDS
    if due:
        flush_events()


def discard_buffered_events() -> None:
    """Drop what is buffered (tests: rows it refers to are rolled back with the test)."""
    with _buffer_lock:
        _buffer.clear()


def flush_events() -> int:
    """Write the buffered events now; returns how many were written."""
    with _buffer_lock:
        buffered = _buffer[:]
        _buffer.clear()
    if not buffered:
        return 0
    try:
        with transaction.atomic():
            insert_rows(Event, _ATTNAMES, buffered)
            add_rows_to_totals(buffered)
    except IntegrityError:
        # A project, store or user was deleted while its events waited here: they keep no
        # reference to it, as if written before the delete (SET_NULL).
        pending = [Event(**dict(zip(_ATTNAMES, row, strict=True))) for row in buffered]
        _forget_deleted(pending)
        with transaction.atomic():
            Event.objects.bulk_create(pending)
            add_to_totals(pending)
    return len(buffered)


def _forget_deleted(events: list[Event]) -> None:
    for field in ("project", "store", "user"):
        attname = f"{field}_id"
        model = Event._meta.get_field(field).related_model
        ids = {getattr(event, attname) for event in events} - {None}
        there = set(model.objects.filter(pk__in=ids).values_list("pk", flat=True))
        for event in events:
            if getattr(event, attname) not in there:
                setattr(event, field, None)


def _flush_at_exit() -> None:
    try:
        flush_events()
    except Exception:  # the database may already be gone; losing bookkeeping beats a traceback
        logging.getLogger(__name__).exception("could not write buffered events at exit")


atexit.register(_flush_at_exit)


def prune_events(days: int, now=None) -> int:
    """Delete events older than `days` days (0 keeps everything), and their totals; returns how
    many events went."""
    if days <= 0:
        return 0
    now = timezone.now() if now is None else now
    cutoff = now - timedelta(days=days)
    with transaction.atomic():
        deleted, _ = Event.objects.filter(created_at__lt=cutoff).delete()
        prune_totals(cutoff)
    return deleted
