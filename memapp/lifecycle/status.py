"""Where a store stands with consolidation, in words a person reads on its page: when it was
last consolidated and by whom, what the gates wait for, the run under way, the proposals it
left, and its daily logs (docs/design.md §14)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.utils import timezone

from memapp.lifecycle.daily_logs import has_logs, log_summary
from memapp.lifecycle.gates import last_consolidated
from memapp.lifecycle.models import ConsolidationRun, ConsolidationState, Proposal
from memapp.memdir.consolidate_lock import read_lock
from memapp.stores.flags import get_flags
from memapp.stores.models import Store

__all__ = ["ConsolidationStatus", "consolidation_status"]

ACTIVE = (ConsolidationRun.Status.QUEUED, ConsolidationRun.Status.RUNNING)


@dataclass
class ConsolidationStatus:
    store: Store
    enabled: bool
    last: datetime.datetime | None
    by_memhub: bool
    holder: int | None  # a live PID holding the lock now
    waiting_for: str
    active: ConsolidationRun | None
    latest: ConsolidationRun | None
    pending: list[Proposal]
    keeps_logs: bool
    log_days: int
    log_waiting: int


def _waiting_for(state: ConsolidationState | None, flags: dict, last) -> str:
    """What the gates wait for, from what the last sweep decided."""
    gate = state.gate if state is not None else ""
    if not flags["consolidation"] or gate == "flag_off":
        return "Consolidation is turned off (the consolidation flag)."
    if not flags["auto_memory"] or gate == "memory_off":
        return "Auto memory is turned off for this project: nothing is consolidated."
    if gate == "dream_off":
        return (
            "Not on schedule: its owner's Claude Code settings say autoDreamEnabled: false "
            "(Consolidate now still works)."
        )
    hours, sessions = flags["consolidation_min_hours"], flags["consolidation_min_sessions"]
    if gate == "too_soon" and last is not None:
        due = timezone.localtime(last + datetime.timedelta(hours=hours))
        return f"Next when {hours} hours have passed since the last run: from {due:%Y-%m-%d %H:%M}."
    if gate in ("few_sessions", "scan_throttled"):
        seen = state.sessions_seen if state is not None else 0
        return (
            f"Waiting for {sessions} sessions since the last run ({seen} so far); new "
            "daily-log entries start a distillation sooner."
        )
    if gate == "due":
        return "Due: it starts within a minute."
    return f"It runs once {hours} hours and {sessions} sessions have passed since the last run."


def consolidation_status(store: Store, user) -> ConsolidationStatus:
    """The status of `store` as `user` sees it (the proposals listed are theirs to review)."""
    flags = get_flags(store.project)
    state = ConsolidationState.objects.filter(store=store).first()
    lock = read_lock(store.path)
    last = last_consolidated(store, state)
    by_memhub = bool(state and state.last_run_at and last and state.last_run_at >= last)
    runs = ConsolidationRun.objects.filter(store=store)
    log_days, log_waiting = log_summary(store)
    return ConsolidationStatus(
        store=store,
        enabled=flags["consolidation"],
        last=last,
        by_memhub=by_memhub,
        holder=lock.pid if lock.held() else None,
        waiting_for=_waiting_for(state, flags, last),
        active=runs.filter(status__in=ACTIVE).first(),
        latest=runs.exclude(status__in=ACTIVE).first(),
        pending=list(
            Proposal.objects.visible_to(user).filter(
                store=store,
                status=Proposal.Status.PENDING,
                kind__in=[Proposal.Kind.CONSOLIDATION, Proposal.Kind.DISTILLATION],
            )
        ),
        keeps_logs=has_logs(store),
        log_days=log_days,
        log_waiting=log_waiting,
    )
