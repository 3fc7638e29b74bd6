"""Recording events (DESIGN §12) through one function.

Each kind has a closed set of fields, the ones the client reports. An unknown kind or field is
a programming error and raises, so nothing unplanned (a secret, a memory's content) can slip
into the event log through a typo or a careless `**locals()`.
"""

from __future__ import annotations

import json

from memapp.models import Event

EVENT_FIELDS: dict[str, frozenset[str]] = {
    "sync_pull": frozenset({"success", "files_written", "not_modified", "duration_ms", "error"}),
    "sync_push": frozenset(
        {
            "success",
            "files_uploaded",
            "conflict",
            "conflict_retries",
            "duration_ms",
            "batches",
            "error",
        }
    ),
    "push_suppressed": frozenset({"reason", "status"}),
    "secret_skipped": frozenset({"file_count", "rule_ids"}),
    "entries_capped": frozenset({"total_entries", "dropped_count", "max_entries"}),
    "index_loaded": frozenset(
        {"file_count", "line_count", "truncated_by_lines", "truncated_by_bytes"}
    ),
    "recall": frozenset({"candidates", "selected", "ages", "selector", "error"}),
    "flag_changed": frozenset({"name", "scope", "old", "new", "note"}),
    "snapshot_decision": frozenset({"agent_type", "scope", "decision", "updated_at"}),
    "memory_written": frozenset({"path", "via", "created"}),
    "memory_forgotten": frozenset({"path", "via"}),
    "conflict": frozenset({"path", "reason", "resolution"}),
    "stores_discovered": frozenset({"found", "removed", "duration_ms"}),
}


class UnknownEventError(ValueError):
    """An event kind or field that DESIGN §12 does not define."""


def record_event(kind: str, project=None, user=None, *, store=None, **fields) -> Event:
    """Store one event; `store` marks events about a private store as visible only to its owner."""
    allowed = EVENT_FIELDS.get(kind)
    if allowed is None:
        raise UnknownEventError(f"unknown event kind {kind!r}")
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise UnknownEventError(f"event {kind!r} has no field(s) {', '.join(unknown)}")
    json.dumps(fields)  # fail here, not inside the database driver, on unserialisable values
    if project is None and store is not None:
        project = store.project
    return Event.objects.create(kind=kind, project=project, store=store, user=user, fields=fields)
