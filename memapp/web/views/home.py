from __future__ import annotations

import time
from datetime import timedelta
from itertools import groupby

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from memapp.stores.discovery import discover_local_stores, local_owner
from memapp.stores.events import ordered_fields
from memapp.stores.models import DAY_MS, Event, MemoryFile, Store
from memapp.web.context_processors import waiting_of
from memapp.web.event_story import story
from memapp.web.views.joining import connect_context

RECENT = 10
# What a team sync did to the user's stores, shown on Home for a week: the files it moved to
# the Trash or brought, and the ones it kept back (docs/design.md §22).
TOLD_KINDS = ("team_sync_changed", "secret_skipped", "entries_capped")
TOLD_DAYS = 7
TOLD = 5


def _what_happened(user, stores: list[Store]):
    since = timezone.now() - timedelta(days=TOLD_DAYS)
    events = (
        Event.objects.visible_to(user)
        .filter(kind__in=TOLD_KINDS, store__in=stores, created_at__gte=since)
        .select_related("project", "store__project")
    )
    return story(events[:TOLD], ordered_fields)


def _first(ordered) -> list[MemoryFile]:
    """The first RECENT of `ordered` memories, picked from the index on (store, mtime) alone
    (no row of the others read), then read."""
    picked = ordered.values("pk")[:RECENT]
    rows = MemoryFile.objects.filter(pk__in=picked).select_related("store")
    return list(rows.order_by(*ordered.query.order_by))


@login_required
def home(request: HttpRequest) -> HttpResponse:
    stores = list(
        Store.objects.visible_to(request.user)
        .select_related("project")
        .order_by(F("project__key").asc(nulls_last=True), "kind", "mount", "agent_type")
    )
    groups = [(project, list(items)) for project, items in groupby(stores, lambda s: s.project)]
    now_ms = int(time.time() * 1000)
    memories = MemoryFile.objects.filter(store__in=stores)
    stale_before = now_ms - settings.MEMHUB_STALE_DAYS * DAY_MS
    owner = local_owner()
    is_local_owner = owner is not None and owner.pk == request.user.pk
    context = {
        "groups": groups,
        "store_count": len(stores),
        "file_count": sum(store.file_count for store in stores),
        "recent": _first(memories.order_by("-mtime_ms")),
        "stale": _first(memories.filter(mtime_ms__lt=stale_before).order_by("mtime_ms")),
        "stale_count": memories.filter(mtime_ms__lt=stale_before).count(),
        "stale_days": settings.MEMHUB_STALE_DAYS,
        "now_ms": now_ms,
        "discover": settings.MEMHUB_DISCOVER,
        "is_local_owner": is_local_owner,
        # Directories are the server's: only its owner has a use for them (docs/design.md §26).
        "show_paths": is_local_owner,
        "waiting": waiting_of(request),
        "happened": _what_happened(request.user, stores),
        **connect_context(request),
    }
    # The local owner's agent works on this machine: memhub reads its memory directly.
    context["offer_connect"] = not context["connected"] and not (
        is_local_owner and settings.MEMHUB_DISCOVER
    )
    return render(request, "memapp/home.html", context)


@login_required
@require_POST
def rescan(request: HttpRequest) -> HttpResponse:
    if not settings.MEMHUB_DISCOVER:
        messages.error(request, "Discovery is off on this server (MEMHUB_DISCOVER=0).")
        return redirect("home")
    result = discover_local_stores()
    messages.success(
        request,
        f"Rescanned: {result.found} memory director{'y' if result.found == 1 else 'ies'} found.",
    )
    return redirect("home")
