"""A memory's history (every version, a diff between any two, restore) and a store's trash."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memapp.memdir.index import INDEX_FILENAME
from memapp.memdir.store_files import checksum
from memapp.stores.access import get_store_for_user
from memapp.stores.actions import FileRejected, do_restore_from_trash, do_restore_version
from memapp.stores.history import blob_bytes, read_index_bytes, timeline, trash_expires_at
from memapp.stores.models import MemoryVersion, Store, TrashItem
from memapp.web.diff import diff_lines


def _text(version: MemoryVersion | None) -> str | None:
    if version is None or version.deleted:
        return None
    data = blob_bytes(version.sha256)
    return None if data is None else data.decode("utf-8", "replace")


def _versions(store: Store, path: str) -> list[MemoryVersion]:
    versions = list(timeline(store, path))
    if not versions:
        raise Http404("No history for this memory.")
    return versions


def _current_checksum(store: Store, path: str) -> str:
    """What the history page was opened against: `sha256:…` of the mirrored file (of the file
    on disk for MEMORY.md, which has no mirror row), or "" when there is none (a restore then
    must not find one)."""
    if path == INDEX_FILENAME:
        data = read_index_bytes(store)
        return "" if data is None else checksum(data)
    row = store.files.filter(path=path).values_list("sha256", flat=True).first()
    return f"sha256:{row}" if row else ""


def _pick(versions: list[MemoryVersion], raw: str | None) -> MemoryVersion | None:
    return next((v for v in versions if str(v.pk) == raw), None)


@login_required
def memory_history(request: HttpRequest, store_id: int, path: str) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    versions = _versions(store, path)
    current = _current_checksum(store, path)
    for n, (older, version) in enumerate(zip([*versions[1:], None], versions, strict=True)):
        version.previous = older
        same = bool(current) and current == f"sha256:{version.sha256}"
        version.is_current = same and n == 0
        version.same_as_current = same and n > 0  # restoring it would change nothing
    old, new = _pick(versions, request.GET.get("a")), _pick(versions, request.GET.get("b"))
    if old is not None and new is not None and old.pk > new.pk:
        old, new = new, old
    context = {
        "store": store,
        "path": path,
        "title": path if path == INDEX_FILENAME else path.rsplit("/", 1)[-1].removesuffix(".md"),
        "is_index": path == INDEX_FILENAME,
        "exists": bool(current),
        "versions": versions,
        "base": current,
        "old": old,
        "new": new,
        "diff": diff_lines(_text(old), _text(new)) if old and new else None,
    }
    return render(request, "memapp/history.html", context)


@login_required
def version_detail(request: HttpRequest, store_id: int, path: str, version_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    versions = _versions(store, path)
    version = _pick(versions, str(version_id))
    if version is None:
        raise Http404("No such version.")
    older = next((v for v in versions if v.pk < version.pk), None)
    current = _current_checksum(store, path)
    context = {
        "store": store,
        "path": path,
        "version": version,
        "text": _text(version),
        "previous": older,
        "diff": diff_lines(_text(older), _text(version)) if older else None,
        "base": current,
        "is_current": bool(current) and current == f"sha256:{version.sha256}",
    }
    return render(request, "memapp/version.html", context)


@login_required
@require_POST
def version_restore(
    request: HttpRequest, store_id: int, path: str, version_id: int
) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    version = get_object_or_404(MemoryVersion, pk=version_id, store=store, path=path)
    try:
        do_restore_version(store, request.user, version, base_checksum=request.POST.get("base"))
    except FileRejected as exc:
        messages.error(request, f"Nothing was restored: {exc}")
        return redirect(reverse("memory_history", kwargs={"store_id": store.pk, "path": path}))
    messages.success(
        request,
        f"Restored the version of {version.created_at:%Y-%m-%d %H:%M}. The version it replaced "
        "is kept in the history.",
    )
    if path == INDEX_FILENAME:
        return redirect(reverse("store", kwargs={"store_id": store.pk}) + "#index")
    return redirect(reverse("memory", kwargs={"store_id": store.pk, "path": path}))


@login_required
def trash_list(request: HttpRequest, store_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    days = settings.MEMHUB_TRASH_DAYS
    trash = store.trash.select_related("deleted_by")
    items = [(item, trash_expires_at(item, days)) for item in trash]
    return render(request, "memapp/trash.html", {"store": store, "items": items, "days": days})


@login_required
def trash_all(request: HttpRequest) -> HttpResponse:
    """The trash of every store the person may see, newest first, each item with its store."""
    days = settings.MEMHUB_TRASH_DAYS
    stores = Store.objects.visible_to(request.user)
    trash = TrashItem.objects.filter(store__in=stores).select_related(
        "deleted_by", "store__project"
    )
    items = [(item, trash_expires_at(item, days)) for item in trash]
    return render(request, "memapp/trash.html", {"items": items, "days": days, "across": True})


@login_required
@require_POST
def trash_restore(request: HttpRequest, store_id: int, item_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    item = get_object_or_404(store.trash, pk=item_id)
    try:
        path = do_restore_from_trash(item, request.user)
    except FileRejected as exc:
        messages.error(request, f"Nothing was restored: {exc}")
        return redirect("trash", store_id=store.pk)
    why = "its name had a backslash" if "\\" in item.path else "a new memory has taken its name"
    renamed = "" if path == item.path else f" as {path} ({why})"
    messages.success(request, f"Restored {item.path}{renamed}, with its index line.")
    return redirect(reverse("memory", kwargs={"store_id": store.pk, "path": path}))
