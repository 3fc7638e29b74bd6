"""When a store's consolidation is due: Claude Code's gates, cheapest first (docs/design.md
§14.2), checked for every store by a sweep the background clock enqueues.

1. the `consolidation` and `auto_memory` flags (a dictionary lookup), and the person's own
   `autoDreamEnabled: false`, as the store's latest session said it;
2. `consolidation_min_hours` since the last consolidation: the mtime of the directory's
   `.consolidate-lock` (a local agent's run counts too), or memhub's own last run (one stat);
3. the session scan, at most once per 10 minutes per store: when the time gate passes but the
   session gate does not, the time gate keeps passing, and the scan must not run every minute;
4. `consolidation_min_sessions` sessions touched since: sessions uploaded by the hooks, and
   for a directory on this host the agent's own transcripts beside it; new daily-log entries
   call for a distillation whatever the session count;
5. the lock itself, taken by the task (memapp.lifecycle.consolidation), the last gate.

"Consolidate now" skips gates 2 to 4.
"""

from __future__ import annotations

import datetime
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from memapp.lifecycle.daily_logs import has_logs
from memapp.lifecycle.models import ConsolidationState, Session
from memapp.memdir.consolidate_lock import read_lock
from memapp.memdir.daily_logs import LOGS_DIR, count_lines, list_logs
from memapp.stores.flags import flags_for_projects
from memapp.stores.models import Store

__all__ = [
    "SCAN_EVERY",
    "Verdict",
    "check_gates",
    "last_consolidated",
    "session_scope",
    "sessions_since",
]

SCAN_EVERY = datetime.timedelta(minutes=10)


@dataclass
class Verdict:
    """What the gates say about one store: `gate` is `due` or the first gate that said no
    (`flag_off`, `memory_off`, `dream_off`, `no_directory`, `too_soon`, `scan_throttled`,
    `few_sessions`)."""

    store: Store
    gate: str
    consolidate: bool = False
    distill: bool = False
    sessions: int = 0

    @property
    def due(self) -> bool:
        return self.gate == "due"


def latest_consolidation(
    lock_mtime: float | None, recorded: datetime.datetime | None
) -> datetime.datetime | None:
    """The later of the lock's mtime (an agent's or memhub's last run) and memhub's own
    record (which outlives a deleted lock)."""
    stamps = [] if recorded is None else [recorded]
    if lock_mtime is not None:
        stamps.append(datetime.datetime.fromtimestamp(lock_mtime, tz=datetime.UTC))
    return max(stamps) if stamps else None


def last_consolidated(store: Store, state: ConsolidationState | None) -> datetime.datetime | None:
    """When the directory was last consolidated, by memhub or by an agent."""
    lock = read_lock(store.path)
    mtime = lock.mtime if lock.problem != "is a directory" else None
    return latest_consolidation(mtime, state.last_run_at if state is not None else None)


def _transcript_dir(store: Store) -> Path | None:
    """`projects/<p>/`, where Claude Code keeps a project's transcripts, for a store on this
    host inside `projects/<p>/memory/`."""
    if store.origin != Store.Origin.DISCOVERED or store.project_id is None:
        return None
    path = Path(store.path)
    for parent in [path, *path.parents]:
        if parent.name == "memory" and parent.parent.parent.name == "projects":
            return parent.parent
    return None


def _transcripts_since(store: Store, since: datetime.datetime | None) -> set[str]:
    folder = _transcript_dir(store)
    if folder is None:
        return set()
    floor = since.timestamp() if since is not None else 0.0
    found = set()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return set()
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            touched = entry.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if touched > floor:
            found.add(entry.name.removesuffix(".jsonl"))
    return found


def session_scope(store: Store) -> Q:
    """The sessions that touch a store: its owner's in it (private), the project's members'
    (team: a non-member's sessions never move its gates), the owner's anywhere (an agent's
    memory serves every project)."""
    if store.kind == Store.Kind.PRIVATE:
        return Q(store=store)
    if store.kind == Store.Kind.TEAM:
        return Q(project_id=store.project_id, owner__memhub_projects=store.project_id)
    return Q(owner_id=store.owner_id)


def sessions_since(store: Store, since: datetime.datetime | None) -> set[str]:
    """The ids of the sessions that touched the store after `since` (all when None)."""
    sessions = Session.objects.filter(session_scope(store))
    if since is not None:
        sessions = sessions.filter(last_entry_at__gt=since)
    return set(sessions.values_list("session_id", flat=True)) | _transcripts_since(store, since)


def logs_pending(store: Store, cursor: dict) -> bool:
    """Whether a log holds lines past what distillation has read (one stat when the store
    keeps no logs)."""
    root = Path(store.path)
    if not has_logs(store) or not (root / LOGS_DIR).is_dir():
        return False
    for key, _day in list_logs(root):
        try:
            data = (root / key).read_bytes()
        except OSError:
            continue
        if count_lines(data) > cursor.get(key, 0):
            return True
    return False


def _verdict(store, state, flags, now, dream_off: bool) -> Verdict:
    if not flags["consolidation"]:
        return Verdict(store, "flag_off")
    if not flags["auto_memory"]:
        return Verdict(store, "memory_off")
    if dream_off:
        return Verdict(store, "dream_off")
    if not Path(store.path).is_dir():
        return Verdict(store, "no_directory")
    last = last_consolidated(store, state)
    if last is not None and now - last < datetime.timedelta(hours=flags["consolidation_min_hours"]):
        return Verdict(store, "too_soon")
    if state.scanned_at is not None and now - state.scanned_at < SCAN_EVERY:
        return Verdict(store, "scan_throttled", sessions=state.sessions_seen)
    sessions = len(sessions_since(store, last))
    state.scanned_at, state.sessions_seen = now, sessions
    consolidate = sessions >= flags["consolidation_min_sessions"]
    distill = logs_pending(store, state.log_cursor)
    if not (consolidate or distill):
        return Verdict(store, "few_sessions", sessions=sessions)
    return Verdict(store, "due", consolidate, distill, sessions)


def _dream_off(store_ids: list[int]) -> set[int]:
    """The stores whose latest session's client said `autoDreamEnabled: false` (one query)."""
    latest = Session.objects.filter(store=OuterRef("pk")).order_by("-last_entry_at", "-pk")
    return set(
        Store.objects.filter(pk__in=store_ids)
        .annotate(dream=Subquery(latest.values("auto_dream")[:1]))
        .filter(dream=False)
        .values_list("pk", flat=True)
    )


def check_gates(now: datetime.datetime | None = None, stores=None) -> list[Verdict]:
    """The gates of every store (or of `stores`), each state updated with what they said."""
    now = now or timezone.now()
    stores = list(Store.objects.all() if stores is None else stores)
    states = {s.store_id: s for s in ConsolidationState.objects.filter(store__in=stores)}
    missing = [ConsolidationState(store=s) for s in stores if s.pk not in states]
    if missing:
        ConsolidationState.objects.bulk_create(missing, ignore_conflicts=True)
        states.update((s.store_id, s) for s in missing)
    flags = flags_for_projects({s.project_id for s in stores})
    dream_off = _dream_off([s.pk for s in stores])
    verdicts = []
    changed = []
    for store in stores:
        state = states[store.pk]
        before = (state.gate, state.scanned_at, state.sessions_seen)
        verdict = _verdict(store, state, flags[store.project_id], now, store.pk in dream_off)
        state.gate = verdict.gate
        if (state.gate, state.scanned_at, state.sessions_seen) != before:
            state.checked_at = now
            changed.append(state)
        verdicts.append(verdict)
    # One UPDATE per distinct outcome (a sweep's states mostly share theirs): bulk_update's
    # CASE per row took 1.5 s for 1,000 stores.
    groups: dict[tuple, list[int]] = defaultdict(list)
    for state in changed:
        groups[(state.gate, state.scanned_at, state.sessions_seen)].append(state.pk)
    for (gate, scanned_at, sessions_seen), pks in groups.items():
        ConsolidationState.objects.filter(pk__in=pks).update(
            gate=gate, checked_at=now, scanned_at=scanned_at, sessions_seen=sessions_seen
        )
    return verdicts
