"""Team sync pages: status and history, blocked files, conflicts to resolve."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memapp.memdir.secret_rules import redact_text
from memapp.stores.flags import get_flags
from memapp.stores.models import Event, Store, event_visibility
from memapp.web.diff import diff_lines
from memapp.web.keyset import event_page
from memapp.web.sync_story import sync_story
from teamsync.models import BlockedFile, HeldDeletion, StoreSyncState, TeamConflict, TeamSyncStatus
from teamsync.service import (
    AlreadyResolved,
    current_text,
    do_decide_deletions,
    do_resolve_conflict,
    folder_for,
    request_sync,
    suggested_merge,
    team_remote_display,
)

SYNC_EVENTS = [
    "sync_pull",
    "sync_push",
    "push_suppressed",
    "secret_skipped",
    "entries_capped",
    "conflict",
]


def _team_stores(user):
    return Store.objects.visible_to(user).filter(kind=Store.Kind.TEAM).select_related("project")


def _blocked_files(stores: list[Store]) -> list[BlockedFile]:
    """The files kept back, each with `why` in words (the size cap is its project's flag) and
    `shown_key`, its key with a token in its name redacted."""
    blocked = list(BlockedFile.objects.filter(store__in=stores).select_related("store__project"))
    caps: dict[int, int] = {}
    for file in blocked:
        why = file.get_reason_display()
        if file.reason == BlockedFile.Reason.TOO_LARGE:
            project = file.store.project
            if project.pk not in caps:
                caps[project.pk] = get_flags(project)["team_max_entry_bytes"]
            why = f"{why} ({caps[project.pk]:,} bytes)"
        file.why = why
        file.shown_key = redact_text(file.key)[0]
    return blocked


@login_required
def sync_status(request: HttpRequest) -> HttpResponse:
    stores = list(_team_stores(request.user))
    sync = Event.objects.filter(kind__in=SYNC_EVENTS)
    events = sync.filter(Q(store__in=stores) | Q(store__isnull=True)).select_related(
        "store__project", "user"
    )
    # Each part read newest first from the index on (store, created_at), not all sorted.
    branches = [sync.filter(store__isnull=True), sync.filter(store__in=stores)]
    page = event_page(events, event_visibility(request.user), request.GET, 50, branches)
    context = {
        "status": TeamSyncStatus.get(),
        "remote": team_remote_display(),
        "stores": [(store, folder_for(store)) for store in stores],
        "blocked": _blocked_files(stores),
        "conflicts": TeamConflict.objects.filter(
            store__in=stores, resolved_at__isnull=True
        ).select_related("store__project"),
        "held": HeldDeletion.objects.filter(
            store__in=stores, decided_at__isnull=True
        ).select_related("store__project"),
        "moves": StoreSyncState.objects.filter(store__in=stores)
        .exclude(move_error="")
        .select_related("store__project"),
        "page": page,
        "story": sync_story(page.object_list),
    }
    return render(request, "teamsync/status.html", context)


@login_required
@require_POST
def held_deletions(request: HttpRequest, held_id: int) -> HttpResponse:
    """A member confirms or refuses the deletions a sync held back (docs/design.md §17)."""
    held = (
        HeldDeletion.objects.filter(pk=held_id, store__in=_team_stores(request.user))
        .select_related("store__project")
        .first()
    )
    choice = request.POST.get("choice")
    if held is None:
        raise Http404("No such question.")
    if choice not in ("delete", "keep"):
        messages.error(request, "Choose Delete them or Keep them.")
        return redirect("sync")
    if held.decided_at is not None:
        messages.info(request, f"Already answered: {held.get_decision_display()}.")
        return redirect("sync")
    do_decide_deletions(held, request.user, delete=choice == "delete")
    where = held.store.project
    if choice == "delete":
        note = f"Deleted {len(held.keys)} files from {where}: they are in its Trash."
    else:
        note = f"Kept {len(held.keys)} files in {where}: the next sync shares them again."
    messages.success(request, note)
    return redirect("sync")


@login_required
@require_POST
def sync_now(request: HttpRequest) -> HttpResponse:
    request_sync()
    messages.success(request, "Sync requested: the sync worker runs it within a few seconds.")
    return redirect("sync")


def _conflict_for(user, conflict_id: int) -> TeamConflict:
    conflict = (
        TeamConflict.objects.filter(pk=conflict_id, store__in=_team_stores(user))
        .select_related("store__project")
        .first()
    )
    if conflict is None:
        raise Http404("No such conflict.")
    return conflict


CHOICES = {
    "ours": "Keep ours",
    "theirs": "Keep theirs",
    "merged": "Save the merge",
    "delete": "Delete it",
}


def _chosen(conflict: TeamConflict, ours: str | None, choice: str, merged: str | None):
    return {"ours": ours, "theirs": conflict.theirs, "merged": merged}.get(choice)


@login_required
def conflict_detail(request: HttpRequest, conflict_id: int) -> HttpResponse:
    """The conflict as diffs against what the store holds now ("ours" may have changed since
    the conflict arose); a choice is shown with what it changes in the store, then carried
    out once confirmed (the side not kept stays in the memory's history)."""
    conflict = _conflict_for(request.user, conflict_id)
    ours = current_text(conflict)
    suggestion = suggested_merge(conflict)
    context = {
        "conflict": conflict,
        "ours": ours,
        "changed_since": ours != conflict.ours,
        "merge_start": suggestion if suggestion is not None else ours or conflict.theirs,
        "between": diff_lines(ours, conflict.theirs),
        "our_change": diff_lines(conflict.base, ours),
        "their_change": diff_lines(conflict.base, conflict.theirs),
    }
    if request.method == "POST" and conflict.resolved_at is not None:
        messages.error(request, str(AlreadyResolved(conflict)))
    elif request.method == "POST":
        choice = request.POST.get("choice", "")
        merged = request.POST.get("merged")
        if choice == "merged" and merged is not None:
            merged = merged.replace("\r\n", "\n")
        if choice not in CHOICES or (choice == "merged" and merged is None):
            messages.error(request, f"unknown resolution {choice!r}")
        elif request.POST.get("confirm") != "yes":
            context["pending"] = {
                "choice": choice,
                "label": CHOICES[choice],
                "merged": merged,
                "change": diff_lines(ours, _chosen(conflict, ours, choice, merged)),
            }
        else:
            try:
                do_resolve_conflict(conflict, request.user, choice, merged)
            except AlreadyResolved as exc:
                messages.error(request, str(exc))
                return redirect("sync_conflict", conflict_id=conflict.pk)
            messages.success(request, f"Resolved {conflict.key}: kept {choice}.")
            return redirect("sync")
    return render(request, "teamsync/conflict.html", context)
